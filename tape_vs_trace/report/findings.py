"""Findings: sentences written from the table by the rules of each pillar (implementations/pillars.py), one bullet per
rule listing every case.

A timing difference is stated as one only when the 95 % interval of its ratio (between processes) excludes 1;
otherwise the case reads "no difference measurable on this machine", and without samples no difference is claimed.
Exact values (bytes, counts) differ when they differ. A rule with `ops` (saved bytes) also names, per case, the
producing ops that make the difference, from the saved-bytes breakdown (report/breakdown.py) where there is one.
"""

from __future__ import annotations

import pandas as pd

from implementations import frameworks, pillars
from implementations.pillars import Across, Change, ProgramChange, Rule, Side
from tape_vs_trace import saved
from tape_vs_trace.report import breakdown, fmt, stats
from tape_vs_trace.report.load import program_label
from tape_vs_trace.report.select import Cells, display


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
    # The breakdown is of the Python loop (the like form) and names the backward variant, "plain" or "custom".
    if any("scan" in r["variant"].split("/") for r in (a, b)):
        return ""
    sides = [(_backward(r["variant"]), r["dtype"], r["framework"], r.get("program") or "") for r in (a, b)]
    if not all(breakdown.has(bd, w, s, *side) for side in sides):
        return ""
    ops_a, ops_b = (breakdown.by_op(bd, w, s, *side) for side in sides)
    return (": " + breakdown.difference(label_b, ops_b, label_a, ops_a)
            + breakdown.note(ops_a, ops_b, a["value"], b["value"], bd.commit.iloc[0]))


def _backward(variant: str) -> str:
    first = variant.split("/")[0]
    return first if first in saved.SUITE_VARIANTS else "plain"


def _case_name(w: str, s: str, program: str) -> str:
    """A case as findings name it: workload, size and, where the workload has them, style and attention."""
    label = program_label(program)
    return " ".join(v for v in (w, s, f"({label})" if label else "") if v)


def _restyled(program: str, axis: str, value: str) -> str:
    """`program` with its `axis` ("style" or "attention") set to `value`; "" where it has no such axis."""
    parts = program.split("/") if program else []
    index = {"style": 0, "attention": 1}[axis]
    if len(parts) <= index:
        return ""
    return "/".join(value if i == index else p for i, p in enumerate(parts))


def _program_cases(pillar: str, rule: ProgramChange, cells: Cells, bd: pd.DataFrame | None) -> list[str]:
    out = []
    variants = list(dict.fromkeys(cells.table[(cells.table.pillar == pillar)
                                              & (cells.table.metric == rule.metric)].variant))
    for w, s, prog in cells.cases(pillar, rule.metric):
        if not prog or _restyled(prog, rule.axis, rule.base) != prog:
            continue
        other = _restyled(prog, rule.axis, rule.variant)
        for v in variants:
            for fw in frameworks.NAMES:
                a = cells.get(pillar, rule.metric, w, s, prog, v, fw)
                b = cells.get(pillar, rule.metric, w, s, other, v, fw)
                c = stats.change(a, b)
                if c.formed:
                    ops = _ops(bd, w, s, a, b, rule.base, rule.variant) if rule.ops else ""
                    out.append(" ".join(x for x in (frameworks.label(fw), _case_name(w, s, prog), v,
                                                    describe(c, a, b)) if x) + ops)
    return out


def _cases(pillar: str, rule: Rule, cells: Cells, bd: pd.DataFrame | None = None) -> list[str]:
    if isinstance(rule, ProgramChange):
        return _program_cases(pillar, rule, cells, bd)
    out = []
    for w, s, prog in cells.cases(pillar, rule.metric):
        key, name = (pillar, rule.metric, w, s, prog), _case_name(w, s, prog)
        if isinstance(rule, Change):
            for fw in frameworks.NAMES:
                a, b = cells.get(*key, rule.base, fw), cells.get(*key, rule.variant, fw)
                c = stats.change(a, b)
                if c.formed:
                    ops = _ops(bd, w, s, a, b, rule.base, rule.variant) if rule.ops else ""
                    out.append(" ".join(v for v in (frameworks.label(fw), name, describe(c, a, b)) if v) + ops)
            continue
        t, j = cells.get(*key, rule.variant, "torch"), cells.get(*key, rule.variant, "jax")
        if isinstance(rule, Side):
            if t is not None and j is not None and t["status"] == j["status"] == "ok":
                out.append(f"{name}: PyTorch {fmt.number(t['value'])}, JAX {fmt.number(j['value'])}")
            continue
        c = stats.compare(t, j)
        if c.formed:
            ops = _ops(bd, w, s, t, j, "PyTorch", "JAX") if rule.ops else ""
            out.append(" ".join(v for v in (name, describe(c, t, j)) if v) + ops)
        elif c.reason not in ("only one framework ran", "failed"):
            out.append(f"{name}: no ratio ({c.reason})")
    return out


def findings(cells: Cells, bd: pd.DataFrame | None = None) -> dict[str, list[str]]:
    """Per pillar, one sentence per rule that has cases in the table; `bd` is the machine's saved-bytes breakdown.
    A rule whose cases name ops lists them as a nested list (their text has semicolons of its own)."""
    out: dict[str, list[str]] = {}
    for pillar, rule in pillars.findings():
        cases = _cases(pillar, rule, cells, bd)
        if not cases:
            continue
        what = display(rule.metric)
        if isinstance(rule, Change):
            head = f"**{rule.what}** against {rule.base}, {what}"
        elif isinstance(rule, ProgramChange):
            head = f"**{rule.what}** ({rule.axis} {rule.base} → {rule.variant}), {what}"
        elif isinstance(rule, Across):
            head = f"**{what}, {rule.what}** (JAX/PyTorch, change from PyTorch to JAX)"
        else:
            head = f"**{what}**: {rule.what}; different things, so no ratio"
        if getattr(rule, "ops", False) and bd is not None:
            out.setdefault(pillar, []).append(f"{head}:" + "".join(f"\n  - {case}." for case in cases))
        else:
            out.setdefault(pillar, []).append(f"{head}: " + "; ".join(cases) + ".")
    return out
