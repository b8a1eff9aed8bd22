"""The autograd engine's bookkeeping: micro-batch gradient accumulation, tensor hooks, retain_graph double
backward, and zero_grad(set_to_none) — with JAX's functional counterparts where one exists."""

from __future__ import annotations

from benchmarks.common import Benchmark, by_device, by_workload, per_call_timer
from implementations import frameworks

# Every feature of any framework, in the registry's order.
FEATURES = list(dict.fromkeys(f for fw in frameworks.FRAMEWORKS.values() for f in fw.engine_features))
CALLS = 5  # steps of about a millisecond: a loop of 5, reported per call


class _EngineStep(Benchmark):
    """One step of each engine feature on the mlp (4 micro-batches for the accumulation features), per call of a
    loop of 5. PyTorch runs them eagerly (the engine is what eager mode runs); JAX's functional counterparts run
    op by op ('eager') and jitted ('compiled'). Only eager rows have both frameworks."""

    axes = [("feature", FEATURES), ("mode", ["eager", "compiled"])]
    timer = staticmethod(per_call_timer(CALLS))

    def skip(self, case):
        if case.feature not in frameworks.get(case.framework).engine_features:
            return f"{case.framework} has no {case.feature}"
        if case.framework == "torch" and case.mode == "compiled":
            return "the autograd engine's bookkeeping is what eager PyTorch runs; torch.compile replaces it"
        return None

    def build(self, case):
        return {"step": case.fw.steps.engine_step(case.inputs, "plain", case.feature, case.mode, case.device)}

    def time_step(self, *params):
        for _ in range(CALLS):
            self.step()


globals().update(by_workload(_EngineStep, by_device(cpu={"mlp": ["64x256x1024"]}, cuda={"mlp": ["512x1024x4096"]})))
