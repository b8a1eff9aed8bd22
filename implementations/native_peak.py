"""One CPU peak for both frameworks, from the native allocator: memray's high-water mark of the heap over one call.

memray (bloomberg/memray, a maintained profiler) interposes malloc, calloc, realloc, posix_memalign, aligned_alloc,
mmap and their frees in every thread of the process, so it sees aten's CPU storages, XLA:CPU's buffers, Eigen's
and oneDNN's scratch, the runtime's own buffers and Python's objects alike: one method whatever framework or mode
allocated them. It counts only allocations made while its Tracker is active, so the peak it reports is the peak
during the call above the live bytes at its start (the baseline: parameters, inputs, compiled programs, caches);
memory allocated before and freed during the call is not credited, so the value is never below that difference.

Python's small objects come from pymalloc's arenas, which memray sees as whole arenas: an arena opened during the
call would add its full size. The process must therefore run with PYTHONMALLOC=malloc (every object a malloc of
its own): `native_peak_bytes` refuses to run without it. Warm-up calls come first (compilation, thread pools,
first-call caches; the last under a tracker, whose own one-time allocations are thus made), the step's outputs are
held until the tracker stops (they are part of the peak), and each measurement is one fresh process (a framework's
first-call caches, once filled, are never filled again).
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METHOD = "memray native heap peak above the call's start (PYTHONMALLOC=malloc)"
PYTHONMALLOC = "malloc"
WARM_UPS = 2  # besides the steps' own warm-up: a second call settles what the first call's outputs displaced


class NativePeakError(RuntimeError):
    """The process cannot measure a native peak (no memray, or pymalloc in use): one line for the user."""


def require_plain_malloc() -> None:
    """Raise NativePeakError unless Python's objects go through malloc (PYTHONMALLOC=malloc in this process)."""
    if os.environ.get("PYTHONMALLOC") != PYTHONMALLOC:
        raise NativePeakError("a native peak needs PYTHONMALLOC=malloc in the measuring process (pymalloc's arenas "
                              "would count whole); run it through `tape-vs-trace native-peak`")


def _tracker(path: Path) -> Any:
    try:
        import memray
    except ImportError:
        raise NativePeakError("memray is not installed (Linux and macOS only): pip install memray") from None
    # native stacks name the library of each allocation at the peak (workspace_bytes); aggregated: one record per
    # location, no per-allocation stream, the peak kept exactly
    return memray.Tracker(path, native_traces=True, follow_fork=False,
                          file_format=memray.FileFormat.AGGREGATED_ALLOCATIONS)


# GEMM libraries' own scratch, by the innermost native frames of an allocation: Eigen's contraction packing blocks
# (XLA:CPU's DotThunk), YNNPACK's slinky buffers (XLA:CPU's fusions), oneDNN and MKL (aten's matmuls), BLAS
GEMM_FRAMES = re.compile(r"TensorContraction|slinky::|ynn_|dnnl|mkldnn|mkl_serv|gemm|blas", re.IGNORECASE)
INNER_FRAMES = 4  # deep enough to pass the allocator's own wrappers, shallow enough not to reach the op's caller
# Below this an allocation is bookkeeping, not an array buffer: Python objects, autograd nodes, PjRt buffer records,
# thunk and thread-pool state, memray's own line tables (the workloads' arrays are larger, their scalars apart)
SMALL_BYTES = 4096


@dataclass(frozen=True)
class NativePeak:
    """The heap's peak of one call above its start; of it, GEMM-library scratch and small allocations."""

    bytes: int
    method: str
    workspace_bytes: int = 0
    small_bytes: int = 0


def _is_workspace(record: Any) -> bool:
    return any(GEMM_FRAMES.search(frame[0]) for frame in record.native_stack_trace(max_stacks=INNER_FRAMES))


def _peak(path: Path) -> tuple[int, int, int]:
    """(the heap's high-water mark, the part of it that GEMM libraries allocated, the part in allocations under
    SMALL_BYTES each) of one capture file."""
    import memray

    reader = memray.FileReader(path)
    try:
        at_peak = list(reader.get_high_watermark_allocation_records(merge_threads=True))
        workspace = [r for r in at_peak if _is_workspace(r)]
        small = [r for r in at_peak if r not in workspace and r.size < SMALL_BYTES * r.n_allocations]
        return int(reader.metadata.peak_memory), sum(r.size for r in workspace), sum(r.size for r in small)
    finally:
        reader.close()


def native_peak_bytes(step: Callable[[], Any], warm_ups: int = WARM_UPS) -> NativePeak:
    """The native heap's peak during one call of `step()` above the bytes live at its start, after `warm_ups`
    calls; `step` must block until its results exist (the steps' own sync), and its results count until it returns.
    `workspace_bytes`: the part of the peak that GEMM libraries allocated for themselves (GEMM_FRAMES), as the
    GPU probes report the cuBLAS workspace inside theirs; `small_bytes`: the part in allocations under SMALL_BYTES.
    """
    require_plain_malloc()
    with tempfile.TemporaryDirectory(prefix="tvt-memray-") as folder:
        for i in range(warm_ups):
            # the last warm-up under a tracker of its own: Python builds a code object's line table when a tracer
            # first sees it, once per process, and that belongs to the tracer, not to the step
            with _tracker(Path(folder) / "warm.bin") if i == warm_ups - 1 else contextlib.nullcontext():
                step()
        gc.collect()
        path = Path(folder) / "step.bin"
        with _tracker(path):
            held = step()
        del held
        peak, workspace, small = _peak(path)
        return NativePeak(peak, METHOD, workspace, small)


def tracking_overhead(step: Callable[[], Any], calls: int = 5) -> tuple[float, float]:
    """(seconds per call untracked, seconds per call under a Tracker): the medians of `calls` calls each, taken
    alternately so that a change of load hits both."""
    plain, tracked = [], []
    with tempfile.TemporaryDirectory(prefix="tvt-memray-") as folder:
        for i in range(calls):
            start = time.perf_counter()
            step()
            plain.append(time.perf_counter() - start)
            with _tracker(Path(folder) / f"{i}.bin"):
                start = time.perf_counter()
                step()
                tracked.append(time.perf_counter() - start)
    return sorted(plain)[calls // 2], sorted(tracked)[calls // 2]
