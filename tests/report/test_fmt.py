"""Number formatting of the report's tables and findings (tape_vs_trace.report.fmt), one case per boundary: the
unit a column is scaled to, significant digits, a ratio's cell and the note on a ratio within a rerun's resolution."""

from __future__ import annotations

import math

import pytest

from tape_vs_trace.report import fmt, stats
from tape_vs_trace.report.stats import Comparison


@pytest.mark.parametrize(("values", "expected"), [
    ([0.0005, 0.002, 0.003], (1e-3, "ms")),  # the middle value picks the unit, not the smallest or the largest
    ([1e-6, 2e-3], (1e-3, "ms")),  # even count: the upper middle
    ([1e-3], (1e-3, "ms")),  # a value exactly at a step takes that step
    ([1.0], (1.0, "s")),
    ([-2.0], (1.0, "s")),  # magnitudes: a negative difference keeps its unit
    ([1e-12], (1e-9, "ns")),  # below every step: the smallest
    ([0.0, None, math.nan, math.inf, 2e-6], (1e-6, "µs")),  # zero, missing and non-finite values do not vote
    ([math.inf, math.inf, 2e-6], (1e-6, "µs")),
    ([], (1.0, "s")),
])
def test_time_scale_follows_the_middle_value(values: list, expected: tuple) -> None:
    assert fmt.scale("seconds", values) == expected


def test_other_units_have_one_fixed_scale() -> None:
    assert fmt.scale("bytes", [1.0]) == (1048576.0, "MiB")
    assert fmt.scale("flops", [1.0]) == (1e9, "GFLOP")
    assert fmt.scale("count", [5.0]) == (1.0, "count")


@pytest.mark.parametrize(("value", "divisor", "text"), [
    (None, 1.0, "n/a"),
    (math.nan, 1.0, "n/a"),
    (math.inf, 1.0, "n/a"),
    (999_999, 1.0, "999,999"),  # integers below 10^6 in full
    (1_000_000, 1.0, "1e+06"),
    (-5, 1.0, "-5"),
    (2.5, 1.0, "2.5"),
    (1234.5678, 1.0, "1235"),  # 4 significant digits
    (2048, 1024.0, "2"),  # a scaled value is never printed as a grouped integer
    (3_000_000, 1024.0, "2930"),
])
def test_number_has_4_significant_digits_and_groups_unscaled_integers(value, divisor: float, text: str) -> None:
    assert fmt.number(value, divisor) == text


def test_number_is_unscaled_by_default() -> None:
    assert fmt.number(999_999) == "999,999" and fmt.number(3.0) == "3"


def test_value_carries_its_unit_except_counts() -> None:
    assert fmt.value(0.0015, "seconds") == "1.5 ms"
    assert fmt.value(2 ** 21, "bytes") == "2 MiB"
    assert fmt.value(3, "count") == "3"
    assert fmt.value(7, "") == "7"


def test_a_change_is_a_signed_percentage_up_to_a_factor_of_two_and_a_factor_beyond() -> None:
    assert (fmt.change(1.25), fmt.change(0.5), fmt.change(0.01)) == ("+25.0 %", "−50.0 %", "−99.0 %")
    assert (fmt.change(2.0), fmt.change(258.0)) == ("2×", "258×")


def test_pct_is_a_magnitude_with_one_decimal() -> None:
    assert fmt.pct(-0.1234) == "12.3 %"
    assert fmt.pct(0.5) == "50.0 %"


@pytest.mark.parametrize(("c", "text"), [
    (Comparison(reason="failed"), "— (failed)"),
    (Comparison(2.0, note="one process"), "2× (no interval: one process)"),
    (Comparison(2.0, 2.0, 2.0), "2× (exact)"),
    (stats.exact(13_516_800, 13_516_816, "track_saved_bytes"), "equal (JAX +16 B)"),
    (stats.exact(13_516_816, 13_516_800, "track_saved_bytes"), "equal (JAX −16 B)"),
    (Comparison(2.0, 1.5, 2.5), "2× [1.5–2.5]"),
    (Comparison(1.1, 0.9, 1.3), "1.1× [0.9–1.3] (no difference measurable)"),
])
def test_a_ratio_cell_is_the_ratio_with_its_interval_or_why_there_is_none(c: Comparison, text: str) -> None:
    assert fmt.ratio(c) == text


@pytest.mark.parametrize(("c", "words"), [
    # the cells: each interval excludes 1 but reaches into the ±10 % a rerun moves a ratio
    (Comparison(0.866, 0.824, 0.911), "JAX 13 % faster, not beyond a rerun's ±10 %"),
    (Comparison(1.25, 1.09, 1.45), "JAX 25 % slower, not beyond a rerun's ±10 %"),
    (Comparison(1.02, 1.0, 1.05), "no difference measurable"),  # an interval that starts at 1 includes it
    (Comparison(0.95, 0.9, 1.01), "no difference measurable"),
    (Comparison(1.02, 1.01, 1.05, resolution=0.03), "JAX 2 % slower, not beyond a rerun's ±3 %"),
])
def test_a_ratio_that_is_no_finding_says_what_its_interval_says(c: Comparison, words: str) -> None:
    assert c.differs is False and fmt.undecided(c) == words


def test_a_ratio_within_its_resolution_gives_its_cell_then_its_words() -> None:
    assert fmt.ratio(stats.Comparison(0.866, 0.824, 0.911)) == \
        "0.866× [0.824–0.911] (JAX 13 % faster, not beyond a rerun's ±10 %)"
    assert fmt.ratio(stats.Comparison(1.05, 0.98, 1.08)) == "1.05× [0.98–1.08] (no difference measurable)"
    assert fmt.ratio(stats.Comparison(1.05, 1.04, 1.06, resolution=0.03)) == "1.05× [1.04–1.06]"
    assert fmt.undecided(stats.Comparison(0.9, 0.85, 0.95), "PyTorch", "more", "less") == \
        "PyTorch 10 % less, not beyond a rerun's ±10 %"
    # a change within one framework names no framework: a variant against its baseline
    assert fmt.ratio(stats.Comparison(1.08, 1.02, 1.14), "") == \
        "1.08× [1.02–1.14] (8 % slower, not beyond a rerun's ±10 %)"


@pytest.mark.parametrize(("c", "cell"), [
    (Comparison(1.63, 1.55, 1.71), "1.63× [1.55–1.71]"),
    (Comparison(0.866, 0.824, 0.911), "0.866× [0.824–0.911]"),  # the verdict stands in a column of its own
    (Comparison(2.0, 2.0, 2.0), "2× (exact)"),
    (Comparison(2.0, note="one process"), "2× (no interval)"),
    (Comparison(reason="failed"), "—"),
])
def test_a_short_cell_is_the_ratio_and_its_interval_only(c: Comparison, cell: str) -> None:
    assert fmt.short(c) == cell
