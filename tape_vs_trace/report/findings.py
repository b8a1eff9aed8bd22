"""Findings: sentences written from the table by the rules of each pillar (implementations/pillars.py), one bullet per
rule listing every case.

A timing difference is stated as one only when the 95 % interval of its ratio (between processes) excludes 1;
otherwise the case reads "no difference measurable on this machine" where the interval includes 1, and its change
marked "not beyond a rerun's ±10 %" where it excludes 1 but reaches that band; without samples no difference is
claimed.
Exact values (bytes, counts) differ when they differ. A rule with `ops` (saved bytes) also names, per case, the
producing ops that make the difference, from the saved-bytes breakdown (report/breakdown.py) where there is one.

Where the paired runner (`tape-vs-trace paired`) divides the same two asv combinations call by call, a step-time
case gets one verdict: the method with the narrower interval states it and the other is shown as its cross-check;
where their intervals miss each other, the case says so and states no finding.
"""

from __future__ import annotations

import json
import math
import re

import pandas as pd

from implementations import frameworks, pillars
from implementations.pillars import Across, Change, ProgramChange, Rule, Side
from tape_vs_trace.report import breakdown, fmt, paired_section, stats
from tape_vs_trace.report.load import program_label
from tape_vs_trace.report.select import Cells, display
from tape_vs_trace.results.rowkey import RowKey, params_of
from tape_vs_trace.results.schema import SAVED_VARIANTS


def _values(a: dict, b: dict) -> str:
    return f"{fmt.value(a['value'], a['unit'])} → {fmt.value(b['value'], b['unit'])}"


def describe(c: stats.Comparison, a: dict, b: dict) -> str:
    """One case of a rule: the change from a to b in %, with its interval or the verdict."""
    if c.low == c.high == c.ratio:  # exact values: a difference beyond the metric's resolution is a difference
        if c.ratio == 1:
            return f"unchanged ({fmt.value(a['value'], a['unit'])})"
        if c.negligible:
            return f"{fmt.equal(c, _side(a, b))} ({fmt.value(a['value'], a['unit'])})"
        return f"{fmt.change(c.ratio)} ({_values(a, b)})"
    if c.differs is None:
        return f"{_values(a, b)} ({c.ratio:.3g}×, {fmt.NO_INTERVAL})"
    span = f"ratio 95 % interval {c.low:.3g}–{c.high:.3g}×"
    if not c.differs:
        words = fmt.NO_DIFFERENCE if c.low <= 1.0 <= c.high else f"{fmt.change(c.ratio)}, not beyond {fmt.band(c)}"
        return f"{words} ({_values(a, b)}; {span})"
    return f"{fmt.change(c.ratio)} ({_values(a, b)}; {span})"


def _side(a: dict, b: dict) -> str:
    """How a case names its second row: the framework where the two differ in it, else the variant, else the
    program."""
    if a["framework"] != b["framework"]:
        return frameworks.label(b["framework"])
    if a["variant"] != b["variant"]:
        return b["variant"]
    return program_label(b.get("program") or "") or "the second"


def _ops(bd: pd.DataFrame | None, w: str, s: str, a: dict, b: dict, label_a: str, label_b: str) -> str:
    """': B keeps +x of op, ...; A keeps ...' for rows a and b of one case, when the breakdown has both."""
    # The breakdown is of the Python loop (the like form) and names the backward variant, "plain" or "custom".
    if any("scan" in r["variant"].split("/") for r in (a, b)):
        return ""
    sides = [(_backward(r["variant"]), r["dtype"], r["framework"], r.get("program") or "") for r in (a, b)]
    if not all(breakdown.has(bd, w, s, *side) for side in sides):
        return ""
    # a breakdown from before the program column ran JAX's lax.scan: its ops do not explain a loop row
    for r in (a, b):
        forms = set(bd[(bd.workload == w) & (bd.framework == r["framework"])].get("formulation", pd.Series([""])))
        if not forms <= {"", json.loads(r["params"]).get("formulation", "")}:
            return ""
    ops_a, ops_b = (breakdown.by_op(bd, w, s, *side) for side in sides)
    return (": " + breakdown.difference(label_b, ops_b, label_a, ops_a)
            + breakdown.note(ops_a, ops_b, a["value"], b["value"], bd.commit.iloc[0]))


def _backward(variant: str) -> str:
    first = variant.split("/")[0]
    return first if first in SAVED_VARIANTS else "plain"


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


class Paired:
    """The paired results of one run, looked up by the asv combinations their points time."""

    def __init__(self, table: pd.DataFrame | None, device: str):
        from implementations import experiments

        self.rows = {} if table is None else {(r["experiment"], r["point"]): r for r in
                                              table[table.group == "paired"].to_dict("records")}
        self.commit = "" if table is None or table.empty else table.commit.iloc[0]
        # an asv combination can be a point of several experiments (the baseline of one, the variant of another)
        self.points: dict[RowKey, list[tuple[str, str, bool]]] = {}
        for e in experiments.experiments(device) if self.rows else []:
            if e.group != "paired":
                continue
            for p in e.points:
                benchmark, params = experiments.asv_combination(e, p, device)
                self.points.setdefault(_key(benchmark, params), []).append((e.name, p.label, p == e.baseline))

    def experiment(self, a: dict, b: dict) -> tuple[str, str] | None:
        """(experiment, point) of the run's paired results with a as its baseline and b as its other point."""
        if a.get("commit") != self.commit:
            return None
        of_a, of_b = (self.points.get(_key(r["benchmark"], params_of(r)), []) for r in (a, b))
        bases = {name for name, _, base in of_a if base}
        return next(((name, label) for name, label, base in of_b if not base and name in bases
                     and (name, label) in self.rows), None)

    def ratio(self, a: dict, b: dict) -> stats.Comparison | None:
        """The paired ratio of b over a, where one experiment of the same commit divides exactly these two."""
        found = self.experiment(a, b)
        return paired_section.paired_ratio(self.rows[found]) if found else None

    def times(self, a: dict, b: dict) -> tuple[dict, dict] | None:
        """The paired table's own times of a and b (its baseline and point), which a paired verdict prints beside
        its ratio: asv's medians of the same combinations are another estimator."""
        found = self.experiment(a, b)
        base = self.rows.get((found[0], self.rows[found]["baseline"])) if found else None
        if base is None:
            return None
        return {"value": base["time_s"], "unit": "seconds"}, {"value": self.rows[found]["time_s"], "unit": "seconds"}


def _key(benchmark: str, params: dict) -> RowKey:
    """The key of an asv combination, each value as text: the experiment and the result file may type one apart."""
    text = {k: str(v) for k, v in params.items()}
    return RowKey.of({"benchmark": benchmark, "framework": text.get("framework", ""), "params": text})


def _width(c: stats.Comparison) -> float:
    """The interval's width in log terms; infinite without one."""
    if not (math.isfinite(c.low) and math.isfinite(c.high)) or c.low <= 0:
        return math.inf
    return math.log(c.high / c.low)


PAIRED, ACROSS = "paired call by call in one process", "across processes"


def one_verdict(asv: stats.Comparison, paired: stats.Comparison, a: dict, b: dict,
                times: tuple[dict, dict]) -> str:
    """One verdict for one question answered by both methods: the narrower interval's, with that estimator's own
    times (asv's rows a and b, or the paired table's `times`), the other as cross-check; no finding where the two
    intervals miss each other."""
    if _width(asv) < math.inf and _width(paired) < math.inf and (paired.high < asv.low or paired.low > asv.high):
        return (f"the two methods disagree beyond their intervals ({PAIRED}: {fmt.ratio(paired, '')}; {ACROSS}: "
                f"{fmt.ratio(asv, '')}): no finding")
    (first, how, rows), (second, other, _) = sorted([(paired, PAIRED, times), (asv, ACROSS, (a, b))],
                                                    key=lambda m: _width(m[0]))
    return f"{describe(first, *rows)}, {how}; cross-check {other}: {fmt.ratio(second, '')}"  # within one framework


def _cases(pillar: str, rule: Rule, cells: Cells, bd: pd.DataFrame | None = None,
           paired: Paired | None = None) -> list[str]:
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
                    pc = paired.ratio(a, b) if paired is not None else None
                    times = paired.times(a, b) if pc is not None else None
                    told = describe(c, a, b) if times is None else one_verdict(c, pc, a, b, times)
                    out.append(" ".join(v for v in (frameworks.label(fw), name, told) if v) + ops)
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


NO_RATIO = re.compile(r"(?P<case>.+): no ratio \((?P<reason>[^()]*)\)")  # _cases' line for a refused case


def _refused(cases: list[str]) -> tuple[str, str] | None:
    """(cases, reason) where every case of a rule is refused for one reason; None otherwise."""
    found = [NO_RATIO.fullmatch(c) for c in cases]
    if not all(found) or len({m["reason"] for m in found}) != 1:
        return None
    return "; ".join(m["case"] for m in found), found[0]["reason"]


def findings(cells: Cells, bd: pd.DataFrame | None = None, paired: Paired | None = None) -> dict[str, list[str]]:
    """Per pillar, one sentence per rule that has cases in the table, and one per metric and reason for the rules
    whose every case is refused for that reason (a CPU's peaks: one line, not one per transform); `bd` is the
    machine's saved-bytes breakdown, `paired` its paired results (a step-time case both answer gets one verdict).
    A rule whose cases name ops lists them as a nested list (their text has semicolons of its own)."""
    out: dict[str, list[str]] = {}
    refused: dict[tuple[str, str, str, str], list[str]] = {}
    for pillar, rule in pillars.findings():
        cases = _cases(pillar, rule, cells, bd, paired)
        if not cases:
            continue
        what = display(rule.metric)
        if isinstance(rule, Across) and (why := _refused(cases)):
            refused.setdefault((pillar, what, *why), []).append(rule.what)
            continue
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
    for (pillar, what, cases, reason), whats in refused.items():
        out.setdefault(pillar, []).append(f"**{what}, {', '.join(whats)}** (JAX/PyTorch): {cases}: no ratio "
                                          f"({reason}).")
    return out


def answered(cells: Cells, paired: Paired) -> set[str]:
    """The paired experiments whose question a pillar's finding already answers (with one verdict)."""
    names = set()
    for pillar, rule in pillars.findings():
        if not isinstance(rule, Change):
            continue
        for w, s, prog in cells.cases(pillar, rule.metric):
            for fw in frameworks.NAMES:
                a = cells.get(pillar, rule.metric, w, s, prog, rule.base, fw)
                b = cells.get(pillar, rule.metric, w, s, prog, rule.variant, fw)
                if a is not None and b is not None and (found := paired.experiment(a, b)):
                    names.add(found[0])
    return names
