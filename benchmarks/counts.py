"""The deterministic counts of the asv suite: the ``_Counted`` mixin of the classes whose track_ methods are counts
(``_PeakBytes``, ``_SavedBytes``, ``_Flops``), and ``collect()``, their shared ``setup_cache``, taken in one process
per framework.

A count process (``main``, started by ``collect`` through benchmarks/count_processes.py's _BOOT) counts every
combination of this device's grid for one framework and writes them to OUT as JSON; ``collect`` runs one such
subprocess per framework, so torch and jax never share a process and the benchmark processes import neither. Each
combination is prepared exactly as a benchmark process prepares it (``Benchmark._prepare``: the skip rules, the
inputs, ``frameworks.load``, ``build``) and counted by the class's own ``count_<metric>`` methods, the bodies the
track_ methods ran per process before. No framework is imported at module level (asv imports this module when it
discovers the suite).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from benchmarks import common
from benchmarks.common import DEVICE, Benchmark, Skip, unit
from benchmarks.count_processes import Key, benchmark_name, count_all, count_method, count_one, grid, tracks
from benchmarks.count_processes import collect as collect_classes
from implementations import frameworks

# read through this module by the pillars' classes, the report's skips and the tests
__all__ = ["SHARED_COUNTS", "benchmark_name", "collect", "count_all", "count_method", "count_one", "counted_classes",
           "grid", "main", "skip_method", "tracks"]


# Where the counts are taken together (see _Counted): on CPU machines. CUDA runs are split into chunks by asv's
# `-b` (scripts/gpu_chunks.py), and a setup_cache cannot follow a selection, so every chunk would count the whole
# grid; and a CUDA peak is the allocator's high-water mark of the process (JAX's cannot be reset), so a peak taken
# after other combinations is not a fresh process's. There each count stays in its benchmark's own process.
SHARED_COUNTS = DEVICE == "cpu"


class _Counted:
    """Mixin of the classes whose track_ methods are deterministic counts (saved bytes, peak bytes, graph size,
    flops: ``metrics.METRICS[...].sampled`` is False), whose values depend neither on speed nor on what the process
    ran before (on CPU, peaks are storage tracking and XLA's buffer assignment).

    asv runs one process per method and parameter combination, and each imported torch or jax (2-3 s) to count
    once. Here one ``setup_cache`` (one cache key: it is defined once, on this class) counts every combination of
    every such class in two subprocesses, one per framework (``collect``), so torch and jax never share a
    process; each benchmark process then reads its value and imports no framework. ``setup`` raises the same Skip
    as before for a combination the suite does not run, and a count that failed in its subprocess fails its
    benchmark with the error text. The count itself is the mixin's ``count_<metric>`` method, the body the track_
    method had when it ran in its own process; without SHARED_COUNTS it runs there still.
    """

    def setup_cache(self) -> dict:
        return collect() if SHARED_COUNTS else {}

    # Both frameworks side by side over the whole grid: about a minute on a 2-core CPU. A hung count process is
    # stopped here, and every benchmark of the key fails with asv's "setup_cache failed".
    setup_cache.timeout = 1200

    def setup(self, cache: dict, *params):
        self._counts = None
        if not SHARED_COUNTS:
            Benchmark.setup(self, *params)  # counted in this process, as every other benchmark is set up
            return
        entry = cache.get((benchmark_name(type(self)), params))
        if entry is None:  # a grid the cache did not count (another TVT_DEVICE, say): never a silent number
            raise RuntimeError(f"no count of {benchmark_name(type(self))}{params} in the setup cache")
        if "skip" in entry:
            raise Skip(entry["skip"])
        if "error" in entry:
            raise RuntimeError(entry["error"])
        self._counts = entry["values"]

    def counted(self, method: str) -> float | int:
        """The value of track_ `method`: from the cache, or counted here without SHARED_COUNTS. A count that
        failed in the count process raises its error here."""
        if self._counts is None:
            return getattr(self, count_method(method))()
        value = self._counts[method]
        if isinstance(value, dict) and "skip" in value:
            skip_method(value["skip"])
        if isinstance(value, dict):
            raise RuntimeError(f"{method} failed in the count process: {value['error']}")
        return value


def skip_method(reason: str) -> NoReturn:
    """Skip one method of a combination whose other methods run: asv's SkipNotImplemented, its n/a from a
    benchmark's body (a plain NotImplementedError there is a failure; only setup's skip the whole combination)."""
    from asv_runner.benchmarks.mark import SkipNotImplemented  # asv's own class: its runner catches no other

    raise SkipNotImplemented(reason)


class _PeakBytes(_Counted):
    """Mixin: `track_peak_bytes` of the step the class's `peak_fn(case)` returns as (fn, args), and
    `track_workspace_bytes`, the GEMM-library workspace inside that peak, both from one probe call."""

    def peak(self) -> Any:
        """The probe's PeakBytes of this combination, measured once per process: both rows read the same call (a
        JAX allocator peak cannot be reset, so a second call would not measure the same thing)."""
        case = self.case

        def measure() -> Any:
            fn, args = self.peak_fn(case)
            return case.fw.probe.peak_bytes(fn, *args)

        return common.memo(("peak", type(self).__name__, tuple(case.params.values())), measure)

    def count_peak_bytes(self) -> int:
        result, case = self.peak(), self.case
        expected = frameworks.memory_method(case.framework, case.device)
        if result.method != expected:  # also refuses JAX's "(upper bound ...)": recorded as failed, not as a number
            raise RuntimeError(f"peak measured by {result.method!r}, but results declare {expected!r}")
        return result.bytes

    def count_workspace_bytes(self) -> int:
        reason = self.reason_to_skip_method("track_workspace_bytes", self.case)
        if reason:
            skip_method(reason)
        return self.peak().workspace_bytes

    def reason_to_skip_method(self, method: str, case: common.Case) -> str | None:
        """Why track_ `method` is not measured for `case` where the class's other methods are (the report asks
        this too); None where it is."""
        if method == "track_workspace_bytes" and not frameworks.workspace_method(case.framework, case.device):
            return (f"no GEMM-library workspace is read on {case.device}: its GEMMs take none from an allocator "
                    "the probes can see, and the peak has none inside it")
        return None

    def track_peak_bytes(self, *params):
        return self.counted("track_peak_bytes")

    def track_workspace_bytes(self, *params):
        return self.counted("track_workspace_bytes")

    track_peak_bytes.unit = unit("track_peak_bytes")
    track_workspace_bytes.unit = unit("track_workspace_bytes")
    # tape-vs-trace run: a CUDA peak is the allocator's high-water mark, so it is taken in a process that measured
    # nothing before it (on CPU the counts are storage tracking and buffer plans, the same after any history). The
    # workspace too: PyTorch's sum covers every cuBLAS handle the process has used, those of earlier steps included.
    track_peak_bytes.fresh_process = not SHARED_COUNTS
    track_workspace_bytes.fresh_process = not SHARED_COUNTS
    # ... one process for both rows of a combination, which read one probe call (running.plan.METHOD)
    track_peak_bytes.fresh_process_shared_across = "method"
    track_workspace_bytes.fresh_process_shared_across = "method"


class _SavedBytes(_Counted):
    """Mixin: `track_saved_bytes`, the bytes kept for the backward beyond inputs, parameters and the cotangent, of
    the loss the class's `saved_fn(case)` returns as (fn, args)."""

    def count_saved_bytes(self) -> int:
        fn, args = self.saved_fn(self.case)
        return self.case.fw.probe.saved_bytes(fn, *args).extra_bytes

    def track_saved_bytes(self, *params):
        return self.counted("track_saved_bytes")

    track_saved_bytes.unit = unit("track_saved_bytes")


class _Flops(_Counted):
    """Mixin: `track_flops`, the matmul flops (``probe.flops``) of one call of the forward + backward the class's
    `flops_fn(case)` returns as (fn, args)."""

    def count_flops(self) -> float:
        fn, args = self.flops_fn(self.case)
        return self.case.fw.probe.flops(fn, *args)

    def track_flops(self, *params):
        return self.counted("track_flops")

    track_flops.unit = unit("track_flops")


def counted_classes() -> list[type]:
    """Every asv class of the suite whose track_ methods come from the count cache."""
    return [cls for cls in common.suite_classes() if issubclass(cls, _Counted)]


def collect(classes: list[type] | None = None) -> dict[Key, dict[str, Any]]:
    """asv's setup_cache: every count of `classes` (default: every counted class), keyed by (benchmark name,
    params), taken in one subprocess per framework (count_processes.collect)."""
    return collect_classes(classes if classes is not None else counted_classes())


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in frameworks.NAMES:
        print(f"usage: counts.main {{{','.join(frameworks.NAMES)}}} OUT [CLASS...]", file=sys.stderr)
        return 2
    framework, out, wanted = argv[0], Path(argv[1]), set(argv[2:])
    classes = [cls for cls in counted_classes() if not wanted or benchmark_name(cls) in wanted]
    # numpy scalars (a probe's sum) leave as the Python numbers asv would have recorded from them.
    out.write_text(json.dumps(count_all(framework, classes), default=lambda value: value.item()))
    return 0

