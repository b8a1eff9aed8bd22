"""One citable block per result: the value with its interval and what stands behind it (samples, processes,
method), the benchmark with every parameter and its version, commit and run date, machine and device, framework
versions, dtype and precision, and the dashboard anchor of its graph. Without a framework, both frameworks and the
JAX/PyTorch ratio of the report's one rule (`report.stats.compare`), or why the rule refuses it. The query
`distributed` cites a row of the distributed results instead (`cite_distributed`).
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import comparison_page, fmt, scale, stats
from tape_vs_trace.report.load import Results, literal, load_results
from tape_vs_trace.report.select import display, latest

SHOWN = 8  # candidates named in an ambiguity error
BASE, OTHER = frameworks.NAMES[0], frameworks.NAMES[1]  # the report's ratio: OTHER / BASE (JAX / PyTorch)
SELECTORS = ("commit", "machine")  # keys that pick a run rather than a parameter


class CiteError(Exception):
    """No single result answers the query; the message is one line and names (some of) the candidates."""


def _some(items: list[str]) -> str:
    more = f" (and {len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def benchmark(names: list[str], query: str) -> str:
    """The one benchmark `query` names: itself, a dotted tail of it (`RematCost_mlp.track_peak_bytes`), or a part
    of exactly one name."""
    exact = [n for n in names if n == query or n.endswith("." + query)]
    if len(exact) == 1:
        return exact[0]
    found = exact or [n for n in names if query in n] or [n for n in names if query.lower() in n.lower()]
    if len(found) == 1:
        return found[0]
    if not found:
        close = difflib.get_close_matches(query, names, n=SHOWN, cutoff=0.3) or names
        raise CiteError(f"no benchmark matches {query!r}; candidates: {_some(close)}")
    raise CiteError(f"{query!r} matches {len(found)} benchmarks: {_some(found)}; give more of the name")


def parse_filters(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise CiteError(f"{item!r} is not key=value (e.g. framework=torch)")
        out[key] = value
    return out


def select(results: Results, query: str, filters: dict[str, str]) -> list[list[dict]]:
    """Per machine, the rows to cite (one, or one per framework): every parameter fixed by the query or by being
    the only value left; the latest commit unless commit= picks one."""
    table = results.table
    name = benchmark(sorted(table.benchmark.unique()), query)
    rows = table[table.benchmark == name]
    names = list(results.benchmarks.get(name, {}).get("param_names", []))
    unknown = [k for k in filters if k not in names and k not in SELECTORS]
    if unknown:
        raise CiteError(f"{name} has no parameter {unknown[0]!r}; keys: {', '.join([*names, *SELECTORS])}")
    params = rows.params.map(json.loads)
    for key, value in filters.items():
        if key == "commit":
            keep = rows.commit.str.startswith(value)
            have = sorted(c[:8] for c in rows.commit.unique())
        elif key == "machine":
            keep = rows.machine == value
            have = sorted(rows.machine.unique())
        else:
            column = params.map(lambda p, key=key: str(p.get(key)))
            keep = column == value
            have = sorted(column.unique())
        if not keep.any():
            raise CiteError(f"no result of {name} with {key}={value}; {key} takes: {_some(have)}")
        rows, params = rows[keep], params[keep]
    if "commit" not in filters:
        rows = pd.concat(latest(rows).values())
    out = []
    for machine, group in rows.groupby("machine", sort=True):
        records = group.to_dict("records")
        varying = {}
        for key in names:
            if key == "framework":
                continue
            values = sorted({str(json.loads(r["params"]).get(key)) for r in records})
            if len(values) > 1:
                varying[key] = values
        if varying:
            choices = "; ".join(f"{k} takes {', '.join(v)}" for k, v in varying.items())
            raise CiteError(f"{name} on {machine} has {len(records)} results left: {choices}; add key=value to choose")
        if len({r["env"] for r in records}) > 1:
            raise CiteError(f"{name} on {machine} ran in several asv environments: "
                            f"{', '.join(sorted({r['env'] for r in records}))}; use the report's tables instead")
        order = {fw: i for i, fw in enumerate(frameworks.NAMES)}
        out.append(sorted(records, key=lambda r: order.get(r["framework"], len(order))))
    return out


def _finite(x: float) -> float | None:
    return float(x) if x is not None and not pd.isna(x) and math.isfinite(x) else None


def _count(x) -> int | None:
    return None if x is None or pd.isna(x) else int(x)


def method(row: dict) -> str:
    """How the value was obtained, in words: the memory method for peaks, the statistic for times."""
    basis = str(row["basis"])
    if row["metric"] == "track_peak_bytes":
        how = f"peak bytes measured by {row['memory_method']}"
    elif not row["sampled"]:
        how = display(row["metric"]) + ": a deterministic count, one measurement"
    elif basis == "processes":
        how = (f"geometric mean of per-process medians ({row['processes']} processes, {row['samples']} samples); 95 % "
               "Student-t interval over processes (log scale)")
    elif basis == "one process":
        how = f"median of one process's {row['samples']} samples; no between-process interval"
    else:
        how = f"asv's median of all samples; no between-process interval: {basis.removeprefix('asv: ')}"
    return f"{row['method']}; {how}" if row.get("method") else how


def anchor(results: Results, row: dict, with_framework: bool) -> str:
    """asv's URL fragment for the benchmark's graph with these parameters selected: `#<benchmark>?machine=<m>&p-
    <name>=<value>`, each value as asv stores it (its repr, as in benchmarks.json) and URI-encoded the way the
    dashboard's format_hash_string does (encodeURIComponent)."""
    meta = results.benchmarks.get(row["benchmark"], {})
    params = json.loads(row["params"])

    def enc(text: str) -> str:
        return quote(text, safe="-_.!~*'()")  # encodeURIComponent's unreserved set

    parts = [f"machine={enc(row['machine'])}"]
    for name, values in zip(meta.get("param_names", []), meta.get("params", [])):
        if name == "framework" and not with_framework:
            continue
        stored = next((v for v in values if literal(v) == params.get(name)), repr(params.get(name)))
        parts.append(f"p-{enc(name)}={enc(stored)}")
    # A derived row (the roofline) has no graph of its own: the anchor is that of the benchmark it comes from.
    return f"#{meta.get('derived_from') or row['benchmark']}?" + "&".join(parts)


def record(results: Results, row: dict) -> dict:
    """One result as a JSON-ready object."""
    host = results.details.get((row["machine"], row["commit"])) or {}
    ok = row["status"] == "ok"
    return {
        "benchmark": row["benchmark"], "params": json.loads(row["params"]),
        "benchmark_version": row["benchmark_version"], "framework": row["framework"],
        "value": _finite(row["value"]) if ok else None, "unit": row["unit"], "status": row["status"],
        "ci_low": _finite(row["ci_low"]) if ok and row["sampled"] else None,
        "ci_high": _finite(row["ci_high"]) if ok and row["sampled"] else None,
        "q25": _finite(row["q25"]) if ok and row["sampled"] else None,
        "q75": _finite(row["q75"]) if ok and row["sampled"] else None,
        "exact": not row["sampled"], "processes": _count(row["processes"]), "samples": _count(row["samples"]),
        "method": method(row) if ok else "failed: no value", "memory_method": row["memory_method"] or None,
        "commit": row["commit"], "commit_date": row["date"], "run_date": row["run_date"],
        "machine": row["machine"], "device": row["device"],
        "cpu": results.machines.get(row["machine"], {}).get("cpu"),
        "host_fingerprint": bool(host.get("fingerprint")),
        "torch_version": row["torch_version"], "jax_version": row["jax_version"],
        "dtype": row["dtype"] or None, "precision": row["precision"] or None,
        "operator": _operator(row),
        "scale": scale.of_row(results.table, row, results.machines.get(row["machine"], {})),
        "dashboard_anchor": anchor(results, row, True),
    }


def _operator(row: dict) -> str | None:
    """The operator a scan row ran ('prototype torch._higher_order_ops.scan'), None for any other row."""
    if json.loads(row["params"]).get("formulation") != "scan":
        return None
    return frameworks.scan_operators((row["framework"],)).get(frameworks.label(row["framework"]))


def _ratio(c: stats.Comparison) -> dict:
    return {"of": f"{OTHER}/{BASE}", "ratio": _finite(c.ratio), "ci_low": _finite(c.low), "ci_high": _finite(c.high),
            "refused": c.reason or None, "note": c.note or None,
            "equal_within_resolution": c.negligible}  # an exact difference too small to be a direction


def _value_text(rec: dict) -> str:
    if rec["value"] is None:
        return "failed (no value)"
    text = fmt.value(rec["value"], rec["unit"])
    if rec["unit"] == "bytes":
        text += f" ({rec['value']:,.0f} bytes)"
    if rec["exact"]:
        return text + ", exact"
    if rec["ci_low"] is None:
        iqr = f" (asv's IQR {fmt.value(rec['q25'], rec['unit'])}–{fmt.value(rec['q75'], rec['unit'])})" \
            if rec["q25"] is not None and rec["q75"] is not None and rec["q25"] != rec["q75"] else ""
        return text + ", no 95 % interval" + iqr
    return text + f", 95 % interval {fmt.value(rec['ci_low'], rec['unit'])}–{fmt.value(rec['ci_high'], rec['unit'])}"


def _lines(rec: dict) -> list[tuple[str, str]]:
    params = ", ".join(f"{k}={v}" for k, v in rec["params"].items())
    return [
        ("value", _value_text(rec)),
        ("method", rec["method"]),
        ("benchmark", f"{rec['benchmark']} ({params}), benchmark version {rec['benchmark_version']}"),
        ("commit", f"{rec['commit'][:8]} (commit date {rec['commit_date']}), run {rec['run_date']}"),
        ("machine", f"{rec['machine']}, device {rec['device']}" + (f", CPU {rec['cpu']}" if rec["cpu"] else "")
         + ("" if rec["host_fingerprint"] else "; no host fingerprint recorded (older result)")),
        ("software", f"torch {rec['torch_version']}, jax {rec['jax_version']}"
         + (f"; {rec['dtype']}, matmul precision {rec['precision']}" if rec["dtype"] else "")),
        *([("operator", rec["operator"])] if rec["operator"] else []),
        ("scale", rec["scale"]),
        ("dashboard", rec["dashboard_anchor"]),
    ]


def render(results: Results, groups: list[list[dict]], form: str) -> str:
    objects, blocks = [], []
    for rows in groups:
        recs = [record(results, r) for r in rows]
        by_fw = {r["framework"]: r for r in rows}
        comparison = stats.compare(by_fw.get(BASE), by_fw.get(OTHER)) if len(rows) > 1 else None
        if comparison is not None:
            for rec in recs:
                rec["ratio"] = _ratio(comparison)
        objects.extend(recs)
        block = []
        for rec in recs:
            title = f"{rec['benchmark']} — {frameworks.label(rec['framework'])}" \
                if rec["framework"] in frameworks.FRAMEWORKS else rec["benchmark"]
            if form == "markdown":
                block += [f"**{title}**", ""] + [f"- {k}: {v}" if k != "dashboard" else f"- {k}: `{v}`"
                                                 for k, v in _lines(rec)] + [""]
            else:
                block += [title] + [f"  {k:<10} {v}" for k, v in _lines(rec)]
        if comparison is not None:
            label = f"{frameworks.label(OTHER)}/{frameworks.label(BASE)}"
            both = anchor(results, rows[0], False)
            text = fmt.ratio(comparison)
            if comparison.formed and math.isfinite(comparison.low) and not (comparison.low == comparison.high):
                text += " (95 % Welch t interval over per-process medians, log scale)"
            if all(rec["operator"] for rec in recs):  # a ratio of scans says which two operators it divides
                text += "; " + " over ".join(f"{frameworks.label(r['framework'])}'s {r['operator']}"
                                             for r in reversed(recs))
            page = comparison_page.anchor(rows[0]["machine"], rows[0]["pillar"])
            block += [f"- {label}: {text}", f"- dashboard (both): `{both}`", f"- comparison page: `{page}`"] \
                if form == "markdown" else [f"{label}: {text}", f"  dashboard (both) {both}",
                                            f"  comparison page {page}"]
        blocks.append("\n".join(block).rstrip())
    if form == "json":
        return json.dumps(objects[0] if len(objects) == 1 else objects, indent=2)
    return "\n\n".join(blocks)


def run(query: str, filters: list[str], results: Path, form: str, warn: Callable[[str], None],
        verbose: bool = False) -> str:
    held: list[str] = []  # what older result files hold, said only beside a block: an error is one line alone
    loaded = load_results(results, held.append, verbose)
    text = render(loaded, select(loaded, query, parse_filters(filters)), form)
    for line in held:
        warn(line)
    return text
