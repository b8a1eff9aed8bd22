"""Peak-memory sanity check: the measured peak of one forward + backward between two analytic bounds.

Above what is resident (parameters and inputs), one training step must at some instant hold everything the forward
saves for the backward (at the end of the forward), and at the end everything it returns (the loss and a gradient
per input). It cannot need more than all of it live at once, resident included, plus the GEMM-library workspace
that both probes count inside the peak (`workspace_bytes` of their PeakBytes):

    lower = resident + max(saved, returned)
    upper = resident + saved + returned + workspace        (returned = gradients + loss)

A peak below `lower` means the measurement misses allocations (or, under jit, XLA dropped residuals that the
pre-XLA count includes); above `upper`, the step holds something the accounting leaves out (backward
temporaries, fragmentation). Either is flagged. A probe whose method says it returned an upper bound rather than a
measurement is an error, and its value is never printed. Each measurement runs in a fresh process: JAX's
allocator peak cannot be reset, and preallocation is off (`implementations.frameworks.isolate_allocators`).

Rows pair like modes only: on CUDA torch.compile against jax.jit and eager PyTorch alone (op-by-op JAX has no
peak), both in the same loop form; a CPU measures eager PyTorch and jitted JAX, which the table does not divide.

    python -m tape_vs_trace.side.gpucheck            # the cases for this machine's device (TVT_DEVICE or nvidia-smi)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from implementations import frameworks, workloads


def cases(device: str) -> list[tuple[str, str]]:
    """The (workload, size) cases of the specs' 'gpucheck' grid on `device`."""
    return [(w, size) for w, sizes in workloads.runs("gpucheck", device).items() for size in sizes]


@dataclass(frozen=True)
class Bounds:
    """Analytic bounds on the total bytes live at the peak of one step (resident included)."""

    lower: int
    upper: int


def bounds(resident: int, saved: int, returned: int, workspace: int = 0) -> Bounds:
    """`lower` = resident + the larger of the two sets that must each be live in full at some instant (the saved
    residuals, the returned gradients and loss); `upper` = resident + both, everything live at once, + the GEMM
    workspace the probe counted in the peak."""
    return Bounds(lower=resident + max(saved, returned), upper=resident + saved + returned + workspace)


def verdict(peak: int, expected: Bounds, method: str) -> str:
    """'ok', or why the peak is suspect. A method stating an upper bound is no measurement: an error."""
    if "upper bound" in method.lower():
        return "error: the probe returned an upper bound, not a measured peak"
    if peak < expected.lower:
        return "FLAG: below the lower bound (missed allocations, or residuals removed by the compiler)"
    if peak > expected.upper:
        return "FLAG: above the upper bound (temporaries or fragmentation the accounting leaves out)"
    return "ok"


def _leaves(tree: Any) -> int:
    """How many arrays a (nested) tuple/list/dict holds."""
    if isinstance(tree, dict):
        return sum(_leaves(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return sum(_leaves(v) for v in tree)
    return int(hasattr(tree, "nbytes"))


# A jitted JAX program returns its outputs as a tuple, whose table of one pointer per output is a buffer of its own.
TUPLE_POINTER_BYTES = 8


def _nbytes(tree: Any) -> int:
    """Bytes of every array in a (nested) tuple/list/dict of torch tensors or jax/numpy arrays."""
    if isinstance(tree, dict):
        return sum(_nbytes(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return sum(_nbytes(v) for v in tree)
    return int(getattr(tree, "nbytes", 0))


# JAX's probe measures the jitted program (its allocator on CUDA, its buffer plan on CPU): an op-by-op JAX step has
# no peak here, and a CPU's storage tracker cannot see inside Inductor's kernels.
NO_PEAK = {("jax", "eager"): "not measured: JAX's probe measures the jitted program, not an op-by-op step"}


def modes(device: str) -> list[tuple[str, str]]:
    """(framework, mode) in the order of the table: on CUDA like modes side by side (torch.compile against jax.jit,
    then eager PyTorch, whose op-by-op JAX counterpart has no peak); on a CPU each framework's measurable mode."""
    if device == "cuda":
        return [("torch", "compiled"), ("jax", "compiled"), ("torch", "eager"), ("jax", "eager")]
    return [("torch", "eager"), ("jax", "compiled")]


def formulation_of(workload: str) -> str | None:
    """The loop form both frameworks run: the Python loop ('unrolled') where the workload has a loop."""
    return "unrolled" if workloads.spec(workload).formulations else None


def accounting(fw: frameworks.Loaded, inputs: workloads.Inputs, out: Any, device: str, formulation: str | None,
               variant: str = "plain") -> dict[str, int]:
    """The bounds' terms of a gradient step whose result is `out`: the resident bytes (parameters and inputs), the
    bytes saved for the backward beyond them, and the bytes returned (a jitted JAX program's tuple included)."""
    pointers = TUPLE_POINTER_BYTES * _leaves(out) if fw.name == "jax" else 0
    loss, args = fw.steps.loss_fn(inputs, variant, device, formulation)
    return {"resident_bytes": _nbytes((inputs.params, inputs.data)),
            "saved_bytes": fw.probe.saved_bytes(loss, *args).extra_bytes, "returned_bytes": _nbytes(out) + pointers}


def measure(framework: str, workload: str, size: str, device: str, mode: str | None = None) -> dict:
    """Peak first (nothing else has run in this process), then the saved and returned bytes. `mode` defaults to
    the one this device measures for the framework (modes)."""
    mode = mode or dict(modes(device)[::-1]).get(framework, "eager")
    formulation = formulation_of(workload)
    spec = workloads.spec(workload)
    # the matched program, so that a gap is the framework's (the out-of-the-box programs differ in residuals)
    style, attention = ("matched" if spec.styles else None), ("written" if spec.attentions else None)
    head = {"framework": framework, "workload": workload, "size": size, "mode": mode, "formulation": formulation,
            "style": style, "attention": attention}
    if (framework, mode) in NO_PEAK:
        return {**head, "verdict": NO_PEAK[(framework, mode)]}
    fw = frameworks.load(framework, "highest")
    inputs = workloads.program_of(workloads.make_inputs(workload, size, "float32"), style, attention)
    fn, args = fw.steps.grad_fn(inputs, "plain", device, formulation)
    if framework == "torch" and mode == "compiled":
        step = fw.steps.grad_step(inputs, "plain", "compiled", device, formulation)
        peak = fw.probe.peak_bytes(lambda *_: step(), *args)  # its warm-up call compiles
    else:
        peak = fw.probe.peak_bytes(fn, *args)
    counted = accounting(fw, inputs, fn(*args), device, formulation)
    resident, saved, returned = (counted[k] for k in ("resident_bytes", "saved_bytes", "returned_bytes"))
    expected = bounds(resident, saved, returned, peak.workspace_bytes)
    measured = resident + peak.bytes
    return {**head, "peak_bytes": measured,
            "method": peak.method, "resident_bytes": resident, "saved_bytes": saved, "returned_bytes": returned,
            "workspace_bytes": peak.workspace_bytes,
            "lower_bytes": expected.lower, "upper_bytes": expected.upper,
            "verdict": verdict(measured, expected, peak.method), "allocator": allocator_settings()}


def allocator_settings() -> dict[str, str]:
    """The allocator settings this process measured under (isolate_allocators' outright values, any preset they
    replaced named), recorded with each peak."""
    env = frameworks.environment_settings()
    return {name: env[name] for name in (*frameworks.ALLOCATOR_ENVIRONMENT, "PYTORCH_CUDA_ALLOC_CONF")}


def run_all(device: str) -> list[dict]:
    rows = []
    for workload, size in cases(device):
        for framework, mode in modes(device):
            done = subprocess.run([sys.executable, "-m", "tape_vs_trace.side.gpucheck", "--measure", framework,
                                   workload, size, "--device", device, "--mode", mode], capture_output=True, text=True)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                rows.append({"framework": framework, "workload": workload, "size": size, "mode": mode,
                             "verdict": f"error: {last}"})
            else:
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def format_rows(rows: list[dict]) -> list[str]:
    """The table; an errored row (failed process, or a probe that returned an upper bound) shows no number."""
    lines = [f"{'framework':9} {'mode':8} {'workload':11} {'size':20} {'program':16} {'lower':>13} {'peak':>13} "
             f"{'upper':>13} "
             f"{'of it workspace':>15}  verdict"]
    for row in rows:
        program = "/".join(v for v in (row.get("style"), row.get("attention")) if v) or "-"
        head = f"{row['framework']:9} {row.get('mode', ''):8} {row['workload']:11} {row['size']:20} {program:16}"
        if row["verdict"].startswith(("error", "not measured")):
            lines.append(f"{head} {'':>13} {'':>13} {'':>13} {'':>15}  {row['verdict']}")
            continue
        lines.append(f"{head} {row['lower_bytes']:>13,} {row['peak_bytes']:>13,} {row['upper_bytes']:>13,} "
                     f"{row.get('workspace_bytes', 0):>15,}  {row['verdict']}  ({row['method']})")
    return lines


def main(argv: list[str] | None = None) -> int:
    frameworks.isolate_allocators()  # before anything in this process or its children imports jax
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", nargs=3, metavar=("FRAMEWORK", "WORKLOAD", "SIZE"))
    parser.add_argument("--device", choices=sorted(frameworks.DEVICES))
    parser.add_argument("--mode", choices=("eager", "compiled"), help="with --measure (default: modes())")
    args = parser.parse_args(argv)
    try:
        device = args.device or frameworks.detect_device()
        if args.measure:
            frameworks.get(args.measure[0])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.measure:
        print(json.dumps(measure(*args.measure, device, args.mode)))
        return 0
    rows = run_all(device)
    print("allocator settings: " + ", ".join(f"{k}={v}" for k, v in allocator_settings().items()))
    print("\n".join(format_rows(rows)))
    # 1: a measurement failed or is no measurement; 2: all measured, some outside their bounds.
    if any(row["verdict"].startswith("error") for row in rows):
        return 1
    return 2 if any(row["verdict"] not in ("ok",) and not row["verdict"].startswith("not measured")
                    for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
