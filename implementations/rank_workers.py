"""The worker processes of one distributed step (implementations.rank_processes.run): each worker is a fresh
interpreter (`python -c`, this module's `worker`) in a session of its own, given a request file, its index and its
own environment (PyTorch: one process per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; JAX: one process
whose N devices are XLA:CPU's, set by XLA_FLAGS before JAX starts, or its first N GPUs). The parent waits with a
timeout; a worker that fails or hangs ends the whole step: every worker is killed and the parent raises one
RankFailed or RankTimeout whose message is one line, the failing rank's exception type and message (its traceback
stays in the worker). A worker also stops by itself past its deadline or when its parent is gone, so none outlives a
step. Imports no framework.
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
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_S = 120.0
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
            [sys.executable, *flags, "-c", "from implementations.rank_workers import worker; worker()",
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
