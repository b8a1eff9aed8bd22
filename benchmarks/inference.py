"""Pillar 4, no-grad inference: grad-enabled forward, no_grad, inference_mode and torch.compile against JAX's
op-by-op and jitted forward, at an overhead-bound small size and a compute-bound large size."""

from __future__ import annotations

from benchmarks.common import Benchmark, PeakBytes, by_device, by_workload, per_call_timer

# Short steps are timed as a loop of CALLS calls, reported per call (the timer divides), so a microsecond step is
# not measured at the resolution of one call plus the harness around it.
CALLS = 20


class _Forward(Benchmark):
    """One forward pass per mode, per call of a loop of 20. 'record' keeps what the backward needs (PyTorch
    grad-enabled / jax.vjp), 'no_grad' does not (no_grad / a plain op-by-op call), 'inference_mode' is PyTorch's
    alone (a plain JAX call already saves nothing), 'compiled' is torch.compile under inference_mode / jax.jit."""

    axes = [("mode", ["record", "no_grad", "inference_mode", "compiled"])]
    timer = staticmethod(per_call_timer(CALLS))

    def skip(self, case):
        if case.framework == "jax" and case.mode == "inference_mode":
            return "JAX has no inference_mode: a plain call already saves nothing"
        return None

    def build(self, case):
        return {"step": case.fw.steps.forward_step(case.inputs, "plain", case.mode, case.device)}

    def time_forward(self, *params):
        for _ in range(CALLS):
            self.step()


class _ForwardMemory(PeakBytes, Benchmark):
    """Peak bytes of a forward that records for the backward against one that does not."""

    axes = [("mode", ["record", "no_grad"])]
    rounds = 1

    def build(self, case):
        return {}

    def peak_fn(self, case):
        return case.fw.steps.forward_fn(case.inputs, "plain", case.mode, case.device)


globals().update(by_workload(_Forward, by_device(cpu={"mlp": ["tiny", "512x1024x4096"]},
                                                 cuda={"mlp": ["64x256x1024", "2048x4096x16384"]})))
globals().update(by_workload(_ForwardMemory, by_device(
    cpu={"mlp": ["512x1024x4096"], "transformer": ["L4-B4-S64-D128"]},
    cuda={"mlp": ["2048x4096x16384"], "transformer": ["L12-B8-S1024-D1024"]},
)))
