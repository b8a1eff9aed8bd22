"""One gradient step over N ranks: the forms, modes and collectives, the checks and the request a step's workers get,
and the record each framework's step fills. Shared by implementations.torch.distributed and
implementations.jax.distributed (which run the step itself); the worker processes are rank_workers'. Imports no
framework.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from implementations.frameworks import DEVICES

# the worker processes, read through this module by the frameworks' steps and the distributed runner
from implementations.rank_workers import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
from implementations.rank_workers import INJECT_ENV as INJECT_ENV
from implementations.rank_workers import RankError as RankError
from implementations.rank_workers import RankFailed as RankFailed
from implementations.rank_workers import RankTimeout as RankTimeout
from implementations.rank_workers import free_port as free_port
from implementations.rank_workers import one_line as one_line
from implementations.rank_workers import run as run
from implementations.workloads import Inputs, parameter_count, validate, variants

# The forms of parallelism: "ddp" data parallel by each framework's library (DistributedDataParallel; jax.jit of
# the batch sharded over a mesh axis), "shard_map" the same per-rank program with its collectives written out
# (jax.shard_map with lax.pmean; PyTorch's autograd with dist.all_reduce), "fsdp" parameters sharded over the
# ranks too (FSDP2's fully_shard; jax.jit with each parameter sharded over the mesh axis).
FORMS: tuple[str, ...] = ("ddp", "shard_map", "fsdp")
# "eager": PyTorch's tape, JAX op by op; "compiled": torch.compile, jax.jit.
MODES: tuple[str, ...] = ("eager", "compiled")
# The collectives counted per step, by XLA's names (PyTorch's c10d ops are mapped to them).
COLLECTIVES: tuple[str, ...] = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                                 "collective-broadcast")
MESH_AXIS = "ranks"
# The ranks of one host run side by side on its cores: what a CPU run's times mean.
CPU_NOTE = "on a CPU host the ranks share its cores: times describe overhead, not scaling"
# A GPU row's ranks each have a device of their own.
GPU_NOTE = "measured on GPUs, one per rank: the ranks share no cores"
# Each framework's collective backend per rank device (the one list the steps and the plan read).
BACKENDS: dict[str, dict[str, str]] = {"torch": {"cpu": "gloo", "cuda": "nccl"},
                                       "jax": {"cpu": "XLA CPU", "cuda": "XLA GPU"}}
# The per-device peak on GPUs, one method on both sides; each framework names its allocator's counters.
GPU_PEAK_METHOD = ("{counter} of a step of its own after the timed ones, minus {in_use} before it; per device, "
                   "the largest{caveat}")


@dataclass(frozen=True)
class DistributedResult:
    """Loss and parameter gradients of one step over the ranks, as numpy in the spec's layout (layer-stacked
    parameters stacked), and the record of how it ran (see each framework's distributed_step)."""

    loss: np.ndarray
    grad_params: dict[str, np.ndarray]
    record: dict[str, Any] = field(default_factory=dict)


def check(inputs: Inputs, form: str, mode: str, ranks: int, variant: str, warmup: int = 0, repeat: int = 0,
          device: str = "cpu") -> None:
    """Raise a ValueError for a form, mode, rank count, rank device or variant (of those `device` runs) that is not
    one, a warm-up or repeat count that is not a count, or inputs without a batch to split: the step splits
    data["x"] and the output cotangent along their first axis, one equal part per rank."""
    validate(inputs.workload, variant=variant)
    if device not in DEVICES:
        raise ValueError(f"unknown rank device {device!r}; valid choices: {', '.join(DEVICES)}")
    for name, count in (("warmup", warmup), ("repeat", repeat)):
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError(f"{name} must be a non-negative integer, not {count!r}")
    if variant not in variants(inputs.workload, device):
        raise ValueError(f"variant {variant!r} needs a CUDA device; the ranks run on the CPU")
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; valid choices: {', '.join(FORMS)}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid choices: {', '.join(MODES)}")
    if not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"ranks must be a positive integer, not {ranks!r}")
    if set(inputs.data) != {"x"} or inputs.cotangent.ndim == 0 or len(inputs.cotangent) != len(inputs.data["x"]):
        raise ValueError(f"{inputs.workload} has no batch axis to split over ranks: its data is "
                         f"{sorted(inputs.data)} and its output has shape {inputs.cotangent.shape}")
    check_split(inputs.workload, inputs.size, len(inputs.data["x"]), ranks)


def check_split(workload: str, size: str, batch: int, ranks: int) -> None:
    """Raise a ValueError where a batch of `batch` does not split into `ranks` equal parts."""
    if batch % ranks:
        raise ValueError(f"{workload} {size}'s batch of {batch} does not split into {ranks} equal parts")


def request(inputs: Inputs, form: str, mode: str, ranks: int, variant: str, formulation: str | None,
            bucket_cap_mb: float, timeout_s: float, warmup: int = 0, repeat: int = 0,
            device: str = "cpu") -> dict[str, Any]:
    """What every worker of one step is given: after the first call, `warmup` untimed calls and `repeat` timed
    ones (timed_steps), on `device` ('cpu', or 'cuda': a GPU per rank)."""
    return {"inputs": inputs, "form": form, "mode": mode, "ranks": ranks, "variant": variant,
            "formulation": formulation, "bucket_cap_mb": bucket_cap_mb, "timeout_s": timeout_s, "warmup": warmup,
            "repeat": repeat, "device": device}


def gpu_peak_method(counter: str, in_use: str, caveat: str = "") -> str:
    """GPU_PEAK_METHOD with one framework's allocator counters: the same text on both sides but for their names."""
    return GPU_PEAK_METHOD.format(counter=counter, in_use=in_use, caveat=caveat)


def measures(request: dict[str, Any]) -> bool:
    """Whether the request asks for more than the one step: then the first call is timed bare, and the profile and
    the peak are taken in calls of their own after the timed ones, so neither slows a timed call."""
    return bool(request["warmup"] or request["repeat"])


def timed_steps(first: Callable[[], Any], call: Callable[[], Any], warmup: int, repeat: int,
                align: Callable[[], Any], sync: Callable[[Any], Any]) -> tuple[Any, float, list[float]]:
    """The output of the last call, the seconds of `first()` (compile and warm-up: never a sample) and of each of
    the `repeat` calls of `call()` after `warmup` untimed ones. Each timed call starts after `align()` (the ranks
    at a barrier) and ends once `sync(output)` returns (the device's work done)."""
    align()
    start = time.perf_counter()
    out = sync(first())
    first_s = time.perf_counter() - start
    for _ in range(warmup):
        out = sync(call())
    samples = []
    for _ in range(repeat):
        align()
        start = time.perf_counter()
        out = sync(call())
        samples.append(time.perf_counter() - start)
    return out, first_s, samples


def analytic_bytes(form: str, ranks: int, gradient_bytes: int, itemsize: int) -> int:
    """The operand bytes per rank of the collectives `form` needs in principle, per step (the count the measured
    one is checked by): ddp and shard_map an all-reduce of every gradient and of the loss; fsdp an all-gather of
    each rank's shard of the parameters (once: FSDP2 keeps the root's gathered parameters for the backward), a
    reduce-scatter of every gradient (its operand: the whole gradient) and the loss's all-reduce. One rank has
    nothing to communicate."""
    if ranks == 1:
        return 0
    if form == "fsdp":
        return gradient_bytes // ranks + gradient_bytes + itemsize
    return gradient_bytes + itemsize


def base_record(framework: str, request: dict[str, Any], backend: str) -> dict[str, Any]:
    """The record's entries that both frameworks fill the same way (CPU_NOTE on a CPU, GPU_NOTE on GPUs); each
    side adds how its step ran."""
    inputs = request["inputs"]
    itemsize = next(iter(inputs.params.values())).dtype.itemsize
    return {
        "framework": framework, "workload": inputs.workload, "size": inputs.size, "dtype": inputs.dtype,
        "variant": request["variant"], "form": request["form"], "mode": request["mode"], "ranks": request["ranks"],
        "backend": backend, "mesh_shape": {MESH_AXIS: request["ranks"]},
        # what an all-reduce of every gradient moves per rank
        "gradient_bytes": parameter_count(inputs) * itemsize,
        "analytic_bytes": analytic_bytes(request["form"], request["ranks"], parameter_count(inputs) * itemsize,
                                         itemsize),
        "warmup": request["warmup"], "repeat": request["repeat"], "device": request["device"],
        "note": GPU_NOTE if request["device"] == "cuda" else CPU_NOTE,
    }


def fsdp_axis(name: str, stacked: tuple[str, ...]) -> int:
    """The axis of a parameter, in the spec's layout, that FSDP shards: a per-layer leaf's first, which is axis 1
    of a layer-stacked parameter (workload module's LAYER_STACKED), else axis 0."""
    return 1 if name in stacked else 0
