"""Pillar 4, no-grad inference: grad-enabled forward, no_grad, inference_mode and torch.compile against JAX's
op-by-op and jitted forward, at an overhead-bound small size and a compute-bound large size."""

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
    require,
)

PARAMS = [FRAMEWORKS, [], [], ["record", "no_grad", "inference_mode", "compiled"], DTYPES, PRECISIONS, [DEVICE]]
PARAM_NAMES = ["framework", "workload", "size", "mode", "dtype", "precision", "device"]


class _Forward(Benchmark):
    """One forward pass per mode; JAX has no inference_mode (a plain call already saves nothing)."""

    # Short steps: between-process differences exceed one process's spread here, so two processes (rounds) each.
    rounds = 2

    params = PARAMS
    param_names = PARAM_NAMES

    def setup(self, framework, workload, size, mode, dtype, precision, device):
        inputs = check_case(workload, size, dtype)
        fw = import_framework(framework, dtype, precision)
        require(mode in fw["steps"].FORWARD_MODES, f"{framework} has no {mode} mode")
        self.step = memo((type(self).__name__, framework, workload, size, mode, dtype, precision, device),
                         lambda: fw["steps"].forward_step(inputs, "plain", mode, device))

    def time_forward(self, *params):
        self.step()


class _ForwardMemory(Benchmark):
    """Peak bytes of a forward that records for the backward vs one that does not."""

    params = [FRAMEWORKS, [], [], ["record", "no_grad"], DTYPES, PRECISIONS, [DEVICE]]
    param_names = PARAM_NAMES

    def setup(self, framework, workload, size, mode, dtype, precision, device):
        self.inputs = check_case(workload, size, dtype)
        self.fw = import_framework(framework, dtype, precision)

    def track_peak_bytes(self, framework, workload, size, mode, dtype, precision, device):
        return peak(self.fw, framework, device, *self.fw["steps"].forward_fn(self.inputs, "plain", mode, device))

    track_peak_bytes.unit = "bytes"


# Overhead-bound (tiny, 64x256x1024) and compute-bound (512x1024x4096) sizes.
globals().update(by_workload(_Forward, by_device(cpu={"mlp": ["tiny", "64x256x1024", "512x1024x4096"]},
                                                 cuda={"mlp": ["64x256x1024", "512x1024x4096"]})))
globals().update(by_workload(_ForwardMemory, by_device(
    cpu={"mlp": ["512x1024x4096"], "transformer": ["L4-B4-S64-D128"]},
    cuda={"mlp": ["512x1024x4096"], "transformer": ["L12-B8-S1024-D1024"]},
)))
