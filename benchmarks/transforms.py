"""Pillar 6, function transforms: torch.func and the autograd tape against jax's transforms, per transform and mode
(what each transform differentiates: implementations/torch/transforms.py)."""

from __future__ import annotations

from benchmarks.common import Benchmark, by_device, by_workload
from implementations import frameworks

# PyTorch transforms whose torch.compile runs on a CPU machine: each torch.compile costs seconds to tens of seconds
# on a 2-core CPU, once per process and round; the gradient, the HVP by forward-over-reverse and the vmapped
# per-example gradients are the compiled rows the findings compare. CUDA machines compile every compilable one.
TORCH_COMPILED_ON_CPU = ("grad", "hvp_fwd_rev", "per_example_vmap")


class _TransformStep(Benchmark):
    """One call of each function transform (reverse and forward mode, the HVP by each mode composition, the tall and
    wide Jacobians, per-example gradients by vmap and by a loop), op by op ('eager') or compiled (torch.compile /
    jax.jit)."""

    axes = [("transform", list(frameworks.TRANSFORMS)), ("mode", ["eager", "compiled"])]

    def skip(self, case):
        fw = frameworks.get(case.framework)
        if case.transform not in fw.transforms:
            return f"{case.transform} is a PyTorch tape API; JAX has no counterpart"
        if case.mode == "compiled" and case.transform in fw.uncompiled_transforms:
            return fw.uncompiled_transforms[case.transform]
        if (case.mode == "compiled" and case.framework == "torch"
                and case.transform not in by_device(TORCH_COMPILED_ON_CPU, frameworks.TRANSFORMS)):
            return f"torch.compile of {case.transform} is outside the CPU budget"
        return None

    def build(self, case):
        from importlib import import_module

        transforms = import_module(f"implementations.{case.framework}.transforms")
        return {"step": transforms.transform_step(case.inputs, case.transform, case.mode, case.device)}

    def time_step(self, *params):
        self.run_step()


globals().update(by_workload(_TransformStep))
