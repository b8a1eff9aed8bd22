"""tape_vs_trace.results.intervals: the interval width the suite reports and aims to keep narrow, and the one ratio
rule at its two resolutions (across processes, within one process)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tape_vs_trace.results import intervals


def test_half_widths_of_times_of_a_millisecond_or_more() -> None:
    assert intervals.half_width(2e-3, 1.8e-3, 2.4e-3) == pytest.approx(0.15)
    assert math.isnan(intervals.half_width(9e-4, 8e-4, 1e-3))  # under 1 ms: left out
    assert math.isnan(intervals.half_width(2e-3, math.nan, 2.4e-3))


# One ratio rule, two resolutions, on one hand-worked set of passes: three processes of three passes each, the
# denominator's and the numerator's pass j taken in the same sweep.
NUMERATOR = [[1.0, 1.0, 5.0], [4.0, 2.0, 6.0], [8.0, 4.0, 1.0]]
DENOMINATOR = [[1.0, 1.0, 1.0], [2.0, 1.0, 1.0], [2.0, 1.0, 1.0]]
T_975_2 = 4.302653  # Student's t(0.975, 2 degrees of freedom), any t table
LN2 = math.log(2)


def test_the_projected_half_width_is_the_median_intervals_own() -> None:
    per_process = [2.5e-3, 4.1e-3, 3.0e-3, 2.8e-3]
    low, high = intervals.median_interval(per_process)
    sd = float(np.std(np.log(per_process), ddof=1))
    assert intervals.projected_half_width(sd, len(per_process)) == pytest.approx(math.log(high / low) / 2, rel=1e-12)
    assert intervals.projected_half_width(sd, 1) == math.inf


def test_within_one_process_the_ratio_is_paired_pass_by_pass() -> None:
    # Per-pass ratios 1, 1, 5 / 2, 2, 6 / 4, 4, 1: per-process medians 1, 2, 4; their logs 0, ln 2, 2 ln 2 have
    # mean ln 2 and standard error ln 2 / sqrt 3, so the interval is exp(ln 2 -+ t ln 2 / sqrt 3).
    assert intervals.paired_ratios(NUMERATOR, DENOMINATOR) == pytest.approx([1.0, 2.0, 4.0], rel=1e-12)
    half = T_975_2 * LN2 / math.sqrt(3)
    low, high = intervals.ratio_interval(NUMERATOR, DENOMINATOR, intervals.WITHIN_PROCESS)
    assert (low, high) == pytest.approx((math.exp(LN2 - half), math.exp(LN2 + half)), rel=1e-6)
    # What the paired runner computed before the rule was one function: the same floats.
    before = [float(np.exp(np.median(np.log(np.asarray(n) / np.asarray(d))))) for n, d in zip(NUMERATOR, DENOMINATOR)]
    assert (low, high) == intervals.median_interval(before)


def test_across_processes_the_ratio_is_welch_t_on_the_medians() -> None:
    # Medians 1, 4, 4 over 1, 1, 1: log difference 4 ln 2 / 3, its variance (4 / 9) (ln 2)^2 all from the numerator,
    # so Welch's degrees of freedom are 2 and the half-width is t 2 ln 2 / 3.
    numerator, denominator = ([float(np.median(p)) for p in side] for side in (NUMERATOR, DENOMINATOR))
    assert (numerator, denominator) == ([1.0, 4.0, 4.0], [1.0, 1.0, 1.0])
    half = T_975_2 * 2 * LN2 / 3
    low, high = intervals.ratio_interval(numerator, denominator, intervals.ACROSS_PROCESSES)
    assert (low, high) == pytest.approx((math.exp(4 * LN2 / 3 - half), math.exp(4 * LN2 / 3 + half)), rel=1e-6)
    assert intervals.ratio_interval(numerator, denominator) == (low, high)  # the default: independent processes
    with pytest.raises(ValueError, match="unknown resolution"):
        intervals.ratio_interval(numerator, denominator, "per sample")


T_975_4 = 2.776445  # Student's t(0.975, 4 degrees of freedom), any t table


def test_a_product_of_independent_sets_sums_their_log_means_and_variances() -> None:
    # Two over two, the spread all in one set: centre 4 ln 2 / 3 - ln 2 = ln 2 / 3, Welch's dof 2 as above.
    half = T_975_2 * 2 * LN2 / 3
    low, high = intervals.product_interval([[1.0, 4.0, 4.0], [1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    assert (low, high) == pytest.approx((math.exp(LN2 / 3 - half), math.exp(LN2 / 3 + half)), rel=1e-6)
    # The same spread in two sets: centre 0, squared standard errors v = (4 / 9)(ln 2)^2 each, dof (2v)^2 / (v^2) = 4.
    half = T_975_4 * math.sqrt(2) * 2 * LN2 / 3
    assert intervals.product_interval([[1.0, 4.0, 4.0]], [[1.0, 4.0, 4.0]]) == pytest.approx(
        (math.exp(-half), math.exp(half)), rel=1e-6)
    assert intervals.product_interval([[3.0, 3.0]], [[1.5, 1.5]]) == (2.0, 2.0)  # no spread: exact
    assert all(math.isnan(v) for v in intervals.product_interval([[1.0, 2.0]], [[1.0]]))  # one process: no interval

def test_the_runners_and_the_report_divide_through_the_one_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    from implementations.experiments import Experiment, Point
    from tape_vs_trace.report import stats
    from tape_vs_trace.side import paired

    called = []
    rule = intervals.ratio_interval

    def spy(numerator: list, denominator: list, resolution: str = intervals.ACROSS_PROCESSES) -> tuple:
        called.append(resolution)
        return rule(numerator, denominator, resolution)

    monkeypatch.setattr(intervals, "ratio_interval", spy)
    monkeypatch.setattr(stats, "ratio_interval", spy)
    e = Experiment("x", "paired", "torch", "mlp", "s", "eager", "", (Point("a"), Point("b", variant="b")))
    runs = {"torch": [{"x": {"times": [d, n]}} for n, d in zip(NUMERATOR, DENOMINATOR)]}
    _, row = paired.rows([e], runs, "cpu", "c", "m")
    assert called[-1] == intervals.WITHIN_PROCESS
    assert (row["ratio_ci_low"], row["ratio_ci_high"]) == rule(NUMERATOR, DENOMINATOR, intervals.WITHIN_PROCESS)
    a = {"machine": "m", "commit": "c", "benchmark": "b", "benchmark_version": "1", "metric": "time_step",
         "status": "ok", "sampled": True, "memory_method": "", "framework": "torch", "value": 1.0,
         "params": '{"framework":"torch","variant":"a"}', "process_medians": "[1.0, 1.0, 1.0]"}
    b = a | {"value": 4.0, "params": '{"framework":"torch","variant":"b"}', "process_medians": "[1.0, 4.0, 4.0]"}
    c = stats.change(a, b)
    assert called[-1] == intervals.ACROSS_PROCESSES
    assert (c.low, c.high) == rule([1.0, 4.0, 4.0], [1.0, 1.0, 1.0])
