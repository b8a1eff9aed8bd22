"""The autograd engine's bookkeeping: micro-batch gradient accumulation, tensor hooks, retain_graph double
backward, and zero_grad(set_to_none) — with JAX's functional counterparts where one exists."""

from __future__ import annotations

from benchmarks.common import Benchmark, by_workload
from implementations import frameworks

# Every feature of either framework, in the registry's order; a framework without one skips it. PyTorch's own
# (hooks, zero_grad to None or to zeros, accumulation into .grad) are divided by their PyTorch baseline pass by pass
# by `tape-vs-trace paired`, from tape-vs-trace run's samples: where a within-framework difference is measurable.
FEATURES = list(dict.fromkeys(f for fw in frameworks.FRAMEWORKS.values() for f in fw.engine_features))


class _EngineStep(Benchmark):
    """One step of each engine feature on the mlp (4 micro-batches for the accumulation features). Both frameworks
    run eagerly: PyTorch's engine is what eager mode runs, and JAX's functional counterparts run op by op (jitted,
    XLA would fuse the bookkeeping away and the row would measure something else)."""

    axes = [("feature", FEATURES), ("mode", ["eager"])]

    def skip(self, case):
        if case.feature not in frameworks.get(case.framework).engine_features:
            return f"{case.framework} has no {case.feature}"
        return None

    def build(self, case):
        return {"step": case.fw.steps.engine_step(case.inputs, "plain", case.feature, case.mode, case.device)}

    def time_step(self, *params):
        self.run_step()


globals().update(by_workload(_EngineStep))
