"""The front page's chart (headline.png), read at a glance: one row per answer of the front page, JAX/PyTorch on a
log axis; each framework at its fastest, per workload (report.front.fastest_rows), then each mechanism in like
modes (compiled program, dispatch cost, custom backward, remat, no-grad inference, transforms). A row is not one
machine's: every machine's ratios of that answer sit on it, a point per case and machine with its 95 % interval,
so a reader sees where the machines agree. The legend and the scale stand at the top; the numbers are the tables'.
Every case of one machine, written out, is its own page's strip (report.headline_chart, `strip`)."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from pathlib import Path

from tape_vs_trace.report import front, headline, headline_chart, hosts, like_modes, machine_page, stats
from tape_vs_trace.report.headline import Headline, Row
from tape_vs_trace.report.load import Results
from tape_vs_trace.report.select import latest

FASTEST = "Each framework at its fastest (gradient step, whichever mode)"
MECHANISMS = "Mechanisms, each in like modes"
STRIP = machine_page.RATIO_FIGURE  # a machine's every case (report.headline_chart), on its own page
ALT = ("A row per answer (each at its fastest, per workload; each mechanism in like modes), a point per machine and "
       "case: JAX/PyTorch, log scale, 95 % intervals")
# a point's mode by its marker: the machine is its colour, a finding its fill
MODE_MARKERS = {"compiled": "o", "eager": "^", "no_grad": "^", "": "D"}
MODE_WORDS = (("o", "compiled"), ("^", "eager, or no_grad (inference)"),
              ("D", "no mode: each at its fastest, or bytes"))


@dataclasses.dataclass(frozen=True)
class Answer:
    """One row of the chart: its panel, its label and every machine's ratios of it."""

    panel: str
    label: str
    rows: list[Row]


def answers(top: Headline, fastest: list[Row]) -> list[Answer]:
    """The rows of the chart, in the front page's order: a workload's fastest steps, then the like-mode step times
    of the front page's mechanism table (like_modes.like_mode_rows), then headline.MECHANISMS."""
    out = [Answer(FASTEST, front.case_words(case), [r for r in fastest if r.case == case])
           for case in dict.fromkeys(r.case for r in fastest)]
    like = like_modes.like_mode_rows(top)
    for mode, said in like_modes.MODES.items():
        rows = [r for r in like if r.case[2] == mode]
        name, what = said.split(": ", 1)
        if rows:
            out.append(Answer(MECHANISMS, f"{name} ({what.split(',')[0]})".replace("`", ""), rows))
    for name, what, _, _ in headline.MECHANISMS:
        rows = [r for r in top.extra if r.measure == name]
        if rows:
            out.append(Answer(MECHANISMS, f"{name} ({what.split(', ')[-1]})".replace("`", ""), rows))
    return out


def unlike(answers_: list[Answer], details: dict) -> set[tuple[str, tuple]]:
    """(machine, case) of each ratio left out of its case's verdict (hosts.like_machines): drawn faint."""
    out: set[tuple[str, tuple]] = set()
    for a in answers_:
        by_case: dict[tuple, dict[str, Row]] = {}
        for r in a.rows:
            by_case.setdefault(r.case, {})[r.machine] = r
        for by_machine in by_case.values():
            out |= {(m, r.case) for m, r in by_machine.items() if m in hosts.like_machines(by_machine, details)[1]}
    return out


def scale_words(top: Headline) -> str:
    """'Scale: 2-core CPUs at the sizes of the report's Scale section, not GPU-scale training.' (front.caption)."""
    return front.caption(top, "at the sizes of the report's Scale section").strip("_")


def draw(answers_: list[Answer], path: Path, scale: str, marked: set[tuple[str, tuple]] = frozenset()) -> bool:
    """The chart into `path`: a panel per group of answers, sharing one log axis; per answer a line, each machine's
    points a little apart on it (colour and offset), its mode by marker, filled where the ratio is a finding;
    `marked` (machine, case) ratios (another kind of run) drawn faint, their machine marked † in the legend.
    Title, scale and legend at the top. False (and nothing written) without a ratio."""
    if not any(a.rows for a in answers_):
        return False
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    machines = sorted({r.machine for a in answers_ for r in a.rows})
    panels = list(dict.fromkeys(a.panel for a in answers_))
    per = {p: [a for a in answers_ if a.panel == p] for p in panels}
    font, row, head = 9, 0.42, 1.75  # inches: a line, and the title, scale and legend above the panels
    heights = [row * len(per[p]) + 0.35 for p in panels]
    total = head + sum(heights) + 0.75
    fig = Figure(figsize=(7.5, total), dpi=130)
    fig.suptitle("JAX / PyTorch: above 1, JAX is slower or keeps more", fontsize=font + 2, y=1 - 0.12 / total)
    fig.text(0.5, 1 - 0.42 / total, textwrap.fill(
        f"{scale} A point: one machine's ratio of one case, its bar the 95 % interval across processes; shaded: "
        f"the ±{stats.BETWEEN_PROCESSES * 100:g} % a rerun moves a time ratio.", 110),
        ha="center", va="top", fontsize=font, color="0.3")
    colour = {m: headline_chart.MACHINE_COLOURS[k % len(headline_chart.MACHINE_COLOURS)]
              for k, m in enumerate(machines)}
    faint = {m for m, _ in marked}
    handles = [Line2D([], [], color=colour[m], marker="s", linestyle="", label=m + (" †" if m in faint else ""))
               for m in machines]
    handles += [Line2D([], [], color="0.3", marker=mk, linestyle="", label=w) for mk, w in MODE_WORDS]
    handles += [Line2D([], [], color="0.3", marker="o", markerfacecolor="white", linestyle="",
                       label="hollow: not a finding")]
    fig.legend(handles=handles, loc="upper center", ncol=3, fontsize=font, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.78 / total), columnspacing=1.2, handletextpad=0.3)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    # hspace is a share of the mean panel's height: 0.5 inch between panels
    fig.subplots_adjust(left=0.36, right=0.97, top=1 - head / total, bottom=0.75 / total,
                        hspace=0.5 * len(heights) / sum(heights))
    ends = [v for a in answers_ for r in a.rows for v in (r.comparison.low, r.comparison.high, r.comparison.ratio)
            if math.isfinite(v) and v > 0]
    for ax, panel in zip(axes, panels):
        _panel(ax, per[panel], machines, colour, marked, font)
        ax.set_title(panel, fontsize=font, loc="left", fontweight="bold")
    _axis(axes[-1], min(ends + [1 / 1.1]), max(ends + [1.1]), font)
    if marked:
        fig.text(0.01, 0.1 / total, "† another kind of run: shown faint, left out of the verdicts", fontsize=font,
                 color="0.3")
    fig.savefig(path)
    return True


def _panel(ax, answers_: list[Answer], machines: list[str], colour: dict, marked: set[str], font: int) -> None:
    """One panel's answers, a line each from the top, every machine's points a little apart on it."""
    offsets = {m: (k - (len(machines) - 1) / 2) * 0.6 / max(len(machines), 1) for k, m in enumerate(machines)}
    band = stats.BETWEEN_PROCESSES
    ax.axvspan(1 / (1 + band), 1 + band, color="0.9", zorder=0)
    ax.axvline(1.0, color="0.3", linewidth=1, zorder=1)
    for i, a in enumerate(answers_):
        for r in a.rows:
            c, y = r.comparison, i + offsets[r.machine]
            err = [[c.ratio - c.low], [c.high - c.ratio]] if math.isfinite(c.low) and c.low != c.high else None
            ax.errorbar(c.ratio, y, xerr=err, color=colour[r.machine], marker=MODE_MARKERS.get(r.case[2], "D"),
                        markersize=5, capsize=2, linestyle="", alpha=0.35 if (r.machine, r.case) in marked else 1.0,
                        markerfacecolor=colour[r.machine] if c.differs else "white", zorder=3)
    ax.set_yticks(range(len(answers_)), [textwrap.fill(a.label, 40) for a in answers_], fontsize=font)
    ax.set_ylim(len(answers_) - 0.5, -0.5)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", which="major", alpha=0.3)


def _axis(ax, low: float, high: float, font: int) -> None:
    """The shared log axis, its ticks as ratios, which way is faster said under it."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_xlim(low / 1.3, high * 1.3)
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 3.0) if high < 1e3 * low else (1.0,)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", labelsize=font)
    ax.set_xlabel("JAX/PyTorch, log scale: ← JAX faster or keeps less · JAX slower or keeps more →", fontsize=font)


def build(data: Results, out: Path) -> Headline:
    """The headline of the results (headline.build) with this chart drawn into `out` as headline.NAME."""
    top = headline.build(data)
    fastest = front.fastest_rows(list(latest(data.table).items()))
    lines = answers(top, fastest)
    drawn = draw(lines, out / headline.NAME, scale_words(top), unlike(lines, data.details))
    return dataclasses.replace(top, drawn=drawn)


def strip(top: Headline, group: str, folder: Path) -> list[str]:
    """A machine's every case (report.headline_chart) into `folder` as STRIP, for its own page: [STRIP], or []."""
    rows = [r for r in top.rows if r.machine == group]
    folder.mkdir(parents=True, exist_ok=True)
    return [STRIP] if headline.draw(rows, folder / STRIP, headline.footer(rows, top.info)) else []
