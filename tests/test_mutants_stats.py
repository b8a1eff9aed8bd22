"""The report's statistics (tape_vs_trace.report.stats) called directly, each expected value worked out by hand: found
by mutation testing (`make mutate`), where the end-to-end report tests reach these functions only through a built
report and left changed branches (one process, no samples, a zero divisor, a within-framework change) green.

Hand arithmetic: per-process medians 1, 2 and 4 have logarithms 0, ln 2, 2 ln 2: mean ln 2, sample standard deviation
ln 2, standard error ln 2 / sqrt(3). Student's t(0.975, 2 degrees of freedom) = 4.302653 (any t table)."""

from __future__ import annotations

import json
import math

import pytest

from tape_vs_trace.report import stats

# log(0) and log(-1) are the inputs under test in the refusals below.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
T_975_2 = 4.302653
HALF = T_975_2 * math.log(2) / math.sqrt(3)  # half-width on the log scale for medians 1, 2, 4


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5)


def test_median_interval_is_student_t_on_logs() -> None:
    low, high = stats.median_interval([1.0, 2.0, 4.0])
    assert close(low, 2 * math.exp(-HALF)) and close(high, 2 * math.exp(HALF))
    low, high = stats.median_interval([4, 1, 2])  # integers and any order
    assert close(low, 2 * math.exp(-HALF)) and close(high, 2 * math.exp(HALF))


def test_median_interval_of_identical_processes_is_the_value() -> None:
    low, high = stats.median_interval([3.0, 3.0, 3.0])
    assert close(low, 3.0) and close(high, 3.0)


@pytest.mark.parametrize("per_process", [[2.0], [], [1.0, 0.0, 2.0], [1.0, -1.0, 2.0], [1.0, math.inf]])
def test_median_interval_needs_two_positive_finite_values(per_process: list) -> None:
    low, high = stats.median_interval(per_process)
    assert math.isnan(low) and math.isnan(high)


def test_ratio_interval_is_welch_t_on_log_differences() -> None:
    # numerator medians 1, 2, 4 (variance of the mean (ln 2)^2 / 3), denominator 2, 2, 2 (variance 0): the mean log
    # difference is ln 2 - ln 2 = 0 and Welch's degrees of freedom are (vx)^2 / (vx^2 / 2) = 2.
    low, high = stats.ratio_interval([1.0, 2.0, 4.0], [2.0, 2.0, 2.0])
    assert close(low, math.exp(-HALF)) and close(high, math.exp(HALF))
    # Swapping the roles inverts the interval.
    low, high = stats.ratio_interval([2, 2, 2], [1, 2, 4])
    assert close(low, math.exp(-HALF)) and close(high, math.exp(HALF))


def test_ratio_interval_of_two_spread_sides() -> None:
    # x = ln[1, e] = [0, 1] and y = ln[e^2, e^3] = [2, 3]: each variance of the mean 0.5 / 2 = 0.25, so Welch's degrees
    # of freedom are 0.5^2 / (0.25^2 + 0.25^2) = 2; the mean difference is 0.5 - 2.5 = -2.
    low, high = stats.ratio_interval([1.0, math.e], [math.e ** 2, math.e ** 3])
    half = T_975_2 * math.sqrt(0.5)
    assert close(low, math.exp(-2 - half)) and close(high, math.exp(-2 + half))


def test_ratio_interval_of_constant_processes_is_exact() -> None:
    low, high = stats.ratio_interval([6.0, 6.0], [2.0, 2.0, 2.0])
    assert close(low, 3.0) and close(high, 3.0)


@pytest.mark.parametrize(("num", "den"), [([1.0], [1.0, 2.0]), ([1.0, 2.0], [3.0]), ([0.0, 1.0], [1.0, 2.0]),
                                          ([1.0, 2.0], [1.0, math.nan])])
def test_ratio_interval_needs_two_positive_values_per_side(num: list, den: list) -> None:
    low, high = stats.ratio_interval(num, den)
    assert math.isnan(low) and math.isnan(high)


def test_summarise_a_failed_result() -> None:
    row = stats.summarise(None, 1.0, 2.0, [1.0, 2.0], True, stats.Split(2, 1))
    assert row["status"] == "failed" and row["processes"] is None and row["samples"] is None
    assert row["basis"] == "" and row["process_medians"] == ""
    for key in ("value", "spread", "q25", "q75", "ci_low", "ci_high"):
        assert math.isnan(row[key])


def test_summarise_an_exact_count() -> None:
    row = stats.summarise(7, None, None, None, False, stats.Split(3, 1))
    assert row == {"value": 7.0, "spread": 0.0, "q25": 7.0, "q75": 7.0, "ci_low": 7.0, "ci_high": 7.0,
                   "processes": None, "samples": None, "basis": "exact", "process_medians": "", "status": "ok"}
    assert isinstance(row["value"], float)


def test_summarise_per_process_medians() -> None:
    # Three processes of three samples: medians 2, 5 and 20; their quartiles (linear interpolation) 3.5 and 12.5.
    samples = [3.0, 1.0, 2.0, 5.0, 4.0, 6.0, 10.0, 30.0, 20.0]
    row = stats.summarise(99.0, 0.0, 0.0, samples, True, stats.Split(3, 3))
    low, high = stats.median_interval([2.0, 5.0, 20.0])
    assert row == {"value": 5.0, "spread": 9.0, "q25": 3.5, "q75": 12.5, "ci_low": low, "ci_high": high,
                   "processes": 3, "samples": 9, "basis": "processes", "process_medians": "[2.0, 5.0, 20.0]",
                   "status": "ok"}
    assert json.loads(row["process_medians"]) == [2.0, 5.0, 20.0]


def test_summarise_one_process() -> None:
    row = stats.summarise(2.0, 1.0, 3.0, [1.0, 2.0, 30.0], True, stats.Split(1, (1, 10, 5.0)))
    assert row["value"] == 2.0 and row["spread"] == 0.0 and row["q25"] == row["q75"] == 2.0
    assert row["processes"] == 1 and row["samples"] == 3 and row["basis"] == "one process"
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"]) and row["process_medians"] == "[2.0]"


@pytest.mark.parametrize(("samples", "split", "count", "basis"), [
    ([1.0] * 6, stats.Split(2, 4), 6, "asv: 6 samples do not split into processes of 4"),
    ([1.0, 2.0], stats.Split(2, 0), 2, "asv: repeat is not a fixed count, so samples cannot be assigned to processes"),
    (None, stats.Split(2, 2), None, "asv: no samples recorded (run without --record-samples)"),
    ([], stats.Split(1, 2), None, "asv: no samples recorded (run without --record-samples)"),
    ([1.0, "x"], stats.Split(1, 2), None, "asv: no samples recorded (run without --record-samples)"),
])
def test_summarise_falls_back_to_asv_quartiles(samples, split: stats.Split, count, basis: str) -> None:
    row = stats.summarise(2.0, 1.5, 4.0, samples, True, split)
    assert row == {"value": 2.0, "spread": 2.5, "q25": 1.5, "q75": 4.0, "ci_low": row["ci_low"],
                   "ci_high": row["ci_high"], "processes": None, "samples": count, "basis": basis,
                   "process_medians": "", "status": "ok"}
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])


def test_summarise_without_quartiles() -> None:
    row = stats.summarise(2.0, None, None, None, True, stats.Split(1, 1))
    assert math.isnan(row["q25"]) and math.isnan(row["q75"]) and math.isnan(row["spread"])


def row(**change) -> dict:
    base = {"machine": "m", "commit": "c", "benchmark": "b", "benchmark_version": "1", "metric": "time_step",
            "status": "ok", "comparable": True, "sampled": True, "memory_method": "", "basis": "processes",
            "framework": "torch", "value": 2.0, "params": '{"framework":"torch","variant":"plain"}',
            "process_medians": "[2.0, 2.0, 2.0]"}
    return base | change


def test_change_within_one_framework() -> None:
    a, b = row(), row(value=6.0, params='{"framework":"torch","variant":"remat"}', process_medians="[6.0, 6.0]")
    c = stats.change(a, b)
    assert c.ratio == 3.0 and close(c.low, 3.0) and close(c.high, 3.0) and c.formed and c.note == ""


@pytest.mark.parametrize("key", ["machine", "commit", "framework", "metric", "memory_method"])
def test_change_refuses_rows_that_differ_in(key: str) -> None:
    c = stats.change(row(), row(**{key: "other"}))
    assert c.reason == "not like rows" and math.isnan(c.ratio)


def test_change_refusals() -> None:
    assert stats.change(None, row()).reason == "only one framework ran"
    assert stats.change(row(), None).reason == "only one framework ran"
    assert stats.change(row(status="failed"), row()).reason == "failed"
    assert stats.change(row(), row(status="failed")).reason == "failed"
    assert stats.change(row(value=0.0), row()).reason == "divisor is zero"
    assert stats.change(row(), row(value=0.0)).ratio == 0.0  # a zero numerator is a ratio


def test_compare_refuses_a_zero_divisor_and_reads_params_without_a_framework() -> None:
    a, b = row(), row(framework="jax", value=4.0)
    assert stats.compare(a, b).ratio == 2.0
    assert stats.compare(row(value=0.0), b).reason == "divisor is zero"
    # Rows whose parameters do not name the framework are still like rows.
    c = stats.compare(row(params='{"mode":"eager"}'), row(framework="jax", value=4.0, params='{"mode":"eager"}'))
    assert c.formed and c.ratio == 2.0


def test_interval_of_two_exact_rows_is_the_ratio() -> None:
    c = stats.change(row(sampled=False, process_medians=""), row(sampled=False, value=5.0, process_medians=""))
    assert (c.ratio, c.low, c.high) == (2.5, 2.5, 2.5)


@pytest.mark.parametrize(("a", "b", "note"), [
    (row(basis="one process", process_medians="[2.0]"), row(value=4.0), "one process"),
    (row(value=4.0), row(basis="one process", process_medians="[2.0]"), "one process"),
    (row(basis="asv: x", process_medians=""), row(value=4.0), "no samples recorded"),
    (row(value=4.0), row(basis="asv: x", process_medians=""), "no samples recorded"),
    # One side exact, the other sampled: no interval, named by the side that lacks processes.
    (row(sampled=False, basis="exact", process_medians=""), row(value=4.0), "no samples recorded"),
    (row(basis="one process", process_medians="[2.0]"), row(value=4.0, basis="asv: x", process_medians=""),
     "one process"),
])
def test_interval_missing_processes_is_named(a: dict, b: dict, note: str) -> None:
    c = stats.change(a, b)
    assert c.ratio == b["value"] / a["value"] and c.note == note and c.differs is None
    assert math.isnan(c.low) and math.isnan(c.high)


def test_two_processes_are_enough_for_an_interval() -> None:
    # medians 1 and 4: logs 0 and 2 ln 2, mean ln 2, standard error ln 2; t(0.975, 1) = 12.7062 (any t table).
    low, high = stats.median_interval([1.0, 4.0])
    assert close(low, 2 * math.exp(-12.7062 * math.log(2))) and close(high, 2 * math.exp(12.7062 * math.log(2)))
    row2 = stats.summarise(1.0, None, None, [1.0, 1.0, 4.0, 4.0], True, stats.Split(2, 2))
    assert row2["basis"] == "processes" and row2["processes"] == 2 and row2["value"] == 2.5
    c = stats.change(row(process_medians="[2.0, 2.0]"), row(value=4.0, process_medians="[4.0, 4.0]"))
    assert close(c.low, 2.0) and close(c.high, 2.0) and c.note == ""
    # Two processes against one: the one-process side is named.
    c = stats.change(row(process_medians="[2.0, 2.0]"), row(value=4.0, basis="one process", process_medians="[4.0]"))
    assert c.note == "one process"


def test_one_sample_per_process_splits_into_processes() -> None:
    assert stats.Split(3, 1).chunks([1.0, 2.0, 3.0]) == ([[1.0], [2.0], [3.0]], "")
