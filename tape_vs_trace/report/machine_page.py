"""A machine's page of its own (<machine>/summary.md beside the front page): its scale, its findings per pillar,
each framework at its best, the tables of every pillar, what was not run, the paired and distributed sections,
compile growth where the run holds CompilePhases rows, and provenance."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from implementations import pillars
from tape_vs_trace.report import best, distributed_section, fmt, paired_section, provenance, tables
from tape_vs_trace.report.findings import Paired, answered, findings
from tape_vs_trace.report.load import Results
from tape_vs_trace.report.select import Cells, base_numerics, ordered

CURVE_FIGURES = "remat_curve_"  # report/curve.py's remat_curve_<size>.png: in the paired section
SAVED_FIGURES = "saved_"  # report/breakdown.py's saved_<workload>.png: what the tape and the trace keep, by op
RATIO_FIGURE = "every_ratio.png"  # report/glance.py's strip: every JAX/PyTorch ratio of the machine, by case
COMPILE_FIGURE = "compile_growth.png"  # report/compile_growth.py's FIGURE, which build draws and words
NAME = "summary.md"


TABLES = "tables.md"  # every table of a machine, a page of its own beside its summary (which stays short)


def path(group: str) -> str:
    """Where a machine's page lies, relative to the front page."""
    return f"{group}/{NAME}"


def tables_path(group: str) -> str:
    """Where a machine's page of every table lies, relative to the front page."""
    return f"{group}/{TABLES}"


def _here(group: str, name: str) -> str:
    """A figure's link from the machine's page: figures of several machines lie in its folder, of one at the top."""
    return name.removeprefix(f"{group}/") if name.startswith(f"{group}/") else f"../{name}"


def _findings(rows: pd.DataFrame, found: dict) -> list[str]:
    lines = []
    for pillar in [p for p in pillars.PILLARS if found.get(p)]:
        lines += [f"### {pillar}", "", *[f"- {s}" for s in found[pillar]], ""]
        if any(fmt.NO_INTERVAL in s for s in found[pillar]):
            lines += [f"_{fmt.NO_INTERVAL}_: the ratio's results carry no between-process samples (recorded "
                      "without --record-samples, or one process), so it is shown but not claimed as a "
                      "difference.", ""]
    return lines


def compile_section(said: list[str], links: list[str], level: str = "##") -> list[str]:
    """Compile time against depth (issue 40): the figure among `links` (relative to the page) and
    report.compile_growth's lines (its findings, or that the series has not run); nothing without lines."""
    if not said:
        return []
    shown = [f"![compile growth]({link})" for link in links if Path(link).name == COMPILE_FIGURE]
    return [f"{level} Compile time against depth", "", *shown, "", *[f"- {s}" for s in said], ""]


def _pillars(data: Results, rows: pd.DataFrame, figures: list[str], group: str, numerics: bool) -> list[str]:
    machine, commit = rows.machine.iloc[0], rows.commit.iloc[0]
    body = []
    skipped = data.skipped
    if len(skipped):
        skipped = skipped[(skipped.machine == machine) & (skipped.commit == commit)]
    present = [p for p in pillars.PILLARS if p in set(rows.pillar)]
    for pillar in present + sorted(set(rows.pillar) - set(pillars.PILLARS)):
        body += [f"## {pillar}", ""]
        body += [f"![{Path(n).stem}]({_here(group, n)})\n" for n in figures
                 if Path(n).name == f"{pillar}.png"
                 or (pillar == "recording" and Path(n).name.startswith(SAVED_FIGURES))]
        sel = ordered(rows[rows.pillar == pillar])
        for metric in dict.fromkeys(sel.metric):
            body += tables.metric_table(sel[sel.metric == metric], numerics) + [""]
    missing = tables.not_run_table(skipped, rows) if len(skipped) else []
    if missing:
        body += ["## Not run", "", "What asv recorded as skipped, counted by framework and reason:", "", *missing, ""]
    return body


def tables_page(data: Results, group: str, rows: pd.DataFrame, figures: list[str]) -> str:
    """A machine's every table, pillar by pillar with its figures, what was not run, the paired comparisons and the
    distributed steps: beside its summary, which stays short."""
    numerics = len(set(zip(rows.dtype, rows.precision)) - {("", "")}) > 1
    commit = rows.commit.iloc[0]
    machine = rows.machine.iloc[0]
    paired = Paired(data.paired.get(machine), rows.device.iloc[0])
    lines = [f"# {group}: every table", "", f"[Back to {group}'s page]({NAME}) · commit `{commit[:8]}`; the scale, "
             "sizes and provenance are on that page.", "", *_pillars(data, rows, figures, group, numerics)]
    curves = [_here(group, n) for n in figures if Path(n).name.startswith(CURVE_FIGURES)]
    lines += paired_section.section(data.paired.get(machine), curves, commit, "##",
                                    answered(Cells(base_numerics(rows)), paired) if paired.rows else set())
    spread = [_here(group, n) for n in figures if Path(n).name.startswith(distributed_section.FIGURES)]
    lines += distributed_section.section(data.distributed.get(machine), spread, commit, "##")
    return "\n".join(lines)


def page(data: Results, group: str, rows: pd.DataFrame, figures: list[str], scaled: str,
         compiled: list[str] = ()) -> str:
    """The machine's page: scale, findings, each framework at its best, a link to its every table (`tables_page`),
    compile growth and provenance."""
    machine, commit = rows.machine.iloc[0], rows.commit.iloc[0]
    base = base_numerics(rows)
    cells = Cells(base)
    paired = Paired(data.paired.get(machine), rows.device.iloc[0])
    numerics = len(set(zip(rows.dtype, rows.precision)) - {("", "")}) > 1
    lines = [f"# {group}", "", "[Back to the summary](../summary.md)", "",
             f"Commit `{commit[:8]}` ({rows.date.iloc[0]}), torch {rows.torch_version.iloc[0]}, jax "
             f"{rows.jax_version.iloc[0]}.", "", scaled, ""]
    if numerics:
        first = base[base.dtype != ""].iloc[0]
        lines += [f"Findings and figures use {first.dtype} at matmul precision {first.precision}; the tables show "
                  "every dtype and precision.", ""]
    lines += ["## Findings", "", *_findings(rows, findings(cells, data.saved.get(machine), paired))]
    lines += ["## Each framework at its best", "", *best.section(base, data.details)]
    lines += [f"![Every JAX/PyTorch ratio of this machine's gradient step time and saved bytes, by case, log scale, "
              f"95 % intervals]({_here(group, n)})\n" for n in figures if Path(n).name == RATIO_FIGURE]
    lines += ["## All results", "", f"Every table of every pillar with its figures, what was not run and the "
              f"measurements beside asv (the remat trade-off curve, paired and distributed): [{TABLES}]({TABLES}).", ""]
    lines += compile_section(list(compiled), [_here(group, n) for n in figures])
    lines += ["## Provenance", "", *provenance.provenance(data, rows), ""]
    return "\n".join(lines)
