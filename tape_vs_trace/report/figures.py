"""Figures (matplotlib, Agg): times as dots with their 95 % interval on log axes, memory in MiB on axes from zero,
and differences (remat cost, harness overhead) as differences in %, zero marked. One panel per metric, its axis
named by the metric and its unit. Two frameworks' rows sit side by side only where they may be divided: peaks
measured by different methods get a panel per framework. Every font is at least 9 pt at the saved size, and
figures are 7.5 inches wide: readable at page width."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from implementations import frameworks, metrics, pillars
from tape_vs_trace.report import fmt, stats
from tape_vs_trace.report.select import Cells, display, ordered

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# File names are stable: the README links them.
# The transformer's remat trade-off curve is report/curve.py's (remat_curve_<size>.png, from the paired results).
FIGURES = [f"{name}.png" for name in pillars.PILLARS]
WIDTH, FONT, DPI = 7.5, 9, 130
# Compile times get a panel of their own (seconds, but not step times): this suite's and that of version 4 and older.
COMPILE_METRICS = ("time_compile_seconds", "track_compile_seconds")
TITLE_WIDTH = 95  # characters of a panel title per line: it stays inside the figure


class Panel(NamedTuple):
    """One panel of a values figure: the rows of one metric; `alone` names the one framework a panel holds where
    the frameworks' values may not be divided (peaks measured by different methods), else ""."""

    rows: pd.DataFrame
    metric: str
    dots: bool
    alone: str = ""
    method: str = ""


def _figure(heights: list[float], title: str, footer: str):
    """Panels stacked vertically (one per entry of `heights`, in inches), the title, the framework legend below it
    and the provenance footer. Returns the figure, its axes and the layout rectangle for `_finish`."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    foot = textwrap.fill(footer, 105)
    extra = 0.2 * title.count("\n")  # a two-line title
    total = sum(heights) + 1.1 + 0.16 * (foot.count("\n") + 1) + extra
    fig = Figure(figsize=(WIDTH, total), dpi=DPI)
    axes = fig.subplots(len(heights), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    fig.suptitle(title, fontsize=FONT + 2)
    fig.text(0.01, 0.05 / total, foot, ha="left", va="bottom", fontsize=FONT, color="0.3")
    handles = [Line2D([], [], color=f.color, marker="o", linestyle="", label=f.label)
               for f in frameworks.FRAMEWORKS.values()]
    fig.legend(handles=handles, loc="upper right", bbox_to_anchor=(0.98, 1 - (0.35 + extra) / total), ncol=2,
               fontsize=FONT, frameon=False)
    rect = (0, (0.12 + 0.16 * (foot.count("\n") + 1)) / total, 1, 1 - (0.65 + extra) / total)
    return fig, axes, rect


def _finish(fig, rect: tuple[float, float, float, float], path: Path) -> None:
    fig.tight_layout(rect=rect)
    fig.savefig(path)


def _log(ax) -> None:
    """A log x axis whose tick labels read as plain numbers (2, 30, 400), not powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 100 else f"{v:.3g}")
    ax.set_xscale("log")
    ax.autoscale_view()
    low, high = ax.get_xlim()
    # 1-2-5 ticks on up to three decades; beyond that, powers of ten only, or the labels run into each other
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if high < 1e3 * low else (1.0,)))
    ax.xaxis.set_major_formatter(plain)
    # on a narrow axis 1-2-5 may give one tick or none: label the minor ticks too
    ax.xaxis.set_minor_formatter(plain if high < 3 * low else NullFormatter())


def _no_data(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no results for {what}", ha="center", va="center", transform=ax.transAxes, color="0.4",
            fontsize=FONT)
    ax.set_xticks([])
    ax.set_yticks([])


def _labels(rows: pd.DataFrame, with_metric: bool) -> pd.Series:
    text = rows.workload + " " + rows["size"] + " " + rows.variant
    if "program" in rows.columns:
        text = text + " " + rows.program
    if with_metric:
        text = text + " · " + rows.metric.map(display)
    return text.str.replace(r"\s+", " ", regex=True).str.strip()


def _style(ax, labels: list[str], xlabel: str) -> None:
    ax.set_yticks(range(len(labels)), labels, fontsize=FONT)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel(xlabel, fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.grid(axis="x", which="major", alpha=0.3)
    ax.set_axisbelow(True)


def _title(ax, text: str) -> None:
    """A panel's note, right-aligned over its axis: a note wider than the axis runs left over the row labels'
    column, not off the figure."""
    ax.set_title(textwrap.fill(text, TITLE_WIDTH), fontsize=FONT, loc="right")


def _not_drawn(ax, notes: dict[int, list[tuple[str, str, str, bool]]], alone: str) -> None:
    """(framework, 'PyTorch: not run', colour, bold) per row index, at the left of the row: a lone note at its
    framework's place in the row, two on one line at the row's middle, the second after the first."""
    for row, found in notes.items():
        fw = found[0][0]
        y = row if alone or len(found) > 1 else row + (frameworks.NAMES.index(fw) - 0.5) * 0.4
        previous = None
        for _, text, color, bold in found:
            kw = dict(fontsize=FONT, color=color, va="center", fontweight="bold" if bold else "normal")
            if previous is None:
                previous = ax.text(0.01, y, text, transform=ax.get_yaxis_transform(), **kw)
            else:
                previous = ax.annotate(f"   {text}", xy=(1, 0.5), xycoords=previous, ha="left", **kw)


def _rows_panel(ax, rows: pd.DataFrame, what: str, dots: bool, alone: str = "", method: str = "") -> None:
    """Both frameworks per case, or `alone`'s only: dots with interval bars on a log axis (times), or bars in MiB
    from zero. `what` names the metric on the axis."""
    if rows.empty:
        _no_data(ax, what)
        return
    rows = rows.assign(label=_labels(rows, rows.metric.nunique() > 1))
    labels = list(dict.fromkeys(rows.label))
    divisor, unit = fmt.scale(rows.unit.iloc[0], rows.value)
    notes: dict[int, list[tuple[str, str, str, bool]]] = {}
    for k, fw in enumerate([alone] if alone else frameworks.NAMES):
        color, y0 = frameworks.FRAMEWORKS[fw].color, 0.0 if alone else (k - 0.5) * 0.4
        have = rows[rows.framework == fw]
        for missing in [] if alone else sorted(set(labels) - set(have.label)):
            notes.setdefault(labels.index(missing), []).append((fw, f"{frameworks.label(fw)}: not run", "0.45", False))
        for r in have.itertuples(index=False):
            y = labels.index(r.label) + y0
            if r.status != "ok":
                notes.setdefault(labels.index(r.label), []).append((fw, f"{frameworks.label(fw)}: failed", color,
                                                                     True))
            elif dots:
                err = None
                if math.isfinite(r.ci_low) and r.basis != "exact":
                    err = [[(r.value - r.ci_low) / divisor], [(r.ci_high - r.value) / divisor]]
                ax.errorbar(r.value / divisor, y, xerr=err, color=color, marker="o", capsize=3, linestyle="")
            else:
                ax.barh(y, r.value / divisor, 0.6 if alone else 0.4, color=color)
    _not_drawn(ax, dict(sorted(notes.items())), alone)
    if dots:
        _log(ax)
    else:
        ax.set_xlim(left=0)
    who = f"{frameworks.label(alone)} " if alone else ""
    _style(ax, labels, f"{who}{what} ({unit}, {'log scale' if dots else 'from zero'})")
    if method:
        _title(ax, f"measured by {method}" + ("; the other framework measures its peaks differently: no ratio, "
                                              "compare within this panel" if alone else ""))
    if dots:
        has = (rows.basis != "exact") & rows.ci_low.notna()
        _title(ax, "dot: geometric mean of per-process medians; bar: 95 % interval across processes" if has.any()
               else "dot: asv's median (no interval: no between-process samples)")


def _sign(metric: str, base: str) -> str:
    """Which way a change points: every metric here is a cost, so above 0 is worse than `base`."""
    unit = metrics.METRICS[metric].unit if metric in metrics.METRICS else ""
    more = {"seconds": "slower than", "bytes": "more memory than"}.get(unit, "more than")
    return f"above 0: {more} {base}"


def _differences(ax, items: list[tuple[str, str, stats.Comparison]], label: str, metric: str = "",
                 base: str = "") -> None:
    """(label, framework, b/a) as a change in % with its interval; a hollow dot has no interval."""
    if not items:
        _no_data(ax, label)
        return
    labels = list(dict.fromkeys(row for row, _, _ in items))
    hollow = False
    for row, fw, c in items:
        y = labels.index(row) + (frameworks.NAMES.index(fw) - 0.5) * 0.4
        x = (c.ratio - 1) * 100
        color = frameworks.FRAMEWORKS[fw].color
        if math.isfinite(c.low):
            err = [[x - (c.low - 1) * 100], [(c.high - 1) * 100 - x]]
            ax.errorbar(x, y, xerr=err, color=color, marker="o", capsize=3, linestyle="")
        else:
            ax.plot(x, y, marker="o", markerfacecolor="none", color=color, linestyle="")
            hollow = True
    ax.axvline(0, color="0.2", linewidth=1)
    notes = [_sign(metric, base) if base else "0: no change"] + ["hollow: no interval"] * hollow
    _style(ax, labels, f"{label} (%)\n{'; '.join(notes)}")


def _changes(cells: Cells, pillar: str, metric: str, base: str, variants: tuple[str, ...]):
    items = []
    for w, s, prog in cells.cases(pillar, metric):
        for v in variants:
            for fw in frameworks.NAMES:
                a, b = cells.get(pillar, metric, w, s, prog, base, fw), cells.get(pillar, metric, w, s, prog, v, fw)
                c = stats.change(a, b)
                if c.formed:
                    # each framework's own change; where the two run different forms, the row says so
                    unlike = metrics.unlike_formulations(a["benchmark"])
                    label = " ".join(x for x in (w, s, v, prog) if x) + (f" ({unlike})" if unlike else "")
                    items.append((label, fw, c))
    return items


def value_panels(sel: pd.DataFrame) -> list[Panel]:
    """The panels of a values figure, one per metric in registry order: times (and compile times) as dots, memory
    as bars; a metric whose frameworks' values were measured by methods that may not be divided gets a panel per
    method."""
    out = []
    for metric in dict.fromkeys(sel.metric):
        rows = sel[sel.metric == metric]
        unit, sampled = rows.unit.iloc[0], bool(rows.sampled.iloc[0])
        if unit == "seconds" and (sampled or metric in COMPILE_METRICS):
            out.append(Panel(rows, metric, True))
        elif unit == "bytes":
            methods = list(dict.fromkeys(rows.memory_method))
            if methods == [""]:
                out.append(Panel(rows, metric, False))
                continue
            if all(frameworks.same_memory_method(m, methods[0]) for m in methods):  # CUDA's allocator peaks
                out.append(Panel(rows, metric, False, "", "; ".join(methods)))
                continue
            for method in methods:
                sub = rows[rows.memory_method == method]
                fws = list(dict.fromkeys(sub.framework))
                out.append(Panel(sub, metric, False, fws[0] if len(fws) == 1 else "", method))
    return out


def pillar_figure(rows: pd.DataFrame, pillar: str, title: str, footer: str, path: Path) -> Figure:
    """Times (and compile times) as dots, memory as bars in MiB, a panel per metric; returns the Figure."""
    sel = ordered(rows[rows.pillar == pillar])
    drawn = value_panels(sel) or [Panel(sel, pillar, True)]
    heights = [max(1.6, 0.32 * _labels(p.rows, False).nunique() + 0.9 + 0.15 * bool(p.method)) for p in drawn]
    fig, axes, rect = _figure(heights, title, footer)
    for ax, p in zip(axes, drawn):
        _rows_panel(ax, p.rows, display(p.metric), p.dots, p.alone, p.method)
    _finish(fig, rect, path)
    return fig


def difference_figure(cells: Cells, panels: list[tuple[str, str, str, tuple[str, ...], str]], title: str,
                      footer: str, path: Path) -> Figure:
    """One panel per (pillar, metric, base, variants, axis label): each variant's change against base; returns the
    Figure."""
    items = [_changes(cells, *p[:4]) for p in panels]
    heights = [max(1.6, 0.32 * len({i[0] for i in it}) + 0.9) for it in items]
    fig, axes, rect = _figure(heights, title, footer)
    for ax, it, p in zip(axes, items, panels):
        _differences(ax, it, p[4], p[1], p[2])
    _finish(fig, rect, path)
    return fig


def footer(rows: pd.DataFrame, machine_info: dict) -> str:
    first = rows.iloc[0]
    numerics = ", ".join(dict.fromkeys(f"{d} {p}" for d, p in zip(rows.dtype, rows.precision) if d))
    return (f"commit {first.commit[:8]} ({first.date[:10]}) · machine {first.machine} ({machine_info.get('cpu', '?')},"
            f" {machine_info.get('num_cpu', '?')} cores) · device {first.device} · torch {first.torch_version} · "
            f"jax {first.jax_version} · {numerics} · tape-vs-trace report")


def draw(rows: pd.DataFrame, machine_info: dict, out: Path) -> list[str]:
    """Every figure for one machine's rows into `out`; returns their file names."""
    foot = footer(rows, machine_info)
    out.mkdir(parents=True, exist_ok=True)
    cells = Cells(rows)
    for name, pillar in pillars.PILLARS.items():
        if pillar.figure.kind == "values":
            pillar_figure(rows, name, f"{name}: PyTorch and JAX (lower is better)", foot, out / f"{name}.png")
        else:
            panels = [(name, p.metric, p.base, p.variants, p.label) for p in pillar.figure.panels]
            difference_figure(cells, panels, pillar.figure.title, foot, out / f"{name}.png")
    return list(FIGURES)
