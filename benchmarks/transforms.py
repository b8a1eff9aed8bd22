"""Pillar 6, function transforms: torch.func and the autograd tape against jax's transforms, per transform and mode
(what each transform differentiates: implementations/torch/transforms.py)."""

from __future__ import annotations

from importlib import import_module

from benchmarks.common import Benchmark, by_workload
from benchmarks.counts import _PeakBytes, _SavedBytes
from implementations import frameworks


def _transforms(case):
    return import_module(f"implementations.{case.framework}.transform_steps")


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
        return {"step": _transforms(case).transform_step(case.inputs, case.transform, case.mode, case.device)}

    def time_step(self, *params):
        self.run_step()


class _TransformMemory(_PeakBytes, Benchmark):
    """Peak bytes of one call of each transform (the eager step: JAX's probe jits it, as for every peak of the
    suite), by each framework's memory method (frameworks.memory_method)."""

    axes = [("transform", list(frameworks.TRANSFORMS))]
    rounds = 1

    def skip(self, case):
        return frameworks.transform_skip(case.framework, case.transform, "eager", case.device)

    def build(self, case):
        return {}

    def peak_fn(self, case):
        return _transforms(case).transform_fn(case.inputs, case.transform, "eager", case.device)


class _TransformSaved(_SavedBytes, Benchmark):
    """Bytes the outermost reverse pass of each transform keeps for its backward (the tape, or jax.vjp's residuals)
    beyond inputs, parameters and the cotangent; forward-mode transforms keep none and are skipped."""

    axes = [("transform", list(frameworks.TRANSFORMS))]
    rounds = 1

    def skip(self, case):
        return frameworks.transform_saved_skip(case.framework, case.transform, case.device)

    def build(self, case):
        return {}

    def saved_fn(self, case):
        return _transforms(case).saved_fn(case.inputs, case.transform, case.device)


globals().update(by_workload(_TransformStep))
globals().update(by_workload(_TransformMemory))
globals().update(by_workload(_TransformSaved))
