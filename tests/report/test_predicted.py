"""What a calibration predicts of a JAX/PyTorch ratio (tape_vs_trace.report.predicted): its 95 % interval over the
calibration's processes, the range over a machine's runs for runs without one, the change two hosts predict, and
when that accounts for an observed change."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from tape_vs_trace.report import predicted
from tape_vs_trace.results import intervals

MINE, OTHER, THIRD = "a" * 40, "b" * 40, "c" * 40
RECORDS = Path(__file__).parent.parent / "data" / "host_records"


def record(name: str) -> dict:
    return json.loads((RECORDS / name).read_text())


def dispatch(torch: list[float], jax: list[float]) -> dict:
    """A calibration as `tape-vs-trace calibrate` writes it, of the dispatch cost alone: medians and each process's."""
    per = {"torch": torch, "jax": jax}
    return {"dispatch_seconds_per_op": {k: statistics.median(v) for k, v in per.items()},
            "per_process": {"dispatch_seconds_per_op": per}}


# Host A's JAX/PyTorch dispatch ratio about 3, host B's about 4.5, both from three processes a side with a 5 % spread:
# the change they predict, b over a, has the 95 % interval 1.31-1.71 (intervals.product_interval).
TORCH = [2.0e-6, 2.1e-6, 1.9e-6]
HOST_A = dispatch(TORCH, [6.0e-6, 6.3e-6, 5.7e-6])
HOST_B = dispatch(TORCH, [9.0e-6, 9.45e-6, 8.55e-6])


def test_a_recorded_calibration_predicts_jaxs_cost_over_pytorchs() -> None:
    amd = record("amd-epyc-f25m17-2c-run-b-quiet.json")["tape_vs_trace"]["calibration"]
    intel = record("intel-xeon-f6m167-2c-7b3a82c3.json")["tape_vs_trace"]["calibration"]
    # JAX/PyTorch dispatch cost: 9.462e-6 / 2.932e-6 = 3.227 on the AMD host
    assert predicted.calibrated_ratio(amd, "dispatch cost") == pytest.approx(3.227, 1e-3)
    # PyTorch's matmul rate over JAX's (a JAX step takes longer where its rate is lower): 1.157 on the Intel host
    assert predicted.calibrated_ratio(intel, "matmul rate") == pytest.approx(1.157, 1e-3)
    assert predicted.calibrated_ratio({"matmul_flops_per_s": {"float32": 1e9}}, "matmul rate") is None


def test_a_runs_prediction_has_welchs_interval_over_the_calibrations_processes() -> None:
    got = predicted.interval(HOST_A, "dispatch cost")
    assert got.value == pytest.approx(3.0) and got.has_interval
    assert (got.low, got.high) == intervals.product_interval([HOST_A["per_process"]["dispatch_seconds_per_op"]["jax"]],
                                                             [TORCH])
    assert got.low < 3.0 < got.high
    # a rate's prediction is PyTorch's rate over JAX's: a JAX step takes longer where its rate is lower
    rates = {"matmul_flops_per_s": {"float32": 2.0}, "matmul_flops_per_s_jax": {"float32": 1.0},
             "per_process": {"matmul_flops_per_s": {"float32": [2.0, 2.2, 1.8]},
                             "matmul_flops_per_s_jax": {"float32": [1.0, 1.1, 0.9]}}}
    got = predicted.interval(rates, "matmul rate")
    assert got.value == 2.0 and (got.low, got.high) == intervals.product_interval([[2.0, 2.2, 1.8]], [[1.0, 1.1, 0.9]])
    # one process, or none recorded: no interval
    assert predicted.interval(dispatch([2e-6], [6e-6]), "dispatch cost") is None
    assert predicted.interval({"dispatch_seconds_per_op": {"torch": 2e-6, "jax": 6e-6}}, "dispatch cost") is None


def test_a_planted_interval_that_covers_the_change_accounts_for_it_and_one_that_misses_does_not() -> None:
    a, b = (predicted.interval(h, "dispatch cost") for h in (HOST_A, HOST_B))
    low, high, basis = predicted.predicted_change(a, b)
    assert (low, high) == pytest.approx((1.3129, 1.7138), rel=1e-4)
    assert basis == "the 95 % interval of their calibrations"
    assert predicted.accounts(1.5, a, b) == \
        "accounts for it (the 95 % interval of their calibrations predicts 1.31–1.71×)"
    assert predicted.accounts(2.0, a, b) == ("not explained by the calibration (the 95 % interval of their "
                                             "calibrations predicts 1.31–1.71×)")
    assert predicted.accounts(1.25, a, b).startswith("not explained by the calibration")
    # host B's PyTorch processes spread 2-4 µs: its prediction, and the change, hold 1 and explain nothing
    noisy = predicted.interval(dispatch([2e-6, 4e-6, 3e-6], HOST_B["per_process"]["dispatch_seconds_per_op"]["jax"]),
                               "dispatch cost")
    assert predicted.accounts(1.5, a, noisy) == ("not explained by the calibration (the 95 % interval of their "
                                                 "calibrations predicts 0.466–2.32×, either way)")


def test_a_matmul_calibration_never_explains_a_no_matmul_workload() -> None:
    a, b = (predicted.interval(h, "dispatch cost") for h in (HOST_A, HOST_B))
    assert predicted.accounts(1.5, a, b, concerns=False) == \
        "not explained by the calibration (no matmuls: the matmul rate does not concern it)"
    assert predicted.accounts(1.5, None, b) == "no calibration of this kind in both runs"


def ranged(value: float, low: float, high: float, runs: int = 3) -> predicted.Calibrated:
    return predicted.Calibrated(value, low, high, runs)


def test_without_intervals_the_range_over_the_runs_stands_in_and_says_so() -> None:
    # the two hosts' runs predict 1.2-2.0x (b's 1.2-1.6 over a's 0.8-1.0): a change of 1.5x lies within
    a, b = ranged(0.9, 0.8, 1.0), ranged(1.4, 1.2, 1.6)
    assert predicted.accounts(1.5, a, b) == "accounts for it (the range of their runs' calibrations predicts 1.2–2×)"
    assert predicted.accounts(2.5, a, b) == \
        "not explained by the calibration (the range of their runs' calibrations predicts 1.2–2×)"
    # one host's calibration ran 2.49-10.08 over its runs: its prediction holds 1, so it explains no change
    wide = ranged(5.72, 2.49, 10.08)
    assert predicted.accounts(1.64, wide, ranged(3.66, 3.64, 4.32)) == \
        "not explained by the calibration (the range of their runs' calibrations predicts 0.361–1.73×, either way)"
    # one run with an interval, the other without: every pair of their bounds, named as such
    with_interval = predicted.interval(HOST_A, "dispatch cost")
    low, high, basis = predicted.predicted_change(with_interval, b)
    assert (low, high) == (1.2 / with_interval.high, 1.6 / with_interval.low)
    assert basis == "one run's 95 % interval and the other's range over its runs"


def test_a_run_with_an_interval_uses_it_and_one_without_ranges_over_the_machines_runs_on_its_host() -> None:
    amd = record("amd-epyc-f25m17-2c-run-b-quiet.json")["tape_vs_trace"]
    intel = record("intel-xeon-f6m167-2c-7b3a82c3.json")["tape_vs_trace"]
    slower = json.loads(json.dumps(amd))
    slower["calibration"]["dispatch_seconds_per_op"]["jax"] *= 2
    details = {("box", MINE): amd, ("box", OTHER): slower, ("box", THIRD): intel}  # THIRD: another host
    got = predicted.calibrated(details, "box", MINE, "dispatch cost")
    own = predicted.calibrated_ratio(amd["calibration"], "dispatch cost")
    assert (got.value, got.low, got.high, got.runs, got.has_interval) == pytest.approx((own, own, 2 * own, 2, False))
    assert predicted.shown(got) == f"{own:.3g} ({own:.3g}–{2 * own:.3g}, range over 2 runs)"
    # the same run once its calibration kept each process's values: its own interval, the other runs aside
    kept = {**amd, "calibration": HOST_A}
    got = predicted.calibrated({**details, ("box", MINE): kept}, "box", MINE, "dispatch cost")
    assert got == predicted.interval(HOST_A, "dispatch cost")
    assert predicted.shown(got) == f"3 [{got.low:.3g}–{got.high:.3g}], 95 % over 3 + 3 processes"
    assert predicted.calibrated({("box", MINE): {}}, "box", MINE, "dispatch cost") is None
