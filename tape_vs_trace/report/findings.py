"""Findings: sentences written from the table by a table of rules, one bullet per rule listing every case.

A timing difference is stated as one only when the 95 % interval of its ratio (between processes) excludes 1;
otherwise the case reads "no difference measurable on this machine", and without samples no difference is claimed.
Exact values (bytes, counts) differ when they differ. A rule with `ops` (saved bytes) also names, per case, the
producing ops that make the difference, from the saved-bytes breakdown (report/breakdown.py) where there is one.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import breakdown, fmt, stats
from tape_vs_trace.report.select import Cells, display


@dataclass(frozen=True)
class Change:
    """Within each framework: `variant` against `base` on `metric` (a cost in %)."""

    pillar: str
    metric: str
    base: str
    variant: str
    what: str
    ops: bool = False  # name the ops that make the difference (saved bytes, from the breakdown)


@dataclass(frozen=True)
class Across:
    """JAX against PyTorch on like rows of `variant` (the one ratio rule, stats.compare)."""

    pillar: str
    metric: str
    variant: str
    what: str
    ops: bool = False  # name the ops that make the difference (saved bytes, from the breakdown)


@dataclass(frozen=True)
class Side:
    """Two values that count different things, side by side without a ratio."""

    pillar: str
    metric: str
    variant: str
    what: str


RULES: tuple[Change | Across | Side, ...] = (
    # recording: what the tape keeps against what tracing keeps, and what compiling buys
    Across("recording", "track_saved_bytes", "", "JAX's jax.vjp residuals (before XLA) against PyTorch's tape",
           ops=True),
    Side("recording", "track_graph_size", "", "PyTorch autograd nodes and JAX jaxpr equations (forward + backward)"),
    *(Across("recording", "time_step", f"eager{form}", "JAX op-by-op jax.value_and_grad against PyTorch's eager tape")
      for form in ("", "/unrolled")),
    *(Across("recording", "time_step", f"compiled{form}", "jax.jit against torch.compile")
      for form in ("", "/unrolled")),
    *(Change("recording", "time_step", f"eager{form}", f"compiled{form}", "compiling the step")
      for form in ("", "/unrolled")),
    Change("recording", "time_step", "compiled/unrolled", "compiled/scan", "lax.scan instead of a Python loop"),
    Change("recording", "time_forward", "no_grad", "record", "recording the forward for a backward"),
    # custom backward: the hand-written backward against plain autodiff of the same expression
    Change("custom_backward", "track_saved_bytes", "plain", "custom", "the custom backward", ops=True),
    Change("custom_backward", "track_peak_bytes", "plain", "custom", "the custom backward"),
    Change("custom_backward", "time_step", "plain/eager", "custom/eager", "the custom backward, eager"),
    Change("custom_backward", "time_step", "plain/compiled", "custom/compiled", "the custom backward, compiled"),
    # remat: the memory each policy saves (mlp, LSTM); the transformer's curve, times included, is the paired
    # section's (report/paired_section.py)
    *(Change("remat", "track_peak_bytes", "plain", policy, policy) for policy in ("remat_full", "remat_dots")),
    # inference: the cost of recording for a backward, and of the other forward modes
    *(Change("inference", "time_forward", "no_grad", mode, mode) for mode in ("record", "inference_mode", "compiled")),
    Change("inference", "track_peak_bytes", "no_grad", "record", "a recording forward"),
    # engine: each feature against its baseline
    Change("engine", "time_step", "no_hooks/eager", "hooks/eager", "tensor hooks"),
    Change("engine", "time_step", "zero_grad_none/eager", "zero_grad_zeros/eager", "zero_grad(set_to_none=False)"),
    Change("engine", "time_step", "accumulate_tree_add/eager", "accumulate_grad_attr/eager", "accumulating into .grad"),
    # harness: the cost of the suite's own synchronised path
    Change("harness", "time_step", "raw", "synchronized", "the suite's synchronised path"),
)


def _values(a: dict, b: dict) -> str:
    return f"{fmt.value(a['value'], a['unit'])} → {fmt.value(b['value'], b['unit'])}"


def describe(c: stats.Comparison, a: dict, b: dict) -> str:
    """One case of a rule: the change from a to b in %, with its interval or the verdict."""
    if c.low == c.high == c.ratio:  # exact values: a difference is a difference
        if c.ratio == 1:
            return f"unchanged ({fmt.value(a['value'], a['unit'])})"
        return f"{'+' if c.ratio > 1 else '−'}{fmt.pct(c.ratio - 1)} ({_values(a, b)})"
    if c.differs is None:
        return f"{_values(a, b)} ({c.ratio:.3g}×, {fmt.NO_INTERVAL})"
    span = f"ratio 95 % interval {c.low:.3g}–{c.high:.3g}×"
    if not c.differs:
        return f"{fmt.NO_DIFFERENCE} ({_values(a, b)}; {span}{fmt.small(c)})"
    return f"{'+' if c.ratio > 1 else '−'}{fmt.pct(c.ratio - 1)} ({_values(a, b)}; {span})"


def _ops(bd: pd.DataFrame | None, w: str, s: str, a: dict, b: dict, label_a: str, label_b: str) -> str:
    """': B keeps +x of op, ...; A keeps ...' for rows a and b of one case, when the breakdown has both."""
    sides = [(r["variant"].split("/")[0], r["dtype"], r["framework"]) for r in (a, b)]
    if not all(breakdown.has(bd, w, s, *side) for side in sides):
        return ""
    ops_a, ops_b = (breakdown.by_op(bd, w, s, *side) for side in sides)
    return (": " + breakdown.difference(label_b, ops_b, label_a, ops_a)
            + breakdown.note(ops_a, ops_b, a["value"], b["value"], bd.commit.iloc[0]))


def _cases(rule, cells: Cells, bd: pd.DataFrame | None = None) -> list[str]:
    out = []
    for w, s in cells.cases(rule.pillar, rule.metric):
        key = (rule.pillar, rule.metric, w, s)
        if isinstance(rule, Change):
            for fw in frameworks.NAMES:
                a, b = cells.get(*key, rule.base, fw), cells.get(*key, rule.variant, fw)
                c = stats.change(a, b)
                if c.formed:
                    ops = _ops(bd, w, s, a, b, rule.base, rule.variant) if rule.ops else ""
                    out.append(" ".join(v for v in (frameworks.label(fw), w, s, describe(c, a, b)) if v) + ops)
            continue
        t, j = cells.get(*key, rule.variant, "torch"), cells.get(*key, rule.variant, "jax")
        if isinstance(rule, Side):
            if t is not None and j is not None and t["status"] == j["status"] == "ok":
                out.append(f"{w} {s}: PyTorch {fmt.number(t['value'])}, JAX {fmt.number(j['value'])}")
            continue
        c = stats.compare(t, j)
        if c.formed:
            ops = _ops(bd, w, s, t, j, "PyTorch", "JAX") if rule.ops else ""
            out.append(" ".join(v for v in (w, s, describe(c, t, j)) if v) + ops)
        elif c.reason not in ("only one framework ran", "failed"):
            out.append(f"{w} {s}: no ratio ({c.reason})")
    return out


def findings(cells: Cells, bd: pd.DataFrame | None = None) -> dict[str, list[str]]:
    """Per pillar, one sentence per rule that has cases in the table; `bd` is the machine's saved-bytes breakdown.
    A rule whose cases name ops lists them as a nested list (their text has semicolons of its own)."""
    out: dict[str, list[str]] = {}
    for rule in RULES:
        cases = _cases(rule, cells, bd)
        if not cases:
            continue
        what = display(rule.metric)
        if isinstance(rule, Change):
            head = f"**{rule.what}** against {rule.base}, {what}"
        elif isinstance(rule, Across):
            head = f"**{what}, {rule.what}** (JAX/PyTorch, change from PyTorch to JAX)"
        else:
            head = f"**{what}**: {rule.what}; different things, so no ratio"
        if getattr(rule, "ops", False) and bd is not None:
            out.setdefault(rule.pillar, []).append(f"{head}:" + "".join(f"\n  - {case}." for case in cases))
        else:
            out.setdefault(rule.pillar, []).append(f"{head}: " + "; ".join(cases) + ".")
    return out
