"""The remat trade-off curve of the paired results, one figure per size (remat_curve_<size>.png), titled with its
workload, size and the modes drawn: step time against memory, one line per framework x mode x formulation through
its points ordered by memory, every point labelled, the Pareto-optimal points of each line ringed. A row of panels
per mode, titled with it (eager: PyTorch's tape and op-by-op JAX; compiled: torch.compile and jax.jit): a line
joins points of one mode, and no compiled point is divided by an eager one. Labels are placed once the panels are
laid out, each where it overlaps no other label and stays inside its panel, with a leader line where it sits away
from its point; the points of one line that coincide on the page share one label.

Two panels: peak bytes where the framework's memory method sees the step (on a CPU not compiled PyTorch, not
op-by-op JAX; the note under the figure names each line left out of it, with the reason), and saved bytes, which
every point has."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import fmt
from tape_vs_trace.report.figures import DPI, FONT, WIDTH
from tape_vs_trace.report.paired_results import CURVE, curves, finite, pareto

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Line style and marker per (mode, formulation); colour per framework (the registry).
STYLES = {("eager", "unrolled"): ("-", "o"), ("compiled", "unrolled"): ("--", "s"), ("compiled", "scan"): (":", "^"),
          ("eager", "scan"): ("-.", "D")}
FUSED = ((0, (1, 1)), "P")  # fused attention's line: dotted finely, a star, whatever its mode and form
PANELS = (("peak_bytes", "peak memory (MiB)"), ("saved_bytes", "saved for backward (MiB)"))
MODES = {"eager": "eager (tape, op-by-op JAX)", "compiled": "compiled (torch.compile, jax.jit)"}  # a row's title
RING = 130  # the Pareto ring's area (points squared)
RADII = (4, 7, 11, 16, 22, 30, 40, 52, 66, 82, 100)  # a label's distance from its point, points, nearest first
ANGLES = (35, 145, -35, -145, 0, 180, 90, -90, 65, 115, -65, -115, 15, 165, -15, -165)  # preferred first


class Label(NamedTuple):
    """A point's label, to be placed: data coordinates, text, colour and the line it belongs to."""

    x: float
    y: float
    text: str
    color: str
    line: int


def short(point: str) -> str:
    """A point's label on the figure: the policy without 'remat_', a budget as b=0.5."""
    return point.removeprefix("remat_").replace("budget ", "b=")


def line_name(key: tuple[str, ...]) -> str:
    """A line's name in the legend: framework, mode, formulation and fused attention, 'JAX compiled scan'."""
    framework, mode, formulation, attention, _ = key
    fused = attention and f"{attention} attention"
    return " ".join(filter(None, (frameworks.label(framework), mode, formulation, fused)))


def no_peak(lines: list[tuple[tuple[str, ...], pd.DataFrame]]) -> list[str]:
    """'name (why)' of each line the peak panel leaves out: a point without a peak, and the reason its row gives."""
    out = []
    for key, curve in lines:
        missing = [r for r in curve.to_dict("records") if not finite(r["peak_bytes"])]
        if missing:
            why = str(missing[0].get("peak_method") or "").removeprefix("not measured: ") or "not measured"
            out.append(f"{line_name(key)} ({why})")
    return out


def _log_y(ax, low: float, high: float) -> None:
    """A log time axis from `low` to `high` whose labelled ticks read as plain numbers (20, 30, 50), never so dense
    that they touch: 1-2-3-5 per decade on a narrow axis, 1-2-5 on a wider one, powers of ten beyond three decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.set_ylim(low, high)
    subs = (1.0, 2.0, 3.0, 5.0) if high < 10 * low else (1.0, 2.0, 5.0) if high < 1e3 * low else (1.0,)
    ax.yaxis.set_major_locator(LogLocator(subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _panel(ax, lines: list[tuple[tuple[str, ...], pd.DataFrame]], column: str, xlabel: str,
           t_div: float) -> list[Label]:
    """Draws the lines of one panel; returns their points' labels, placed by `_place` once the figure is laid out."""
    drawn, labels = 0, []
    for key, curve in lines:
        framework, mode, formulation, attention, _ = key
        rows = [r for r in curve.to_dict("records") if finite(r[column], r["time_s"])]
        if len(rows) != len(curve):  # a curve is drawn whole or not at all: a part of a curve misleads
            continue
        rows.sort(key=lambda r: (r[column], r["time_s"]))
        color = frameworks.FRAMEWORKS[framework].color
        style, marker = FUSED if attention == "fused" else STYLES.get((mode, formulation), ("-", "o"))
        xs = [r[column] / fmt.MIB for r in rows]
        ys = [r["time_s"] / t_div for r in rows]
        err = [[(r["time_s"] - r["time_ci_low"]) / t_div if finite(r["time_ci_low"]) else 0 for r in rows],
               [(r["time_ci_high"] - r["time_s"]) / t_div if finite(r["time_ci_high"]) else 0 for r in rows]]
        ax.errorbar(xs, ys, yerr=err, color=color, linestyle=style, marker=marker, markersize=4, capsize=2,
                    linewidth=1.2, label=line_name(key))
        optimal = pareto([r["time_s"] for r in rows], [r[column] for r in rows])
        ax.scatter([x for x, o in zip(xs, optimal) if o], [y for y, o in zip(ys, optimal) if o], s=RING,
                   facecolors="none", edgecolors=color, linewidths=1.2, zorder=3)
        labels += [Label(x, y, short(r["point"]), color, drawn) for r, x, y in zip(rows, xs, ys)]
        drawn += 1
    if not drawn:
        ax.text(0.5, 0.5, "no curve has this memory\non this device", ha="center", va="center",
                transform=ax.transAxes, color="0.4", fontsize=FONT)
    ax.set_xlim(left=0)
    ax.set_xlabel(xlabel, fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.grid(alpha=0.3, which="both")
    return labels


def _merge(labels: list[Label], to_px, within: float) -> list[tuple[tuple[float, float], str, str]]:
    """(position in pixels, text, colour) per group of one line's points closer than `within` pixels to another
    of the group: points that coincide on the page share a label, 'full, every2'."""
    out = []
    for line in dict.fromkeys(label.line for label in labels):
        groups: list[list[tuple[Label, tuple[float, float]]]] = []
        for label in (p for p in labels if p.line == line):
            xy = tuple(to_px((label.x, label.y)))
            near = [g for g in groups if any(math.dist(xy, q) < within for _, q in g)]
            for g in near[1:]:  # a point near two groups joins them
                near[0] += g
                groups.remove(g)
            if near:
                near[0].append((label, xy))
            else:
                groups.append([(label, xy)])
        for g in groups:
            x, y = (sum(q[i] for _, q in g) / len(g) for i in (0, 1))
            out.append(((x, y), ", ".join(dict.fromkeys(p.text for p, _ in g)), g[0][0].color))
    return out


def _box(x: float, y: float, w: float, h: float, ha: str, va: str) -> tuple[float, float, float, float]:
    x0 = {"left": x, "right": x - w, "center": x - w / 2}[ha]
    y0 = {"bottom": y, "top": y - h, "center": y - h / 2}[va]
    return x0, y0, x0 + w, y0 + h


def _hits(a: tuple[float, ...], b: tuple[float, ...], pad: float = 1.0) -> bool:
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


def _place(ax, labels: list[Label], renderer) -> None:
    """Each label at the nearest place, around its point, that overlaps no placed label and stays inside the panel,
    one that covers no point's marker first; a leader line to the point where it sits away from it."""
    scale = ax.figure.dpi / 72  # pixels per point
    ring = math.sqrt(RING) / 2 * scale  # the radius of a ring, pixels
    frame = ax.get_window_extent(renderer)
    inside = (frame.x0 + 2, frame.y0 + 2, frame.x1 - 2, frame.y1 - 2)
    markers = [tuple(ax.transData.transform((p.x, p.y))) for p in labels]
    markers = [(x - ring, y - ring, x + ring, y + ring) for x, y in markers]
    placed: list[tuple[float, float, float, float]] = []
    for (px, py), text, color in _merge(labels, ax.transData.transform, 0.8 * ring):
        probe = ax.text(0, 0, text, fontsize=FONT)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        w, h = extent.width, extent.height
        candidates = []
        for r in RADII:
            for angle in ANGLES:
                dx, dy = r * scale * math.cos(math.radians(angle)), r * scale * math.sin(math.radians(angle))
                ha = "left" if dx > 0.3 * r * scale else "right" if dx < -0.3 * r * scale else "center"
                va = "bottom" if dy > 0.3 * r * scale else "top" if dy < -0.3 * r * scale else "center"
                candidates.append((dx, dy, ha, va))
        # beyond the rings of candidates, anywhere in the panel, nearest first
        step = max(4.0, h / 2)
        grid = [(x - px, y - py, "center", "center")
                for x in _range(inside[0] + w / 2, inside[2] - w / 2, step)
                for y in _range(inside[1] + h / 2, inside[3] - h / 2, step)]
        candidates += sorted(grid, key=lambda c: math.hypot(c[0], c[1]))
        choice = None
        for avoid_markers in (True, False):
            for dx, dy, ha, va in candidates:
                box = _box(px + dx, py + dy, w, h, ha, va)
                if not (box[0] >= inside[0] and box[1] >= inside[1] and box[2] <= inside[2] and box[3] <= inside[3]):
                    continue
                if any(_hits(box, b) for b in placed) or (avoid_markers and any(_hits(box, m, 0) for m in markers)):
                    continue
                choice = (dx, dy, ha, va, box)
                break
            if choice:
                break
        if choice is None:  # a panel too full for one more label: beside its point, where it falls
            choice = (4 * scale, 3 * scale, "left", "bottom", _box(px + 4 * scale, py + 3 * scale, w, h, "left",
                                                                   "bottom"))
        dx, dy, ha, va, box = choice
        placed.append(box)
        far = math.hypot(dx, dy) > 1.6 * ring
        ax.annotate(text, ax.transData.inverted().transform((px, py)), xytext=(dx / scale, dy / scale),
                    textcoords="offset points", ha=ha, va=va, fontsize=FONT, color=color,
                    arrowprops=dict(arrowstyle="-", color=color, linewidth=0.6, shrinkA=1, shrinkB=ring / scale)
                    if far else None)


def _range(start: float, stop: float, step: float) -> list[float]:
    return [start + i * step for i in range(int((stop - start) // step) + 1)] if stop >= start else []


def figure(table: pd.DataFrame, size: str, footer: str, path: Path) -> Figure:
    """Step time (log, with 95 % interval bars) against peak memory (left) and saved bytes (right) at one size, one
    row of panels per mode (eager, compiled): fewer lines per panel, labels that can be read. Returns the Figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    lines = [(k, c) for k, c in curves(table) if k[CURVE.index("size")] == size]
    modes = list(dict.fromkeys(k[1] for k, _ in lines))
    times = table[table["size"] == size].time_s
    t_div, t_unit = fmt.scale("seconds", list(times))
    foot = textwrap.fill(footer, 105)
    fig = Figure(figsize=(WIDTH, 1.9 + 3.3 * len(modes)), dpi=DPI)
    axes = fig.subplots(len(modes), 2, sharey=True, squeeze=False)
    named = " / ".join(dict.fromkeys(table.loc[table["size"] == size, "workload"])) if "workload" in table else ""
    drawn = " and ".join(modes) if len(modes) > 1 else f"{modes[0]} only" if modes else "no curve"
    fig.suptitle(f"remat trade-off, {' '.join(filter(None, (named, size)))}, {drawn}: step time against memory",
                 fontsize=FONT + 2)
    point_labels = {}
    for row, mode in zip(axes, modes):
        for ax, (column, xlabel) in zip(row, PANELS):
            point_labels[ax] = _panel(ax, [(k, c) for k, c in lines if k[1] == mode], column, xlabel, t_div)
            what = "peak, where measured" if column == "peak_bytes" else "saved, every line"
            ax.set_title(f"{MODES.get(mode, mode)}: {what}", fontsize=FONT)
        row[0].set_ylabel(f"step time ({t_unit}, log)", fontsize=FONT)
    # With few processes an interval can span decades: the axis follows the points and the bars run off it.
    _log_y(axes[0][0], times.min() / t_div / 1.4, times.max() / t_div * 1.4)
    handles, labels = [], []
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    height = fig.get_figheight()
    note = ("bars: 95 % interval across processes (cut at the axis); ringed: Pareto-optimal within its line (no point "
            "of the line both faster and smaller); labels: policy without 'remat_', or torch.compile memory budget "
            "(b=0.5), one label for the points of a line that coincide")
    left_out = no_peak(lines)
    if left_out:
        note += "; no peak on this device: " + "; ".join(left_out)
    text = textwrap.fill(note, 105) + "\n" + foot
    fig.text(0.01, 0.05 / height, text, ha="left", va="bottom", fontsize=FONT, color="0.3")
    lines_below = text.count("\n") + 1
    legend_y = (0.1 + 0.17 * lines_below) / height
    ncol = 3 if max(map(len, labels), default=0) <= 28 else 2  # long labels (fused attention) in two columns, whole
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, legend_y), ncol=ncol, fontsize=FONT,
               frameon=False)
    fig.tight_layout(rect=(0, legend_y + 0.2 * (1 + (len(labels) - 1) // ncol) / height, 1, 1 - 0.1 / height))
    renderer = FigureCanvasAgg(fig).get_renderer()  # the panels' final places: labels are placed in pixels
    for ax, found in point_labels.items():
        _place(ax, found, renderer)
    fig.savefig(path)
    return fig


def footer(table: pd.DataFrame, machine_info: dict) -> str:
    first = table.iloc[0]
    procs = ", ".join(str(int(p)) for p in sorted(set(table.processes)))
    return (f"commit {first.commit[:8]} · machine {first.machine} ({machine_info.get('cpu', '?')}, "
            f"{machine_info.get('num_cpu', '?')} cores) · device {first.device} · {procs} processes per framework · "
            "tape-vs-trace paired")


def draw(table: pd.DataFrame | None, machine_info: dict, out: Path) -> list[str]:
    """One figure per size of the remat curve; returns their file names."""
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

