"""Numbers in words: one unit system per quantity (seconds scaled to s/ms/µs, memory in binary MiB everywhere)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from tape_vs_trace.report.stats import Comparison

MIB = 2.0 ** 20
NO_DIFFERENCE = "no difference measurable on this machine"
NO_DIFFERENCE_HERE = "no difference measurable"  # in a table or line that names its machine
NO_INTERVAL = "no interval"
_TIME = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]


def scale(unit: str, values: Iterable[float]) -> tuple[float, str]:
    """(divisor, unit label) for a column or axis of values in asv `unit`: one choice for the whole column."""
    finite = sorted(abs(v) for v in values if v is not None and math.isfinite(v) and v)
    if unit == "seconds":  # the middle value picks the unit: a column's outliers read 0.009 or 1,932
        middle = finite[len(finite) // 2] if finite else 1.0
        return next(((s, x) for s, x in _TIME if middle >= s), _TIME[-1])
    if unit == "bytes":
        return MIB, "MiB"
    if unit == "flops":
        return 1e9, "GFLOP"
    return 1.0, unit


def number(value: float, divisor: float = 1.0) -> str:
    """4 significant digits; integers below 10^6 in full."""
    if value is None or not math.isfinite(value):
        return "n/a"
    v = value / divisor
    if divisor == 1.0 and float(v).is_integer() and abs(v) < 1e6:
        return f"{int(v):,}"
    return f"{v:.4g}"


def value(value: float, unit: str) -> str:
    """A single value with its own unit (for sentences)."""
    divisor, label = scale(unit, [value])
    text = number(value, divisor)
    return f"{text} {label}".strip() if label and label != "count" else text


def signed(delta: float, unit: str) -> str:
    """A difference with its sign and unit: '+16 B' (bytes under a KiB in bytes, where MiB would read 0.00001526),
    '−1.5 MiB'."""
    sign = "+" if delta >= 0 else "−"
    if unit == "bytes" and abs(delta) < 1024:
        return f"{sign}{abs(delta):,.0f} B"
    return sign + value(abs(delta), unit)


def equal(c: Comparison, who: str = "JAX") -> str:
    """'equal (JAX +16 B)': an exact difference within its metric's resolution, told but never a direction."""
    return f"equal ({who} {signed(c.delta, c.unit)})"


def pct(fraction: float) -> str:
    return f"{abs(fraction) * 100:.1f} %"


# From here a change reads as a factor: "+25700.0 %" tells a reader less than "258×"
LARGE = 2.0


def change(ratio: float) -> str:
    """A change by `ratio` in words: '+25.0 %', '−95.0 %' (a fall is at most −100 %), and from a factor LARGE up
    '258×'."""
    if ratio >= LARGE:
        return f"{ratio:.3g}×"
    return f"{'+' if ratio > 1 else '−'}{pct(ratio - 1)}"


def ratio(c: Comparison, who: str = "JAX") -> str:
    """A ratio cell: the ratio and its interval, and where the interval does not state a difference, what it does
    say (`undecided`, of `who`: "" for a change within one framework); or the reason there is none."""
    if not c.formed:
        return f"— ({c.reason})"
    r = f"{c.ratio:.3g}×"
    if c.differs is None and c.note:
        return f"{r} ({NO_INTERVAL}: {c.note})"
    if c.low == c.high == c.ratio:
        return equal(c) if c.negligible else r + " (exact)"
    if c.differs:
        return short(c)
    return f"{short(c)} ({undecided(c, who)})"


def short(c: Comparison) -> str:
    """'1.63× [1.55–1.71]': a sampled ratio with its interval, for a table whose verdict stands in a column of its
    own; an exact ratio alone, a ratio without an interval marked so."""
    if not c.formed:
        return "—"
    if c.low == c.high == c.ratio:
        return f"{c.ratio:.3g}× (exact)"
    if c.differs is None:
        return f"{c.ratio:.3g}× ({NO_INTERVAL})"
    return f"{c.ratio:.3g}× [{c.low:.3g}–{c.high:.3g}]"


def band(c: Comparison) -> str:
    """"a rerun's ±10 %": the band of changes a rerun moves such a ratio."""
    return f"a rerun's ±{c.resolution * 100:g} %"


def undecided(c: Comparison, who: str = "JAX", more: str = "slower", less: str = "faster") -> str:
    """What a sampled ratio that is no finding says: "no difference measurable" where its interval includes 1;
    otherwise its direction and size, marked as not beyond the band a rerun moves it ("JAX 13 % faster, not beyond
    a rerun's ±10 %"): the interval excludes 1 but not every change a rerun makes."""
    if c.low <= 1.0 <= c.high:
        return NO_DIFFERENCE_HERE
    size = f"{c.ratio:.3g}×" if max(c.ratio, 1 / c.ratio) >= LARGE else f"{abs(c.ratio - 1) * 100:.0f} %"
    return f"{who} {size} {more if c.ratio > 1 else less}, not beyond {band(c)}".lstrip()
