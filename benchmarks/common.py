"""Shared machinery of the asv suite: parameters, per-process memoised set-up, and framework settings.

Rules for benchmark writers (numpy's asv README, adapted):
- No framework is imported at module level: asv spawns one process per benchmark x parameter combination and each
  process imports only the framework it measures (`import_framework`).
- Set-up is memoised per process (`memo`): asv-runner >= 0.3 re-runs `setup` before every timed call.
- Every timed body ends in a device synchronisation (the steps from implementations.<framework>.steps do it).
- Sizes for CPU and GPU machines are explicit parameter values (`by_device`), chosen by the machine's device.
- Pin `version` on every benchmark; bump it when the numbers stop being comparable.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from types import ModuleType
from typing import Any

# Before any import of jax: allocator peaks are only meaningful without preallocation.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from implementations import workloads  # noqa: E402  (numpy only)

DEVICE = os.environ.get("TVT_DEVICE") or ("cuda" if shutil.which("nvidia-smi") else "cpu")
FRAMEWORKS = ["torch", "jax"]
DTYPES = ["float32"]
PRECISIONS = ["highest"]
# The step-time classes of the recording and custom-backward pillars also run the GPU's fast formats. On CPU,
# bfloat16 matmuls are emulated and TF32 does not exist, so CPU machines run float32 at full precision only.
STEP_DTYPES = ["float32", "bfloat16"] if DEVICE == "cuda" else DTYPES
STEP_PRECISIONS = ["highest", "tf32"] if DEVICE == "cuda" else PRECISIONS
# Float32 matmul precision, the same request in both frameworks: full float32, or TF32 tensor cores (PyTorch's
# "high"; JAX's "tensorfloat32", which lowers to dot_general precision HIGH). JAX defaults to TF32 on recent GPUs
# and PyTorch does not, so an unset precision would compare different arithmetic.
_PRECISION_SETTINGS = {"highest": ("highest", "highest"), "tf32": ("high", "tensorfloat32")}
# CPU threads: both frameworks use every core. That is XLA:CPU's default, which has no flag for another count;
# PyTorch is told so explicitly, since its own default is the number of physical cores.
THREADS = os.cpu_count() or 1

# How peak memory is measured for each (framework, device): the report prints it next to every peak value, and
# each peak benchmark checks the probe's own statement against it, so a change of method cannot go unrecorded.
MEMORY_METHODS = {
    ("torch", "cpu"): "torch live-storage tracking (TorchDispatchMode)",
    ("jax", "cpu"): "jax compiled.memory_analysis (output+temp-alias; arguments are the baseline)",
    ("torch", "cuda"): "torch.cuda.max_memory_allocated",
    ("jax", "cuda"): "jax peak_bytes_in_use",
}

_MEMO: dict[tuple, Any] = {}


def by_device(cpu: list, cuda: list) -> list:
    """The parameter values for this machine: CPU machines get the CPU sizes, CUDA machines the GPU sizes."""
    return cuda if DEVICE == "cuda" else cpu


def by_workload(base: type, sizes: dict[str, list[str]]) -> dict[str, type]:
    """One subclass of `base` per workload, named `<Base>_<workload>`, whose size parameter lists only that
    workload's sizes: a workload x size product would spawn one asv process per invalid pair.

    `base` is named with a leading underscore (asv skips it) and has params [framework, workload, size, ...].
    """
    classes = {}
    for workload, workload_sizes in sizes.items():
        params = [base.params[0], [workload], list(workload_sizes), *base.params[3:]]
        name = f"{base.__name__.lstrip('_')}_{workload}"
        classes[name] = type(name, (base,), {"params": params, "__module__": base.__module__, "__doc__": base.__doc__})
    return classes


def eager_variant(workload: str, mode: str) -> str:
    """The variant a step runs in `mode`. Op-by-op JAX compiles an un-jitted lax.scan anew on every call, so the
    eager (op-by-op) modes run the workload's Python-loop form where it has one: for PyTorch it is the same
    program as 'plain'. The compiled modes run 'plain' (lax.scan in JAX)."""
    op_by_op = mode in ("eager", "record", "no_grad")
    return "unrolled" if op_by_op and "unrolled" in workloads.spec(workload).variants else "plain"


def memo(key: tuple, build: Callable[[], Any]) -> Any:
    """`build()` once per process and key (asv-runner re-runs setup before every timed call). Keys start with the
    benchmark class's name, so two classes never share a step built for the other."""
    if key not in _MEMO:
        _MEMO[key] = build()
    return _MEMO[key]


def import_framework(framework: str, dtype: str, precision: str) -> dict[str, ModuleType]:
    """Import one framework's steps, probe and common modules and apply the fairness settings to it.

    TVT_INJECT_FAILURE=<framework> makes this raise MemoryError, as an out-of-memory would: the failure-isolation
    test uses it to check that a failed benchmark is recorded as failed while the run goes on.
    """
    if precision not in _PRECISION_SETTINGS:
        raise ValueError(f"unknown precision {precision!r}; valid choices: {', '.join(_PRECISION_SETTINGS)}")
    if os.environ.get("TVT_INJECT_FAILURE") == framework:
        raise MemoryError(f"injected failure for {framework} (TVT_INJECT_FAILURE)")
    modules = {name: importlib.import_module(f"implementations.{framework}.{name}")
               for name in ("common", "steps", "probe")}
    torch_precision, jax_precision = _PRECISION_SETTINGS[precision]
    if framework == "torch":
        import torch

        torch.set_float32_matmul_precision(torch_precision)
        torch.set_num_threads(THREADS)
        # XLA accumulates bfloat16 products in float32; cuBLAS may reduce split-K partial sums in bfloat16 unless
        # PyTorch forbids it.
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    else:
        import jax

        jax.config.update("jax_default_matmul_precision", jax_precision)
    return modules


def peak(fw: dict[str, ModuleType], framework: str, device: str, fn: Callable, args: tuple) -> int:
    """The probe's peak bytes of fn(*args), refusing a value measured by another method than MEMORY_METHODS
    declares for this (framework, device)."""
    result = fw["probe"].peak_bytes(fn, *args)
    expected = MEMORY_METHODS[(framework, device)]
    if result.method != expected:  # also refuses JAX's "(upper bound ...)": recorded as failed, not as a number
        raise RuntimeError(f"peak measured by {result.method!r}, but results declare {expected!r}")
    return result.bytes


def check_precision(dtype: str, precision: str) -> None:
    """TF32 is a float32 setting: bfloat16 with tf32 would repeat bfloat16 with highest."""
    require(dtype == "float32" or precision == "highest", f"{precision} applies to float32 only")


def require(condition: bool, reason: str) -> None:
    """Skip this parameter combination (asv shows n/a) unless `condition` holds."""
    if not condition:
        raise NotImplementedError(reason)


def check_case(workload: str, size: str, dtype: str, variant: str | None = None) -> workloads.Inputs:
    """The inputs of a valid combination; combinations of a workload with another workload's size are skipped."""
    spec = workloads.spec(workload)
    require(size in spec.sizes, f"{size} is not a size of {workload}")
    require(variant is None or variant in spec.variants, f"{variant} is not a variant of {workload}")
    require(dtype in spec.dtypes, f"{workload} is not run in {dtype}")
    return memo(("inputs", workload, size, dtype), lambda: workloads.make_inputs(workload, size, dtype))


class Benchmark:
    """Defaults for every class: one round per process, a few samples, generous timeout for compilation."""

    timeout = 600
    rounds = 1
    repeat = (3, 10, 5.0)
    warmup_time = 0.1
    # 2: gradient steps return the loss in both frameworks, eager modes run the unrolled forms, torch compile
    # seconds exclude Inductor's start-up, the harness step ends in a device op: version 1 numbers differ in kind.
    version = "2"
