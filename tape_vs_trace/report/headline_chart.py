"""The strip of every case (a machine page's every_ratio.png, report.glance.strip): the JAX/PyTorch ratios of the
headline's measures, per case, on a log axis, each written out; report.headline chooses the rows and labels them."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from tape_vs_trace.report import fmt, stats

if TYPE_CHECKING:
    from tape_vs_trace.report.headline import Row

# a machine is told by its marker; its colour is none of the frameworks' (blue is JAX in every other figure)
MACHINE_COLOURS = ("#2e8b57", "#8e44ad", "#d68910", "#222222", "#808000")
MACHINE_MARKERS = ("o", "s", "D", "^", "v")


def ratio_text(c: stats.Comparison) -> str:
    """'4.7× [4.1–6.5]' (the marker tells whether it is a finding), or an exact '1.000001×' (as many digits as tell
    it from 1)."""
    if c.low == c.high == c.ratio:
        if c.ratio == 1:
            return "1× (equal)"
        if c.negligible:
            return fmt.equal(c)
        return f"{c.ratio:.{3 if abs(c.ratio - 1) >= 1e-3 else 7}g}×"
    text = f"{c.ratio:.3g}×"
    return text + f" [{c.low:.2g}–{c.high:.2g}]" if math.isfinite(c.low) else text


def draw(rows: list[Row], path: Path, footer: str, entries: dict[str, list[tuple[str, tuple | None]]],
         key: str) -> bool:
    """The strip: per measure (`entries`' keys, in order; its lines from the top: a workload's heading, None as
    case, or a case's label) a panel of JAX/PyTorch ratios on a log axis with their 95 % intervals, a line at 1
    and the rerun band shaded; each machine a marker of its own, filled where the ratio is a finding, its value
    written at the right. False (and nothing written) where there is no ratio to draw."""
    if not rows:
        return False
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    machines = list(dict.fromkeys(r.machine for r in rows))
    measures = list(entries)
    # inches per line: room for each machine's ratio, written out, and for a two-line scan label on one machine's
    step = max(0.22 * len(machines), 0.36)
    heights = [step * len(entries[m]) + 0.8 for m in measures]
    font, total = 9, sum(heights) + 1.5
    fig = Figure(figsize=(7.5, total), dpi=130)
    axes = fig.subplots(len(measures), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    fig.suptitle("JAX / PyTorch: above 1, JAX is slower or keeps more", fontsize=font + 2, y=1 - 0.1 / total)
    fig.text(0.5, 1 - 0.45 / total, key, ha="center", fontsize=font, color="0.3")
    for ax, measure in zip(axes, measures):
        _panel(fig, ax, [r for r in rows if r.measure == measure], entries[measure], machines, measure, font)
    handles = [Line2D([], [], color=MACHINE_COLOURS[k % len(MACHINE_COLOURS)], linestyle="",
                      marker=MACHINE_MARKERS[k % len(MACHINE_MARKERS)], label=m) for k, m in enumerate(machines)]
    handles += [Line2D([], [], color="0.2", marker="o", linestyle="", label="filled: a finding"),
                Line2D([], [], color="0.2", marker="o", markerfacecolor="white", linestyle="",
                       label="hollow: not a finding")]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 3), fontsize=font, frameon=False,
               bbox_to_anchor=(0.5, (0.12 + 0.16 * (textwrap.fill(footer, 105).count("\n") + 1)) / total))
    foot = textwrap.fill(footer, 105)
    fig.text(0.01, 0.05 / total, foot, fontsize=font, color="0.3")
    fig.tight_layout(rect=(0, (0.3 + 0.16 * foot.count("\n") + 0.2 * math.ceil(len(handles) / 3)) / total, 0.8,
                           1 - 0.5 / total))
    fig.savefig(path)
    return True


def _panel(fig, ax, mine: list[Row], lines: list[tuple[str, tuple | None]], machines: list[str], measure: str,
           font: int) -> None:
    """One measure's panel: each machine's ratios of `mine` at the lines of their cases, headings between."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    from matplotlib.transforms import blended_transform_factory as blended

    offsets = [(k - (len(machines) - 1) / 2) * 0.8 / len(machines) for k in range(len(machines))]
    where = {case: i for i, (_, case) in enumerate(lines) if case is not None}
    band = stats.BETWEEN_PROCESSES if measure == "step time" else 0.0
    if band:
        ax.axvspan(1 / (1 + band), 1 + band, color="0.88", zorder=0)
    ax.axvline(1.0, color="0.3", linewidth=1, zorder=1)
    for k, machine in enumerate(machines):
        colour, marker = MACHINE_COLOURS[k % len(MACHINE_COLOURS)], MACHINE_MARKERS[k % len(MACHINE_MARKERS)]
        for r in (r for r in mine if r.machine == machine):
            c, y = r.comparison, where[r.case] + offsets[k]
            err = [[c.ratio - c.low], [c.high - c.ratio]] if math.isfinite(c.low) and c.low != c.high else None
            ax.errorbar(c.ratio, y, xerr=err, color=colour, marker=marker, capsize=3, linestyle="",
                        markerfacecolor=colour if c.differs else "white", zorder=3)
            ax.text(1.01, y, ratio_text(c), transform=ax.get_yaxis_transform(), va="center", fontsize=font,
                    color=colour, in_layout=False)  # in the margin the layout's right edge leaves
    ends = [v for r in mine for v in (r.comparison.low, r.comparison.high, r.comparison.ratio) if math.isfinite(v)]
    low, high = min(ends + [1 / (1 + band)]), max(ends + [1 + band])
    ax.set_xscale("log")
    ax.set_xlim(low / 1.25, high * 1.25)
    # a narrow axis needs more ticks than 1-2-5 to be read; a wide one fewer, or the labels collide
    subs = (1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 7.0) if high < 10 * low else (1.0, 2.0, 5.0) if high < 1e2 * low \
        else (1.0, 3.0) if high < 1e3 * low else (1.0,)
    ax.xaxis.set_major_locator(LogLocator(subs=subs))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    # a workload's heading spans the panel on a line of its own; the cases under it are the tick labels
    ax.set_yticks(range(len(lines)), ["" if case is None else text for text, case in lines], fontsize=font)
    for i, (text, case) in enumerate(lines):
        if case is None:
            # from the figure's left edge, on a line with no marker; left out of the layout, or it narrows the
            # panel by its width
            ax.text(0.01, i, text, transform=blended(fig.transFigure, ax.transData), va="center", fontsize=font,
                    fontweight="bold", zorder=4, in_layout=False)
    ax.set_ylim(len(lines) - 0.5, -0.5)
    ax.tick_params(axis="y", length=0)
    ax.tick_params(labelsize=font)
    ax.grid(axis="x", which="major", alpha=0.3)
    ax.set_xlabel(f"step time (forward + backward), JAX/PyTorch, log scale\nshaded: the ±"
                  f"{stats.BETWEEN_PROCESSES * 100:g} % a rerun moves such a ratio; bars: 95 % intervals"
                  if band else "bytes saved for the backward, JAX/PyTorch, log scale (exact)", fontsize=font)
