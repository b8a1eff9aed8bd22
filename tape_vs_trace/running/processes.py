"""The worker runner's processes (`tape-vs-trace run`): asv's setup_cache of each benchmark that has one, in a
process of its own, and one round's batch of combinations in a worker process (tape_vs_trace.running.worker), where a
crash costs the combination it was on and the rest go on in a new worker."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tape_vs_trace.running.outcomes import Outcome, Task
from tape_vs_trace.running.worker import BENCHMARK_DIR, ROOT

WORKER_TIMEOUT_S = 3600  # one process of one round; a hung worker is stopped and its tasks recorded as failed


def _setup_cache(name: str, scratch: Path, timeout: float) -> tuple[Path | None, str]:
    """asv's setup_cache of `name`, in a process of its own (asv_runner's), pickled in a folder of scratch."""
    folder = Path(tempfile.mkdtemp(dir=scratch, prefix="cache-"))
    code = ("import sys, json; from asv_runner.setup_cache import _setup_cache; "
            f"_setup_cache(({str(BENCHMARK_DIR)!r}, {name!r}, json.dumps({{}})))")
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"setup_cache timed out after {timeout:.0f} s"
    if done.returncode != 0:
        return None, done.stderr.strip()
    return folder / "cache.pickle", ""


def run_worker(framework: str, batch: list[Task], caches: dict[str, Path], scratch: Path, label: str,
               timeout: float = WORKER_TIMEOUT_S) -> tuple[dict[str, Any], str]:
    """One worker process over `batch`; returns what it wrote and, where it died or timed out, why."""
    plan_path, out = scratch / f"{label}.plan.json", scratch / f"{label}.out.json"
    plan_path.write_text(json.dumps({"framework": framework, "caches": {k: str(v) for k, v in caches.items()},
                                     "tasks": [t.plan() for t in batch]}))
    argv = [sys.executable, "-m", "tape_vs_trace.running.worker", str(plan_path), str(out)]
    why = ""
    try:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            why = f"worker exited with status {done.returncode}: {last}"
    except subprocess.TimeoutExpired:
        why = f"worker timed out after {timeout:.0f} s"
    try:
        found = json.loads(out.read_text())
    except (OSError, ValueError):
        found = {}
    return found, why


def measure_round(batch: list[Task], framework: str, caches: dict[str, Path], scratch: Path, label: str,
                  log: Callable[[str], None], timeout: float = WORKER_TIMEOUT_S) -> dict[str, Any]:
    """`batch` in one worker; where a worker dies, the combination it was on is recorded as failed and the ones it
    had not reached run in a new worker, so one crash costs one combination."""
    results: dict[str, Any] = {}
    left = list(batch)
    attempt = 0
    while left:
        found, why = run_worker(framework, left, caches, scratch, f"{label}-{attempt}", timeout)
        results.update({k: v for k, v in found.items() if k not in ("current", "graphs", "seconds")})
        for extra in ("graphs", "seconds"):
            results.setdefault(extra, {}).update(found.get(extra, {}))
        if not why:
            break
        current = found.get("current")
        if current:
            results[current] = {"error": why}
            log(f"[run] {current}: {why}; going on without it")
        left = [t for t in left if t.id not in results]
        if not current:  # died before naming a combination: nothing to skip, nothing more to try
            for t in left:
                results[t.id] = {"error": why}
            log(f"[run] {framework} worker: {why}")
            break
        attempt += 1
    return results




def setup_caches(chosen: list[Task], benchmarks: list[dict[str, Any]], scratch: Path, outcomes: dict[str, Outcome],
                  log: Callable[[str], None]) -> dict[str, Path]:
    """Every setup_cache the chosen tasks need, once each; a failed one fails its benchmarks' combinations (as asv
    records them)."""
    caches: dict[str, Path] = {}
    failed: set[str] = set()
    by_name = {b["name"]: b for b in benchmarks}
    for task in chosen:
        cache_key = by_name[task.name].get("setup_cache_key")
        if cache_key is None or cache_key in caches or cache_key in failed:
            continue
        log(f"[run] setup_cache {cache_key} (through {task.name})")
        path, why = _setup_cache(task.name, scratch, float(by_name[task.name].get("setup_cache_timeout", 1200)))
        if path is None:
            last = (why.splitlines() or ["no output"])[-1]
            for t in chosen:
                if by_name[t.name].get("setup_cache_key") == cache_key:
                    outcomes.setdefault(t.id, Outcome()).error = f"setup_cache failed: {last}"
            log(f"[run] setup_cache {cache_key} failed: {last}")
            failed.add(cache_key)
        else:
            caches[cache_key] = path
    return caches
