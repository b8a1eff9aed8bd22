"""`tape-vs-trace cite distributed`: one citable block per row of the distributed results
(results/distributed/<machine>-<commit8>.csv): the step time with its interval across launches, the first call, peak
memory and its method, the bytes communicated against the form's analytic count, the recorded settings (N, backend,
bucket size, mesh, threads per rank, the CPU note), commit, machine and version. Without framework=, both
frameworks and their JAX/PyTorch ratios by the distributed section's rule (`distributed_section.across`), or why
it refuses one. The rows are selected and the blocks laid out by the side tables' one citation (cite_side); this
module says what a distributed row holds.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import distributed_page, distributed_results, fmt
from tape_vs_trace.report.cite import BASE, OTHER, _finite, _ratio
from tape_vs_trace.report.cite_side import Citation
from tape_vs_trace.report.distributed_section import across, communicated
from tape_vs_trace.results.folder import ResultsFolder
from tape_vs_trace.results.schema import DISTRIBUTED_KEY as KEY

QUERY = "distributed"  # the query word that cites these rows instead of an asv benchmark
WELCH = "95 % Welch t interval over per-launch medians, log scale"


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


def ratios(rows: list[dict]) -> list[tuple[str, str, str, dict]]:
    """The JAX/PyTorch ratios of step time and peak by the distributed section's rule, or why it refuses them."""
    by_fw = {r["framework"]: r for r in rows}
    label = f"{frameworks.label(OTHER)}/{frameworks.label(BASE)}"
    out = []
    for key, words, metric in (("step_time", "step time", "time_s"), ("peak_bytes", "peak", "peak_bytes")):
        c = across(by_fw.get(BASE), by_fw.get(OTHER), metric)
        text = fmt.ratio(c)
        if key == "step_time" and c.formed and c.low is not None and math.isfinite(c.low) and c.low != c.high:
            text += f" ({WELCH})"
        out.append((key, f"{label} {words}", text, _ratio(c)))
    return out


class Distributed(Citation):
    """A distributed row: its reader's numbers, its settings and both ratios of the distributed section."""

    def read(self, path: Path) -> pd.DataFrame:
        return distributed_results.read(path)

    def record(self, results: Path, row: dict) -> dict:
        return record(results, row)

    def title(self, rec: dict) -> str:
        return _title(rec)

    def lines(self, rec: dict) -> list[tuple[str, str]]:
        return _lines(rec)

    def ratios(self, rows: list[dict]) -> list[tuple[str, str, str, dict]]:
        return ratios(rows)


CITATION = Distributed(distributed_results.SPEC)
