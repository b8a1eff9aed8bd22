"""Pillar 1, graph recording vs tracing: PyTorch's eager tape and torch.compile against jax.grad and jax.jit."""

from __future__ import annotations

import statistics
import time

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
    eager_variant,
    import_framework,
    memo,
    require,
)

ROOFLINE_REPEATS = 11
SIZES = by_device(
    cpu={"mlp": ["64x256x1024"], "transformer": ["L4-B4-S64-D128"], "chain": ["d50-4x64"], "lstm": ["l2-c128-b14"]},
    cuda={"mlp": ["512x1024x4096"], "transformer": ["L12-B8-S1024-D1024"], "chain": ["d100-256x4096"],
          "lstm": ["l4-c1024-b1024"]},
)


class _GradStep(Benchmark):
    """One forward + backward: 'eager' = autograd tape / op-by-op jax.grad, 'compiled' = torch.compile / jax.jit."""

    params = [FRAMEWORKS, [], [], ["eager", "compiled"], STEP_DTYPES, STEP_PRECISIONS, [DEVICE]]
    param_names = ["framework", "workload", "size", "mode", "dtype", "precision", "device"]

    def setup(self, framework, workload, size, mode, dtype, precision, device):
        inputs = check_case(workload, size, dtype)
        check_precision(dtype, precision)
        # Dynamo unrolls the 127-step Python loop of the PyTorch LSTM into one graph; on a 2-core CPU its compile
        # alone outlasts the suite's budget. JAX compiles one lax.scan step instead (a real difference, shown in
        # CompileSeconds on the other workloads).
        require(not (framework == "torch" and mode == "compiled" and workload == "lstm"),
                "torch.compile of the unrolled LSTM is outside the CPU budget")
        fw = import_framework(framework, dtype, precision)
        variant = eager_variant(workload, mode)
        self.step = memo((type(self).__name__, framework, workload, size, mode, dtype, precision, device),
                         lambda: fw["steps"].grad_step(inputs, variant, mode, device))

    def time_step(self, *params):
        self.step()


class _ForwardRecording(Benchmark):
    """The cost of recording: a forward that keeps what the backward needs (grad-enabled / jax.vjp) vs one that does
    not (no_grad / a plain op-by-op call)."""

    params = [FRAMEWORKS, [], [], ["record", "no_grad"], DTYPES, PRECISIONS, [DEVICE]]
    param_names = ["framework", "workload", "size", "mode", "dtype", "precision", "device"]

    def setup(self, framework, workload, size, mode, dtype, precision, device):
        inputs = check_case(workload, size, dtype)
        fw = import_framework(framework, dtype, precision)
        variant = eager_variant(workload, mode)
        self.step = memo((type(self).__name__, framework, workload, size, mode, dtype, precision, device),
                         lambda: fw["steps"].forward_step(inputs, variant, mode, device))

    def time_forward(self, *params):
        self.step()


class _GraphCost(Benchmark):
    """What one recorded/traced step costs before it runs: graph size, saved bytes, and compile seconds."""

    params = [FRAMEWORKS, [], [], DTYPES, PRECISIONS, [DEVICE]]
    param_names = ["framework", "workload", "size", "dtype", "precision", "device"]

    def setup(self, framework, workload, size, dtype, precision, device):
        self.inputs = check_case(workload, size, dtype)
        self.fw = import_framework(framework, dtype, precision)
        self.framework, self.device = framework, device

    def track_graph_size(self, *params):
        fn, args = self.fw["steps"].loss_fn(self.inputs, "plain", self.device)
        return self.fw["probe"].graph_size(fn, *args)

    track_graph_size.unit = "nodes (torch) / equations (jax)"

    def track_saved_bytes(self, *params):
        fn, args = self.fw["steps"].loss_fn(self.inputs, "plain", self.device)
        return self.fw["probe"].saved_bytes(fn, *args).extra_bytes

    track_saved_bytes.unit = "bytes"


class _CompileSeconds(Benchmark):
    """Cold compile cost, kept apart from step time. 'total': torch.compile's first call minus a steady call, and
    JAX's trace + lower + compile; JAX's three phases are also reported alone."""

    params = [FRAMEWORKS, [], [], ["total", "trace", "lower", "compile"], DTYPES,
              PRECISIONS, [DEVICE]]
    param_names = ["framework", "workload", "size", "phase", "dtype", "precision", "device"]

    def setup(self, framework, workload, size, phase, dtype, precision, device):
        inputs = check_case(workload, size, dtype)
        require(framework == "jax" or phase == "total", "torch.compile's phases are not timed apart")
        fw = import_framework(framework, dtype, precision)
        self.phase = phase

        def measure():
            fn, args = fw["steps"].grad_fn(inputs, "plain", device)
            seconds = fw["probe"].compile_seconds(fn, *args)
            if framework == "jax":
                seconds["total"] = seconds["trace"] + seconds["lower"] + seconds["compile"]
            else:
                seconds["total"] = seconds["compile"]
            return seconds

        self.seconds = memo(("compile", framework, workload, size, dtype, precision, device), measure)

    def track_compile_seconds(self, *params):
        return self.seconds[self.phase]

    track_compile_seconds.unit = "seconds"


class _Roofline(Benchmark):
    """Step time over the time its matmul flops would take at the matmul rate measured in the same process on the
    same device: 1 would be the matmul roofline, and the fraction of peak reached is the inverse."""

    params = [FRAMEWORKS, [], [], ["eager", "compiled"], STEP_DTYPES, STEP_PRECISIONS, [DEVICE]]
    param_names = ["framework", "workload", "size", "mode", "dtype", "precision", "device"]

    def setup(self, framework, workload, size, mode, dtype, precision, device):
        inputs = check_case(workload, size, dtype)
        check_precision(dtype, precision)
        fw = import_framework(framework, dtype, precision)
        variant = eager_variant(workload, mode)
        self.step = memo((type(self).__name__, framework, workload, size, mode, dtype, precision, device),
                         lambda: fw["steps"].grad_step(inputs, variant, mode, device))

        def flops_and_rate():
            fn, args = fw["steps"].grad_fn(inputs, variant, device)
            return fw["probe"].matmul_flops(fn, *args), fw["probe"].matmul_rate(dtype, device)

        self.flops, self.rate = memo(("roofline", framework, workload, size, mode, dtype, precision, device),
                                      flops_and_rate)

    def track_time_over_matmul_peak(self, *params):
        seconds = []
        for _ in range(ROOFLINE_REPEATS):
            start = time.perf_counter()
            self.step()  # synchronises before returning
            seconds.append(time.perf_counter() - start)
        return statistics.median(seconds) * self.rate / self.flops

    track_time_over_matmul_peak.unit = "x matmul-peak time"


globals().update(by_workload(_GradStep, SIZES))
globals().update(by_workload(_ForwardRecording, {w: SIZES[w] for w in ("transformer", "chain")}))
globals().update(by_workload(_GraphCost, SIZES))
globals().update(by_workload(_Roofline, {w: SIZES[w] for w in ("mlp", "transformer")}))
globals().update(by_workload(_CompileSeconds, {w: SIZES[w] for w in ("mlp", "transformer", "chain")}))
