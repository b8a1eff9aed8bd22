"""The worker of `tape-vs-trace run`: one framework, one process, a list of combinations of the asv suite.

The combinations are asv's own (asv_runner builds each benchmark from its name and parameter index, runs the
class's `setup`, and times the method through `TimeBenchmark.run`, whose timer, gc handling and `number` are asv's),
so no benchmark is defined twice. What changes is the process: asv starts one per combination and round; here one
process sets up every combination of a benchmark, then takes one sample of each in turn, the order rotated every
pass, until each has `repeat` samples. Track methods (counts) return their value once.

    python -m tape_vs_trace.running.worker PLAN OUT

PLAN (JSON): {"framework", "caches" ({setup_cache_key: pickled setup_cache}), "tasks": [{"name", "index",
"repeat", "kind"}]}. OUT (JSON, rewritten after every benchmark, a temporary file first): {"<name>-<index>": {"samples",
"number"} | {"value"} | {"skip"} | {"error"}, ...}, "graphs": per compiled PyTorch combination, the graphs
TorchDynamo compiled while setting it up, and "seconds": per combination, the wall time of its set-up and of its
samples (what a plan of a run's cost is made from). A task the process is working on when it dies is named in OUT's
"current", so the runner can record it as failed and go on without it.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from implementations import process_settings

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK_DIR = ROOT / "benchmarks"
# TorchDynamo's defaults (8 compiled versions per code object) would send the ninth compiled combination of one
# loss function back to eager without an error: raised far above the suite's grid, and a hit is an error.
RECOMPILE_LIMIT = 1024
ACCUMULATED_RECOMPILE_LIMIT = 4096


def key(name: str, index: int) -> str:
    """asv's id of one parameter combination of a benchmark."""
    return f"{name}-{index}"


def guard_recompiles() -> None:
    """Raise TorchDynamo's recompile limits and make reaching one an error rather than a silent eager fallback."""
    from torch._dynamo import config  # from the module itself: set while its import ends, before torch names it

    config.recompile_limit = RECOMPILE_LIMIT
    config.accumulated_recompile_limit = ACCUMULATED_RECOMPILE_LIMIT
    config.fail_on_recompile_limit_hit = True


def guard_recompiles_when_imported() -> None:
    """guard_recompiles once TorchDynamo is imported (the first torch.compile imports it), before anything compiles:
    a process that compiles nothing never pays for importing it (docs/history.md)."""
    process_settings.after_import("torch._dynamo", guard_recompiles)


def compiled_graphs() -> int:
    """Graphs TorchDynamo has compiled in this process so far (0 before torch is imported)."""
    if "torch._dynamo" not in sys.modules:
        return 0
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _error_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


class Worker:
    """Runs the plan's tasks, benchmark by benchmark, writing what it has after each one."""

    def __init__(self, plan: dict[str, Any], out: Path, get_benchmark: Callable[[str], Any] | None = None):
        self.plan = plan
        self.out = out
        self.found: dict[str, Any] = {"graphs": {}, "seconds": {}}
        self.caches: dict[str, Any] = {}
        for cache_key, path in (plan.get("caches") or {}).items():
            with open(path, "rb") as fh:
                self.caches[cache_key] = pickle.load(fh)
        if get_benchmark is None:
            from asv_runner.discovery import get_benchmark_from_name

            def get_benchmark(benchmark_id: str) -> Any:
                return get_benchmark_from_name(str(BENCHMARK_DIR), benchmark_id)
        self.get_benchmark = get_benchmark
        self.last_setup: Any = None  # the benchmark whose setup ran last in this process

    def save(self, current: str | None = None) -> None:
        self.found["current"] = current
        tmp = self.out.with_name(self.out.name + ".tmp")
        tmp.write_text(json.dumps(self.found))
        os.replace(tmp, self.out)

    def groups(self) -> list[list[dict[str, Any]]]:
        """The tasks by benchmark, in the plan's order (the runner rotates it between rounds)."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for task in self.plan["tasks"]:
            grouped.setdefault(task["name"], []).append(task)
        return list(grouped.values())

    def set_up(self, task: dict[str, Any]) -> Any:
        """The benchmark of `task` set up, or None with its outcome recorded (skipped or failed)."""
        k = key(task["name"], task["index"])
        self.save(current=k)
        graphs = compiled_graphs()
        start = time.perf_counter()
        try:
            bench = self.get_benchmark(k)
            if bench.setup_cache_key is not None and bench.setup_cache_key not in self.caches:
                raise RuntimeError(f"no setup_cache {bench.setup_cache_key} was given to this worker")
            bench.set_cache(self.caches.get(bench.setup_cache_key))
            skipped = bench.do_setup()
            self.last_setup = bench
            if skipped:
                self.found[k] = {"skip": "skipped in setup"}
                return None
        except Exception as exc:  # recorded as asv records a failed setup: no value, the error kept
            self.found[k] = {"error": _error_text(exc)}
            return None
        if compiled_graphs() > graphs:
            self.found["graphs"][k] = compiled_graphs() - graphs
        self.found["seconds"][k] = {"setup": round(time.perf_counter() - start, 4), "samples": 0.0}
        return bench

    def run_group(self, tasks: list[dict[str, Any]]) -> None:
        benches = [(t, self.set_up(t)) for t in tasks]
        live = [(t, b) for t, b in benches if b is not None]
        timed = [(t, b) for t, b in live if t["kind"] == "time"]
        for task, bench in live:
            if task["kind"] != "time":
                self.track(task, bench)
        samples: dict[str, list[float]] = {key(t["name"], t["index"]): [] for t, _ in timed}
        numbers: dict[str, int] = {}
        passes = max((t["repeat"] for t, _ in timed), default=0)
        for p in range(passes):
            shift = p % len(timed)
            for task, bench in timed[shift:] + timed[:shift]:
                k = key(task["name"], task["index"])
                if k in self.found or len(samples[k]) >= task["repeat"]:
                    continue
                start = time.perf_counter()
                try:
                    sample, number = self.sample(bench)
                except Exception as exc:
                    self.found[k] = {"error": _error_text(exc)}
                    continue
                self.found["seconds"][k]["samples"] += time.perf_counter() - start
                samples[k].append(sample)
                numbers[k] = number
        for task, _ in timed:
            k = key(task["name"], task["index"])
            if k not in self.found:
                self.found[k] = {"samples": samples[k], "number": numbers[k]}
        for _, bench in live:
            try:
                bench.do_teardown()
            except Exception as exc:  # a teardown error does not void the samples taken
                print(f"teardown of {bench.name}: {_error_text(exc)}", file=sys.stderr)
        self.save()

    def sample(self, bench: Any) -> tuple[float, int]:
        """One asv sample: the class's setup where another combination's ran since (memoised: it re-selects this
        combination's state, such as the per-call loop count; a cold compile's one setup is not repeated), then
        TimeBenchmark.run with one repeat, which times `number` calls of the method with asv's timer, gc off."""
        if self.last_setup is not bench:
            if bench.do_setup():
                raise RuntimeError("setup skipped a combination it had set up")
            self.last_setup = bench
        bench.repeat = 1  # do_setup reloads the class's attributes; asv's own sample loop, one sample
        bench.warmup_time = 0
        result = bench.do_run()
        return float(result["samples"][0]), int(result["number"])

    def track(self, task: dict[str, Any], bench: Any) -> None:
        k = key(task["name"], task["index"])
        from asv_runner.benchmarks.mark import SkipNotImplemented

        try:
            value = bench.do_run()
        except SkipNotImplemented as skip:  # n/a from a body, as asv records it (any other error is a failure)
            self.found[k] = {"skip": str(skip) or "skipped in its body"}
            return
        except Exception as exc:
            self.found[k] = {"error": _error_text(exc)}
            return
        if value is None or (isinstance(value, float) and math.isnan(value)):
            self.found[k] = {"skip": "no value"}
        else:
            self.found[k] = {"value": value}

    def run(self) -> None:
        for tasks in self.groups():
            self.run_group(tasks)
        self.save()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m tape_vs_trace.running.worker PLAN OUT", file=sys.stderr)
        return 2
    plan = json.loads(Path(args[0]).read_text())
    sys.path.insert(0, str(ROOT))
    from implementations import frameworks

    frameworks.isolate_allocators()
    if plan["framework"] == "torch":
        guard_recompiles_when_imported()
    Worker(plan, Path(args[1])).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
