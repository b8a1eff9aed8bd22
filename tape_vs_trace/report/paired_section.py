"""What the report says about the paired results (`tape-vs-trace paired`): comparisons inside one framework timed
call by call in one process, and the transformer's remat trade-off curve, as summary.md's section.

A paired ratio (a point's time over its experiment's baseline, pass by pass in one process, between processes for
the interval) is stated as a difference only when its 95 % interval excludes 1, as everywhere in the report. A JAX
against PyTorch ratio of curve points is formed only between like rows (`across`): same size, mode, formulation and
point, and, for memory, the same measuring method.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import fmt, stats
from tape_vs_trace.report.paired_results import FOLDER, curves, finite, medians
from tape_vs_trace.results import side_tables
from tape_vs_trace.results.rowkey import RowKey

NEAR_BEST = 1.10  # "as fast as the fastest": a ratio to plain within 10 % of the curve's best
AFFORDABLE = 1.25  # "affordable": the upper 95 % bound of the ratio to plain at most 1.25 (25 % more time)
GRANULARITY = ("plain", "remat_every4", "remat_every2", "remat_full")  # layers per checkpoint: none, 4, 2, 1
# The columns (schema.PAIRED_FIELDS) that find a JAX point's PyTorch counterpart in the table; whether the two are
# like rows is the side tables' one rule (side_tables.unlike).
COUNTERPART = ("workload", "size", "mode", "attention", "point")
SPEC = side_tables.SPECS["paired"]


def _key(row: dict, columns: tuple[str, ...]) -> RowKey:
    return RowKey.of_columns(row, columns, "paired")


def paired_ratio(row: dict) -> stats.Comparison:
    """A point's paired ratio to its experiment's baseline, with its between-process interval."""
    if not finite(row["ratio"]):
        return stats.Comparison(reason="no ratio")
    if not finite(row["ratio_ci_low"], row["ratio_ci_high"]):
        return stats.Comparison(row["ratio"], note="one process", resolution=stats.WITHIN_PROCESS)
    return stats.Comparison(row["ratio"], row["ratio_ci_low"], row["ratio_ci_high"], resolution=stats.WITHIN_PROCESS)


def costs(c: stats.Comparison, x: str, y: str) -> str:
    """'x costs N % more/less time than y (95 % interval a–b %)', marked "not beyond a rerun's ±3 %" where the
    interval excludes 1 but reaches that band; or, where it includes 1, that no difference is measurable."""
    if not c.formed:
        return f"{x} against {y}: no ratio ({c.reason})"
    if c.differs is None:
        return f"{x} against {y}: {c.ratio:.3g}× ({fmt.NO_INTERVAL}: {c.note})"
    if not c.differs and c.low <= 1.0 <= c.high:
        return f"{x} against {y}: {fmt.NO_DIFFERENCE} (ratio {c.ratio:.3g}, 95 % interval {c.low:.3g}–{c.high:.3g})"
    within = "" if c.differs else f", not beyond {fmt.band(c)}"  # the interval excludes 1, not a rerun's changes
    if fmt.change(c.ratio).endswith("×"):  # a large change reads as a factor (fmt.LARGE)
        return f"{x} takes {c.ratio:.3g}× the time of {y}{within} (95 % interval {c.low:.3g}–{c.high:.3g}×)"
    near, far = sorted(abs(v - 1) * 100 for v in (c.low, c.high))
    return (f"{x} costs {fmt.pct(c.ratio - 1)} {'more' if c.ratio > 1 else 'less'} time than {y}{within} "
            f"(95 % interval {near:.1f}–{far:.1f} %)")


def across(t: dict | None, j: dict | None, metric: str = "time_s") -> stats.Comparison:
    """JAX/PyTorch of two curve points (`metric`: time_s, saved_bytes or peak_bytes), formed only between like
    rows: same size, mode, formulation and point, on the same device; memory measured by the same method. A JAX
    lax.scan is never divided by a PyTorch Python loop over layers."""
    if t is None or j is None:
        return stats.Comparison(reason="only one framework ran")
    if t["formulation"] != j["formulation"]:
        scan = {t["formulation"], j["formulation"]} == {"scan", "unrolled"}
        return stats.Comparison(reason="scan against unrolled" if scan else "different formulations")
    reason = side_tables.unlike(SPEC, t, j, metric)
    if reason:
        return stats.Comparison(reason=reason)
    method = dict(SPEC.method_of).get(metric)
    if not finite(t[metric], j[metric]):
        return stats.Comparison(reason="not measured")
    if not t[metric]:
        return stats.Comparison(reason="divisor is zero")
    if method:  # exact values
        return stats.exact(t[metric], j[metric], f"track_{metric}", "flops" if metric == "flops" else "bytes")
    ratio = j[metric] / t[metric]
    pt, pj = medians(t), medians(j)
    if len(pt) < 2 or len(pj) < 2:
        return stats.Comparison(ratio, note="one process")
    return stats.Comparison(ratio, *stats.ratio_interval(pj, pt))


def memory_of(curve: pd.DataFrame) -> tuple[str, str]:
    """(column, words) of the memory a curve is judged by: peak bytes where every point has one, else saved."""
    if curve.peak_bytes.notna().all():
        return "peak_bytes", "peak memory"
    return "saved_bytes", "saved for backward"


def curve_name(key: tuple[str, ...]) -> str:
    framework, mode, formulation, attention, size = key
    fused = attention and f"{attention} attention"
    return " ".join(filter(None, (frameworks.label(framework), mode, formulation, fused, size)))


def _mib(value: float) -> str:
    return f"{fmt.number(value, fmt.MIB)} MiB"


def _ratio(row: dict) -> str:
    """A point's ratio to its baseline; the baseline's own is 1 by construction, not a measurement."""
    return "1 (baseline)" if row["point"] == row["baseline"] else fmt.ratio(paired_ratio(row))


def _of_plain(row: dict) -> str:
    return "" if row["point"] == row["baseline"] else " plain"


def choices(key: tuple[str, ...], curve: pd.DataFrame) -> str | None:
    """The near-fastest point with least memory, and the least memory at most 25 % slower than plain."""
    column, words = memory_of(curve)
    rows = [r for r in curve.to_dict("records") if finite(r[column], r["ratio"])]
    if not rows:
        return None
    best = min(rows, key=lambda r: r["ratio"])
    near = min((r for r in rows if r["ratio"] <= NEAR_BEST * best["ratio"]), key=lambda r: (r[column], r["ratio"]))
    bound = [r for r in rows if (r["ratio_ci_high"] if finite(r["ratio_ci_high"]) else r["ratio"]) <= AFFORDABLE]
    text = (f"{curve_name(key)} (memory: {words}): within {fmt.pct(NEAR_BEST - 1)} of the fastest point "
            f"({best['point']}{'' if best['point'] == best['baseline'] else f', {_ratio(best)} plain'}), the least "
            f"memory is **{near['point']}**: "
            f"{_mib(near[column])}, {_ratio(near)}{_of_plain(near)}")
    if bound:
        small = min(bound, key=lambda r: (r[column], r["ratio"]))
        text += (f"; the least memory at most {fmt.pct(AFFORDABLE - 1)} slower than plain (upper 95 % bound) is "
                 f"**{small['point']}**: {_mib(small[column])}, {_ratio(small)}{_of_plain(small)}")
    else:
        text += f"; no point is at most {fmt.pct(AFFORDABLE - 1)} slower than plain by its upper 95 % bound"
    return text


def budgets(key: tuple[str, ...], curve: pd.DataFrame) -> list[str]:
    """How saved bytes (and peak bytes, where measured) move along torch.compile's memory budgets, plain = 1.0."""
    rows = curve[(curve.budget != "") | (curve.point == "plain")]
    if (rows.budget != "").sum() < 1:
        return []
    rows = rows.assign(_b=pd.to_numeric(rows.budget.replace("", "1.0"))).sort_values("_b", ascending=False)
    out = []
    for column, words in (("saved_bytes", "saved for backward"), ("peak_bytes", "peak memory")):
        values = list(zip(rows._b, rows[column]))
        if not all(finite(v) for _, v in values):
            continue
        steps = ", ".join(f"{b:g}: {fmt.number(v, fmt.MIB)}" for b, v in values)
        if len({v for _, v in values}) == 1:
            out.append(f"{curve_name(key)}: {words} does not change with the budget ({_mib(values[0][1])} at "
                       f"budgets {', '.join(f'{b:g}' for b, _ in values)})")
        elif all(b <= a for (_, a), (_, b) in zip(values, values[1:])):
            out.append(f"{curve_name(key)}: {words} falls monotonically with the budget, from "
                       f"{_mib(values[0][1])} (budget {values[0][0]:g}) to {_mib(values[-1][1])} (budget "
                       f"{values[-1][0]:g}) (MiB by budget: {steps})")
        else:
            rises = [f"{a[0]:g} → {b[0]:g}" for a, b in zip(values, values[1:]) if b[1] > a[1]]
            out.append(f"{curve_name(key)}: {words} does **not** fall monotonically with the budget (MiB by "
                       f"budget: {steps}; rises {', '.join(rises)})")
    return out


def granularity(key: tuple[str, ...], curve: pd.DataFrame) -> str | None:
    """Saved bytes and time ratio for no checkpoint, every 4 and every 2 layers, and every layer."""
    by_point = {r["point"]: r for r in curve.to_dict("records")}
    if not ({"remat_every2", "remat_every4"} & set(by_point)):
        return None
    cells = [f"{p} {_mib(by_point[p]['saved_bytes'])}, {_ratio(by_point[p])}" for p in GRANULARITY if p in by_point]
    return f"{curve_name(key)}: " + "; ".join(cells)


def curve_table(table: pd.DataFrame) -> list[str]:
    """Every point of every curve."""
    lines = ["| framework | mode | formulation | attention | size | point | time (ms) [95 % interval] | ratio to "
             "plain [95 % interval] | saved (MiB) | peak (MiB) | matmul GFLOP |",
             "|---|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    for key, curve in curves(table):
        for r in curve.to_dict("records"):
            time = fmt.number(r["time_s"], 1e-3)
            if finite(r["time_ci_low"], r["time_ci_high"]):
                time += f" [{fmt.number(r['time_ci_low'], 1e-3)}–{fmt.number(r['time_ci_high'], 1e-3)}]"
            peak = (fmt.number(r["peak_bytes"], fmt.MIB) if finite(r["peak_bytes"])
                    else f"n/a ({r['peak_method'].removeprefix('not measured: ') or 'not measured'})")
            framework, mode, formulation, attention, size = key
            lines.append("| " + " | ".join([frameworks.label(framework), mode, formulation, attention or "written",
                                             size, r["point"], time, _ratio(r),
                                             fmt.number(r["saved_bytes"], fmt.MIB), peak,
                                             fmt.number(r["flops"], 1e9)]) + " |")
    return lines


def across_table(table: pd.DataFrame) -> list[str]:
    """JAX against PyTorch per curve point with a PyTorch counterpart (same size, mode, attention and point)."""
    remat = table[table.group == "remat"].to_dict("records")
    torch = {_key(r, COUNTERPART).without("framework"): r for r in remat if r["framework"] == "torch"}
    lines = []
    for j in remat:
        t = torch.get(_key(j, COUNTERPART).without("framework"))
        if j["framework"] != "jax" or t is None:
            continue
        lines.append(f"| {j['size']} | {j['mode']} | {t['formulation']} / {j['formulation']} | "
                     f"{j['attention'] or 'written'} | {j['point']} | "
                     f"{fmt.number(t['time_s'], 1e-3)} | {fmt.number(j['time_s'], 1e-3)} | "
                     f"{fmt.ratio(across(t, j))} | {fmt.ratio(across(t, j, 'saved_bytes'))} |")
    if not lines:
        return []
    return ["| size | mode | formulation (PyTorch / JAX) | attention | point | PyTorch (ms) | JAX (ms) | JAX/PyTorch "
            "step time | JAX/PyTorch saved for backward |", "|---|---|---|---|---|---:|---:|---:|---:|", *lines]


def paired_findings(table: pd.DataFrame, answered: set[str] = frozenset()) -> list[str]:
    """One sentence per two-point experiment, but those `answered` (their verdict is a pillar finding's)."""
    out = []
    for name, rows in table[table.group == "paired"].groupby("experiment", sort=False):
        if name in answered:
            continue
        base = rows[rows.point == rows.baseline].to_dict("records")
        for r in rows[rows.point != rows.baseline].to_dict("records"):
            if not base:
                continue
            b = base[0]
            case = " ".join(v for v in (frameworks.label(r["framework"]), r["workload"], r["size"], r["mode"]) if v)
            out.append(f"{case}: {costs(paired_ratio(r), r['point'], b['point'])} "
                       f"({fmt.value(r['time_s'], 'seconds')} against {fmt.value(b['time_s'], 'seconds')})")
    return out


def section(table: pd.DataFrame | None, figures: list[str], asv_commit: str, h: str,
            answered: set[str] = frozenset()) -> list[str]:
    """summary.md's sections of the paired results of one machine: provenance, the remat curve (figures, findings,
    every point, JAX against PyTorch) and the two-point experiments not `answered` in a pillar's findings."""
    if table is None:
        return []
    first = table.iloc[0]
    procs = ", ".join(str(int(p)) for p in sorted(set(table.processes)))
    same = "the same commit as the asv results" if first.commit == asv_commit else \
        f"**not** the commit of the asv results above (`{asv_commit[:8]}`)"
    lines = [f"{h} remat trade-off curve and paired comparisons (`tape-vs-trace paired`)", "",
             f"From `results/{FOLDER}/{first.machine}-{first.commit[:8]}.csv`: commit `{first.commit}` ({same}), "
             f"device {first.device}, {procs} processes per framework. Each experiment's points are built in one "
             "process and timed call by call, alternating; a time is the geometric mean of the per-process medians "
             "with its 95 % Student-t interval across processes; a ratio to the baseline is formed pass by pass in "
             "one process (median per process, geometric mean and 95 % interval across processes). A difference "
             "is stated only where the ratio's interval excludes every change up to "
             f"{stats.WITHIN_PROCESS * 100:g} % ({stats.BETWEEN_PROCESSES * 100:g} % for JAX/PyTorch, between "
             f"processes): how far such ratios moved between two runs of one commit; else '{fmt.NO_DIFFERENCE}'.", ""]
    lines += [f"![{Path(n).stem}]({n})\n" for n in figures]
    found = [("The least memory near the fastest, and the least memory within 25 % of plain", [
        c for key, curve in curves(table) if (c := choices(key, curve))]),
        ("torch.compile's memory budgets (plain = budget 1.0)", [s for key, curve in curves(table)
                                                                  for s in budgets(key, curve)]),
        ("Checkpoint granularity (saved for backward, ratio of step time to plain)", [
            g for key, curve in curves(table) if (g := granularity(key, curve))])]
    for title, items in found:
        if items:
            lines += [f"{title}:", "", *[f"- {s}." for s in items], ""]
    if (table.group == "remat").any():
        lines += ["Remat trade-off curve (every point; peak n/a where the framework's memory method cannot see the "
                  "step, with the reason; matmul GFLOP counts recomputation):", "", *curve_table(table), ""]
        pairs = across_table(table)
        if pairs:
            lines += ["JAX/PyTorch on the curve, only between like rows (same size, mode, formulation and point; "
                      "memory measured by the same method): a JAX lax.scan is not divided by a PyTorch loop.", "",
                      *pairs, ""]
    paired = paired_findings(table, answered)
    if paired:
        lines += ["Paired comparisons inside one framework (point against baseline, same process):", "",
                  *[f"- {s}." for s in paired], ""]
    if answered:
        lines += [f"{len(answered)} paired comparison(s) answer the same question as a pillar's finding: each has one "
                  "verdict there, from the method with the narrower interval, with the other as its cross-check.", ""]
    return lines
