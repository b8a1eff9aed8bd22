"""The headline: JAX/PyTorch ratios of the gradient step's time and of the bytes kept for the backward, one row per
workload, mode, formulation and program, each machine's ratio side by side where there are several; each machine's
drawn as the strip of its page (`draw`, report.glance.strip; the front page's chart is report.glance's); `holds`
says on how many machines a finding holds (the table across machines is report.hosts').

Only like rows are divided (the one ratio rule, report.stats.compare), and only results of the suite's current
benchmark versions take part: a ratio of an older version measured another program.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from implementations import frameworks, pillars
from tape_vs_trace.report import fmt, headline_chart, scale, stats
from tape_vs_trace.report.load import Results
from tape_vs_trace.report.scale import size_words
from tape_vs_trace.report.select import base_numerics, latest
from tape_vs_trace.results.rowkey import RowKey

NAME = "headline.png"
# (what the row measures, benchmark prefix, metric): the step people cite first, and what the tape and the trace keep
def _role(use: str) -> tuple[str, str]:
    """(benchmark prefix, metric) of the registry's metric for `use` (pillars.Pillar.roles)."""
    return pillars.role_benchmark(use), pillars.role(use)[1].metric


MEASURES = (("step time", *_role("step time")), ("saved for backward", *_role("saved bytes")))
# the other mechanisms' JAX/PyTorch ratios of like rows: (name, what it compares, benchmark prefix, metric)
MECHANISMS = (("custom backward", "`autograd.Function` against `custom_vjp`, step time", *_role("custom step time")),
              ("remat", "`checkpoint` against `jax.checkpoint`, saved bytes", *_role("remat saved bytes")),
              ("no-grad inference", "forward time", *_role("forward time")),
              ("transforms", "`torch.func` against JAX's transforms, step time", *_role("transform step time")))
KEEPS = ("saved for backward", "remat")  # the measures of bytes kept: more or less, not slower or faster
FORMULATION_WORDS = {"unrolled": "Python loop"}  # "scan": scan_label()


@dataclass(frozen=True)
class Row:
    """One JAX/PyTorch ratio of one machine."""

    measure: str
    case: tuple[str, ...]  # (workload, size, mode, formulation, style, attention): the same on every machine
    label: str
    machine: str
    commit: str
    comparison: stats.Comparison
    torch: dict
    jax: dict


def workload_label(case: tuple[str, ...]) -> str:
    """'transformer (4 layers, batch 4, 64 tokens, width 128)'."""
    return f"{case[0]} ({size_words(case[0], case[1])})"


KEY = "rows: mode · loop or scan · style (default/matched) · attention (written/fused)"


def scan_words(names: tuple[str, ...] = frameworks.NAMES) -> str:
    """'PyTorch: prototype torch._higher_order_ops.scan; JAX: lax.scan': what a scan row of `names` ran."""
    return "; ".join(f"{fw}: {op}" for fw, op in frameworks.scan_operators(names).items())


def scan_label() -> str:
    """'scan (PyTorch: prototype torch._higher_order_ops.scan; JAX: lax.scan)': a scan row names what ran."""
    return f"scan ({scan_words()})"


def program_words(case: tuple[str, ...]) -> str:
    """'compiled · Python loop · matched · written': the mode and how the program is written, in KEY's order."""
    _, _, mode, formulation, style, attention = case
    form = scan_label() if formulation == "scan" else FORMULATION_WORDS.get(formulation, formulation)
    return " · ".join(p for p in (mode, form, style, attention) if p)


def case_label(case: tuple[str, ...]) -> str:
    """'transformer (4 layers, ...): compiled · Python loop · matched · written'."""
    words = program_words(case)
    return workload_label(case) + (f": {words}" if words else "")


def _version(value) -> str:
    text = str(value)
    return text[:-2] if text.endswith(".0") else text


def current(data: Results) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Per machine, its latest commit's rows at one dtype and precision; and, for each machine left out, why: its
    latest results are of older benchmark versions than the suite's (results/benchmarks.json)."""
    keep, left_out = {}, []
    for group, rows in latest(data.table).items():
        rows = base_numerics(rows)
        mine = rows[_measured(rows)]
        versions = {name: _version(b.get("version")) for name, b in data.benchmarks.items() if isinstance(b, dict)}
        old = [b for b, v in zip(mine.benchmark, mine.benchmark_version)
               if b in versions and _version(v) != versions[b]]
        if len(mine) and len(old) == len(mine):
            left_out.append(f"{group} (commit {rows.commit.iloc[0][:8]}): its latest results are of older benchmark "
                            "versions, which measured other programs")
            continue
        keep[group] = rows[~rows.benchmark.isin(old)]
    return keep, left_out


def _measured(rows: pd.DataFrame) -> pd.Series:
    """Which rows are of a headline measure (its benchmark and metric)."""
    hit = pd.Series(False, index=rows.index)
    for _, prefix, metric in MEASURES:
        hit |= rows.benchmark.str.startswith(prefix) & (rows.metric == metric)
    return hit


def _case(row: dict) -> tuple[str, ...]:
    key = RowKey.of(row)
    return (row["workload"], row["size"], *(key.axis(k) for k in ("mode", "formulation", "style", "attention")))


def rows_of(groups: dict[str, pd.DataFrame], measures: tuple[tuple[str, str, str], ...] = MEASURES) -> list[Row]:
    """Every formed JAX/PyTorch ratio of `measures` ((what, benchmark prefix, metric)), per machine, in the suite's
    order."""
    out = []
    for group, table in groups.items():
        for measure, prefix, metric in measures:
            sel = table[table.benchmark.str.startswith(prefix) & (table.metric == metric)]
            pairs: dict[RowKey, dict[str, dict]] = {}
            for r in sel.to_dict("records"):
                pairs.setdefault(RowKey.of(r).without("framework"), {})[r["framework"]] = r
            for by_fw in pairs.values():
                c = stats.compare(by_fw.get("torch"), by_fw.get("jax"))
                if not c.formed or not math.isfinite(c.ratio):
                    continue
                case = _case(by_fw["torch"])
                out.append(Row(measure, case, case_label(case), group, by_fw["torch"]["commit"], c, by_fw["torch"],
                               by_fw["jax"]))
    return out


def verdict(c: stats.Comparison, measure: str) -> str:
    """Which way the ratio points, in words: a finding ("JAX slower"), a direction not beyond the band a rerun moves
    it ("JAX 13 % faster, not beyond a rerun's ±10 %", fmt.undecided), or that no difference is measurable."""
    more, less = ("keeps more", "keeps less") if measure in KEEPS else ("slower", "faster")
    if c.differs is None:
        return f"{c.ratio:.3g}× ({fmt.NO_INTERVAL})"
    if not c.differs:
        return "equal" if c.low == c.high else fmt.undecided(c, "JAX", more, less)
    return f"JAX {more if c.ratio > 1 else less}"


def extremes(rows: list[Row]) -> str:
    """'1.65–1.96×': the smallest and largest ratio of `rows`, one value where they meet."""
    values = sorted(r.comparison.ratio for r in rows)
    text = [f"{v:.2f}" if v < 10 else f"{v:.0f}" for v in (values[0], values[-1])]
    return f"{text[0]}×" if text[0] == text[1] else f"{text[0]}–{text[1]}×"


# the verdicts of a sentence in one order on every machine: findings first, then what is no finding
NOT_BEYOND = "not beyond a rerun's band"  # a direction whose interval reaches the band: counted apart from findings
VERDICT_ORDER = ("JAX slower", "JAX keeps more", "JAX faster", "JAX keeps less", NOT_BEYOND,
                 "no difference measurable", "equal")


def tally(rows: list[Row]) -> list[tuple[str, list[Row]]]:
    """`rows` by verdict (a direction not beyond a rerun's band as NOT_BEYOND), in VERDICT_ORDER."""
    counts: dict[str, list[Row]] = {}
    for r in rows:
        said = verdict(r.comparison, r.measure)
        counts.setdefault(NOT_BEYOND if "not beyond" in said else said, []).append(r)
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    return sorted(counts.items(), key=lambda kv: rank.get(kv[0], len(rank)))


def _told(rows: list[Row], notes: bool = True) -> str:
    """'JAX slower in 4 (1.65–1.96×), JAX faster in 1 (0.08×; lstm's scan: ...), no difference measurable in 2'."""
    out = []
    for word, rs in tally(rows):
        scans = list(dict.fromkeys(r.case[0] for r in rs if r.case[3] == "scan"))
        scan = " against ".join(f"{fw}'s {op}" for fw, op in frameworks.scan_operators().items())
        note = "; " + ", ".join(f"{w}'s scan" for w in scans) + f": {scan}" if scans and notes else ""
        out.append(f"{word} in {len(rs)} ({extremes(rs)}{note})" if word.startswith("JAX") or note
                   else f"{word} in {len(rs)}")
    return ", ".join(out)


def told_by_mode(rows: list[Row], notes: bool = True) -> str:
    """'eager: 8 ratios on 4 machines, JAX slower in 8 (3.10–5.20×); compiled: ...': each mode's verdicts counted
    over every machine (`_told`; `notes`: whether a scan row names its operators)."""
    parts = []
    for mode in dict.fromkeys(r.case[2] for r in rows):
        sel = [r for r in rows if r.case[2] == mode]
        n = len({r.machine for r in sel})
        count = f"{len(sel)} ratio{'s' if len(sel) > 1 else ''} on {n} machine{'s' if n > 1 else ''}"
        parts.append(f"{mode + ': ' if mode else ''}{count}, {_told(sel, notes)}")
    return "; ".join(parts)


def holds(by_machine: dict[str, Row]) -> str:
    """On how many machines each finding holds ('JAX slower on 2 of 3'), then each machine whose ratio
    points one way but not beyond a rerun's band, by name; 'no finding on any of N' where none states one."""
    n = len(by_machine)
    said = {m: verdict(r.comparison, r.measure) for m, r in by_machine.items()}
    found = [v for m, v in said.items() if by_machine[m].comparison.differs]
    parts = [f"{v} on {found.count(v)} of {n}" for v in dict.fromkeys(found)] or [f"no finding on any of {n}"]
    return "; ".join(parts + [f"{m}: {v}" for m, v in said.items() if "not beyond" in v])


def _entries(rows: list[Row], measure: str) -> list[tuple[str, tuple | None]]:
    """The panel's lines from the top: a heading per workload and size, then one line per case under it."""
    out: list[tuple[str, tuple | None]] = []
    for case in dict.fromkeys(r.case for r in rows if r.measure == measure):
        head = workload_label(case)
        if (head, None) not in out:
            out.append((head, None))
        out.append((textwrap.fill(program_words(case), 48) or "the step", case))  # a scan label takes two lines
    return out


def draw(rows: list[Row], path: Path, footer: str) -> bool:
    """The strip of every case (report.headline_chart): a panel per measure, its lines `_entries`'; False (and
    nothing written) where there is no ratio to draw."""
    measures = [m for m, _, _ in MEASURES if any(r.measure == m for r in rows)]
    return headline_chart.draw(rows, path, footer, {m: _entries(rows, m) for m in measures}, KEY)


def footer(rows: list[Row], info: dict[str, dict] | None = None) -> str:
    """The chart's caption: each machine's run and host (device, cores), and for CPU runs that they are not
    GPU-scale training; the sizes are in the row labels."""
    info = info or {}
    cores = {m: {"num_cpu": i.get("num_cpu")} for m, i in info.items()}  # the CPU's name is in summary.md
    commits = ", ".join(dict.fromkeys(
        f"{r.machine} at {r.commit[:8]} ({scale.host(r.torch['device'], cores.get(r.machine, {}))})" for r in rows))
    cpu = f"; {scale.NOT_GPU_SCALE}" if any(r.torch["device"] == "cpu" for r in rows) else ""
    return (f"{commits}; bars: 95 % intervals across processes; ratios only between like rows (same mode, size, "
            f"dtype, precision, formulation, style and attention){cpu} · tape-vs-trace report")


@dataclass(frozen=True)
class Headline:
    """What summary.md and the README say at the top: the rows, the machines left out, each machine's record."""

    rows: list[Row]
    left_out: list[str]
    info: dict[str, dict]  # group -> machine.json
    drawn: bool  # whether the front page's chart (NAME, report.glance) was drawn
    extra: list[Row] = field(default_factory=list)  # the other mechanisms' ratios (MECHANISMS)
    no_matmuls: frozenset = frozenset()  # workloads whose step has no matmuls (scale.no_matmuls) on every machine


def build(data: Results) -> Headline:
    """The headline of the results, not yet drawn (report.glance draws the front page's chart)."""
    groups, left_out = current(data)
    rows = rows_of(groups)
    info = {g: data.machines.get(t.machine.iloc[0], {}) for g, t in groups.items()}
    extra = rows_of(groups, tuple((name, prefix, metric) for name, _, prefix, metric in MECHANISMS))
    return Headline(rows, left_out, info, False, extra,
                    scale.counted_without_matmuls(list(groups.values())))
