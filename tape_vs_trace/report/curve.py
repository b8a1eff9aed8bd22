"""The remat trade-off curve of the paired results, one figure per transformer size (remat_curve_<size>.png): step
time against memory, one line per framework x mode x formulation through its points ordered by memory, every point
labelled, the Pareto-optimal points of each line ringed.

Two panels: peak bytes where the framework's memory method sees the step (on a CPU not compiled PyTorch, not
op-by-op JAX), and saved bytes, which every point has."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import fmt
from tape_vs_trace.report.figures import DPI, FONT, WIDTH
from tape_vs_trace.report.paired_results import curves, finite, pareto

# Line style and marker per (mode, formulation); colour per framework (the registry).
STYLES = {("eager", "unrolled"): ("-", "o"), ("compiled", "unrolled"): ("--", "s"), ("compiled", "scan"): (":", "^"),
          ("eager", "scan"): ("-.", "D")}
PANELS = (("peak_bytes", "peak memory (MiB)"), ("saved_bytes", "saved for backward (MiB)"))


def short(point: str) -> str:
    """A point's label on the figure: the policy without 'remat_', a budget as b=0.5."""
    return point.removeprefix("remat_").replace("budget ", "b=")


def _log_y(ax) -> None:
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _: f"{v:.3g}")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


def _panel(ax, lines: list[tuple[tuple[str, ...], pd.DataFrame]], column: str, xlabel: str, t_div: float) -> None:
    drawn = 0
    for key, curve in lines:
        framework, mode, formulation, _ = key
        rows = [r for r in curve.to_dict("records") if finite(r[column], r["time_s"])]
        if len(rows) != len(curve):  # a curve is drawn whole or not at all: a part of a curve misleads
            continue
        rows.sort(key=lambda r: (r[column], r["time_s"]))
        color = frameworks.FRAMEWORKS[framework].color
        style, marker = STYLES.get((mode, formulation), ("-", "o"))
        xs = [r[column] / fmt.MIB for r in rows]
        ys = [r["time_s"] / t_div for r in rows]
        err = [[(r["time_s"] - r["time_ci_low"]) / t_div if finite(r["time_ci_low"]) else 0 for r in rows],
               [(r["time_ci_high"] - r["time_s"]) / t_div if finite(r["time_ci_high"]) else 0 for r in rows]]
        ax.errorbar(xs, ys, yerr=err, color=color, linestyle=style, marker=marker, markersize=4, capsize=2,
                    linewidth=1.2, label=f"{frameworks.label(framework)} {mode} {formulation}")
        optimal = pareto([r["time_s"] for r in rows], [r[column] for r in rows])
        ax.scatter([x for x, o in zip(xs, optimal) if o], [y for y, o in zip(ys, optimal) if o], s=130,
                   facecolors="none", edgecolors=color, linewidths=1.2, zorder=3)
        for r, x, y in zip(rows, xs, ys):
            ax.annotate(short(r["point"]), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=FONT,
                        color=color)
        drawn += 1
    if not drawn:
        ax.text(0.5, 0.5, "no curve has this memory\non this device", ha="center", va="center",
                transform=ax.transAxes, color="0.4", fontsize=FONT)
    ax.set_xlim(left=0)
    ax.set_xlabel(xlabel, fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.grid(alpha=0.3, which="both")


def figure(table: pd.DataFrame, size: str, footer: str, path: Path) -> None:
    """Step time (log, with 95 % interval bars) against peak memory (left) and saved bytes (right) at one size, one
    row of panels per mode (eager, compiled): fewer lines per panel, labels that can be read."""
    from matplotlib.figure import Figure

    lines = [(k, c) for k, c in curves(table) if k[3] == size]
    modes = list(dict.fromkeys(k[1] for k, _ in lines))
    times = table[table["size"] == size].time_s
    t_div, t_unit = fmt.scale("seconds", list(times))
    foot = textwrap.fill(footer, 105)
    fig = Figure(figsize=(WIDTH, 1.9 + 3.3 * len(modes)), dpi=DPI)
    axes = fig.subplots(len(modes), 2, sharey=True, squeeze=False)
    fig.suptitle(f"remat trade-off, transformer {size}: step time against memory", fontsize=FONT + 2)
    for row, mode in zip(axes, modes):
        for ax, (column, xlabel) in zip(row, PANELS):
            _panel(ax, [(k, c) for k, c in lines if k[1] == mode], column, xlabel, t_div)
            ax.set_title(f"{mode}: {'peak, where measured' if column == 'peak_bytes' else 'saved, every line'}",
                         fontsize=FONT)
        row[0].set_ylabel(f"step time ({t_unit}, log)", fontsize=FONT)
    _log_y(axes[0][0])
    # With few processes an interval can span decades: the axis follows the points and the bars run off it.
    axes[0][0].set_ylim(times.min() / t_div / 1.4, times.max() / t_div * 1.4)
    handles, labels = [], []
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    height = fig.get_figheight()
    note = ("bars: 95 % interval across processes (cut at the axis); ringed: Pareto-optimal within its line (no point "
            "of the line both faster and smaller); labels: policy without 'remat_', or torch.compile memory budget "
            "(b=0.5)")
    text = textwrap.fill(note, 105) + "\n" + foot
    fig.text(0.01, 0.05 / height, text, ha="left", va="bottom", fontsize=FONT, color="0.3")
    lines_below = text.count("\n") + 1
    legend_y = (0.1 + 0.17 * lines_below) / height
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, legend_y), ncol=3, fontsize=FONT,
               frameon=False)
    fig.tight_layout(rect=(0, legend_y + 0.2 * (1 + (len(labels) - 1) // 3) / height, 1, 1 - 0.1 / height))
    fig.savefig(path)


def footer(table: pd.DataFrame, machine_info: dict) -> str:
    first = table.iloc[0]
    procs = ", ".join(str(int(p)) for p in sorted(set(table.processes)))
    return (f"commit {first.commit[:8]} · machine {first.machine} ({machine_info.get('cpu', '?')}, "
            f"{machine_info.get('num_cpu', '?')} cores) · device {first.device} · {procs} processes per framework · "
            "tape-vs-trace paired")


def draw(table: pd.DataFrame | None, machine_info: dict, out: Path) -> list[str]:
    """One figure per transformer size of the remat curve; returns their file names."""
    if table is None or not (table.group == "remat").any():
        return []
    out.mkdir(parents=True, exist_ok=True)
    foot = footer(table, machine_info)
    names = []
    for size in dict.fromkeys(table[table.group == "remat"]["size"]):
        name = f"remat_curve_{size}.png"
        figure(table, size, foot, out / name)
        names.append(name)
    return names

