"""The distributed results' figure, one per workload (distributed_<workload>.png): step time against the rank count
N (log, with 95 % interval bars across launches) and peak memory per device against N, both frameworks, one line
per form x mode. Colour per framework (the registry), line style per mode, marker per form; the legend below the
panels names every line, so no label sits on the data."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from implementations import frameworks, rank_processes
from tape_vs_trace.report import fmt
from tape_vs_trace.report.curve import _log_y
from tape_vs_trace.report.distributed_section import CPU, FIGURES
from tape_vs_trace.report.figures import DPI, FONT, WIDTH

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LINE = {"eager": "-", "compiled": "--"}
MARKER = dict(zip(rank_processes.FORMS, ("o", "s", "^")))
# Each framework's and form's points sit a little to one side of N, so that lines that coincide (two forms with one
# peak) and their interval bars do not cover each other.
DODGE = 0.015


def _lines(rows: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    keys = list(dict.fromkeys(zip(rows.framework, rows.form, rows["mode"])))
    return [(k, rows[(rows.framework == k[0]) & (rows.form == k[1]) & (rows["mode"] == k[2])].sort_values("ranks"))
            for k in keys]


def _x(framework: str, form: str, ranks: float) -> float:
    forms = rank_processes.FORMS
    slot = (frameworks.NAMES.index(framework) if framework in frameworks.NAMES else 0) * len(forms) + \
        (forms.index(form) if form in forms else 0)
    side = slot - (len(frameworks.NAMES) * len(forms) - 1) / 2
    return ranks * (1 + DODGE * side)  # a log axis: the same look at every N


def _panel(ax, lines, column: str, divisor: float) -> dict[str, list[str]]:
    """Draws the lines of `column` (time_s or peak_bytes); returns {why: [line, ...]} of the lines not drawn."""
    missing: dict[str, list[str]] = {}
    for (framework, form, mode), line in lines:
        ok = line[(line.status == "ok") & line[column].notna()]
        if ok.empty:
            reasons = set(line.peak_method if column == "peak_bytes" else line.reason) - {""}
            why = "; ".join(sorted(r.removeprefix("not measured: ") for r in reasons)) or "failed"
            missing.setdefault(why, []).append(f"{frameworks.label(framework)} {form} {mode}")
            continue
        xs = [_x(framework, form, n) for n in ok.ranks]
        ys = list(ok[column] / divisor)
        err = None
        if column == "time_s":
            err = [[(v - lo) / divisor if math.isfinite(lo) else 0 for v, lo in zip(ok.time_s, ok.time_ci_low)],
                   [(hi - v) / divisor if math.isfinite(hi) else 0 for v, hi in zip(ok.time_s, ok.time_ci_high)]]
        ax.errorbar(xs, ys, yerr=err, color=frameworks.FRAMEWORKS[framework].color if framework in
                    frameworks.FRAMEWORKS else "0.3", linestyle=LINE.get(mode, ":"), marker=MARKER.get(form, "D"),
                    markersize=5, capsize=2, linewidth=1.2,
                    label=f"{frameworks.label(framework)} {form} {mode}")
    return missing


def figure(rows: pd.DataFrame, footer: str, path: Path) -> Figure:
    """One workload's figure: step time (left) and peak memory per device (right) against N. Returns it."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    workload = rows.workload.iloc[0]
    lines = _lines(rows)
    ok = rows[rows.status == "ok"]
    t_div, t_unit = fmt.scale("seconds", list(ok.time_s))
    ranks = sorted(set(rows.ranks))
    fig = Figure(figsize=(WIDTH, 6.4), dpi=DPI)
    axes = fig.subplots(1, 2)
    fig.suptitle(f"distributed {workload} {', '.join(dict.fromkeys(rows['size']))}: one step over N ranks",
                 fontsize=FONT + 2)
    missing = {}
    for ax, (column, label, divisor) in zip(axes, (("time_s", f"step time ({t_unit}, log)", t_div),
                                                   ("peak_bytes", "peak memory per device (MiB)", fmt.MIB))):
        missing[column] = _panel(ax, lines, column, divisor)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(ranks))
        ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}")
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(min(ranks) / 1.3, max(ranks) * 1.3)
        ax.set_xlabel("ranks N", fontsize=FONT)
        ax.set_ylabel(label, fontsize=FONT)
        ax.tick_params(labelsize=FONT)
        ax.grid(alpha=0.3, which="both")
    axes[0].set_title("step time, the slowest rank's", fontsize=FONT)
    axes[1].set_title("peak memory, where measured", fontsize=FONT)
    if ok.time_s.notna().any():
        times = pd.concat([ok.time_s, ok.time_ci_low.dropna(), ok.time_ci_high.dropna()])
        _log_y(axes[0], times.min() / t_div / 1.2, times.max() / t_div * 1.2)
    if ok.peak_bytes.notna().any():
        axes[1].set_ylim(0, ok.peak_bytes.max() / fmt.MIB * 1.15)
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    gaps = [f"{'memory' if c == 'peak_bytes' else 'time'} not drawn for {', '.join(names)} ({why})"
            for c, found in missing.items() for why, names in found.items()]
    gap = "; ".join(gaps)
    caveat = f" {CPU}" if "device" not in rows or (rows.device == "cpu").any() else ""
    note = "Bars: 95 % interval across launches." + caveat + (f" {gap[:1].upper()}{gap[1:]}." if gaps else "")
    text = textwrap.fill(note, 110) + "\n" + textwrap.fill(footer, 110)
    height = fig.get_figheight()
    fig.text(0.01, 0.05 / height, text, ha="left", va="bottom", fontsize=FONT - 1, color="0.3")
    legend_y = (0.1 + 0.16 * (text.count("\n") + 1)) / height
    columns = 3
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, legend_y), ncol=columns, fontsize=FONT,
               frameon=False)
    rows_of_legend = 1 + (len(labels) - 1) // columns if labels else 0
    fig.tight_layout(rect=(0, legend_y + 0.19 * rows_of_legend / height, 1, 1 - 0.1 / height))
    fig.savefig(path)
    return fig


def footer(table: pd.DataFrame, machine_info: dict) -> str:
    first = table.iloc[0]
    launches = ", ".join(str(int(n)) for n in sorted(set(table[table.status == "ok"].launches))) or "no"
    return (f"commit {first.commit[:8]} · machine {first.machine} ({machine_info.get('cpu', '?')}, "
            f"{machine_info.get('num_cpu', '?')} cores) · device {first.device} · {launches} launches per point · "
            "tape-vs-trace distributed")


def draw(table: pd.DataFrame | None, machine_info: dict, out: Path) -> list[str]:
    """One figure per workload of the distributed results; returns their file names."""
    if table is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    foot = footer(table, machine_info)
    names = []
    for workload, rows in table.groupby("workload", sort=False):
        name = f"{FIGURES}{workload}.png"
        figure(rows, foot, out / name)
        names.append(name)
    return names
