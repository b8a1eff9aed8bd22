"""Pillar 3, rematerialization: torch.utils.checkpoint (and selective checkpointing) against jax.checkpoint policies.

The recompute must be real in both frameworks: flops go up and saved/peak bytes go down (tests/test_benchmarks.py).
The JAX transformer and LSTM put jax.checkpoint inside lax.scan, where XLA on CPU keeps the recompute.
"""

from __future__ import annotations

from benchmarks.common import (
    DEVICE,
    DTYPES,
    FRAMEWORKS,
    PRECISIONS,
    Benchmark,
    by_device,
    by_workload,
    check_case,
    import_framework,
    memo,
    peak,
)

SIZES = by_device(
    cpu={"mlp": ["64x256x1024"], "transformer": ["L4-B4-S64-D128", "L8-B4-S64-D128"], "lstm": ["l2-c128-b14"]},
    cuda={"mlp": ["512x1024x4096"], "transformer": ["L12-B8-S1024-D1024"], "lstm": ["l4-c1024-b1024"]},
)
PARAMS = [FRAMEWORKS, [], [], ["plain", "remat_full", "remat_dots"], DTYPES, PRECISIONS, [DEVICE]]
PARAM_NAMES = ["framework", "workload", "size", "variant", "dtype", "precision", "device"]


class _RematStep(Benchmark):
    """Forward + backward (compiled: torch.compile / jax.jit) without remat, recomputing everything, or saving
    only matmul outputs."""

    params = PARAMS
    param_names = PARAM_NAMES

    def setup(self, framework, workload, size, variant, dtype, precision, device):
        inputs = check_case(workload, size, dtype, variant)
        fw = import_framework(framework, dtype, precision)
        # Eager PyTorch against jitted JAX: checkpointing is used in training steps, which run jitted in JAX; the
        # PyTorch eager step is what torch.utils.checkpoint is written for.
        mode = "compiled" if framework == "jax" else "eager"
        self.step = memo((type(self).__name__, framework, workload, size, variant, dtype, precision, device),
                         lambda: fw["steps"].grad_step(inputs, variant, mode, device))

    def time_step(self, *params):
        self.step()


class _RematCost(Benchmark):
    """Peak bytes, saved bytes and flops of one forward + backward per remat policy."""

    params = PARAMS
    param_names = PARAM_NAMES

    def setup(self, framework, workload, size, variant, dtype, precision, device):
        self.inputs = check_case(workload, size, dtype, variant)
        self.fw = import_framework(framework, dtype, precision)
        self.variant = variant

    def track_peak_bytes(self, framework, workload, size, variant, dtype, precision, device):
        fn, args = self.fw["steps"].grad_fn(self.inputs, variant, device)
        return peak(self.fw, framework, device, fn, args)

    track_peak_bytes.unit = "bytes"

    def track_saved_bytes(self, framework, workload, size, variant, dtype, precision, device):
        fn, args = self.fw["steps"].loss_fn(self.inputs, variant, device)
        return self.fw["probe"].saved_bytes(fn, *args).extra_bytes

    track_saved_bytes.unit = "bytes"

    def track_flops(self, framework, workload, size, variant, dtype, precision, device):
        fn, args = self.fw["steps"].grad_fn(self.inputs, variant, device)
        return self.fw["probe"].flops(fn, *args)

    track_flops.unit = "flops"


globals().update(by_workload(_RematStep, SIZES))
globals().update(by_workload(_RematCost, SIZES))
