"""What the report says about the distributed results (`tape-vs-trace distributed`): per workload, each form and
mode at each rank count N, both frameworks, as summary.md's section of a machine.

A JAX/PyTorch ratio is formed only between like rows (`across`): same workload, size, dtype, variant, form, mode
and N, on the same machine and commit, both measured; memory only when both were measured by the same method. An
N against N=1 change within one framework (`change`) is stated only when its interval excludes every change within
report.stats.BETWEEN_PROCESSES: the launches are processes. The bytes communicated per step are checked against
the analytic count of the form (rank_processes.analytic_bytes).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import fmt, stats
from tape_vs_trace.report.distributed_results import FOLDER, launch_medians
from tape_vs_trace.report.findings import describe
from tape_vs_trace.results import rowkey, side_tables
from tape_vs_trace.results.rowkey import RowKey

# What names a row (schema.DISTRIBUTED_KEY and the device): like rows differ in the framework alone, on one machine
# and commit (rowkey.same_place); a change within a framework differs in the ranks alone.
SPEC = side_tables.SPECS["distributed"]
KEY = SPEC.like  # a row's key: the combination and the device
FIGURES = "distributed_"  # distributed_figure's distributed_<workload>.png
CPU = ("On a CPU the ranks share the host's cores (PyTorch: a process per rank, the cores divided between them; JAX: "
       "one process whose N XLA:CPU devices share its thread pool), so the times describe each form's overhead, "
       "not scaling.")


def _finite(*values) -> bool:
    return all(isinstance(v, int | float) and math.isfinite(v) for v in values)


def _timed(a: dict, b: dict) -> stats.Comparison:
    """b / a of two rows' times, Welch's interval across their launches."""
    ratio = b["time_s"] / a["time_s"]
    pa, pb = launch_medians(a), launch_medians(b)
    if len(pa) < 2 or len(pb) < 2:
        return stats.Comparison(ratio, note="one launch")
    return stats.Comparison(ratio, *stats.ratio_interval(pb, pa))


def across(t: dict | None, j: dict | None, metric: str = "time_s") -> stats.Comparison:
    """JAX/PyTorch of two rows on `metric` (time_s or peak_bytes), formed only between like rows (side_tables.differing
    the framework alone) of the two frameworks, both measured; peak bytes only when measured by the same method."""
    reason = stats.refusal(t, j)
    if reason:
        return stats.Comparison(reason=reason)
    if side_tables.differing(SPEC, t, j) != {"framework"}:
        return stats.Comparison(reason=rowkey.NOT_LIKE)
    if metric == "peak_bytes":
        if not _finite(t[metric], j[metric]):
            return stats.Comparison(reason="not measured")
        unlike = side_tables.unlike(SPEC, t, j, metric)
        if unlike:
            return stats.Comparison(reason=unlike)
        if not t[metric]:
            return stats.Comparison(reason="divisor is zero")
        return stats.exact(t[metric], j[metric], "track_peak_bytes")
    return _timed(t, j)


def change(a: dict | None, b: dict | None) -> stats.Comparison:
    """b's time over a's within one framework: the same row at another rank count (side_tables.differing the ranks
    alone)."""
    reason = stats.refusal(a, b)
    if reason:
        return stats.Comparison(reason=reason.replace("only one framework ran", "not run"))
    if side_tables.differing(SPEC, a, b) != {"ranks"}:
        return stats.Comparison(reason=rowkey.NOT_LIKE)
    return _timed(a, b)


def _key(row: dict) -> RowKey:
    """A row's key: its KEY columns."""
    return RowKey.of_columns(row, KEY, "distributed")


def communicated(row: dict) -> str:
    """The bytes communicated per step of a row, checked against the form's analytic count."""
    if row["status"] != "ok":
        return "failed"
    if not _finite(row["comm_bytes"]):
        return f"not measured ({row['collectives_method'].removeprefix('none: ')})"
    measured, analytic = row["comm_bytes"], row["analytic_bytes"]
    text = _size(measured)
    if measured == analytic:
        return f"{text}, equal to the analytic count"
    if not analytic:
        return f"{text} where the analytic count is 0 (one rank: nothing to send)"
    return (f"{text} against {_size(analytic)} analytic ({'+' if measured > analytic else '−'}"
            f"{fmt.pct(measured / analytic - 1)})")


def _size(nbytes: float) -> str:
    # a loss's few bytes read as bytes, not as a millionth of a MiB
    return f"{int(nbytes):,} B" if nbytes < 1024 else f"{fmt.number(nbytes, fmt.MIB)} MiB"


def _time(row: dict | None, divisor: float) -> str:
    if row is None:
        return "not run"
    if row["status"] != "ok":
        return "failed"
    text = fmt.number(row["time_s"], divisor)
    if _finite(row["time_ci_low"], row["time_ci_high"]):
        text += f" [{fmt.number(row['time_ci_low'], divisor)}–{fmt.number(row['time_ci_high'], divisor)}]"
    return text


def _first_call(row: dict | None) -> str:
    if row is None or row["status"] != "ok":
        return "—"
    return f"{row['compile_s']:.3g}"


def _peak(row: dict | None) -> str:
    if row is None or row["status"] != "ok":
        return "—"
    if not _finite(row["peak_bytes"]):
        return "n/a (" + row["peak_method"].removeprefix("not measured: ") + ")"
    return fmt.number(row["peak_bytes"], fmt.MIB)


def _by_case(rows: pd.DataFrame) -> dict[RowKey, dict[str, dict]]:
    """{a case's key (the framework left out): {framework: row}} in the file's order."""
    cases: dict[RowKey, dict[str, dict]] = {}
    for r in rows.to_dict("records"):
        cases.setdefault(_key(r).without("framework"), {})[r["framework"]] = r
    return cases


def tables(rows: pd.DataFrame) -> list[str]:
    """One workload's two tables: step time and first call; peak memory and bytes communicated."""
    cases = _by_case(rows)
    ok = rows[rows.status == "ok"]
    divisor, unit = fmt.scale("seconds", list(ok.time_s))
    names = [frameworks.label(fw) for fw in frameworks.NAMES]
    time = [f"| form | mode | N | {names[0]} ({unit}) | {names[1]} ({unit}) | JAX/PyTorch step time | {names[0]} "
            f"first call (s) | {names[1]} first call (s) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    memory = [f"| form | mode | N | {names[0]} peak (MiB) | {names[1]} peak (MiB) | JAX/PyTorch peak | {names[0]} "
              f"communicated per step | {names[1]} communicated per step |", "|---|---|---:|---:|---:|---:|---|---|"]
    for case, by_fw in cases.items():
        t, j = (by_fw.get(fw) for fw in frameworks.NAMES)
        head = f"| {case.axis('form')} | {case.axis('mode')} | {case.axis('ranks')} | "
        time.append(head + " | ".join([_time(t, divisor), _time(j, divisor), fmt.ratio(across(t, j)),
                                       _first_call(t), _first_call(j)]) + " |")
        memory.append(head + " | ".join([_peak(t), _peak(j), fmt.ratio(across(t, j, "peak_bytes")),
                                         communicated(t) if t else "not run",
                                         communicated(j) if j else "not run"]) + " |")
    return ["Step time per step, the slowest rank's (median of per-launch medians [95 % interval across launches]), "
            "and the first call (compile and warm-up, median across launches; never a sample):", "", *time, "",
            "Peak memory per device (exact, from the first launch) and bytes communicated per step per rank (the "
            "collectives' operand bytes) against the form's analytic count:", "", *memory, ""]


def changes(rows: pd.DataFrame) -> list[str]:
    """Within each framework, form and mode: each N > 1 against N=1."""
    out = []
    ones = {_key(r).without("ranks"): r for r in rows.to_dict("records") if r["ranks"] == 1}
    for r in rows.to_dict("records"):
        base = ones.get(_key(r).without("ranks"))
        if r["ranks"] == 1 or base is None:
            continue
        c = change(base, r)
        case = f"{frameworks.label(r['framework'])} {r['form']} {r['mode']}: N={r['ranks']} against N=1"
        if not c.formed:
            out.append(f"{case}: no ratio ({c.reason})")
            continue
        value = {"unit": "seconds"}
        out.append(f"{case}: {describe(c, value | {'value': base['time_s']}, value | {'value': r['time_s']})}")
    return out


def failures(rows: pd.DataFrame) -> list[str]:
    return [f"{frameworks.label(r['framework'])} {r['form']} {r['mode']} N={r['ranks']}: {r['reason']}"
            for r in rows.to_dict("records") if r["status"] != "ok"]


def methods(rows: pd.DataFrame) -> list[str]:
    """How each framework's peaks and timings were taken, once per distinct text."""
    ok = rows[rows.status == "ok"]
    out = []
    for fw in frameworks.NAMES:
        mine = ok[ok.framework == fw]
        for column, words in (("peak_method", "peak memory"), ("timing", "step time"),
                              ("compile_cache", "first call's compile"), ("collectives_method", "collectives")):
            found = "; ".join(dict.fromkeys(v for v in mine[column] if v))
            if found:
                out.append(f"{frameworks.label(fw)} {words}: {found}")
        backends = "; ".join(dict.fromkeys(mine.backend))
        threads = ", ".join(f"N={n}: {t}" for n, t in dict.fromkeys(zip(mine.ranks, mine.threads_per_rank)) if t)
        if backends:
            out.append(f"{frameworks.label(fw)} backend: {backends}" + (f"; threads per rank {threads}"
                                                                         if threads else ""))
    return out


def section(table: pd.DataFrame | None, figures: list[str], asv_commit: str | None, h: str) -> list[str]:
    """summary.md's distributed section of one machine: provenance, the CPU caveat, and per workload its figure
    (distributed_<workload>.png or .svg among `figures`), tables, the N against N=1 changes and the failed rows.
    `asv_commit` None (the dashboard's page) says nothing of the asv results' commit."""
    if table is None:
        return []
    first = table.iloc[0]
    ok = table[table.status == "ok"]
    same = "" if asv_commit is None else " (the same commit as the asv results)" if first.commit == asv_commit else \
        f" (**not** the commit of the asv results above (`{asv_commit[:8]}`))"
    counts = ", ".join(f"{int(n)}" for n in sorted(set(ok.launches))) or "no"
    steps = ", ".join(f"{int(r)}" for r in sorted(set(ok.repeat))) or "no"
    warm = ", ".join(f"{int(w)}" for w in sorted(set(ok.warmup))) or "no"
    lines = [f"{h} distributed steps (`tape-vs-trace distributed`)", "",
             f"From `results/{FOLDER}/{first.machine}-{first.commit[:8]}.csv`: commit `{first.commit}`{same}, "
             f"device {first.device}, {first['dtype']}, {counts} launches per row (fresh rank processes each), {steps} "
             f"timed steps per launch after its first call and {warm} warm-up call(s). One gradient step of each "
             "form (ddp, shard_map, fsdp) in each mode over N ranks; a step's time is the slowest rank's, the ranks "
             "aligned before it.", ""]
    if (table.device == "cpu").any():
        lines += [f"**{CPU}**", ""]
    lines += ["JAX/PyTorch is formed only between like rows (same workload, size, form, mode and N; peak memory only "
              "when both were measured by the same method), with Welch's 95 % interval across launches. Within a "
              "framework, N against N=1 is stated as a change only when its interval excludes every change within "
              f"{stats.BETWEEN_PROCESSES * 100:g} % (how far a ratio between processes moves between two runs); "
              f"else '{fmt.NO_DIFFERENCE}'.", ""]
    for workload, rows in table.groupby("workload", sort=False):
        lines += [f"{h}# {workload} {', '.join(dict.fromkeys(rows['size']))}", ""]
        lines += [f"![{Path(n).stem}]({n})\n" for n in figures if Path(n).stem == f"{FIGURES}{workload}"]
        lines += tables(rows)
        found = changes(rows)
        if found:
            lines += ["N against N=1, within each framework (step time):", "", *[f"- {s}." for s in found], ""]
        failed = failures(rows)
        if failed:
            lines += ["Failed (the row's one-line reason):", "", *[f"- {s}" for s in failed], ""]
    found = methods(table)
    if found:
        lines += ["How each was measured:", "", *[f"- {s}." for s in found], ""]
    return lines
