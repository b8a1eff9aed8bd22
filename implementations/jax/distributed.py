"""One gradient step of a workload over N devices on one host (mirror of implementations.torch.distributed).

One worker process (implementations.rank_processes) whose XLA_FLAGS give XLA:CPU N devices before JAX starts, or
on GPUs one whose mesh is its first N GPUs, joined in a one-axis Mesh (axis types Auto: XLA's sharding propagation
places the collectives). The workload's own forward and parameters (common.prepare) run on the batch sharded over
the axis. Forms (rank_processes.FORMS):

- "ddp": jax.value_and_grad of the full-batch loss with the batch sharded and the parameters replicated: XLA sums
  the partial products of each gradient across devices (an all-reduce);
- "shard_map": jax.shard_map of the per-device program, each device's loss N times the sum over its part of the
  batch, lax.pmean of loss and gradients: the averaging DDP does, written out;
- "fsdp": as "ddp" with every parameter sharded over the axis too (its first axis, or a layer-stacked parameter's
  second: a per-layer leaf's first, as FSDP2 shards it), and the gradients returned sharded like the parameters.

'compiled' is jax.jit of the step, whose compiled HLO gives the collectives and their bytes; 'eager' runs it op
by op (no one program to count).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import implementations.jax as jax_side
from implementations import rank_processes
from implementations.jax import probe
from implementations.jax.common import cotangent, formulation_of, load, prepare, to_numpy
from implementations.rank_processes import DEFAULT_TIMEOUT_S, DistributedResult
from implementations.workloads import Inputs

FORMS = rank_processes.FORMS
MODES = rank_processes.MODES
BACKENDS = rank_processes.BACKENDS["jax"]
# For the mirror: DDP's bucket size has no counterpart here (XLA's passes combine the collectives themselves).
DEFAULT_BUCKET_CAP_MB = 25.0
# What the first call's compile found cached: a fresh process holds no in-memory cache.
COLD = "cold: no persistent compilation cache, a fresh process"
# Why an op-by-op step has no CPU peak, and what the compiled one's is.
NO_PEAK = "an op-by-op step has no XLA buffer plan"
PER_DEVICE = "; of the sharded executable, per device"
# The GPU peak: the BFC allocator's counters on each device, which see op-by-op JAX's buffers too.
GPU_PEAK = rank_processes.gpu_peak_method(
    "jax peak_bytes_in_use", "bytes_in_use",
    "; peak_bytes_in_use is the process's high-water mark, which cannot be reset: the process is fresh per launch "
    "and ran only this step, and ballast lifts each device's baseline to its mark first")
HIDDEN = "the allocator peak was hidden by an earlier one"
_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
# Bytes per element of XLA's primitive types, as HLO text names them.
_XLA_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
              "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.-]+) = (.+?) ([a-z][a-z0-9-]*)\((.*)$")
_COMPUTATION = re.compile(r"^(ENTRY )?%([\w.-]+) .*\{\s*$")
_CALLED = re.compile(r"\b(body|condition|to_apply|calls|true_computation|false_computation)=%([\w.-]+)")
# A conditional runs one of its branches: how often each runs is not in the text.
_BRANCH_ROLES = ("true_computation", "false_computation")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_ARRAY = re.compile(r"\b([a-z]+\d*)\[([\d,]*)\]")


def unsupported(form: str, mode: str, variant: str = "plain") -> str | None:
    """Why (form, mode, variant) does not run here, or None where it does: every one runs, jitted or op by op."""
    return None


def peak_unmeasured(device: str, mode: str, timed: bool) -> str | None:
    """Why a step on `device` in `mode` gets no peak, or None where it gets one: a compiled step on a CPU (XLA's
    buffer plan, timed or not), every timed step on GPUs (the allocator, which sees op-by-op buffers too)."""
    if device == "cpu":
        return NO_PEAK if mode == "eager" else None
    return None if timed else "the request timed no step"


def distributed_step(inputs: Inputs, form: str, mode: str, ranks: int = 2, variant: str = "plain",
                     formulation: str | None = None, bucket_cap_mb: float = DEFAULT_BUCKET_CAP_MB,
                     timeout_s: float = DEFAULT_TIMEOUT_S, warmup: int = 0, repeat: int = 0,
                     device: str = "cpu") -> DistributedResult:
    """Loss and parameter gradients of one step of `inputs`' workload with its batch split over `ranks` devices of
    one worker process (`device` 'cpu': XLA:CPU devices; 'cuda': its first `ranks` GPUs), in `form` and `mode`
    ('eager': op by op; 'compiled': jax.jit), and the record of how it ran: devices, backend, mesh shape, the
    reduction, each parameter's sharded axis, the collectives of the compiled program with their operand bytes
    (collectives_of_hlo), the analytic gradient bytes, and CPU_NOTE or GPU_NOTE. `bucket_cap_mb` is DDP's and
    recorded as not applicable.

    After the first call (its seconds: trace, lower, compile and one execution, or the first op-by-op run),
    `warmup` untimed calls and `repeat` timed ones, each to block_until_ready of its outputs on every device: one
    process runs every device, so that is the slowest device's. The peak (peak_unmeasured) on a CPU is XLA's buffer
    plan of the sharded executable, per device; on GPUs each device's allocator counters over calls of their own
    after the timed ones, the largest device's.

    A worker that fails or runs past `timeout_s` is killed and rank_processes.RankFailed or RankTimeout says so,
    in one line. A form that does not compose with a mode raises NotImplementedError (unsupported)."""
    rank_processes.check(inputs, form, mode, ranks, variant, warmup, repeat, device)
    formulation_of(inputs.workload, formulation)
    reason = unsupported(form, mode, variant)
    if reason:
        raise NotImplementedError(reason)
    request = rank_processes.request(inputs, form, mode, ranks, variant, formulation, bucket_cap_mb, timeout_s,
                                     warmup, repeat, device)
    if device == "cpu":
        env = {"XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {_DEVICE_COUNT_FLAG}={ranks}".strip(),
               "JAX_PLATFORMS": "cpu"}
    else:
        env = {"JAX_PLATFORMS": "cuda,cpu"}  # the CPU too: the spec's arrays are staged there, as on a CPU
    return rank_processes.run(__name__, request, [env], [f"jax process of {ranks} devices"], timeout_s)


def collectives_of_hlo(text: str) -> dict[str, dict[str, int]]:
    """The collectives of a compiled HLO module's text (rank_processes.COLLECTIVES) with their count and the bytes
    of their operands on one device, each one inside a loop counted once per iteration (its known trip count).
    Async pairs count once, at their start. A ValueError where a collective sits in a loop of unknown trip count
    or in a conditional's branch."""
    computation, entry = None, None
    shapes: dict[str, str] = {}
    found: dict[str, list[tuple[str, str]]] = {}  # computation -> [(collective, operand text)]
    calls: dict[str, list[tuple[str, int | None]]] = {}  # computation -> [(called computation, times per call)]
    for line in text.splitlines():
        header = _COMPUTATION.match(line)
        if header:
            computation = header.group(2)
            entry = computation if header.group(1) else entry
            continue
        instruction = _INSTRUCTION.match(line)
        if not instruction or computation is None:
            continue
        name, shape, op, rest = instruction.groups()
        shapes[name] = shape
        kind = op.removesuffix("-start")
        if kind in rank_processes.COLLECTIVES:
            found.setdefault(computation, []).append((kind, _operands(rest)))
        trip = _TRIP_COUNT.search(rest)
        for role, called in _CALLED.findall(rest):
            times = (int(trip.group(1)) if trip else None) if op == "while" and role in ("body", "condition") else 1
            calls.setdefault(computation, []).append((called, None if role in _BRANCH_ROLES else times))
        for branches in _BRANCHES.findall(rest):
            calls.setdefault(computation, []).extend((b.strip().lstrip("%"), None) for b in branches.split(","))
    counts = {kind: {"count": 0, "bytes": 0} for kind in rank_processes.COLLECTIVES}
    for name, times in _executions(entry, calls).items():
        for kind, operands in found.get(name, []):
            if times is None:
                raise ValueError(f"a {kind} in {name}, a loop of unknown trip count or a conditional's branch: its "
                                 "bytes per step are unknown")
            counts[kind]["count"] += times
            counts[kind]["bytes"] += times * sum(_bytes(shapes[o]) for o in re.findall(r"%([\w.-]+)", operands))
    return counts


def _operands(rest: str) -> str:
    """The text of an instruction's operand list: `rest` up to the parenthesis that closes it."""
    depth = 1
    for i, char in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return rest[:i]
    return rest


def _executions(entry: str | None, calls: dict[str, list[tuple[str, int | None]]]) -> dict[str, int | None]:
    """How often each computation runs per execution of `entry`, summed over its call sites (None: unknown)."""
    runs: dict[str, int | None] = {}

    def visit(name: str, times: int | None) -> None:
        before = runs.get(name, 0)
        runs[name] = None if before is None or times is None else before + times
        for called, per_call in calls.get(name, []):
            visit(called, None if times is None or per_call is None else times * per_call)

    if entry is not None:
        visit(entry, 1)
    return runs


def _bytes(shape: str) -> int:
    return sum(_XLA_BYTES.get(dtype, 0) * math.prod(int(d) for d in dims.split(",") if d)
               for dtype, dims in _ARRAY.findall(shape))


def _rank_setup(request: dict[str, Any]) -> tuple[list, Mesh]:
    """The ranks' devices, configured to compile cold, and their one-axis mesh."""
    ranks, on_gpus = request["ranks"], request["device"] == "cuda"
    jax_side.configure("highest", None, float64=request["inputs"].dtype == "float64")
    jax.config.update("jax_enable_compilation_cache", False)  # every launch compiles cold, whatever the environment
    devices = jax.devices("gpu" if on_gpus else "cpu")
    if len(devices) < ranks:
        raise RuntimeError(f"XLA GPU has {len(devices)} devices, not the {ranks} that the ranks need" if on_gpus else
                           f"XLA:CPU has {len(devices)} devices, not the {ranks} that {_DEVICE_COUNT_FLAG} asked for")
    mesh = Mesh(np.array(devices[:ranks]), (rank_processes.MESH_AXIS,), axis_types=(AxisType.Auto,))
    return devices, mesh


def _rank_peak(request: dict[str, Any], compiled: list, call: Callable[[], Any],
               devices: list) -> tuple[int | None, str]:
    """The step's peak bytes and how they were measured: XLA's buffer plan on a CPU, the allocators' peaks on GPUs
    (the buffer plan where they show none), or why there is none."""
    unmeasured = peak_unmeasured(request["device"], request["mode"], rank_processes.measures(request))
    if unmeasured is not None:
        return None, f"not measured: {unmeasured}"
    if request["device"] != "cuda":
        found = probe._analysed_peak(compiled[0], "cpu", PER_DEVICE)
        return found.bytes, found.method
    peaks = probe._allocator_peaks(call, devices)
    why = "the allocator shows no statistics" if peaks is None else HIDDEN
    if peaks is not None and None not in peaks:
        return max(peaks), GPU_PEAK
    if compiled:
        found = probe._analysed_peak(compiled[0], "gpu", f"{PER_DEVICE}; {why}")
        return found.bytes, found.method
    return None, f"not measured: {why}"


def _rank_record(request: dict[str, Any], collectives: Any, parameter_sharding: dict, first_s: float,
                 samples: list[float], peak: int | None, peak_method: str) -> dict:
    """The launch's record: the form's settings, the collectives of its program, the timing and the peak."""
    form, ranks = request["form"], request["ranks"]
    how = f"{BACKENDS[request['device']]} ({ranks} devices of one process)"
    return rank_processes.base_record("jax", request, how) | {
        "bucket_cap_mb": None, "ddp_bucket_bytes": None,
        "gradient_reduction": "mean over devices (lax.pmean)" if form == "shard_map"
        else "sum of each device's partial gradient (one global program)",
        "local_loss_scale": ranks if form == "shard_map" else 1,
        "parameter_sharding": parameter_sharding,
        "collectives": collectives,
        "collectives_method": "collectives of the compiled HLO, operand bytes on one device, loops times their trip "
                              "counts" if request["mode"] == "compiled" else "none: op by op there is no one program",
        "compiled_regions": None,
        "threads_per_rank": None,
        "first_call_s": first_s, "step_times_s": samples,
        "timing": "wall time of each call of the one process that runs every device, to block_until_ready",
        "peak_bytes": peak, "peak_method": peak_method,
        "compile_cache": COLD,
    }


def _rank_step(request: dict[str, Any], index: int) -> DistributedResult:
    """The worker's step (run in its own process: on a CPU its XLA_FLAGS set the device count)."""
    inputs, form, mode, ranks = request["inputs"], request["form"], request["mode"], request["ranks"]
    devices, mesh = _rank_setup(request)
    axis = rank_processes.MESH_AXIS
    module = load(inputs.workload)
    formulation = formulation_of(inputs.workload, request["formulation"])
    params, data = prepare(inputs, "cpu", formulation)
    stacked = getattr(module, "LAYER_STACKED", ())
    replicated, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P(axis))

    def sharded_axis(name: str) -> int | None:
        # FSDP2's axis, a per-layer leaf's first, in the spec's layout; replicated where it does not split evenly
        chosen = rank_processes.fsdp_axis(name, stacked)
        return chosen if form == "fsdp" and inputs.params[name].shape[chosen] % ranks == 0 else None

    def sharding(name: str, per_layer: bool) -> NamedSharding:
        chosen = sharded_axis(name)
        return replicated if chosen is None else NamedSharding(mesh, P(*[None] * (chosen - per_layer), axis))

    param_shardings = {name: [sharding(name, True)] * len(v) if isinstance(v, list) else sharding(name, False)
                       for name, v in params.items()}

    def loss(params: dict, x: jax.Array, seed: jax.Array) -> jax.Array:
        return (module.forward(params, {"x": x}, inputs.static, request["variant"], formulation) * seed).sum()

    if form == "shard_map":
        def per_device(params: dict, x: jax.Array, seed: jax.Array) -> tuple:
            # Differentiated at a device-varying copy: at the replicated parameters themselves shard_map's autodiff
            # already sums the gradients over the devices (the transpose of its implicit broadcast), and the pmean
            # after it would average N sums.
            local = jax.lax.pcast(params, axis, to="varying")
            value, grads = jax.value_and_grad(lambda p: loss(p, x, seed) * ranks)(local)
            return jax.lax.pmean((value, grads), axis)

        step = jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P(axis), P(axis)), out_specs=P())
    else:
        step = jax.value_and_grad(loss)
    args = (jax.device_put(params, param_shardings), jax.device_put(data["x"], batch),
            jax.device_put(cotangent(inputs), batch))
    compiled = []

    def first() -> tuple:
        if mode == "compiled":
            compiled.append(jax.jit(step, out_shardings=(replicated, param_shardings)).lower(*args).compile())
        return call()

    def call() -> tuple:
        return (compiled[0] if compiled else step)(*args)

    (value, grads), first_s, samples = rank_processes.timed_steps(first, call, request["warmup"], request["repeat"],
                                                                  lambda: None, jax.block_until_ready)
    collectives = collectives_of_hlo(compiled[0].as_text()) if compiled else None
    peak, peak_method = _rank_peak(request, compiled, call, devices[:ranks])
    grads = {name: np.stack(g) if isinstance(g, list) else g for name, g in to_numpy(grads).items()}
    parameter_sharding = {name: sharded_axis(name) for name in inputs.params}
    record = _rank_record(request, collectives, parameter_sharding, first_s, samples, peak, peak_method)
    return DistributedResult(np.asarray(to_numpy(value)), grads, record)
