"""The host calibration each framework measures (implementations/<framework>/rates.py, what tape-vs-trace calibrate
records): work over the best timed repeat after the warm-up for the matmul rate and the copy bandwidth, the median
repeat per op for the dispatch cost. The clock is faked; the work runs."""

from __future__ import annotations

import pytest

from implementations import sampling
from implementations.jax import rates as jax_rates
from implementations.torch import rates as torch_rates


class _Clock:
    """perf_counter that advances by the next of `steps` seconds per timed call (one read before, one after)."""

    def __init__(self, steps: list[float]) -> None:
        self.now, self.reads, self.steps = 0.0, 0, list(steps)

    def __call__(self) -> float:
        if self.reads % 2:
            self.now += self.steps.pop(0)
        self.reads += 1
        return self.now


# 6 calls: the first (warm-up) is fastest and is left out; of the other five the best is 0.5 s, the median 1.0 s.
CALLS = [0.1, 2.0, 0.5, 1.0, 3.0, 0.75]


@pytest.mark.parametrize("rates", [torch_rates, jax_rates])
def test_calibration_rates_are_work_over_the_best_repeat_after_the_warm_up(rates, monkeypatch):
    monkeypatch.setattr(sampling.time, "perf_counter", _Clock(CALLS))
    assert rates.matmul_rate("float32", "cpu") == 2 * 1024**3 / 0.5  # a 1024 x 1024 product on a CPU
    monkeypatch.setattr(sampling.time, "perf_counter", _Clock(CALLS))
    assert rates.copy_rate("cpu") == 2 * 64 * 2**20 / 0.5  # 64 MiB read and written on a CPU


@pytest.mark.parametrize(("rates", "framework"), [(torch_rates, "torch"), (jax_rates, "jax")])
def test_dispatch_cost_is_the_median_repeat_per_op(rates, framework, monkeypatch):
    monkeypatch.setattr(sampling.time, "perf_counter", _Clock(CALLS))
    assert rates.dispatch_cost("cpu") == pytest.approx(1.0 / sampling.DISPATCH_OPS[framework])
