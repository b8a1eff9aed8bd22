"""How compile time grows with the program: the CompilePhases rows (recording pillar) against depth, a fitted
growth exponent (the slope of log seconds on log depth) with its interval per line, a figure of seconds against
depth per phase for both frameworks (``compile_growth.png``), and findings in words.

A line is (workload, framework, formulation, phase) at the cold cache; its points are the depths of the workload's
depth series (workloads.depth_series). The exponent's interval is the t interval of the least-squares slope: it
takes the scatter of the points about the line, so one process per depth gives an interval from three depths on.
What scan or regional compilation buys at the deepest depth is the measured ratio of the first calls, and the ratio
of the two fitted lines there with its interval on the same basis. A machine without the series gets one line
(`section`, NOT_RUN).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from implementations import frameworks, workloads

METRIC = "time_compile_phase"
FIGURE = "compile_growth.png"
CONFIDENCE = 0.95
# Phase colours, shared by both frameworks' panels; the whole first call is black.
_COLOURS = {"first_call": "black", "trace": "#1f77b4", "dynamo": "#1f77b4", "lower": "#2ca02c",
            "aot_autograd": "#2ca02c", "xla_compile": "#ff7f0e", "inductor": "#ff7f0e", "execution": "#7f7f7f"}
_LINES = {"unrolled": "-", "scan": "--", "regional": "--"}


@dataclass(frozen=True)
class Fit:
    """seconds ~ depth ** exponent: the least-squares slope on log-log axes and its `CONFIDENCE` interval (NaN
    with fewer than three points: no scatter to estimate)."""

    exponent: float
    low: float
    high: float
    points: int

    def text(self) -> str:
        if math.isnan(self.low):
            return f"{self.exponent:.2f} (no interval: {self.points} points)"
        return f"{self.exponent:.2f} [{self.low:.2f}, {self.high:.2f}]"


@dataclass(frozen=True)
class _Line:
    """A least-squares line of log seconds on log depth: what its slope's and its predictions' intervals need."""

    slope: float
    intercept: float
    variance: float  # of the residuals, n - 2 degrees of freedom (NaN below three points)
    n: int
    mean_x: float
    sxx: float

    def at(self, depth: float) -> tuple[float, float]:
        """The fitted log seconds at `depth` and the variance of that fitted mean."""
        x = math.log(depth)
        return self.intercept + self.slope * x, self.variance * (1 / self.n + (x - self.mean_x) ** 2 / self.sxx)


def _line(depths: list[float], seconds: list[float]) -> _Line:
    """The fit of log `seconds` on log `depths`; a ValueError for fewer than two distinct depths or a value that is
    not positive (a log-log fit needs both)."""
    x, y = np.asarray(depths, dtype=float), np.asarray(seconds, dtype=float)
    if len(x) != len(y) or len(set(x)) < 2:
        raise ValueError(f"a growth exponent needs two distinct depths or more, got {sorted(set(x))}")
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("a growth exponent needs positive depths and seconds")
    lx, ly = np.log(x), np.log(y)
    sxx = float(((lx - lx.mean()) ** 2).sum())
    slope = float(((lx - lx.mean()) * (ly - ly.mean())).sum() / sxx)
    intercept = float(ly.mean() - slope * lx.mean())
    n = len(x)
    variance = float(((ly - intercept - slope * lx) ** 2).sum() / (n - 2)) if n > 2 else math.nan
    return _Line(slope, intercept, variance, n, float(lx.mean()), sxx)


def growth_exponent(depths: list[float], seconds: list[float], confidence: float = CONFIDENCE) -> Fit:
    """The growth exponent of `seconds` against `depths`; a ValueError for fewer than two distinct depths or a
    value that is not positive (a log-log fit needs both)."""
    from scipy import stats as scipy_stats

    line = _line(depths, seconds)
    if line.n < 3:
        return Fit(line.slope, math.nan, math.nan, line.n)
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, line.n - 2) * math.sqrt(line.variance / line.sxx))
    return Fit(line.slope, line.slope - half, line.slope + half, line.n)


def fitted_ratio(first: tuple[list[float], list[float]], second: tuple[list[float], list[float]], depth: float,
                 confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The ratio of the first line's seconds to the second's at `depth`, both as fitted (depths, seconds), and its
    `confidence` interval: the two fitted means' variances added, Welch-Satterthwaite's degrees of freedom (NaN
    bounds where a line has fewer than three points)."""
    from scipy import stats as scipy_stats

    a, b = _line(*first), _line(*second)
    (ya, va), (yb, vb) = a.at(depth), b.at(depth)
    ratio = math.exp(ya - yb)
    if a.n < 3 or b.n < 3:
        return ratio, math.nan, math.nan
    spread = va ** 2 / (a.n - 2) + vb ** 2 / (b.n - 2)
    if spread == 0:  # both lines exact: no scatter, no width
        return ratio, ratio, ratio
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, (va + vb) ** 2 / spread)) * math.sqrt(va + vb)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)


def points(table: pd.DataFrame) -> pd.DataFrame:
    """The CompilePhases rows of `table` (the report's tidy table) as (machine, workload, framework, formulation,
    cache, phase, depth, seconds, ci_low, ci_high), deepest last; rows whose size has no depth are left out."""
    rows = table[(table.metric == METRIC) & (table.status == "ok")] if len(table) else table
    out = []
    for r in rows.itertuples():
        p = json.loads(r.params)
        if r.workload not in workloads.WORKLOADS or r.size not in workloads.spec(r.workload).sizes:
            continue
        out.append({"machine": r.machine, "workload": r.workload, "framework": r.framework,
                    "formulation": p["formulation"], "cache": p["cache"], "phase": p["phase"],
                    "depth": workloads.depth_of(r.workload, r.size), "seconds": float(r.value),
                    "ci_low": float(r.ci_low), "ci_high": float(r.ci_high)})
    columns = ["machine", "workload", "framework", "formulation", "cache", "phase", "depth", "seconds", "ci_low",
               "ci_high"]
    return pd.DataFrame(out, columns=columns).sort_values(columns[:7]).reset_index(drop=True)


LINE = ["machine", "workload", "framework", "formulation", "phase"]


def fits(pts: pd.DataFrame) -> pd.DataFrame:
    """One fitted exponent per line of cold-cache points with two depths or more: LINE columns and the Fit's."""
    out = []
    for key, line in pts[pts.cache == "cold"].groupby(LINE, sort=True):
        line = line[line.seconds > 0]
        if line.depth.nunique() >= 2:
            fit = growth_exponent(list(line.depth), list(line.seconds))
            out.append(dict(zip(LINE, key)) | {"exponent": fit.exponent, "low": fit.low, "high": fit.high,
                                                "points": fit.points, "fit": fit.text()})
    return pd.DataFrame(out, columns=[*LINE, "exponent", "low", "high", "points", "fit"])


def findings(pts: pd.DataFrame) -> list[str]:
    """In words, per machine, workload and framework: for each formulation how the whole first call grows (its
    exponent and interval) and where its time goes at the deepest depth, then what the block-once formulation buys
    there."""
    lines, fitted = [], fits(pts)
    for (machine, workload, fw), group in pts[pts.cache == "cold"].groupby(["machine", "workload", "framework"]):
        label = frameworks.label(fw)
        for form, rows in group.groupby("formulation"):
            deepest = rows[rows.depth == rows.depth.max()].set_index("phase").seconds
            total = deepest.get("first_call", math.nan)
            shares = ", ".join(f"{phase} {deepest[phase] / total:.0%}" for phase in deepest.index
                               if phase != "first_call" and total > 0)
            fit = fitted[(fitted.machine == machine) & (fitted.workload == workload) & (fitted.framework == fw)
                         & (fitted.formulation == form) & (fitted.phase == "first_call")]
            depths = sorted(int(d) for d in rows.depth.unique())
            grows = (f"grows as depth^{_exponent(fit.iloc[0])} over depths {', '.join(map(str, depths))}; "
                     if len(fit) else f"has no growth exponent (depth {depths[0]} only); ")
            lines.append(f"{workload}, {label} {form}, {machine}: the first call {grows}{total:.2f} s at depth "
                         f"{depths[-1]} ({shares})")
        lines += _buys(group, machine, workload, label)
    return lines


def _exponent(fit) -> str:
    """A fitted line's exponent with its interval in words."""
    if math.isnan(fit.low):
        return f"{fit.exponent:.2f} (no interval: {fit.points} depths)"
    return f"{fit.exponent:.2f} (95 % interval [{fit.low:.2f}, {fit.high:.2f}])"


def _buys(group: pd.DataFrame, machine: str, workload: str, label: str) -> list[str]:
    """What the block-once formulation (scan, regional) buys at the deepest depth both formulations ran: the measured
    ratio, and the ratio of the two fitted lines there with its interval."""
    first = group[group.phase == "first_call"].pivot_table(index="depth", columns="formulation", values="seconds")
    other = [f for f in first.columns if f != "unrolled"]
    if "unrolled" not in first.columns or not other:
        return []
    both = first.dropna()
    if both.empty:
        return []
    depth, form = both.index.max(), other[0]
    ratio = both.loc[depth, "unrolled"] / both.loc[depth, form]
    how = f"{ratio:.1f}x faster" if ratio >= 1 else f"{1 / ratio:.1f}x slower"
    text = (f"{workload}, {label}, {machine}: {form} compiles the depth-{int(depth)} step {how} than unrolled "
            f"({both.loc[depth, form]:.2f} s against {both.loc[depth, 'unrolled']:.2f} s")
    lines = {f: (list(first[f].dropna().index), list(first[f].dropna())) for f in ("unrolled", form)}
    if min(len(v[0]) for v in lines.values()) < 2 or (first <= 0).any().any():
        return [text + ")"]
    fitted, low, high = fitted_ratio(lines["unrolled"], lines[form], depth)
    interval = (f"95 % interval [{low:.2f}, {high:.2f}]" if not math.isnan(low)
                else "no interval: fewer than three depths")
    return [text + f"; unrolled/{form} from the fitted lines {fitted:.2f}, {interval})"]


# What a machine's pages say where its results hold no cold CompilePhases row.
NOT_RUN = ("the compile-time depth series has not been run on this machine (`make compile-series`, "
           "docs/compile-time.md)")


def section(table: pd.DataFrame) -> list[str]:
    """A machine's compile-growth lines for its pages: findings, or the one NOT_RUN line."""
    return findings(points(table)) or [NOT_RUN]


def draw(table: pd.DataFrame, out: Path) -> list[str]:
    """``compile_growth.png`` in `out`: per workload (rows) and framework (columns, sharing the row's y axis),
    seconds against depth on log-log axes, a colour per phase, a line style per formulation (the title names the
    dashed ones only where drawn); [] where there are no CompilePhases rows."""
    pts = points(table)
    pts = pts[pts.cache == "cold"]
    if pts.empty:
        return []
    from matplotlib.figure import Figure

    names = sorted(pts.workload.unique())
    fws = [f for f in frameworks.NAMES if f in set(pts.framework)]
    fig = Figure(figsize=(7.5, 2.8 * len(names) + 0.8), dpi=130)
    axes = fig.subplots(len(names), len(fws), squeeze=False, sharey="row")  # one scale a workload: 14x reads 14x
    for i, workload in enumerate(names):
        for j, fw in enumerate(fws):
            ax = axes[i, j]
            for (form, phase), line in pts[(pts.workload == workload) & (pts.framework == fw)].groupby(
                    ["formulation", "phase"]):
                line = line[line.seconds > 0].sort_values("depth")
                ax.plot(line.depth, line.seconds, _LINES.get(form, ":"), marker="o", markersize=3,
                        color=_COLOURS.get(phase, "0.5"), label=f"{form} {phase}", linewidth=1)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{workload}, {frameworks.label(fw)}", fontsize=9)
            ax.set_xlabel("depth (layers)", fontsize=9)
            ax.set_ylabel("seconds", fontsize=9)
            ax.tick_params(labelsize=8)
            ax.legend(fontsize=6, ncol=2, frameon=False)
    dashed = sorted(f for f in set(pts.formulation) if _LINES.get(f) == "--")  # the legend names only what is drawn
    fig.suptitle("compile time against depth, per phase (cold caches"
                 + (f"; dashed: {' / '.join(dashed)})" if dashed else ")"), fontsize=10)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / FIGURE)
    return [FIGURE]


def main(argv: list[str]) -> int:
    """`python -m tape_vs_trace.report.compile_growth RESULTS OUT`: the fits and findings of an asv results
    folder's CompilePhases rows, printed, and the figure written to OUT."""
    from tape_vs_trace.report.load import ReportError, load_results

    if len(argv) != 2:
        print("usage: python -m tape_vs_trace.report.compile_growth RESULTS OUT", file=sys.stderr)
        return 2
    try:
        table = load_results(Path(argv[0]), lambda text: print(f"warning: {text}", file=sys.stderr)).table
    except ReportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    pts = points(table)
    print(pts.to_string(index=False))
    print(fits(pts).to_string(index=False))
    print("\n".join(findings(pts)))
    print("figure:", ", ".join(draw(table, Path(argv[1]))) or "none (no CompilePhases rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
