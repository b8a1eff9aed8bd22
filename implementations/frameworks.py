"""The framework registry: one entry per framework the suite compares, and the settings shared by every process.

Nothing here imports a framework: benchmark discovery, the report and the command line read this registry in any
process. A framework's code lives in ``implementations/<name>/`` (the same module names on every side), and its
``__init__`` exposes ``configure(precision, threads)``. Adding a framework (MLX, say) is one folder with those
modules plus one entry in ``FRAMEWORKS``.
"""

from __future__ import annotations

import importlib
import os
import shutil
from dataclasses import dataclass, field
from types import ModuleType

from implementations.process_settings import ALLOCATOR_ENVIRONMENT as ALLOCATOR_ENVIRONMENT

# the process settings, read through the registry by every process that loads a framework
from implementations.process_settings import FOLDER_VARIABLES as FOLDER_VARIABLES
from implementations.process_settings import SETTING_VARIABLES as SETTING_VARIABLES
from implementations.process_settings import TORCH_COMPILE_MODES as TORCH_COMPILE_MODES
from implementations.process_settings import environment_settings as environment_settings
from implementations.process_settings import graph_settings as graph_settings
from implementations.process_settings import host_allocator as host_allocator
from implementations.process_settings import isolate_allocators as isolate_allocators
from implementations.process_settings import torch_compile_mode as torch_compile_mode
from implementations.process_settings import xla_command_buffers as xla_command_buffers

# Matmul precision names of the suite: full float32, or TF32 tensor cores. Each framework maps them to its own
# setting (``Framework.precisions``); the same request in both, since JAX defaults to TF32 on recent GPUs and
# PyTorch does not, and an unset precision would compare different arithmetic.
PRECISIONS: tuple[str, ...] = ("highest", "tf32")
DEVICES: tuple[str, ...] = ("cpu", "cuda")
# The function transforms of the transforms pillar (implementations/<framework>/transforms.py, whose docstrings say
# what each runs): reverse mode, forward mode, Hessian-vector products by mode composition, Jacobians of a tall
# and a wide function, per-example gradients.
TRANSFORMS: tuple[str, ...] = (
    "grad", "grad_autograd", "grad_backward", "jvp", "jvp_dual", "hvp_fwd_rev", "hvp_rev_rev", "hvp_rev_fwd",
    "hvp_double_backward", "jacfwd_tall", "jacrev_tall", "jacfwd_wide", "jacrev_wide", "per_example_vmap",
    "per_example_loop",
)
# The PyTorch transforms that are compiled on a CPU machine, where each torch.compile costs seconds to tens of
# seconds per process and round: the rows the findings compare compiled. CUDA machines compile all they can.
TORCH_COMPILED_ON_CPU: tuple[str, ...] = ("grad", "hvp_fwd_rev", "per_example_vmap")
# The transforms whose outermost pass is forward mode: tangents travel with the values and nothing outlives the
# call for a backward, so they have no saved bytes (what their inner passes hold is in their peak bytes).
TAPELESS_TRANSFORMS: tuple[str, ...] = ("jvp", "jvp_dual", "hvp_fwd_rev", "jacfwd_tall", "jacfwd_wide")
# PyTorch's tape APIs, which a functional framework has no counterpart of: JAX's reverse mode is jax.grad, its
# forward mode jax.jvp, its reverse-over-reverse jax.vjp of jax.grad (transform 'hvp_rev_rev').
_TAPE_ONLY = ("grad_autograd", "grad_backward", "jvp_dual", "hvp_double_backward")


@dataclass(frozen=True)
class Framework:
    """What the suite needs to know about a framework without importing it."""

    name: str  # the `framework` parameter value and the package name under implementations/
    label: str  # how the report and the dashboard name it
    color: str  # its colour in every figure
    precisions: dict[str, str]  # suite precision -> the framework's own setting
    memory_methods: dict[str, str]  # device -> how peak bytes are measured there (printed beside every peak)
    peak_mode: str  # the mode in which its probe runs the step whose asv peak it measures (probe.peak_bytes)
    engine_features: tuple[str, ...]  # the autograd-engine features it has (benchmarks/engine.py)
    transforms: tuple[str, ...] = ()  # the function transforms it has (TRANSFORMS, benchmarks/transforms.py)
    # transform -> why its compiled form is not run (implementations.<name>.transforms raises NotImplementedError)
    uncompiled_transforms: dict[str, str] = field(default_factory=dict)
    # transform -> why its saved bytes cannot be counted by the framework's probe (transform_saved_skip)
    unsaved_transforms: dict[str, str] = field(default_factory=dict)
    # forward mode (benchmarks/inference.py) -> why the framework has no such mode
    missing_forward_modes: dict[str, str] = field(default_factory=dict)
    scan: str = ""  # the operator its "scan" formulation runs, as every label of a scan row names it
    # device -> how the GEMM-library workspace inside a peak is read there (track_workspace_bytes); none on CPU
    workspace_methods: dict[str, str] = field(default_factory=dict)


FRAMEWORKS: dict[str, Framework] = {
    fw.name: fw
    for fw in (
        Framework(
            "torch", "PyTorch", "#d62728",
            # torch.set_float32_matmul_precision: "highest" is full float32, "high" allows TF32.
            precisions={"highest": "highest", "tf32": "high"},
            memory_methods={
                "cpu": "torch live-storage tracking (TorchDispatchMode)",
                "cuda": "torch.cuda.max_memory_allocated",
            },
            peak_mode="eager",  # the step op by op, recording its tape
            engine_features=("accumulate_grad_attr", "accumulate_tree_add", "hooks", "no_hooks", "retain_graph_twice",
                             "zero_grad_none", "zero_grad_zeros"),
            transforms=TRANSFORMS,
            uncompiled_transforms={
                "hvp_double_backward": "under torch.compile the second autograd.grad of a create_graph=True "
                                       "gradient raises (the differentiated tensor 'appears to not have been used "
                                       "in the graph')",
                "hvp_rev_fwd": "torch.compile of torch.func.grad over torch.func.jvp crashed (segmentation fault) in "
                               "Inductor's generated CPU code on a float64 objective that closes over a tensor; a "
                               "crash would take every benchmark of its worker process down",
            },
            unsaved_transforms={
                "hvp_rev_rev": "torch.func.grad raises under saved_tensors_hooks, the probe's method (\"torch.func."
                               "{grad, vjp, jacrev, hessian} don't yet support saved tensor hooks\"); "
                               "hvp_double_backward is the same reverse-over-reverse on the tape",
            },
            # the LSTM's compiled scan (implementations/torch/adbench.py): a prototype, not a stable API
            scan="prototype torch._higher_order_ops.scan",
            workspace_methods={"cuda": "torch.cuda.memory_allocated freed by clearing the cuBLAS/cuBLASLt "
                                       "workspaces the warm-up call cached (every handle's, summed)"},
        ),
        Framework(
            "jax", "JAX", "#1f77b4",
            # jax_default_matmul_precision: "tensorfloat32" lowers to dot_general precision HIGH.
            precisions={"highest": "highest", "tf32": "tensorfloat32"},
            memory_methods={
                "cpu": "jax compiled.memory_analysis (output+temp-alias; arguments are the baseline)",
                "cuda": "jax peak_bytes_in_use",
            },
            peak_mode="compiled",  # probe.peak_bytes compiles the step with jax.jit: XLA's buffer plan and fusions
            # No tensor hooks and no .grad attributes: only the functional counterparts exist.
            engine_features=("accumulate_tree_add", "no_hooks", "retain_graph_twice"),
            transforms=tuple(t for t in TRANSFORMS if t not in _TAPE_ONLY),
            missing_forward_modes={"inference_mode": "JAX has no inference_mode: a plain call already saves nothing"},
            scan="lax.scan",
            workspace_methods={"cuda": "the largest cuBLAS/cuDNN custom call's workspace in the compiled HLO "
                                       "(XLA's buffer plan, not the allocator)"},
        ),
    )
}
NAMES: tuple[str, ...] = tuple(FRAMEWORKS)


def _choices(kind: str, value: object, valid: object) -> ValueError:
    return ValueError(f"unknown {kind} {value!r}; valid choices: {', '.join(map(str, valid))}")


def get(name: str) -> Framework:
    """The registry entry of `name`; a ValueError lists the valid names."""
    try:
        return FRAMEWORKS[name]
    except (KeyError, TypeError):
        raise _choices("framework", name, FRAMEWORKS) from None


def label(name: str) -> str:
    """'PyTorch' for 'torch'; an unknown name is returned as it is (results may name a framework no longer here)."""
    return FRAMEWORKS[name].label if name in FRAMEWORKS else name


def forward_skip(framework: str, mode: str) -> str | None:
    """Why `framework` has no forward in `mode`, or None where it has: the inference pillar's skips and its paired
    experiments read it."""
    return get(framework).missing_forward_modes.get(mode)


def transform_skip(framework: str, transform: str, mode: str, device: str) -> str | None:
    """Why `framework` does not run `transform` in `mode` ('eager' or 'compiled') on `device`, or None where it
    does: the benchmarks' skips and the paired experiments read it."""
    fw = get(framework)
    if transform not in fw.transforms:
        return f"{transform} is a PyTorch tape API; {fw.label} has no counterpart"
    if mode == "compiled" and transform in fw.uncompiled_transforms:
        return f"not implemented in {fw.label} (a framework limit): {fw.uncompiled_transforms[transform]}"
    if mode == "compiled" and framework == "torch" and device != "cuda" and transform not in TORCH_COMPILED_ON_CPU:
        return (f"outside the CPU budget, not a framework limit: torch.compile of {transform} takes seconds to tens "
                f"of seconds per process and round on a CPU, so a CPU machine compiles only "
                f"{', '.join(TORCH_COMPILED_ON_CPU)}; a CUDA machine compiles it")
    return None


def transform_saved_skip(framework: str, transform: str, device: str) -> str | None:
    """Why the saved bytes of `transform` are not counted for `framework` on `device`, or None where they are: the
    transforms the framework lacks (transform_skip), those its probe cannot see (Framework.unsaved_transforms) and
    those without a tape (TAPELESS_TRANSFORMS)."""
    reason, fw = transform_skip(framework, transform, "eager", device), get(framework)
    if reason is None and transform in fw.unsaved_transforms:
        return f"not implemented in {fw.label} (a framework limit): {fw.unsaved_transforms[transform]}"
    if reason is None and transform in TAPELESS_TRANSFORMS:
        return (f"{transform} keeps no tape: its outermost pass is forward mode, so nothing outlives the call for a "
                "backward (its inner passes' memory is in its peak bytes)")
    return reason


# Devices whose frameworks' memory methods measure one quantity, each by its own counters: on CUDA the allocator's
# high-water mark of allocated bytes on both sides. A CPU's two differ in kind (live storages, XLA's buffer plan).
COMPARABLE_MEMORY_DEVICES: tuple[str, ...] = ("cuda",)


def same_memory_method(a: str, b: str) -> bool:
    """Whether peaks recorded with methods `a` and `b` may be divided: the same text, or texts that each begin with
    a framework's method on a device of COMPARABLE_MEMORY_DEVICES (a distributed row's text goes on to say how its
    step was isolated). JAX's memory_analysis standing in on CUDA begins with neither, so it matches itself alone."""
    if a == b:
        return True

    def allocator(text: str) -> bool:
        return bool(text) and any(text.startswith(fw.memory_methods[d]) for fw in FRAMEWORKS.values()
                                  for d in COMPARABLE_MEMORY_DEVICES if d in fw.memory_methods)

    return allocator(a) and allocator(b)


def scan_operators(names: tuple[str, ...] = NAMES) -> dict[str, str]:
    """Label -> the operator its "scan" formulation runs ('PyTorch': 'prototype torch._higher_order_ops.scan'), for
    every label of a scan row: PyTorch's is no stable API, JAX's is what the suite means by scan."""
    return {label(n): FRAMEWORKS[n].scan for n in names if n in FRAMEWORKS and FRAMEWORKS[n].scan}


def peak_mode(framework: str) -> str:
    """The mode of the step whose asv peak `framework`'s probe measures ('eager', 'compiled'); the ratio rule divides
    two peaks only in one mode, as it divides times (an eager tape is never divided by a jitted program)."""
    return get(framework).peak_mode


def memory_method(framework: str, device: str) -> str:
    """How peak bytes of `framework` are measured on `device` ('cpu' or 'cuda')."""
    return get(framework).memory_methods.get(device, "unknown")


def workspace_method(framework: str, device: str) -> str:
    """How the GEMM-library workspace inside `framework`'s peak is read on `device`; '' where it is not (CPU)."""
    return get(framework).workspace_methods.get(device, "")


def detect_device() -> str:
    """'cuda' or 'cpu': TVT_DEVICE if set, else 'cuda' where nvidia-smi exists. The one place that decides."""
    chosen = os.environ.get("TVT_DEVICE")
    if chosen:
        if chosen not in DEVICES:
            raise _choices("TVT_DEVICE", chosen, DEVICES)
        return chosen
    return "cuda" if shutil.which("nvidia-smi") else "cpu"


def threads() -> int:
    """CPU threads for both frameworks: every core. XLA:CPU uses every core and has no flag for another count;
    PyTorch is told the same explicitly, since its own default is the number of physical cores."""
    return os.cpu_count() or 1


# Both frameworks' persistent compilation caches under one folder (make bench: .asv/compile-cache), one subfolder
# each; without it each keeps its default (Inductor's caches on in its own temporary folder, JAX's cache off).
COMPILE_CACHE_ENV = "TVT_COMPILE_CACHE"


def compile_cache_dir(name: str) -> str | None:
    """The persistent compilation cache folder of framework `name`: TVT_COMPILE_CACHE/<name>, absolute; None when
    the variable is unset or empty."""
    root = os.environ.get(COMPILE_CACHE_ENV)
    return os.path.join(os.path.abspath(root), get(name).name) if root else None


@dataclass(frozen=True)
class Loaded:
    """One framework's modules, imported and configured: `fw.steps`, `fw.probe`, `fw.compile_probe`, `fw.rates`,
    `fw.common`."""

    framework: Framework
    common: ModuleType
    steps: ModuleType
    probe: ModuleType
    compile_probe: ModuleType
    rates: ModuleType

    @property
    def name(self) -> str:
        return self.framework.name


def load(name: str, precision: str = "highest", float64: bool = False) -> Loaded:
    """Import `name`'s implementation modules and apply the fairness settings (precision, threads, float64, the host
    allocator's thresholds, the persistent compilation cache folder of `compile_cache_dir`).

    TVT_INJECT_FAILURE=<framework> makes this raise MemoryError, as an out-of-memory would: the failure-isolation
    test uses it to check that a failed benchmark is recorded as failed while the run goes on.
    """
    fw = get(name)
    if precision not in PRECISIONS:
        raise _choices("precision", precision, PRECISIONS)
    if os.environ.get("TVT_INJECT_FAILURE") == name:
        raise MemoryError(f"injected failure for {name} (TVT_INJECT_FAILURE)")
    isolate_allocators()
    host_allocator()
    package = importlib.import_module(f"implementations.{name}")
    package.configure(fw.precisions[precision], threads(), float64=float64, compile_cache=compile_cache_dir(name))
    names = ("common", "steps", "probe", "compile_probe", "rates")
    modules = {m: importlib.import_module(f"implementations.{name}.{m}") for m in names}
    return Loaded(fw, **modules)
