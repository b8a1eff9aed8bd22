"""The cost worker of `tape-vs-trace paired`: one framework, one process. It takes each point's costs of the named
remat experiments (saved bytes, matmul flops, peak bytes) and writes them as JSON for tape_vs_trace.paired; the
points' times come from tape-vs-trace run.

    python -m tape_vs_trace.paired_worker FRAMEWORK OUT EXPERIMENT...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from implementations import frameworks, workloads
from implementations.experiments import Experiment, Point, experiments


def _formulation(experiment: Experiment) -> str | None:
    return experiment.formulation or None


def build(fw: Any, experiment: Experiment, point: Point, inputs: workloads.Inputs, device: str) -> Callable[[], Any]:
    """The step of one point, built (compiled and warmed up) once."""
    if point.kind == "grad":
        return fw.steps.grad_step(inputs, point.variant, point.mode, device, formulation=_formulation(experiment),
                                  budget=point.budget)
    if point.kind == "forward":
        return fw.steps.forward_step(inputs, point.variant, point.mode, device)
    if point.kind == "engine":
        return fw.steps.engine_step(inputs, point.variant, point.feature, point.mode, device)
    raise ValueError(f"unknown point kind {point.kind!r}")


def costs(fw: Any, experiment: Experiment, point: Point, inputs: workloads.Inputs, device: str) -> dict[str, Any]:
    """Saved bytes, matmul flops and peak bytes of one remat point.

    Compiled steps are costed as compiled (compile_probe.compiled_costs: torch.compile's partition under the point's
    budget, JAX's differentiated jaxpr); eager steps by the eager probes (saved-tensor hooks and FlopCounterMode on
    PyTorch's tape; JAX's residuals and jaxpr). Peak bytes come from the framework's memory method on this device
    where it sees the step: on a CPU, PyTorch's live-storage tracker cannot see inside Inductor's kernels, and JAX's
    buffer plan exists for jitted steps only, so compiled PyTorch and eager JAX have no CPU peak.
    """
    formulation = _formulation(experiment)
    loss, args = fw.steps.loss_fn(inputs, point.variant, device, formulation)
    grads, _ = fw.steps.grad_fn(inputs, point.variant, device, formulation)
    if point.mode == "compiled":
        found = fw.compile_probe.compiled_costs(loss, *args, budget=point.budget)
        saved, flops, method = found.saved_bytes, found.matmul_flops, found.method
    else:
        saved, flops = fw.probe.saved_bytes(loss, *args).extra_bytes, fw.probe.flops(grads, *args)
        method = "eager probes (saved-tensor hooks / jax.vjp residuals; FlopCounterMode / jaxpr matmuls)"
    peak, peak_method = None, "not measured: " + _no_peak(experiment.framework, point.mode, device)
    if not _no_peak(experiment.framework, point.mode, device):
        if experiment.framework == "torch" and point.mode == "compiled":
            # The allocator sees inside Inductor's kernels: the compiled step itself, built again (compiled_costs
            # reset TorchDynamo); `args` only tell the probe the device, and its warm-up call does the compile.
            step = build(fw, experiment, point, inputs, device)
            result = fw.probe.peak_bytes(lambda *_: step(), *args)
        else:
            result = fw.probe.peak_bytes(grads, *args)
        peak, peak_method = result.bytes, result.method
        if device == "cuda":  # an allocator's high-water mark carries this process's earlier points
            peak_method += "; not a fresh state: taken after other points in the same process"
    return {"saved_bytes": saved, "flops": flops, "cost_method": method, "peak_bytes": peak,
            "peak_method": peak_method}


def _no_peak(framework: str, mode: str, device: str) -> str:
    """Why the memory method of (framework, mode, device) cannot see the step's peak, or ''."""
    if device == "cuda":  # the allocators see every step but JAX's op-by-op one (its probe measures a jitted program)
        return "an op-by-op JAX step's peak is not taken here" if framework == "jax" and mode == "eager" else ""
    if framework == "torch" and mode == "compiled":
        return "the live-storage tracker cannot see inside Inductor's kernels"
    if framework == "jax" and mode == "eager":
        return "an op-by-op step has no XLA buffer plan"
    return ""


def worker(framework: str, names: list[str], out: Path) -> None:
    """The costs of `framework`'s remat experiments `names`, taken in this process, written to `out`."""
    frameworks.isolate_allocators()
    device = frameworks.detect_device()
    fw = frameworks.load(framework, "highest", float64=False)
    chosen = [e for e in experiments(device) if e.name in names and e.framework == framework and e.group == "remat"]
    found: dict[str, Any] = {}
    inputs_of: dict[tuple[str, str], workloads.Inputs] = {}
    for experiment in chosen:
        key = (experiment.workload, experiment.size)
        if key not in inputs_of:
            inputs_of[key] = workloads.make_inputs(*key, "float32", cache_dir=os.environ.get("TVT_INPUT_CACHE"))
        inputs = workloads.program_of(inputs_of[key], attention=experiment.attention or None)
        found[experiment.name] = {"costs": [costs(fw, experiment, p, inputs, device) for p in experiment.points]}
        print(f"  {experiment.name}: costs of {len(experiment.points)} points", file=sys.stderr, flush=True)
    out.write_text(json.dumps(found))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tape_vs_trace.paired_worker")
    parser.add_argument("framework", choices=frameworks.NAMES)
    parser.add_argument("out", type=Path)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args(argv)
    worker(args.framework, args.names, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
