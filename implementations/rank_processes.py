"""One gradient step over N ranks in worker processes, shared by implementations.torch.distributed and
implementations.jax.distributed (which run the step itself). Imports no framework.

Each worker is a fresh interpreter (`python -c`, this module's `worker`) in a session of its own, given a request
file, its index and its own environment (PyTorch: one process per rank with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT; JAX: one process whose N devices are XLA:CPU's, set by XLA_FLAGS before JAX starts, or its first N
GPUs). The parent waits with a timeout; a worker that fails or hangs ends the whole step: every worker is killed
and the parent raises one RankFailed or RankTimeout whose message is one line, the failing rank's exception type
and message (its traceback stays in the worker). A worker also stops by itself past its deadline or when its
parent is gone, so none outlives a step.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from implementations.frameworks import DEVICES
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
DEFAULT_TIMEOUT_S = 120.0
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
# A worker outlives its parent's deadline by this much before it stops by itself: the parent kills it first and
# reports which rank was stuck; the worker's own deadline is for a parent that is gone.
_GRACE_S = 5.0
# TVT_INJECT_RANK_FAILURE=raise:<index> or hang:<index>: that worker raises or sleeps before its step (the failure
# tests; frameworks.load's TVT_INJECT_FAILURE does the same for a benchmark process).
INJECT_ENV = "TVT_INJECT_RANK_FAILURE"
_ROOT = Path(__file__).resolve().parents[1]


class RankError(RuntimeError):
    """A distributed step did not finish: one line naming the rank and what happened to it."""


class RankFailed(RankError):
    """A worker exited with an error (its exception type and message) or was ended by a signal."""


class RankTimeout(RankError):
    """A worker was still running at the step's timeout and was killed."""


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


def free_port() -> int:
    """A TCP port on the loopback interface that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(module: str, request: dict[str, Any], envs: list[dict[str, str]], labels: list[str],
        timeout_s: float = DEFAULT_TIMEOUT_S) -> Any:
    """Run `module`._rank_step(request, index) in one worker per entry of `envs` (added to this environment) and
    return worker 0's result. A worker that fails, or any still running after `timeout_s`, ends the step: all are
    killed and RankFailed or RankTimeout names it by its entry in `labels`."""
    with tempfile.TemporaryDirectory(prefix="tvt-ranks-") as folder:
        folder_path = Path(folder)
        request_path = folder_path / "request.pickle"
        request_path.write_bytes(pickle.dumps({"module": module, "request": request}))
        deadline = time.monotonic() + timeout_s
        procs = [_start(request_path, index, env, timeout_s) for index, env in enumerate(envs)]
        try:
            _wait(procs, folder_path, labels, deadline, timeout_s)
        finally:
            for proc in procs:
                _kill(proc)
        return pickle.loads((folder_path / "result.pickle").read_bytes())


def _start(request_path: Path, index: int, env: dict[str, str], timeout_s: float) -> subprocess.Popen:
    python_path = os.pathsep.join(filter(None, (str(_ROOT), os.environ.get("PYTHONPATH"))))
    full_env = {**os.environ, **env, "PYTHONPATH": python_path, "TVT_RANK_DEADLINE_S": str(timeout_s + _GRACE_S),
                "TVT_RANK_PARENT": str(os.getpid())}
    # The interpreter's own flags (-S where this one runs without site) so the worker finds the same packages.
    flags = ["-S"] if sys.flags.no_site else []
    with open(request_path.parent / f"worker{index}.log", "wb") as log:  # the worker's output, kept from the user
        return subprocess.Popen(
            [sys.executable, *flags, "-c", "from implementations.rank_processes import worker; worker()",
             str(request_path), str(index)],
            env=full_env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _wait(procs: list[subprocess.Popen], folder: Path, labels: list[str], deadline: float, timeout_s: float) -> None:
    while True:
        codes = [proc.poll() for proc in procs]
        for index, code in enumerate(codes):
            if code:  # the first failure seen: the others are usually waiting for it in a collective
                raise RankFailed(f"{labels[index]} failed: {_failure(folder, index, code)}")
        if all(code == 0 for code in codes):
            return
        if time.monotonic() > deadline:
            stuck = ", ".join(labels[i] for i, code in enumerate(codes) if code is None)
            raise RankTimeout(f"{stuck} still running after {timeout_s:g} s: killed")
        time.sleep(0.05)


def _failure(folder: Path, index: int, code: int) -> str:
    error = folder / f"error{index}.txt"
    if error.exists():
        return error.read_text()
    # A crash writes no error file: the worker's last line of output is the only word on what happened.
    lines = [line for line in (folder / f"worker{index}.log").read_text(errors="replace").splitlines() if line.strip()]
    last = f" (its last output: {lines[-1].strip()[:200]})" if lines else ""
    if code < 0:
        return f"ended by signal {signal.Signals(-code).name}{last}"
    return f"exited with status {code}{last}"


def _kill(proc: subprocess.Popen) -> None:
    # The worker leads its own session: its group holds it and anything it started.
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def one_line(error: BaseException) -> str:
    """`error` as one line: its type and the first line of its message."""
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[0][:300]}" if message else type(error).__name__


def worker() -> None:
    """A worker's main (argv: request file, index): run the step, write worker 0's result; on an exception write
    its one line to error<index>.txt and exit 1."""
    request_path, index = Path(sys.argv[1]), int(sys.argv[2])
    folder = request_path.parent
    tempfile.tempdir = str(folder)  # the rank's temporary files go where the parent removes them, killed ranks' too
    _watchdog(folder, index, float(os.environ["TVT_RANK_DEADLINE_S"]), int(os.environ["TVT_RANK_PARENT"]))
    try:
        payload = pickle.loads(request_path.read_bytes())
        module = importlib.import_module(payload["module"])
        _inject(index)
        result = module._rank_step(payload["request"], index)
        if index == 0:
            partial = folder / "result.pickle.tmp"
            partial.write_bytes(pickle.dumps(result))
            partial.replace(folder / "result.pickle")
    except BaseException as error:  # noqa: BLE001 - every failure, KeyboardInterrupt too, becomes the one line
        (folder / f"error{index}.txt").write_text(one_line(error))
        sys.stdout.flush()
        os._exit(1)


def _inject(index: int) -> None:
    kind, _, target = os.environ.get(INJECT_ENV, "").partition(":")
    if target != str(index):
        return
    if kind == "raise":
        raise RuntimeError(f"injected failure in worker {index} ({INJECT_ENV})")
    if kind == "hang":
        while True:
            time.sleep(1)


def _watchdog(folder: Path, index: int, deadline_s: float, parent: int) -> None:
    end = time.monotonic() + deadline_s

    def watch() -> None:
        while True:
            time.sleep(0.2)
            gone = os.getppid() != parent
            if gone or time.monotonic() > end:
                reason = "its parent is gone" if gone else f"past its deadline of {deadline_s:g} s"
                with contextlib.suppress(OSError):  # a parent that is gone may have removed the folder
                    (folder / f"error{index}.txt").write_text(f"RankTimeout: worker {index} stopped itself: {reason}")
                os._exit(124)

    threading.Thread(target=watch, name="rank-watchdog", daemon=True).start()
