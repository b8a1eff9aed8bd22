"""The autograd engine's bookkeeping: micro-batch gradient accumulation, tensor hooks, retain_graph double
backward, and zero_grad(set_to_none) — with JAX's functional counterparts where one exists."""

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
    require,
)

MODES = ["accumulate_grad_attr", "accumulate_tree_add", "hooks", "no_hooks", "retain_graph_twice",
         "zero_grad_none", "zero_grad_zeros"]


class _EngineStep(Benchmark):
    """One step of each engine feature on the mlp (4 micro-batches for the accumulation modes)."""

    # Short steps: between-process differences exceed one process's spread here, so two processes (rounds) each.
    rounds = 2

    params = [FRAMEWORKS, [], [], MODES, DTYPES, PRECISIONS, [DEVICE]]
    param_names = ["framework", "workload", "size", "mode", "dtype", "precision", "device"]

    def setup(self, framework, workload, size, mode, dtype, precision, device):
        inputs = check_case(workload, size, dtype)
        fw = import_framework(framework, dtype, precision)
        require(mode in fw["steps"].ENGINE_MODES, f"{framework} has no {mode}")
        self.step = memo((type(self).__name__, framework, workload, size, mode, dtype, precision, device),
                         lambda: fw["steps"].engine_step(inputs, "plain", mode, device))

    def time_step(self, *params):
        self.step()


globals().update(by_workload(_EngineStep, by_device(cpu={"mlp": ["64x256x1024"]}, cuda={"mlp": ["512x1024x4096"]})))
