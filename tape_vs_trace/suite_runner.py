"""`tape-vs-trace run`: the asv suite measured by worker processes, written as asv results.

`asv run` starts one process per benchmark, parameter combination and round, and writes its result file when the
run ends. A process's start-up (imports; on a GPU also the CUDA context, the XLA client and the compiles) costs
several times the measurement it makes. This runner measures the same benchmarks (asv's classes, parameters,
setup and timed bodies, through asv_runner: tape_vs_trace.suite_worker) in one process per framework, round,
kind of program (the compiled combinations apart from the others) and process-wide settings (matmul precision,
float64), each process taking every combination's `repeat` samples, interleaved combination by combination, the
order rotated every round and every pass. So the statistics between processes stay what they are (the report
splits each combination's samples into its processes), and a round costs a few start-ups (four on a CPU grid of one
precision) instead of one per combination.

What stays in a process of its own, as under asv: each combination whose benchmark sets `fresh_process` (a cold
compile time; on CUDA, an allocator peak, whose high-water mark would carry earlier work), and asv's `setup_cache`.
A benchmark that also sets `fresh_process_shared_across` (a parameter: CompilePhases' `phase`) gets one fresh
process per point instead, the combinations that differ only in that parameter together: they read one compile.
Set to "method" (METHOD), the class's fresh methods share one process per combination: a peak and the workspace
inside it read one probe call.

Results go through asv's own API (tape_vs_trace.suite_results: asv.results.Results, the benchmark descriptions of
a `benchmarks.json` discovered on this device, written to the results folder as `asv run` does), after every
round: a run cut short loses the round in progress, not the run. Every benchmark's runner is recorded in the result
file ("tape_vs_trace"/"runner_of"), and the combinations the run chose ("chosen"). `asv run` stays the reference
path, with full isolation.
"""

from __future__ import annotations

import datetime
import importlib
import itertools
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from implementations import frameworks
from tape_vs_trace import host_load
from tape_vs_trace.suite_results import Outcome, Task, record, save, to_results, write_benchmarks_json
from tape_vs_trace.suite_worker import BENCHMARK_DIR, ROOT

WORKER_TIMEOUT_S = 3600  # one process of one round; a hung worker is stopped and its tasks recorded as failed
MIN_ROUNDS = 3  # rounds a budget never cuts: the fewest processes whose t interval is worth printing
# round_plans' process layout, recorded in the result file: tape_vs_trace.history.LAYOUTS lists each one it had
LAYOUT = "worker-compiled-apart"
METHOD = "method"  # fresh_process_shared_across: the class's fresh methods of one combination share a process


class RunError(Exception):
    """Bad input or a step that cannot go on: printed as one line by the CLI."""


def discover(log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The suite's benchmarks as asv discovers them (asv_runner's list_benchmarks, in a process of its own so that
    this one imports no framework), for this process's device (TVT_DEVICE decides)."""
    code = ("import sys; from asv_runner.discovery import list_benchmarks; "
            f"list_benchmarks({str(BENCHMARK_DIR)!r}, sys.stdout)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunError(f"benchmark discovery failed: {last}")
    found = json.loads(done.stdout)
    log(f"[run] discovered {len(found)} benchmarks")
    return found


def _class_attr(name: str, attr: str, default: Any) -> Any:
    """An attribute of the benchmark's method, else of its class (asv's lookup order)."""
    module_name, class_name, method = name.rsplit(".", 2) if name.count(".") >= 2 else (*name.split("."), None)
    module = importlib.import_module(f"benchmarks.{module_name}")
    cls = getattr(module, class_name)
    for source in (getattr(cls, method, None) if method else None, cls):
        if source is not None and hasattr(source, attr):
            return getattr(source, attr)
    return default


def select(benchmarks: list[dict[str, Any]], regexes: list[str] | None) -> dict[str, list[int]]:
    """asv's selection (asv.benchmarks.Benchmarks: a regex matches `name(param, ...)`): benchmark -> indices."""
    from asv.benchmarks import Benchmarks

    chosen = Benchmarks(_config(), benchmarks, regex=regexes or None)
    selection = {}
    for name in chosen:
        indices = chosen.benchmark_selection[name]
        selection[name] = [0] if indices is None else list(indices)
    return selection


def _config() -> Any:
    from asv.config import Config

    return Config.load(str(ROOT / "asv.conf.json"))


def paired_across_modes(device: str) -> set[str]:
    """The benchmarks of a paired experiment that divides an eager point by a compiled one (compiling the
    gradient): a paired ratio divides two samples of one sweep of one process, so their compiled combinations stay
    in the process of the others."""
    from implementations import experiments

    return {experiments.asv_combination(e, e.points[0], device)[0] for e in experiments.experiments(device)
            if len({p.mode == "compiled" for p in e.points}) > 1}


def tasks(benchmarks: list[dict[str, Any]], selection: dict[str, list[int]], rounds: int | None) -> list[Task]:
    """One task per selected combination. A time benchmark runs `rounds` processes (its own `rounds` without it, and
    always where it needs a process of its own); a track benchmark's value is a count, taken once."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks.common import process_settings

    by_name = {b["name"]: b for b in benchmarks}
    together = paired_across_modes(frameworks.detect_device())
    found = []
    for name, indices in selection.items():
        bench = by_name[name]
        combos = list(itertools.product(*bench["params"])) if bench["params"] else [()]
        fresh = bool(_class_attr(name, "fresh_process", False))
        across = _class_attr(name, "fresh_process_shared_across", None) if fresh else None
        timed = bench["type"] == "time"
        own = int(bench.get("rounds", 1))
        for i in indices:
            values = dict(zip(bench.get("param_names", []), (v.strip("'\"") for v in combos[i]), strict=True))
            compiled = values.get("mode") == "compiled" and name not in together
            # `rounds` buys processes where they are cheap (a round costs two start-ups per framework); a combination
            # that needs a fresh process (a cold compile) keeps its own count.
            found.append(Task(name, i, values.get("framework", "torch"), "time" if timed else "track",
                              (own if fresh or not rounds else rounds) if timed else 1,
                              int(bench.get("repeat") or 1) if timed else 1, fresh, compiled,
                              process_settings(values), _point(name, values, across)))
    return found


def _point(name: str, values: dict[str, str], across: str | None) -> str:
    """The fresh process a combination shares with the others of its point: its name and its values but `across`
    ("" where it shares none); its class and all its values where `across` is METHOD."""
    if across is None:
        return ""
    if across == METHOD:
        return f"{name.rsplit('.', 1)[0]}({', '.join(f'{k}={v}' for k, v in values.items())})"
    if across not in values:
        raise RunError(f"{name}: fresh_process_shared_across names {across!r}, which is not one of its parameters")
    return f"{name}({', '.join(f'{k}={v}' for k, v in values.items() if k != across)})"


def rotated(items: list, r: int) -> list:
    """`items` rotated left by `r` (the round): every round starts somewhere else."""
    if not items:
        return items
    r %= len(items)
    return items[r:] + items[:r]


def round_plans(all_tasks: list[Task], r: int) -> list[tuple[str, list[Task]]]:
    """The processes of round `r`: per framework (their order alternating by round), one process for the tasks
    that share one and are not compiled, one for the compiled ones (their order alternating too), each of them split
    by process-wide settings (Task.settings: a precision set for one combination holds for every other in the
    process), each with its benchmarks and each benchmark's combinations rotated by `r`; then a process per fresh
    task, or per point where fresh tasks share one (Task.point: a point's phase rows read one compile). Compiled
    programs resident in a process slowed JAX's op-by-op transformer step beside them by a fifth (docs/history.md);
    which combinations count as compiled here is Task.compiled (paired_across_modes keeps some with the others)."""
    frameworks = sorted({t.framework for t in all_tasks}, key=lambda f: (f != "torch", f))
    if r % 2:
        frameworks.reverse()
    plans = []
    for framework in frameworks:
        due = [t for t in all_tasks if t.framework == framework and t.rounds > r]
        for compiled in (True, False) if r % 2 else (False, True):
            for settings in sorted({t.settings for t in due if not t.fresh and t.compiled == compiled}):
                shared = [t for t in due if not t.fresh and t.compiled == compiled and t.settings == settings]
                names = rotated(list(dict.fromkeys(t.name for t in shared)), r)
                plans.append((framework, [t for n in names for t in rotated([t for t in shared if t.name == n], r)]))
        fresh: dict[str, list[Task]] = {}
        for t in due:
            if t.fresh:
                fresh.setdefault(t.point or t.id, []).append(t)
        plans += [(framework, batch) for batch in fresh.values()]
    return plans


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
    argv = [sys.executable, "-m", "tape_vs_trace.suite_worker", str(plan_path), str(out)]
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


def _commit() -> tuple[str, int]:
    """HEAD and its author date in ms (asv's `get_date`)."""
    done = subprocess.run(["git", "rev-list", "-n", "1", "--format=%H %at", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    last = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    if not last:
        raise RunError(f"cannot name the commit: git rev-list HEAD failed in {ROOT}")
    commit, stamp = last[0].split()
    return commit, int(stamp) * 1000


def next_round_fits(r: int, elapsed: float, walls: list[float], budget: float | None) -> tuple[bool, float]:
    """Whether round `r` (0-based) starts, `elapsed` seconds into a run whose rounds so far took `walls`, and the
    seconds it is expected to take: the slowest round since the first (whose cold compiles and shared counts
    later rounds do not repeat), the first where only it ran. Without a budget every round starts; with one the
    first MIN_ROUNDS always do (an interval needs processes), the others only while they fit."""
    expected = max(walls[1:] or walls or [0.0])
    if budget is None or r < MIN_ROUNDS:
        return True, expected
    return elapsed + expected <= budget, expected


def run(results_dir: Path, regexes: list[str] | None = None, rounds: int | None = None, machine_name: str | None = None,
        log: Callable[[str], None] = print, timeout: float = WORKER_TIMEOUT_S, budget: float | None = None,
        profile: str | None = None) -> Finished:
    """Measure the selected benchmarks (every one without `regexes`) in worker rounds, saving the asv result file
    of HEAD for this machine after every round; returns its path and the combinations that failed. With `budget`
    (seconds from the start, set-up included), a round after the first MIN_ROUNDS starts only while it is expected
    to end within it; `profile` names the selection in the result file."""
    from tape_vs_trace import machine

    if rounds is not None and rounds < 1:
        raise RunError(f"--rounds must be at least 1, not {rounds}")
    if budget is not None and not budget > 0:
        raise RunError(f"--budget must be a positive number of seconds, not {budget}")
    t0 = time.perf_counter()  # the budget and the wall time count from here: discovery and set-up included
    fields = machine.record()
    if machine_name and machine_name != fields["machine"]:
        fields = {**fields, "machine": machine_name}
    machine.write_asv_machine_file(fields)
    commit, date = _commit()
    benchmarks = discover(log)
    selection = select(benchmarks, regexes)
    if not selection:
        raise RunError(f"no benchmark matches {' '.join(regexes or [])!r}")
    chosen = tasks(benchmarks, selection, rounds)
    results_dir.mkdir(parents=True, exist_ok=True)
    write_benchmarks_json(benchmarks, results_dir)
    folder = results_dir
    (folder / fields["machine"]).mkdir(exist_ok=True)
    (folder / fields["machine"] / "machine.json").write_text(json.dumps({**fields, "version": 1}, indent=4))
    python = sys.executable
    started = datetime.datetime.now(datetime.UTC)
    outcomes: dict[str, Outcome] = {}
    durations: dict[str, float] = {}
    total_rounds = max(t.rounds for t in chosen)
    runs: dict[str, Any] = {"started": started.isoformat(), "profile": profile, "selection": list(regexes or []),
                            "budget_s": budget,
                            "rounds_planned": total_rounds, "rounds": 0, "stopped": None, "processes": 0,
                            "graphs": {}, "wall_s": 0.0, "round_wall_s": [], "per_process": [],
                            "layout": {"id": LAYOUT, "settings": sorted(list(s) for s in {t.settings for t in chosen}),
                                       "compiled_with_eager": sorted(paired_across_modes(frameworks.detect_device())),
                                       "fresh_shared_by_point": sorted({t.name for t in chosen if t.point})}}
    path = folder
    with tempfile.TemporaryDirectory(prefix="tvt-run-") as tmp:
        scratch = Path(tmp)
        caches = _setup_caches(chosen, benchmarks, scratch, outcomes, log)
        for r in range(total_rounds):
            fits, expected = next_round_fits(r, time.perf_counter() - t0, runs["round_wall_s"], budget)
            if not fits:
                runs["stopped"] = (f"round {r + 1} of {total_rounds} not started: about {expected:.0f} s, "
                                   f"{budget - (time.perf_counter() - t0):.0f} s of the {budget:.0f} s budget left")
                log(f"[run] {runs['stopped']}")
                results = to_results(benchmarks, outcomes, chosen, fields, python, commit, date, started, durations)
                path = save(results, folder / fields["machine"], runs, chosen)  # the file records why the run stopped
                break
            round_started = time.perf_counter()
            plans = round_plans(chosen, r)
            log(f"[run] round {r + 1}/{total_rounds}: {len(plans)} processes, "
                f"{sum(len(b) for _, b in plans)} combinations, {time.perf_counter() - t0:.0f} s so far")
            for i, (framework, batch) in enumerate(plans):
                batch = [t for t in batch if not (outcomes.get(t.id) and outcomes[t.id].error)]
                if not batch:
                    continue
                started_batch, ticks = time.perf_counter(), host_load.cpu_ticks()
                found = measure_round(batch, framework, caches, scratch, f"r{r}-{i}", log, timeout)
                host = host_load.shares(ticks, host_load.cpu_ticks())
                runs["processes"] += 1
                runs["graphs"].update(found.pop("graphs", {}))
                seconds = found.pop("seconds", {})
                # asv's "duration" of a benchmark: its combinations' set-up and samples, the start-up shared out.
                inside = sum(sum(v.values()) for v in seconds.values())
                startup = max(0.0, time.perf_counter() - started_batch - inside)
                for t in batch:
                    spent = sum(seconds.get(t.id, {}).values()) + startup / len(batch)
                    durations[t.name] = durations.get(t.name, 0.0) + spent
                    record(outcomes.setdefault(t.id, Outcome()), found.get(t.id))
                runs["per_process"].append({"round": r + 1, "framework": framework, "compiled": batch[0].compiled,
                                            "combinations": len(batch),
                                            "wall_s": round(time.perf_counter() - started_batch, 2),
                                            "outside_combinations_s": round(startup, 2), "host": host})
            runs["rounds"] = r + 1
            runs["wall_s"] = round(time.perf_counter() - t0, 1)
            # the first round's wall from the start: it pays discovery and the shared counts, later rounds do not
            runs["round_wall_s"].append(round(time.perf_counter() - (t0 if r == 0 else round_started), 1))
            results = to_results(benchmarks, outcomes, chosen, fields, python, commit, date, started, durations)
            path = save(results, folder / fields["machine"], runs, chosen)
            log(f"[run] round {r + 1}/{total_rounds} saved to {path}")
    failed = sorted(t.id for t in chosen if outcomes.get(t.id) and outcomes[t.id].error)
    if failed:
        log(f"[run] {len(failed)} combinations failed: {', '.join(failed[:10])}{' ...' if len(failed) > 10 else ''}")
        log(f"[run] the first failure: {outcomes[failed[0]].error.splitlines()[-1]}")
    log(f"[run] {runs['processes']} worker processes, {runs['wall_s']:.0f} s")
    return Finished(path, failed)


@dataclass(frozen=True)
class Finished:
    path: Path
    failed: list[str]


def _setup_caches(chosen: list[Task], benchmarks: list[dict[str, Any]], scratch: Path, outcomes: dict[str, Outcome],
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


