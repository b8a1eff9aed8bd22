"""How many calls make one timing sample: shared by the asv suite (benchmarks/common.py) and the paired runner
(tape_vs_trace/side/paired.py), so both time a step the same way; and how both probes time the host's calibration
(tape_vs_trace/running/calibrate.py). Imports no framework."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

# Steps shorter than MIN_SAMPLE_SECONDS are timed as a loop of calls and reported per call: a timer read around a
# microsecond step would measure the timer, and asv-runner's per-sample overhead would be part of it. Long enough
# that one burst of a neighbour's load on a shared host moves few of a process's samples.
MIN_SAMPLE_SECONDS = 10e-3
MAX_CALLS = 10_000


# Warm-up before any timing: WARMUP_CALLS calls (the first compiles and allocates), and on a GPU calls until
# WARMUP_SECONDS of work have run too, whichever is longer: a GPU idles at low clocks, and a few calls of a
# millisecond step would be timed before its clocks rise.
WARMUP_CALLS = 2
WARMUP_SECONDS = {"cpu": 0.0, "cuda": 1.0}


def warm_up(step: Callable[[], Any], device: str = "cpu") -> int:
    """Call `step` (which synchronises its device) WARMUP_CALLS times, and on until WARMUP_SECONDS[device type] have
    passed since the first call; returns the number of calls."""
    seconds = WARMUP_SECONDS[device.split(":")[0]]
    start, calls = time.perf_counter(), 0
    while calls < WARMUP_CALLS or time.perf_counter() - start < seconds:
        step()
        calls += 1
    return calls


def calls_for(step: Callable[[], Any]) -> int:
    """How many calls of `step` make a sample of at least MIN_SAMPLE_SECONDS (1 for steps at least that long),
    from one timed call (which also serves as a warm-up)."""
    start = time.perf_counter()
    step()
    seconds = time.perf_counter() - start
    return max(1, min(MAX_CALLS, math.ceil(MIN_SAMPLE_SECONDS / max(seconds, 1e-7))))


def once(compiled: Callable[..., Any], args: tuple, sync: Callable[[Any], Any]) -> Callable[[], Any]:
    """`compiled(*args)`, synchronised by `sync`, callable once: a compile-time benchmark times the first call, the
    only one that compiles, and a second call would time a cached program."""
    calls = []

    def first_call() -> Any:
        if calls:
            raise RuntimeError("first_call was called before: this call would not compile")
        calls.append(1)
        return sync(compiled(*args))

    return first_call


# Calibration sizes: long enough to time reliably, short enough that the whole calibration stays under 40 s on 2 CPU
# cores. Keyed by device type; the dispatch loop is shorter for JAX, whose op-by-op dispatch costs more per op.
CALIBRATION_REPEATS = 5
MATMUL_N = {"cpu": 1024, "cuda": 8192}
COPY_BYTES = {"cpu": 64 * 2**20, "cuda": 2 * 2**30}
DISPATCH_OPS = {"torch": 2000, "jax": 400}


def repeat_seconds(run: Callable[[], Any], repeats: int = CALIBRATION_REPEATS) -> list[float]:
    """Seconds of each of `repeats` calls of `run` (which synchronises its device) after a warm-up call; the
    warm-up is timed too and left out, so the first call's allocation and compilation are in no sample."""
    seconds = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    return seconds[1:]
