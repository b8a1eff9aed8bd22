"""Each framework at its best, a question of its own: per workload and size, PyTorch's fastest gradient step (eager
or compiled, any formulation) against JAX's fastest on the same machine, the ratio across modes by the rule
`stats.fastest` (never mixed into the like-mode tables, and each side's mode named); and what each host's
calibration of both frameworks says of a mode (report.predicted: dispatch cost for eager steps, matmul rate for
compiled ones), said in the finding line."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from implementations import pillars
from tape_vs_trace.report import fmt, headline, predicted, stats
from tape_vs_trace.results.rowkey import RowKey

QUESTION = "What does each framework give at its fastest mode on this machine?"
STEP = (pillars.role_benchmark("step time"), pillars.role("step time")[1].metric)
NO_STEPS = "No like pair of gradient step times in this machine's newest run: nothing to answer it with yet."


@dataclass(frozen=True)
class Best:
    """One workload and size: each framework's fastest step and their ratio across modes."""

    workload: str
    size: str
    torch: dict
    jax: dict
    comparison: stats.Comparison


def _program(row: dict) -> tuple[str, ...]:
    key = RowKey.of(row)
    return (row["workload"], row["size"], *(key.axis(k) for k in stats.MODE_KEYS))


def rows_of(table: pd.DataFrame) -> list[Best]:
    """One machine's latest rows (one dtype and precision): per (workload, size and every parameter but the mode
    keys), each framework's fastest timed step and their `stats.fastest` ratio."""
    prefix, metric = STEP
    sel = table[table.benchmark.str.startswith(prefix) & (table.metric == metric) & (table.status == "ok")]
    groups: dict[RowKey, dict[str, dict]] = {}
    for r in sel.to_dict("records"):
        best = groups.setdefault(RowKey.of(r).without(*stats.MODE_KEYS, "framework"), {})
        if r["framework"] not in best or r["value"] < best[r["framework"]]["value"]:
            best[r["framework"]] = r
    out = []
    for by_fw in groups.values():
        if {"torch", "jax"} <= set(by_fw):
            a, b = by_fw["torch"], by_fw["jax"]
            out.append(Best(a["workload"], a["size"], a, b, stats.fastest(a, b)))
    return out


def calibration_words(mode: str, calibration: dict) -> str:
    """'matmul rate predicts JAX/PyTorch 1.62×': the JAX/PyTorch time ratio the host's calibration of the kind that
    bounds a step of `mode` predicts (predicted.RELEVANT), '' where the mode has no such kind or a value is missing."""
    kind = predicted.RELEVANT.get(mode)
    ratio = predicted.calibrated_ratio(calibration, kind) if kind and calibration else None
    return f"{kind} predicts JAX/PyTorch {ratio:.3g}×" if ratio is not None else ""


def _side(row: dict) -> str:
    words = headline.program_words(_program(row)) or "the step"
    return f"{words}: {fmt.value(row['value'], row['unit'])}"


def section(table: pd.DataFrame, details: dict) -> list[str]:
    """The question, one row per workload and size with both sides' modes, the ratio with its interval, the verdict
    and what the calibration says of each side's mode."""
    found = rows_of(table)
    if not found:
        return [f"**{QUESTION}** {NO_STEPS}", ""]
    first = table.iloc[0]
    calibration = (details.get((first.machine, first.commit)) or {}).get("calibration") or {}
    lines = [f"**{QUESTION}** Per workload and size, each framework's fastest gradient step, whichever its mode "
             "(a ratio across modes, kept apart from the like-mode tables; JAX/PyTorch):", "",
             "| workload | PyTorch's fastest | JAX's fastest | JAX/PyTorch | verdict | "
             "calibration of each side's mode |",
             "|---|---|---|---:|---|---|"]
    for b in found:
        modes = dict.fromkeys(RowKey.of(r).axis("mode") for r in (b.torch, b.jax))
        said = "; ".join(w for w in (calibration_words(m, calibration) for m in modes) if w) or "n/a"
        verdict = headline.verdict(b.comparison, "step time") if b.comparison.formed and \
            math.isfinite(b.comparison.ratio) else "no ratio"
        lines.append(f"| {headline.workload_label((b.workload, b.size))} | {_side(b.torch)} | {_side(b.jax)} | "
                     f"{fmt.ratio(b.comparison)} | {verdict} | {said} |")
    return lines + [""]
