"""`tape-vs-trace cite distributed`: one citable block per row of the distributed results
(results/distributed/<machine>-<commit8>.csv): the step time with its interval across launches, the first call, peak
memory and its method, the bytes communicated against the form's analytic count, the recorded settings (N, backend,
bucket size, mesh, threads per rank, the CPU note), commit, machine and version. Without framework=, both
frameworks and their JAX/PyTorch ratios by the distributed section's rule (`distributed_section.across`), or why
it refuses one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import distributed_page, distributed_results, fmt
from tape_vs_trace.report.cite import BASE, OTHER, SELECTORS, CiteError, _finite, _ratio, _some, parse_filters
from tape_vs_trace.report.distributed_section import across, communicated
from tape_vs_trace.results import side_tables
from tape_vs_trace.results.folder import ResultsFolder
from tape_vs_trace.results.schema import DISTRIBUTED_KEY as KEY

QUERY = "distributed"  # the query word that cites these rows instead of an asv benchmark
WELCH = "95 % Welch t interval over per-launch medians, log scale"


def tables(results: Path, commit: str | None, warn: Callable[[str], None]) -> list[tuple[Path, pd.DataFrame]]:
    """(path, table) of the files to cite from: each machine's newest, or every file when commit= picks one."""
    folder = results / distributed_results.FOLDER
    if not folder.is_dir():
        raise CiteError(f"no distributed results: {folder} is not a folder (run tape-vs-trace distributed first)")
    found = list(side_tables.files(folder, distributed_results.SPEC.what, distributed_results.read, warn))
    if not found:
        raise CiteError(f"no readable distributed results in {folder}")
    if commit is None:
        return list(side_tables.newest(found).values())
    return [(path, data) for _, path, data in found]


def select(found: list[tuple[Path, pd.DataFrame]], filters: dict[str, str]) -> list[list[dict]]:
    """Per machine, the rows to cite (one, or one per framework): every KEY column fixed by a filter or by being
    the only value left."""
    unknown = [k for k in filters if k not in KEY and k not in SELECTORS]
    if unknown:
        raise CiteError(f"distributed rows have no column {unknown[0]!r}; keys: {', '.join([*KEY, *SELECTORS])}")
    rows = pd.concat([d.assign(source=str(p)) for p, d in found], ignore_index=True)
    for key, value in filters.items():
        column = rows[key].astype(str)
        keep = column.str.startswith(value) if key == "commit" else column == value
        if not keep.any():
            have = sorted({c[:8] for c in column} if key == "commit" else set(column),
                          key=lambda v: (len(v), v) if key == "ranks" else (0, v))
            raise CiteError(f"no distributed row with {key}={value}; {key} takes: {_some(have)}")
        rows = rows[keep]
    order = {fw: i for i, fw in enumerate(frameworks.NAMES)}
    out = []
    for machine, group in rows.groupby("machine", sort=True):
        varying = {k: sorted(set(group[k].astype(str)), key=lambda v, k=k: (len(v), v) if k == "ranks" else (0, v))
                   for k in (*KEY, "commit") if k != "framework"}
        varying = {k: v for k, v in varying.items() if len(v) > 1}
        if varying:
            choices = "; ".join(f"{k} takes {', '.join(v if k != 'commit' else [c[:8] for c in v])}"
                                for k, v in varying.items())
            raise CiteError(f"{len(group)} distributed rows left on {machine}: {choices}; add key=value to choose")
        records = group.to_dict("records")
        out.append(sorted(records, key=lambda r: order.get(r["framework"], len(order))))
    return out


def _cpu(results: Path, machine: str) -> str | None:
    return ResultsFolder(results).machine_record(machine).get("cpu")


def record(results: Path, row: dict) -> dict:
    """One distributed row as a JSON-ready object."""
    ok = row["status"] == "ok"
    timed = ok and _finite(row["time_ci_low"]) is not None
    launches = row["launches"]
    return {
        "result": QUERY, **{k: row[k] for k in KEY}, "ranks": int(row["ranks"]),
        "status": row["status"], "reason": row["reason"] or None,
        "value": _finite(row["time_s"]) if ok else None, "unit": "seconds",
        "ci_low": _finite(row["time_ci_low"]) if timed else None,
        "ci_high": _finite(row["time_ci_high"]) if timed else None,
        "launches": int(launches) if _finite(launches) is not None else None,
        "repeat": int(row["repeat"]) if ok else None, "warmup": int(row["warmup"]) if ok else None,
        "launch_medians": distributed_results.launch_medians(row) if ok else [],
        "method": (f"median of per-launch medians ({int(launches)} launches, fresh rank processes each, "
                   f"{int(row['repeat'])} timed steps each after {int(row['warmup'])} warm-up call(s)); 95 % "
                   f"Student-t interval across launches (log scale); {row['timing']}") if ok else
        f"failed: {row['reason']}",
        "first_call_s": _finite(row["compile_s"]) if ok else None,
        "first_call_ci_low": _finite(row["compile_ci_low"]) if ok else None,
        "first_call_ci_high": _finite(row["compile_ci_high"]) if ok else None,
        "compile_cache": row["compile_cache"] or None,
        "peak_bytes": _finite(row["peak_bytes"]) if ok else None, "peak_method": row["peak_method"] or None,
        "comm_bytes": _finite(row["comm_bytes"]) if ok else None,
        "analytic_bytes": _finite(row["analytic_bytes"]) if ok else None,
        "collectives": row["collectives"] or None, "collectives_method": row["collectives_method"] or None,
        "communicated": communicated(row),
        "backend": row["backend"] or None, "bucket_cap_mb": row["bucket_cap_mb"] or None,
        "mesh_shape": row["mesh_shape"] or None, "threads_per_rank": row["threads_per_rank"] or None,
        "note": row["note"] or None,
        "commit": row["commit"], "commit_date": row["commit_date"], "machine": row["machine"],
        "device": row["device"], "cpu": _cpu(results, row["machine"]),
        "framework_version": row["framework_version"], "source": row["source"],
        "dashboard_anchor": distributed_page.anchor(row["machine"], row["workload"]),
    }


def _interval(low: float | None, high: float | None, unit: str) -> str:
    if low is None or high is None:
        return "no 95 % interval"
    return f"95 % interval {fmt.value(low, unit)}–{fmt.value(high, unit)}"


def _lines(rec: dict) -> list[tuple[str, str]]:
    if rec["status"] != "ok":
        value = f"failed: {rec['reason']}"
    else:
        value = (f"{fmt.value(rec['value'], 'seconds')} per step, the slowest rank's, "
                 f"{_interval(rec['ci_low'], rec['ci_high'], 'seconds')}"
                 + ("" if rec["ci_low"] is not None else f" ({rec['launches']} launch(es))"))
    first = "—" if rec["first_call_s"] is None else (
        f"{fmt.value(rec['first_call_s'], 'seconds')}, "
        f"{_interval(rec['first_call_ci_low'], rec['first_call_ci_high'], 'seconds')} (compile and warm-up, median "
        f"across launches, never a sample); {rec['compile_cache']}")
    if rec["peak_bytes"] is not None:
        peak = (f"{fmt.number(rec['peak_bytes'], fmt.MIB)} MiB ({rec['peak_bytes']:,.0f} bytes) per device, exact; "
                f"{rec['peak_method']}")
    else:
        peak = (rec["peak_method"] or "not measured") if rec["status"] == "ok" else "—"
    comm = "per step per rank: " + rec["communicated"] + (f"; {rec['collectives']}" if rec["collectives"] else "") + \
        (f"; {rec['collectives_method']}" if rec["collectives_method"] and rec["comm_bytes"] is not None else "")
    settings = [f"N={rec['ranks']}", f"backend {rec['backend']}" if rec["backend"] else "",
                f"DDP bucket {rec['bucket_cap_mb']} MB" if rec["bucket_cap_mb"] else "",
                f"mesh {rec['mesh_shape']}" if rec["mesh_shape"] else "",
                f"{rec['threads_per_rank']} thread(s) per rank" if rec["threads_per_rank"] else "",
                f"{rec['dtype']}, variant {rec['variant']}"]
    out = [("value", value), ("method", rec["method"]), ("first call", first), ("peak", peak),
           ("sent", comm), ("settings", ", ".join(s for s in settings if s))]
    if rec["note"]:
        out.append(("note", rec["note"]))
    out += [("commit", f"{rec['commit'][:8]} (commit date {rec['commit_date']})"),
            ("machine", f"{rec['machine']}, device {rec['device']}" + (f", CPU {rec['cpu']}" if rec["cpu"] else "")),
            ("software", f"{rec['framework']} {rec['framework_version']}"), ("source", rec["source"]),
            ("dashboard", rec["dashboard_anchor"])]
    return out


def _title(rec: dict) -> str:
    return (f"distributed {rec['workload']} {rec['size']}, {rec['form']} {rec['mode']}, N={rec['ranks']} — "
            f"{frameworks.label(rec['framework'])}")


def render(results: Path, groups: list[list[dict]], form: str, both: bool) -> str:
    """The blocks of `groups`; with `both` (no framework= given) the JAX/PyTorch ratios of each group, or why
    the rule refuses them."""
    objects, blocks = [], []
    for rows in groups:
        recs = [record(results, r) for r in rows]
        by_fw = {r["framework"]: r for r in rows}
        comparisons = {"step_time": across(by_fw.get(BASE), by_fw.get(OTHER)),
                       "peak_bytes": across(by_fw.get(BASE), by_fw.get(OTHER), "peak_bytes")} if both else {}
        for rec in recs:
            if comparisons:
                rec["ratio"] = {k: _ratio(c) for k, c in comparisons.items()}
        objects.extend(recs)
        block = []
        for rec in recs:
            if form == "markdown":
                block += [f"**{_title(rec)}**", ""] + [f"- {k}: {v}" if k != "dashboard" else f"- {k}: `{v}`"
                                                       for k, v in _lines(rec)] + [""]
            else:
                block += [_title(rec)] + [f"  {k:<10} {v}" for k, v in _lines(rec)]
        label = f"{frameworks.label(OTHER)}/{frameworks.label(BASE)}"
        for key, words in (("step_time", "step time"), ("peak_bytes", "peak")):
            if key not in comparisons:
                continue
            c = comparisons[key]
            text = fmt.ratio(c)
            if key == "step_time" and c.formed and c.low is not None and math.isfinite(c.low) and c.low != c.high:
                text += f" ({WELCH})"
            block.append(f"- {label} {words}: {text}" if form == "markdown" else f"{label} {words}: {text}")
        blocks.append("\n".join(block).rstrip())
    if form == "json":
        return json.dumps(objects[0] if len(objects) == 1 else objects, indent=2)
    return "\n\n".join(blocks)


def run(filters: list[str], results: Path, form: str, warn: Callable[[str], None]) -> str:
    chosen = parse_filters(filters)
    groups = select(tables(results, chosen.get("commit"), warn), chosen)
    return render(results, groups, form, "framework" not in chosen)
