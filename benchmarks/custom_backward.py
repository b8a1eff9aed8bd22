"""Pillar 2, custom backward: torch.autograd.Function against jax.custom_vjp, each against plain autodiff."""

from __future__ import annotations

from benchmarks.common import (
    DEVICE,
    DTYPES,
    FRAMEWORKS,
    PRECISIONS,
    STEP_DTYPES,
    STEP_PRECISIONS,
    Benchmark,
    by_device,
    by_workload,
    check_case,
    check_precision,
    import_framework,
    memo,
    peak,
)

SIZES = by_device(cpu={"swiglu": ["64x256x1024"], "gmm": ["d10-K25-n1000"]},
                  cuda={"swiglu": ["2048x1024x4096"], "gmm": ["d64-K100-n10000"]})
PARAMS = [FRAMEWORKS, [], [], ["plain", "custom"], ["eager", "compiled"], STEP_DTYPES, STEP_PRECISIONS, [DEVICE]]
PARAM_NAMES = ["framework", "workload", "size", "variant", "mode", "dtype", "precision", "device"]


class _CustomStep(Benchmark):
    """Forward + backward with the library/autodiff op ('plain') or the hand-written backward ('custom')."""

    params = PARAMS
    param_names = PARAM_NAMES

    def setup(self, framework, workload, size, variant, mode, dtype, precision, device):
        inputs = check_case(workload, size, dtype, variant)
        check_precision(dtype, precision)
        fw = import_framework(framework, dtype, precision)
        self.step = memo((type(self).__name__, framework, workload, size, variant, mode, dtype, precision, device),
                         lambda: fw["steps"].grad_step(inputs, variant, mode, device))

    def time_step(self, *params):
        self.step()


class _CustomMemory(Benchmark):
    """Bytes kept for the backward (beyond inputs and parameters) and peak bytes of one step, plain vs custom."""

    params = PARAMS[:4] + [DTYPES, PRECISIONS, [DEVICE]]
    param_names = PARAM_NAMES[:4] + PARAM_NAMES[5:]

    def setup(self, framework, workload, size, variant, dtype, precision, device):
        self.inputs = check_case(workload, size, dtype, variant)
        self.fw = import_framework(framework, dtype, precision)
        self.key = (framework, device, variant)

    def track_saved_bytes(self, framework, workload, size, variant, dtype, precision, device):
        fn, args = self.fw["steps"].loss_fn(self.inputs, variant, device)
        return self.fw["probe"].saved_bytes(fn, *args).extra_bytes

    track_saved_bytes.unit = "bytes"

    def track_peak_bytes(self, framework, workload, size, variant, dtype, precision, device):
        fn, args = self.fw["steps"].grad_fn(self.inputs, variant, device)
        return peak(self.fw, framework, device, fn, args)

    track_peak_bytes.unit = "bytes"


globals().update(by_workload(_CustomStep, SIZES))
globals().update(by_workload(_CustomMemory, SIZES))
