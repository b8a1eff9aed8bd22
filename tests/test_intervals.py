"""tape_vs_trace.intervals: the interval width the suite reports and aims to keep narrow."""

from __future__ import annotations

import math

import pytest

from tape_vs_trace import intervals


def test_half_widths_of_times_of_a_millisecond_or_more() -> None:
    assert intervals.half_width(2e-3, 1.8e-3, 2.4e-3) == pytest.approx(0.15)
    assert math.isnan(intervals.half_width(9e-4, 8e-4, 1e-3))  # under 1 ms: left out
    assert math.isnan(intervals.half_width(2e-3, math.nan, 2.4e-3))
