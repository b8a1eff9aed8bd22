"""The sample sizing both the asv suite and the paired runner use (implementations/sampling.py)."""

from __future__ import annotations

import pytest

from implementations import sampling


class _Clock:
    """perf_counter for a step that takes `seconds` per call: advances only when the step runs."""

    def __init__(self, seconds: float):
        self.now, self.seconds, self.calls = 0.0, seconds, 0

    def __call__(self) -> float:
        return self.now

    def step(self) -> None:
        self.calls += 1
        self.now += self.seconds


@pytest.mark.parametrize(("seconds", "calls"), [(4.5e-4, 23), (3e-4, 34), (2.5e-3, 4), (1e-2, 1), (0.5, 1),
                                                (1e-9, 10_000)])
def test_calls_make_a_sample_of_at_least_ten_milliseconds(monkeypatch, seconds, calls):
    clock = _Clock(seconds)
    monkeypatch.setattr(sampling.time, "perf_counter", clock)
    assert sampling.calls_for(clock.step) == calls
    assert clock.calls == 1  # one call sizes the loop; it doubles as a warm-up


def test_the_suite_sizes_samples_by_this_module():
    from benchmarks import common

    assert common.sampling is sampling
    assert sampling.MIN_SAMPLE_SECONDS == 10e-3


def test_once_runs_the_compiled_step_once_and_synchronises_it():
    seen = []
    first = sampling.once(lambda a, b: a + b, (2, 3), lambda out: seen.append(out) or out * 10)
    assert first() == 50 and seen == [5]
    with pytest.raises(RuntimeError, match="would not compile"):
        first()
    assert seen == [5]


@pytest.mark.parametrize(("device", "step_seconds", "calls"), [
    ("cpu", 0.3, 2), ("cuda", 0.3, 4), ("cuda:0", 0.3, 4), ("cuda", 2.0, 2), ("cuda", 1e-3, 1000)])
def test_warm_up_is_two_calls_and_on_a_gpu_a_second_of_work(monkeypatch, device: str, step_seconds: float,
                                                            calls: int) -> None:
    clock = _Clock(step_seconds)
    monkeypatch.setattr(sampling.time, "perf_counter", clock)
    assert sampling.warm_up(clock.step, device) == clock.calls == calls
