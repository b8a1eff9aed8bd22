"""Pillar 6, function transforms: torch.func and the autograd tape against jax's transforms, per transform and mode
(what each transform differentiates: implementations/torch/transforms.py)."""

from __future__ import annotations

from benchmarks.common import Benchmark, by_workload
from implementations import frameworks


class _TransformStep(Benchmark):
    """One call of each function transform (reverse and forward mode, the HVP by each mode composition, the tall and
    wide Jacobians, per-example gradients by vmap and by a loop), op by op ('eager') or compiled (torch.compile /
    jax.jit)."""

    axes = [("transform", list(frameworks.TRANSFORMS)), ("mode", ["eager", "compiled"])]
    # Two processes under asv run, not three: op-by-op JAX compiles each primitive anew in every process, which keeps
    # the pillar's share of a CPU run small (tape-vs-trace run --rounds sets the count there).
    rounds = 2

    def skip(self, case):
        return frameworks.transform_skip(case.framework, case.transform, case.mode, case.device)

    def build(self, case):
        from importlib import import_module

        transforms = import_module(f"implementations.{case.framework}.transforms")
        return {"step": transforms.transform_step(case.inputs, case.transform, case.mode, case.device)}

    def time_step(self, *params):
        self.run_step()


globals().update(by_workload(_TransformStep))
