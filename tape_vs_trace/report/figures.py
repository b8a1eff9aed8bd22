"""Figures (matplotlib, Agg): times as dots with their 95 % interval on log axes, memory in MiB on axes from zero,
and differences (remat cost, harness overhead) as differences in %, zero marked. Every font is at least 9 pt at
the saved size, and figures are 7.5 inches wide: readable at page width."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pandas as pd

from implementations import frameworks, pillars
from tape_vs_trace.report import fmt, stats
from tape_vs_trace.report.select import Cells, display, ordered

# File names are stable: the README links them.
# The transformer's remat trade-off curve is report/curve.py's (remat_curve_<size>.png, from the paired results).
FIGURES = [f"{name}.png" for name in pillars.PILLARS]
WIDTH, FONT, DPI = 7.5, 9, 130
# Compile times get a panel of their own (seconds, but not step times): this suite's and that of version 4 and older.
COMPILE_METRICS = ("time_compile_seconds", "track_compile_seconds")


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


def _rows_panel(ax, rows: pd.DataFrame, title: str, dots: bool) -> None:
    """Both frameworks per case: dots with interval bars on a log axis (times), or bars in MiB from zero."""
    if rows.empty:
        _no_data(ax, title)
        return
    rows = rows.assign(label=_labels(rows, rows.metric.nunique() > 1))
    labels = list(dict.fromkeys(rows.label))
    divisor, unit = fmt.scale(rows.unit.iloc[0], rows.value)
    for k, fw in enumerate(frameworks.NAMES):
        color, y0 = frameworks.FRAMEWORKS[fw].color, (k - 0.5) * 0.4
        have = rows[rows.framework == fw]
        for missing in sorted(set(labels) - set(have.label)):
            ax.text(0.01, labels.index(missing) + y0, f"{frameworks.label(fw)}: not run", fontsize=FONT,
                    color="0.45", va="center", transform=ax.get_yaxis_transform())
        for r in have.itertuples(index=False):
            y = labels.index(r.label) + y0
            if r.status != "ok":
                ax.text(0.01, y, f"{frameworks.label(fw)}: failed", fontsize=FONT, color=color, va="center",
                        fontweight="bold", transform=ax.get_yaxis_transform())
            elif dots:
                err = None
                if math.isfinite(r.ci_low) and r.basis != "exact":
                    err = [[(r.value - r.ci_low) / divisor], [(r.ci_high - r.value) / divisor]]
                ax.errorbar(r.value / divisor, y, xerr=err, color=color, marker="o", capsize=3, linestyle="")
            else:
                ax.barh(y, r.value / divisor, 0.4, color=color)
    if dots:
        _log(ax)
    else:
        ax.set_xlim(left=0)
    _style(ax, labels, f"{title} ({unit}, {'log scale' if dots else 'from zero'})")
    methods = rows[rows.memory_method != ""].groupby("framework").memory_method.first()
    if not dots and methods.nunique() > 1:  # CPU peaks today: the bars compare within a framework only
        ax.set_title("peaks measured differently per framework: compare within one", fontsize=FONT)
    if dots:
        has = (rows.basis != "exact") & rows.ci_low.notna()
        ax.set_title("dot: median; bar: 95 % interval across processes" if has.any()
                     else "dot: median (no interval: no between-process samples)", fontsize=FONT)


def _differences(ax, items: list[tuple[str, str, stats.Comparison]], xlabel: str) -> None:
    """(label, framework, b/a) as a change in % with its interval; a hollow dot has no interval."""
    if not items:
        _no_data(ax, xlabel)
        return
    labels = list(dict.fromkeys(label for label, _, _ in items))
    for label, fw, c in items:
        y = labels.index(label) + (frameworks.NAMES.index(fw) - 0.5) * 0.4
        x = (c.ratio - 1) * 100
        color = frameworks.FRAMEWORKS[fw].color
        if math.isfinite(c.low):
            err = [[x - (c.low - 1) * 100], [(c.high - 1) * 100 - x]]
            ax.errorbar(x, y, xerr=err, color=color, marker="o", capsize=3, linestyle="")
        else:
            ax.plot(x, y, marker="o", markerfacecolor="none", color=color, linestyle="")
    ax.axvline(0, color="0.2", linewidth=1)
    _style(ax, labels, f"{xlabel} (%; 0 = no change; hollow: no interval)")


def _changes(cells: Cells, pillar: str, metric: str, base: str, variants: tuple[str, ...]):
    items = []
    for w, s, prog in cells.cases(pillar, metric):
        for v in variants:
            for fw in frameworks.NAMES:
                c = stats.change(cells.get(pillar, metric, w, s, prog, base, fw),
                                 cells.get(pillar, metric, w, s, prog, v, fw))
                if c.formed:
                    items.append((" ".join(x for x in (w, s, v, prog) if x), fw, c))
    return items


def pillar_figure(rows: pd.DataFrame, pillar: str, title: str, footer: str, path: Path) -> None:
    """Times (and compile times) as dots, memory as bars in MiB."""
    sel = ordered(rows[rows.pillar == pillar])
    compile_ = sel.metric.isin(COMPILE_METRICS)
    panels = [(t, p, d) for t, p, d in (("time", sel[sel.sampled & (sel.unit == "seconds") & ~compile_], True),
                                         ("compile time", sel[compile_], True),
                                         ("memory", sel[sel.unit == "bytes"], False)) if len(p)]
    panels = panels or [(pillar, sel, True)]
    heights = [max(1.6, 0.32 * p.assign(l=_labels(p, True)).l.nunique() + 0.9) for _, p, _ in panels]
    fig, axes, rect = _figure(heights, title, footer)
    for ax, (what, p, dots) in zip(axes, panels):
        _rows_panel(ax, p, what, dots)
    _finish(fig, rect, path)


def difference_figure(cells: Cells, panels: list[tuple[str, str, str, tuple[str, ...], str]], title: str,
                      footer: str, path: Path) -> None:
    """One panel per (pillar, metric, base, variants, axis label): each variant's change against base."""
    items = [_changes(cells, *p[:4]) for p in panels]
    heights = [max(1.6, 0.32 * len({i[0] for i in it}) + 0.9) for it in items]
    fig, axes, rect = _figure(heights, title, footer)
    for ax, it, p in zip(axes, items, panels):
        _differences(ax, it, p[4])
    _finish(fig, rect, path)


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
