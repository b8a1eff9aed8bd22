"""Pillar 3, rematerialization: torch.utils.checkpoint (and selective checkpointing) against jax.checkpoint policies.

The recompute must be real in both frameworks: flops go up and saved/peak bytes go down (tests/test_benchmarks.py).
The JAX transformer and LSTM put jax.checkpoint inside lax.scan.
"""

from __future__ import annotations

from benchmarks.common import Benchmark, _GradStepTime, _PeakBytes, _SavedBytes, by_device, by_workload, unit
from implementations import workloads

SIZES = by_device(
    cpu={"mlp": ["64x256x1024"], "transformer": ["L4-B4-S64-D128"], "lstm": ["l2-c128-b14"]},
    cuda={"mlp": ["2048x4096x16384"], "transformer": ["L12-B8-S1024-D1024"], "lstm": ["l2-c128-b14"]},
)
# Step times where remat has the most to trade: the transformer's layer stack (the mlp and the LSTM are costed in
# RematCost; the suite's CPU time budget has no room for their step times).
STEP_SIZES = by_device(cpu={"transformer": ["L4-B4-S64-D128"]},
                       cuda={"transformer": ["L12-B8-S1024-D1024"]})
# Policies matched by name on both sides (implementations/jax/common.py has the table of what each saves).
# Offloading to host memory exists on CUDA only; grouping layers (remat_every2) is costed, not timed.
STEP_VARIANTS = ["plain", "remat_full", "remat_dots", *by_device([], ["remat_names", "remat_offload"])]
VARIANTS = ["plain", "remat_full", "remat_dots", "remat_names", "remat_every2", *by_device([], ["remat_offload"])]


def _policies(names: list[str]):
    def variants(workload: str) -> list[str]:
        """The remat policies `workload` has (the LSTM has no matmuls to save)."""
        return [v for v in names if v in workloads.spec(workload).variants]

    return variants

# Workloads whose JAX remat runs inside lax.scan: op by op, JAX would compile the scan anew on every call.
_SCAN_REMAT = ("transformer", "lstm")


class _RematStep(_GradStepTime, Benchmark):
    """One forward + backward without remat ('plain'), recomputing every block ('remat_full'), saving only matmul
    outputs ('remat_dots') or named activations ('remat_names'), or offloading to host memory ('remat_offload',
    CUDA). mode 'eager': PyTorch's tape with torch.utils.checkpoint / op-by-op JAX;
    'compiled': torch.compile of the same / jax.jit."""

    axes = [("variant", _policies(STEP_VARIANTS)), ("mode", ["eager", "compiled"])]

    def skip(self, case):
        if case.framework == "jax" and case.mode == "eager" and case.workload in _SCAN_REMAT:
            return "op-by-op JAX recompiles the lax.scan that carries jax.checkpoint on every call"
        return None



class _RematCost(_SavedBytes, _PeakBytes, Benchmark):
    """Peak bytes, saved bytes and matmul flops of one forward + backward per remat policy."""

    axes = [("variant", _policies(VARIANTS))]
    rounds = 1

    def build(self, case):
        return {}

    def saved_fn(self, case):
        return case.fw.steps.loss_fn(case.inputs, case.variant, case.device)

    def peak_fn(self, case):
        return case.fw.steps.grad_fn(case.inputs, case.variant, case.device)

    def track_flops(self, *params):
        fn, args = self.peak_fn(self.case)
        return self.case.fw.probe.flops(fn, *args)

    track_flops.unit = unit("track_flops")


globals().update(by_workload(_RematStep, STEP_SIZES))
globals().update(by_workload(_RematCost, SIZES))
