"""The Comparison page's chart: JAX/PyTorch ratios of one pillar's metric, one row per case and one marker per machine
on a log axis, each with its 95 % interval, a line at 1 and the band of changes a rerun moves such a ratio (the
ratio's resolution) shaded. Written as SVG text so that every marker is an element a browser draws and a test can
count (`data-machine`), with the exact figures in its tooltip."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from tape_vs_trace.report import fmt, stats

MARKERS = ("circle", "square", "diamond", "triangle", "down")  # one per machine, in the page's machine order
INK = "#333333"  # a ratio is no framework's: one neutral colour, machines told apart by marker
PLOT_W, RIGHT_W, ROW_H, TOP, BOTTOM = 460, 30, 26, 34, 40
CHAR_W = 6.2  # about the width of one 11 px sans-serif character: the label column fits the longest label


def _marker(kind: str, x: float, y: float, filled: bool, attrs: str) -> str:
    fill = INK if filled else "white"
    common = f'fill="{fill}" stroke="{INK}" stroke-width="1.5" {attrs}'
    r = 5.0
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" {common}/>'
    if kind == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" {common}/>'
    corners = {"diamond": [(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)],
               "triangle": [(0, -r - 1), (r + 1, r), (-r - 1, r)],
               "down": [(0, r + 1), (r + 1, -r), (-r - 1, -r)]}[kind]
    points = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in corners)
    return f'<polygon points="{points}" {common}/>'


def _bounds(comparisons: Sequence[stats.Comparison]) -> tuple[float, float]:
    """Log-axis limits covering every ratio, its interval and the resolution band, in decades or halves of them."""
    values = [v for c in comparisons for v in (c.ratio, c.low, c.high) if math.isfinite(v) and v > 0]
    values += [1 / (1 + stats.BETWEEN_PROCESSES), 1 + stats.BETWEEN_PROCESSES]
    low, high = math.log10(min(values)), math.log10(max(values))
    return math.floor(low * 2) / 2, math.ceil(high * 2) / 2


def _ticks(low: float, high: float) -> list[float]:
    steps = (1, 2, 5) if high - low <= 3 else (1,)
    return [m * 10 ** e for e in range(math.floor(low), math.ceil(high) + 1) for m in steps
            if low <= math.log10(m * 10 ** e) <= high]


def tooltip(machine: str, label: str, c: stats.Comparison, commit: str) -> str:
    return f"{machine} at {commit[:8]}: {label}: JAX/PyTorch {fmt.ratio(c)}"


def svg(title: str, rows: list[str], points: list[tuple[int, int, stats.Comparison, str, str]],
        machines: list[str], sampled: bool) -> str:
    """`points` are (row index, machine index, comparison, commit, machine name); rows are the cases' labels; a
    `sampled` metric's chart shades the band of changes a rerun moves its ratios (an exact one has none)."""
    label_w = max(200.0, CHAR_W * max(map(len, rows), default=0) + 16)
    height = TOP + ROW_H * len(rows) + BOTTOM
    width = label_w + PLOT_W + RIGHT_W
    low, high = _bounds([p[2] for p in points])

    def x(v: float) -> float:
        return label_w + (math.log10(v) - low) / (high - low) * PLOT_W

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" style="max-width: 100%; height: auto" font-family="sans-serif" '
           'font-size="12" role="img">',
           f'<text x="{label_w}" y="16" font-weight="bold">{html.escape(title)}</text>']
    band = 1 + stats.BETWEEN_PROCESSES
    if sampled:
        out.append(f'<rect x="{x(1 / band):.1f}" y="{TOP}" width="{x(band) - x(1 / band):.1f}" '
                   f'height="{ROW_H * len(rows)}" fill="#e8e8e8"/>')
    for t in _ticks(low, high):
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{TOP}" y2="{TOP + ROW_H * len(rows)}" '
                   f'stroke="{"#555" if t == 1 else "#ddd"}" stroke-width="{1.2 if t == 1 else 0.8}"/>')
        out.append(f'<text x="{x(t):.1f}" y="{TOP + ROW_H * len(rows) + 15}" text-anchor="middle">{t:g}×</text>')
    caption = "JAX/PyTorch (left of 1: JAX costs less" + ("; shaded: what a rerun moves such a ratio)" if sampled
                                                          else "; exact values)")
    out.append(f'<text x="{label_w + PLOT_W / 2}" y="{height - 6}" text-anchor="middle">{caption}</text>')
    for i, label in enumerate(rows):
        y = TOP + ROW_H * (i + 0.5)
        out.append(f'<text x="{label_w - 8}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
                   f'{html.escape(label)}</text>')
    offsets = [(j - (len(machines) - 1) / 2) * min(10.0, (ROW_H - 6) / max(len(machines), 1))
               for j in range(len(machines))]
    for row, j, c, commit, machine in points:
        y = TOP + ROW_H * (row + 0.5) + offsets[j]
        tip = html.escape(tooltip(machine, rows[row], c, commit))
        if math.isfinite(c.low) and math.isfinite(c.high) and c.low != c.high:
            out.append(f'<line x1="{x(c.low):.1f}" x2="{x(c.high):.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{INK}" '
                       'stroke-width="1.5"/>')
        attrs = f'class="point" data-machine="{html.escape(machine)}" data-ratio="{c.ratio:.6g}"'
        out.append(f"<g>{_marker(MARKERS[j % len(MARKERS)], x(c.ratio), y, bool(c.differs), attrs)}"
                   f"<title>{tip}</title></g>")
    out.append("</svg>")
    return "\n".join(out)


def legend(machines: list[str]) -> str:
    """The machines' markers, and under them what a filled marker means, as a small SVG."""
    said = "filled: a finding (the interval excludes the rerun band); hollow: not a finding"
    width = max(40 + sum(24 + 7 * len(m) for m in machines), 20 + 7 * len(said))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="44" font-family="sans-serif" '
           'font-size="12">']
    at = 10.0
    for j, m in enumerate(machines):
        out.append(_marker(MARKERS[j % len(MARKERS)], at, 12, True, 'class="legend"'))
        out.append(f'<text x="{at + 10:.0f}" y="16">{html.escape(m)}</text>')
        at += 24 + 7 * len(m)
    out.append(f'<text x="10" y="38">{said}</text></svg>')
    return "\n".join(out)
