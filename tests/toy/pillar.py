"""A toy pillar (tests/toy): one timed family, ToyStep, the gradient step of each workload that names it in its grid.

A pillar is this benchmark module, the steps it calls (here the suite's own grad_step on both sides) and its entry in
the pillar registry (tests.toy.register_pillar)."""

from __future__ import annotations

from benchmarks.common import Benchmark, _GradStepTime, by_workload


class _ToyStep(_GradStepTime, Benchmark):
    """One eager forward + backward step, as the toy pillar's own family."""

    axes = [("mode", ["eager"])]


globals().update(by_workload(_ToyStep))
