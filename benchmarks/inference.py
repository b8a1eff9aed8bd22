"""Pillar 4, no-grad inference: grad-enabled forward, no_grad, inference_mode and torch.compile against JAX's
op-by-op and jitted forward, at an overhead-bound small size and a compute-bound large size."""

from __future__ import annotations

from benchmarks.common import Benchmark, by_workload
from benchmarks.counts import _PeakBytes
from implementations import frameworks
from implementations.workloads import ATTENTIONS


class _Forward(Benchmark):
    """One forward pass per mode, short ones timed as a loop and reported per call. 'no_grad' keeps nothing for a
    backward (no_grad / a plain op-by-op call), 'inference_mode' is PyTorch's alone (a plain JAX call already saves
    nothing), 'compiled' is torch.compile under inference_mode / jax.jit. The recording forward ('record': grad-enabled
    / jax.vjp) is timed by recording.ForwardRecording_* (chain and transformer) and its peak by ForwardMemory_* below
    (its mlp rows here would not fit the CPU suite's time budget)."""

    axes = [("mode", ["no_grad", "inference_mode", "compiled"])]

    def skip(self, case):
        return frameworks.forward_skip(case.framework, case.mode)

    def build(self, case):
        return {"step": case.fw.steps.forward_step(case.inputs, "plain", case.mode, case.device)}

    def time_forward(self, *params):
        self.run_step()


class _ForwardMemory(_PeakBytes, Benchmark):
    """Peak bytes of a forward that records for the backward against one that does not."""

    axes = [("mode", ["record", "no_grad"])]
    attentions = ATTENTIONS
    rounds = 1

    def build(self, case):
        return {}

    def peak_fn(self, case):
        return case.fw.steps.forward_fn(case.inputs, "plain", case.mode, case.device)


globals().update(by_workload(_Forward))
globals().update(by_workload(_ForwardMemory))
