"""One gradient step of a workload over N ranks on one host (mirror of implementations.jax.distributed).

One process per rank (implementations.rank_processes), joined by the gloo backend over the loopback interface on a
CPU, or by NCCL with rank r on cuda:r on GPUs. Each rank holds the workload's own parameters (common.prepare) as the
parameters of one module whose forward is the workload's forward, and runs it on its part of the batch. Forms
(rank_processes.FORMS):

- "ddp": DistributedDataParallel, which all-reduces the gradients in buckets of `bucket_cap_mb` during backward;
- "shard_map": the same per-rank program with its collectives written out, dist.all_reduce of every gradient
  after backward (JAX's shard_map form writes them out with lax.pmean);
- "fsdp": FSDP2's fully_shard over a one-axis DeviceMesh: parameters sharded on their first axis, all-gathered
  for forward and backward, gradients reduce-scattered.

Each form averages over the ranks, so each rank's loss is N times the sum over its part of the batch: the mean of
those is the full batch's loss sum(forward * cotangent), and the averaged gradients are its gradients.
"""

from __future__ import annotations

import datetime
import math
import os
import socket
import tempfile
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from implementations import frameworks, rank_processes
from implementations.rank_processes import DEFAULT_TIMEOUT_S, DistributedResult
from implementations.torch import probe
from implementations.torch.common import cotangent, formulation_of, leaves, load, prepare, to_numpy, unflatten
from implementations.workloads import Inputs

FORMS = rank_processes.FORMS
MODES = rank_processes.MODES
BACKENDS = rank_processes.BACKENDS["torch"]
# DistributedDataParallel's own default bucket size.
DEFAULT_BUCKET_CAP_MB = 25.0
# Why a compiled step has no CPU peak: the live-storage tracker is a TorchDispatchMode.
NO_PEAK = "the live-storage tracker is a TorchDispatchMode, under which torch.compile's graphs fall back to eager"
# The GPU peak: the caching allocator's counters (probe.peak_bytes), which see torch.compile's buffers too.
GPU_PEAK = rank_processes.gpu_peak_method("torch.cuda.max_memory_allocated after torch.cuda.reset_peak_memory_stats",
                                          "torch.cuda.memory_allocated")
# What the first call's compile found cached.
COLD = "cold: Inductor's FX-graph and AOTAutograd caches in an empty folder per rank and launch"
# Which call's profile counts the collectives: the one step, or a call of its own after the timed ones.
PROFILED = {False: "the step", True: "a step after the timed ones"}
# c10d ops -> the collective's XLA name.
_C10D = {
    "allreduce_": "all-reduce", "allreduce_coalesced_": "all-reduce",
    "allgather_": "all-gather", "_allgather_base_": "all-gather", "allgather_into_tensor_coalesced_": "all-gather",
    "reduce_scatter_": "reduce-scatter", "_reduce_scatter_base_": "reduce-scatter",
    "reduce_scatter_tensor_coalesced_": "reduce-scatter", "alltoall_": "all-to-all", "alltoall_base_": "all-to-all",
    "broadcast_": "collective-broadcast",
}
# The profiler event of each backend's work, named "<prefix><op>", which records the tensors handed to it; NCCL's
# "nccl:coalesced" closes a coalesced group and is no c10d call of its own.
_WORK_PREFIX = {"gloo": "gloo:", "nccl": "nccl:"}
_NOT_A_CALL = ("nccl:coalesced",)
_REDUCE_SCATTER = {"gloo": " (which runs a reduce-scatter as an all-reduce of its input)"}


def unsupported(form: str, mode: str, variant: str = "plain") -> str | None:
    """Why (form, mode, variant) does not run here, or None where it does: every form composes with torch.compile;
    remat_names does not (as in steps.grad_step)."""
    if mode == "compiled" and variant == "remat_names":
        return "remat_names has no torch.compile form here: the policy cannot see named() regions"
    return None


def peak_unmeasured(device: str, mode: str, timed: bool) -> str | None:
    """Why a step on `device` in `mode` gets no peak, or None where it gets one: a timed eager step on a CPU (the
    live-storage tracker), every timed step on GPUs (the caching allocator, which sees torch.compile's buffers)."""
    if device == "cpu" and mode == "compiled":
        return NO_PEAK
    return None if timed else "the request timed no step"


def distributed_step(inputs: Inputs, form: str, mode: str, ranks: int = 2, variant: str = "plain",
                     formulation: str | None = None, bucket_cap_mb: float = DEFAULT_BUCKET_CAP_MB,
                     timeout_s: float = DEFAULT_TIMEOUT_S, warmup: int = 0, repeat: int = 0,
                     device: str = "cpu") -> DistributedResult:
    """Loss and parameter gradients of one step of `inputs`' workload with its batch split over `ranks` processes,
    in `form` and `mode` ('eager': the tape; 'compiled': torch.compile of the parallel module), on `device` ('cpu':
    gloo; 'cuda': NCCL, rank r on cuda:r), and the record of how it ran: ranks, backend, mesh shape, DDP's bucket
    size and bucket bytes, the reduction, the collectives of rank 0's step (its profile) with the bytes each handed
    to the backend, the analytic bytes, and CPU_NOTE or GPU_NOTE.

    After the first call (its seconds: compile and warm-up), `warmup` untimed calls and `repeat` timed ones, each
    after a barrier and ending in torch.cuda.synchronize on GPUs; a step's seconds are the slowest rank's. With
    either, the profile and the peak (peak_unmeasured: the live-storage tracker on a CPU, the caching allocator's
    counters on GPUs, per rank, the largest kept) are taken in calls of their own after the timed ones.

    A rank that fails or runs past `timeout_s` ends the step: every rank is killed and rank_processes.RankFailed
    or RankTimeout says which, in one line. A form that does not compose with a mode raises NotImplementedError
    (unsupported)."""
    rank_processes.check(inputs, form, mode, ranks, variant, warmup, repeat, device)
    formulation_of(inputs.workload, formulation)
    reason = unsupported(form, mode, variant)
    if reason:
        raise NotImplementedError(reason)
    port = str(rank_processes.free_port())
    envs = [{"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "RANK": str(r), "WORLD_SIZE": str(ranks),
             **_loopback()} for r in range(ranks)]
    request = rank_processes.request(inputs, form, mode, ranks, variant, formulation, bucket_cap_mb, timeout_s,
                                     warmup, repeat, device)
    return rank_processes.run(__name__, request, envs, [f"torch rank {r} of {ranks}" for r in range(ranks)],
                              timeout_s)


def _loopback() -> dict[str, str]:
    # gloo binds to the interface its host name resolves to unless told: keep the ranks on the loopback device.
    try:
        names = {name for _, name in socket.if_nameindex()}
    except OSError:
        names = set()
    return {"GLOO_SOCKET_IFNAME": "lo"} if "lo" in names and "GLOO_SOCKET_IFNAME" not in os.environ else {}


class _Workload(torch.nn.Module):
    """The workload's forward over its own parameters, held as this module's (what DDP and FSDP manage)."""

    def __init__(self, params: dict, inputs: Inputs, variant: str, formulation: str | None) -> None:
        super().__init__()
        self.weights = torch.nn.ParameterList([torch.nn.Parameter(t.detach()) for t in leaves(params)])
        self.layout = {name: [None] * len(v) if isinstance(v, list) else None for name, v in params.items()}
        self.forward_of = load(inputs.workload).forward
        self.static, self.variant, self.formulation = inputs.static, variant, formulation

    def params(self, tensors: list[torch.Tensor]) -> dict:
        return unflatten(tensors, self.layout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Read at every call: FSDP swaps the sharded parameters for the gathered ones around forward and backward.
        return self.forward_of(self.params(list(self.weights)), {"x": x}, self.static, self.variant,
                               self.formulation)


def _collectives(events: list, itemsize: int, backend: str = "gloo") -> dict[str, dict[str, int]]:
    """The c10d collectives among the profiler's `events`, by XLA's names, with the bytes of the tensors each one
    handed to `backend` (gloo or nccl). Each backend's work has an event of its own that records the shapes (gloo's
    on its worker thread, NCCL's where it is enqueued): the k-th c10d call is the k-th work to start. Every
    collective of a step moves the step's dtype (gradients, parameters, the loss)."""
    calls = sorted((e for e in events if e.name.startswith("c10d::") and e.name[6:] in _C10D),
                   key=lambda e: e.time_range.start)
    works = sorted((e for e in events if e.name.startswith(_WORK_PREFIX[backend]) and e.name not in _NOT_A_CALL),
                   key=lambda e: e.time_range.start)
    if len(calls) != len(works):
        raise RuntimeError(f"{len(calls)} c10d collectives but {len(works)} {backend} works in the step's profile")
    counts = {kind: {"count": 0, "bytes": 0} for kind in rank_processes.COLLECTIVES}
    for call, work in zip(calls, works):
        kind = counts[_C10D[call.name[6:]]]
        kind["count"] += 1
        kind["bytes"] += sum(math.prod(shape) for shape in work.input_shapes) * itemsize
    return counts


def _parallel(model: _Workload, form: str, ranks: int, bucket_cap_mb: float,
              device: torch.device) -> torch.nn.Module:
    if form == "ddp":
        ids = None if device.type == "cpu" else [device.index]
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids, bucket_cap_mb=bucket_cap_mb)
    if form == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh(device.type, (ranks,), mesh_dim_names=(rank_processes.MESH_AXIS,))
        return fully_shard(model, mesh=mesh)
    return model


def _step(run: torch.nn.Module, model: _Workload, form: str, x: torch.Tensor, seed: torch.Tensor,
          ranks: int) -> torch.Tensor:
    local = (run(x) * seed).sum() * ranks
    local.backward()  # DDP's and FSDP's reductions hang on the gradient accumulators that backward() runs
    if form == "shard_map":
        for weight in model.weights:
            dist.all_reduce(weight.grad)  # gloo has no ReduceOp.AVG: the sum divided by N (on NCCL too), as DDP does
            weight.grad.div_(ranks)
    loss = local.detach().clone()
    dist.all_reduce(loss)
    return loss.div_(ranks)


def _synchronised(output: torch.Tensor) -> torch.Tensor:
    if output.is_cuda:
        torch.cuda.synchronize(output.device)
    return output


def _full(grad: torch.Tensor) -> torch.Tensor:
    return grad.full_tensor() if hasattr(grad, "full_tensor") else grad


def _rank_setup(request: dict[str, Any], rank: int) -> tuple[torch.device, int, tempfile.TemporaryDirectory]:
    """The rank's device, threads and cold compile cache, configured, and its process group joined."""
    import implementations.torch as torch_side

    ranks = request["ranks"]
    device = torch.device("cpu") if request["device"] == "cpu" else torch.device("cuda", rank)
    if device.type == "cuda":
        if torch.cuda.device_count() < ranks:
            raise RuntimeError(f"{torch.cuda.device_count()} CUDA devices, not the {ranks} that the ranks need")
        torch.cuda.set_device(device)
    threads = max(1, (os.cpu_count() or 1) // ranks)
    # Every launch compiles cold, as CompileSeconds' cold case: Inductor's on-disk caches in an empty folder of the
    # rank's own, where the default folder would serve every launch after the first.
    cache = tempfile.TemporaryDirectory(prefix="tvt-inductor-")
    torch_side.configure("highest", threads, compile_cache=cache.name)
    dist.init_process_group(BACKENDS[request["device"]], rank=rank, world_size=ranks,
                            timeout=datetime.timedelta(seconds=request["timeout_s"]),
                            **({} if device.type == "cpu" else {"device_id": device}))
    return device, threads, cache


def _rank_record(request: dict[str, Any], device: torch.device, threads: int, parallel: Any, events: list,
                 element_size: int, measured: bool, seconds: torch.Tensor, peaks: list, peak_method: str) -> dict:
    """Rank 0's record of the launch: the form's settings, the collectives seen, the timing and the peak."""
    inputs, form, ranks, backend = request["inputs"], request["form"], request["ranks"], BACKENDS[request["device"]]
    buckets = None
    if form == "ddp":  # the reducer's bucket sizes in bytes, as DDP logs them
        buckets = [int(b) for b in str(parallel._get_ddp_logging_data()["bucket_sizes"]).split(",") if b]
    stacked = getattr(load(inputs.workload), "LAYER_STACKED", ())
    how = "loopback, one process per rank" if device.type == "cpu" else "one process per rank, rank r on cuda:r"
    record = rank_processes.base_record("torch", request, f"{backend} ({how})")
    record.update({
        "bucket_cap_mb": request["bucket_cap_mb"] if form == "ddp" else None,
        "ddp_bucket_bytes": buckets,
        "gradient_reduction": "mean over ranks", "local_loss_scale": ranks,
        "parameter_sharding": {name: rank_processes.fsdp_axis(name, stacked) if form == "fsdp" else None
                               for name in inputs.params},
        "collectives": _collectives(events, element_size, backend),
        "collectives_method": f"c10d collectives in rank 0's profile of {PROFILED[measured]}, bytes of the "
                              f"tensors given to {backend}" + _REDUCE_SCATTER.get(backend, ""),
        # evidence that 'compiled' ran torch.compile's graphs: calls of compiled regions during the step
        "compiled_regions": sum(e.name.startswith("Torch-Compiled Region") for e in events),
        "threads_per_rank": threads,
        "first_call_s": float(seconds[0]), "step_times_s": [float(t) for t in seconds[1:]],
        "timing": "the slowest rank's wall time of each call, the ranks aligned by a barrier before it"
                  + ("" if device.type == "cpu" else ", each ending in torch.cuda.synchronize"),
        "peak_bytes": None if peaks[0] is None else max(peaks), "peak_method": peak_method,
        "compile_cache": COLD,
    })
    return record


def _rank_step(request: dict[str, Any], rank: int) -> DistributedResult | None:
    """One rank's part of distributed_step (run in its worker process); rank 0 returns the result."""
    inputs, form, mode, ranks = request["inputs"], request["form"], request["mode"], request["ranks"]
    device, threads, cache = _rank_setup(request, rank)
    try:
        formulation = formulation_of(inputs.workload, request["formulation"])
        params, data = prepare(inputs, device.type, formulation)
        model = _Workload(params, inputs, request["variant"], formulation)
        parallel = run = _parallel(model, form, ranks, request["bucket_cap_mb"], device)
        if mode == "compiled":
            torch._inductor.config.compile_threads = 1  # no pool of compile workers beside the ranks
            run = torch.compile(parallel, mode=frameworks.torch_compile_mode())
        x, seed = data["x"].detach().chunk(ranks)[rank], cotangent(inputs, device.type).chunk(ranks)[rank]

        def call() -> torch.Tensor:
            for weight in model.weights:  # every call computes its own gradients, as a training step would
                weight.grad = None
            return _step(run, model, form, x, seed, ranks)

        def profiled() -> torch.Tensor:
            # The profiler, not a dispatch mode: under a TorchDispatchMode torch.compile's graphs fall back to eager.
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
                loss = call()
            events.extend(prof.events())
            return loss

        events: list = []
        measured = rank_processes.measures(request)
        loss, first_s, samples = rank_processes.timed_steps(call if measured else profiled, call, request["warmup"],
                                                            request["repeat"], dist.barrier, _synchronised)
        unmeasured = peak_unmeasured(request["device"], mode, measured)
        peak, peak_method = None, f"not measured: {unmeasured}"
        if measured:
            loss = profiled()
        if unmeasured is None:
            found = probe.peak_bytes(lambda _: call(), x)  # the allocator's counters where x is on a GPU
            peak = found.bytes
            peak_method = GPU_PEAK if device.type == "cuda" else f"{found.method}, the largest rank's"
        # the slowest rank's seconds of each timed call, and each rank's peak (outside every timed call)
        seconds = torch.tensor([first_s, *samples], dtype=torch.float64, device=device)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        peaks: list = [None] * ranks
        dist.all_gather_object(peaks, peak)
        grads = to_numpy(model.params([_full(w.grad) for w in model.weights]))
        record = _rank_record(request, device, threads, parallel, events, x.element_size(), measured, seconds, peaks,
                              peak_method)
        return DistributedResult(np.asarray(to_numpy(loss)), grads, record) if rank == 0 else None
    finally:
        dist.destroy_process_group()
        cache.cleanup()
