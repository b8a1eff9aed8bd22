"""Pillar 2, custom backward: torch.autograd.Function against jax.custom_vjp, each against plain autodiff."""

from __future__ import annotations

from benchmarks.common import STEP_DTYPES, STEP_PRECISIONS, Benchmark, _GradStepTime, _StepCosts, by_workload
from benchmarks.counts import _PeakBytes, _SavedBytes
from implementations import workloads


class _CustomStep(_GradStepTime, Benchmark):
    """One forward + backward with the autodiff op ('plain') or the hand-written backward ('custom':
    torch.autograd.Function / jax.custom_vjp). mode 'eager': PyTorch's tape / op-by-op jax.value_and_grad;
    'compiled': torch.compile / jax.jit."""

    axes = [("variant", ["plain", "custom"]), ("mode", ["eager", "compiled"])]
    dtypes = STEP_DTYPES
    precisions = STEP_PRECISIONS


class _CustomMemory(_SavedBytes, _PeakBytes, _StepCosts, Benchmark):
    """Bytes kept for the backward (beyond inputs, parameters and the cotangent) and the peak bytes of one step,
    autodiff ('plain') against the hand-written backward ('custom')."""

    axes = [("variant", ["plain", "custom"])]
    styles = workloads.STYLES  # the plain backward's silu in both styles; the custom one is the same in both
    rounds = 1

    def skip(self, case):
        if case.variant == "custom" and case.style == "default":
            return "the custom backward is written the same in both styles: its matched row is its only row"
        return None


globals().update(by_workload(_CustomStep))
globals().update(by_workload(_CustomMemory))
