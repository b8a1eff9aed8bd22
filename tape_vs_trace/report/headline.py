"""The headline: JAX/PyTorch ratios of the gradient step's time and of the bytes kept for the backward, one row per
workload, mode, formulation and program, each machine's ratio side by side where there are several; drawn as
results/report/headline.png and told as one sentence per machine; `holds` says on how many machines a finding
holds (the table across machines is report.hosts').

Only like rows are divided (the one ratio rule, report.stats.compare), and only results of the suite's current
benchmark versions take part: a ratio of an older version measured another program.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import fmt, headline_chart, scale, stats
from tape_vs_trace.report.load import Results
from tape_vs_trace.report.scale import size_words
from tape_vs_trace.report.select import base_numerics, latest
from tape_vs_trace.rowkey import RowKey

NAME = "headline.png"
# (what the row measures, benchmark prefix, metric): the step people cite first, and what the tape and the trace keep
MEASURES = (("step time", "recording.GradStep_", "time_step"),
            ("saved for backward", "recording.GraphCost_", "track_saved_bytes"))
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


def rows_of(groups: dict[str, pd.DataFrame]) -> list[Row]:
    """Every formed JAX/PyTorch ratio of the headline measures, per machine, in the suite's order."""
    out = []
    for group, table in groups.items():
        for measure, prefix, metric in MEASURES:
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
    """Which way the ratio points, in words, or that no difference is measurable."""
    more, less = ("slower", "faster") if measure == "step time" else ("keeps more", "keeps less")
    if c.differs is None:
        return f"{c.ratio:.3g}× ({fmt.NO_INTERVAL})"
    if not c.differs:
        return "equal" if c.low == c.high else "no difference measurable"
    return f"JAX {more if c.ratio > 1 else less}"


def _extremes(rows: list[Row]) -> str:
    values = sorted(r.comparison.ratio for r in rows)
    text = [f"{v:.2f}" if v < 10 else f"{v:.0f}" for v in (values[0], values[-1])]
    return f"{text[0]}×" if text[0] == text[1] else f"{text[0]}–{text[1]}×"


# the verdicts of a sentence in one order on every machine: findings first, then what is no finding
VERDICT_ORDER = ("JAX slower", "JAX keeps more", "JAX faster", "JAX keeps less", "no difference measurable", "equal")


def _told(rows: list[Row]) -> str:
    """'JAX slower in 4 (1.65–1.96×), JAX faster in 1 (0.08×; lstm's scan: ...), no difference measurable in 2'."""
    counts: dict[str, list[Row]] = {}
    for r in rows:
        counts.setdefault(verdict(r.comparison, r.measure), []).append(r)
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    out = []
    for word, rs in sorted(counts.items(), key=lambda kv: rank.get(kv[0], len(rank))):
        scans = list(dict.fromkeys(r.case[0] for r in rs if r.case[3] == "scan"))
        scan = " against ".join(f"{fw}'s {op}" for fw, op in frameworks.scan_operators().items())
        note = "; " + ", ".join(f"{w}'s scan" for w in scans) + f": {scan}" if scans else ""
        out.append(f"{word} in {len(rs)} ({_extremes(rs)}{note})" if word.startswith("JAX") or note
                   else f"{word} in {len(rs)}")
    return ", ".join(out)


def _sizes(parts: list[tuple[str, list[Row]]]) -> str:
    """'; rows of different sizes: lstm at 2 layers, 32 characters (eager step time) and ...' where one sentence
    holds a workload at several sizes ('' otherwise)."""
    found: dict[str, dict[str, list[str]]] = {}
    for what, rows in parts:
        for r in rows:
            whats = found.setdefault(r.case[0], {}).setdefault(r.case[1], [])
            whats += [] if what in whats else [what]
    mixed = [f"{w} at " + " and ".join(f"{size_words(w, s)} ({', '.join(whats)})" for s, whats in sizes.items())
             for w, sizes in found.items() if len(sizes) > 1]
    return f"; rows of different sizes: {'; '.join(mixed)}" if mixed else ""


def sentence(rows: list[Row], machine: str, info: dict, scaled: str = "", notes: dict[str, str] | None = None) -> str:
    """The headline in one sentence per machine: per measure and mode, of how many cases JAX is slower (keeps
    more), faster (keeps less) or not measurably different (VERDICT_ORDER), with the range of those ratios; what a
    scan row ran, and the sizes where one workload's rows differ in size; then `scaled` (report.scale.words). `notes`
    adds to a mode's part what the calibration says of it (report.best.notes)."""
    mine = [r for r in rows if r.machine == machine]
    if not mine:
        return ""
    device = mine[0].torch["device"]
    host = ", ".join(str(v) for v in (info.get("cpu"), f"{info['num_cpu']} cores" if info.get("num_cpu") else "")
                     if v)
    parts = []
    for measure in dict.fromkeys(r.measure for r in mine):
        for mode in dict.fromkeys(r.case[2] for r in mine if r.measure == measure):
            what = f"{mode} step time" if measure == "step time" and mode else \
                "bytes saved for the backward" if measure != "step time" else measure
            parts.append((what, [r for r in mine if r.measure == measure and r.case[2] == mode]))
    notes = notes or {}
    told = "; ".join(f"{what} ({len(sel)} case{'s' if len(sel) > 1 else ''}{notes.get(what, '')}): {_told(sel)}"
                     for what, sel in parts)
    return (f"On {machine} ({host + ', ' if host else ''}device {device}), JAX against PyTorch: {told}"
            f"{_sizes(parts)}." + (f" {scaled}" if scaled else ""))


def holds(by_machine: dict[str, Row]) -> str:
    """'JAX slower on 2 of 2 machines', or where the machines disagree, what each says."""
    verdicts = {m: verdict(r.comparison, r.measure) for m, r in by_machine.items()}
    stated = {v for v in verdicts.values() if v.startswith("JAX")}
    if len(stated) == 1 and all(v in stated for v in verdicts.values()):
        return f"{stated.pop()} on {len(verdicts)} of {len(verdicts)} machines"
    if not stated:
        return f"no finding on any of {len(verdicts)} machines"
    return "not on every machine: " + "; ".join(f"{m} {v}" for m, v in verdicts.items())


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
    """headline.png (report.headline_chart): a panel per measure, its lines `_entries`'; False (and nothing written)
    where there is no ratio to draw."""
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
    drawn: bool
    scale: dict[str, str] = field(default_factory=dict)  # group -> report.scale.brief


def build(data: Results, out: Path) -> Headline:
    """The headline of the results, its chart drawn into `out` (where there is a ratio to draw)."""
    groups, left_out = current(data)
    rows = rows_of(groups)
    info = {g: data.machines.get(t.machine.iloc[0], {}) for g, t in groups.items()}
    scaled = {g: scale.brief(t, info[g]) for g, t in groups.items()}
    return Headline(rows, left_out, info, draw(rows, out / NAME, footer(rows, info)), scaled)
