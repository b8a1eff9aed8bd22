"""`tape-vs-trace run`: the asv suite measured by worker processes, written as asv results.

`asv run` starts one process per benchmark, parameter combination and round, and writes its result file when the
run ends. A process's start-up (imports; on a GPU also the CUDA context, the XLA client and the compiles) costs
several times the measurement it makes. This runner measures the same benchmarks (asv's classes, parameters,
setup and timed bodies, through asv_runner: tape_vs_trace.running.worker) in one process per framework, round,
kind of program (the compiled combinations apart from the others) and process-wide settings (matmul precision,
float64), each process taking every combination's `repeat` samples, interleaved combination by combination, the
order rotated every round and every pass. So the statistics between processes stay what they are (the report
splits each combination's samples into its processes), and a round costs a few start-ups (four on a CPU grid of one
precision) instead of one per combination. Under a budget, a shared process that costs little beside the round's
slowest is measured again in the same round (running.plan.copies): on a noisy host each process draws its own speed,
so a cheap process buys its rows more processes for little time. Where the next round would not fit whole, the
processes of it that still fit run (running.plan.partial_round), and the run ends with that round.

What stays in a process of its own, as under asv: each combination whose benchmark sets `fresh_process` (a cold
compile time; on CUDA, an allocator peak, whose high-water mark would carry earlier work), and asv's `setup_cache`.
A benchmark that also sets `fresh_process_shared_across` (a parameter: CompilePhases' `phase`) gets one fresh
process per point instead, the combinations that differ only in that parameter together: they read one compile.
Set to "method" (METHOD), the class's fresh methods share one process per combination: a peak and the workspace
inside it read one probe call.

Results go through asv's own API (tape_vs_trace.running.outcomes: asv.results.Results, the benchmark descriptions of
a `benchmarks.json` discovered on this device, written to the results folder as `asv run` does), after every
round: a run cut short loses the round in progress, not the run. Every benchmark's runner is recorded in the result
file ("tape_vs_trace"/"runner_of"), and the combinations the run chose ("chosen"). `asv run` stays the reference
path, with full isolation.
"""

from __future__ import annotations

import datetime
import math
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from implementations import frameworks
from tape_vs_trace.results import host_load
from tape_vs_trace.results.folder import ResultsFolder
from tape_vs_trace.results.intervals import WIDTH_FLOOR_S
from tape_vs_trace.running.outcomes import Outcome, Task, held_rounds, record, save, to_results
from tape_vs_trace.running.plan import (
    COPY_SHARE,
    LAYOUT,
    MAX_COPIES,
    SPREAD_PROCESSES,
    RunError,
    affordable,
    discover,
    group,
    next_round_fits,
    paired_across_modes,
    partial_round,
    round_plans,
    select,
    spread_copies,
    tasks,
)
from tape_vs_trace.running.processes import WORKER_TIMEOUT_S, measure_round, setup_caches
from tape_vs_trace.running.worker import ROOT


def _commit() -> tuple[str, int]:
    """HEAD and its author date in ms (asv's `get_date`)."""
    done = subprocess.run(["git", "rev-list", "-n", "1", "--format=%H %at", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    last = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    if not last:
        raise RunError(f"cannot name the commit: git rev-list HEAD failed in {ROOT}")
    commit, stamp = last[0].split()
    return commit, int(stamp) * 1000


@dataclass
class _Run:
    """What one run gathers as it goes: every combination's outcome, each benchmark's duration, the runner's record
    ("worker_runs"), and what its result file is written from."""

    benchmarks: list[dict[str, Any]]
    chosen: list[Task]
    fields: dict[str, Any]
    folder: Path
    commit: str
    date: int
    runs: dict[str, Any]
    started: datetime.datetime
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)

    def save(self) -> Path:
        results = to_results(self.benchmarks, self.outcomes, self.chosen, self.fields, sys.executable, self.commit,
                             self.date, self.started, self.durations)
        failed = [t for t in self.chosen if self.outcomes.get(t.id) and self.outcomes[t.id].error]
        run = self.started.isoformat()
        failures = {t.id: [{"run": run, "error": self.outcomes[t.id].error.strip().splitlines()[-1]}] for t in failed}
        return save(results, self.folder / self.fields["machine"], self.runs, self.chosen, failures)

    def add_process(self, r: int, framework: str, batch: list[Task], found: dict[str, Any], wall: float,
                    host: dict[str, float]) -> None:
        """One worker process's results and its line of the record."""
        self.runs["processes"] += 1
        self.runs["graphs"].update(found.pop("graphs", {}))
        seconds = found.pop("seconds", {})
        # asv's "duration" of a benchmark: its combinations' set-up and samples, the start-up shared out.
        inside = sum(sum(v.values()) for v in seconds.values())
        startup = max(0.0, wall - inside)
        for t in batch:
            spent = sum(seconds.get(t.id, {}).values()) + startup / len(batch)
            self.durations[t.name] = self.durations.get(t.name, 0.0) + spent
            record(self.outcomes.setdefault(t.id, Outcome()), found.get(t.id))
        self.runs["per_process"].append({"round": r + 1, "framework": framework, "compiled": batch[0].compiled,
                                         "group": group(framework, batch), "combinations": len(batch),
                                         "wall_s": round(wall, 2), "outside_combinations_s": round(startup, 2),
                                         "host": host})

    def repeats(self) -> dict[str, int]:
        """spread_copies() of each shared group, from the cheapest wall of its processes so far (none before the
        first round) and the spread of its rows; none in a run without a budget, whose rounds all run (the full
        profile, a GPU chunk sized by its costs): there a copy would only lengthen the run."""
        if self.runs["budget_s"] is None:
            return {}
        return spread_copies(self.cheapest_walls(), self.spreads())

    def cheapest_walls(self) -> dict[str, float]:
        """The wall of each shared group's cheapest process so far: what a copy of it is expected to take."""
        cheapest: dict[str, float] = {}
        for p in self.runs["per_process"]:
            if p["group"]:
                cheapest[p["group"]] = min(cheapest.get(p["group"], p["wall_s"]), p["wall_s"])
        return cheapest

    def spreads(self) -> dict[str, list[tuple[float, int]]]:
        """Per shared group, for each timed row whose median across processes is 1 ms or more: the standard
        deviation of the logarithms of its per-process medians (NaN for one process) and its processes so far."""
        found: dict[str, list[tuple[float, int]]] = {}
        for t in self.chosen:
            outcome = self.outcomes.get(t.id)
            if t.fresh or t.kind != "time" or outcome is None or outcome.error or not outcome.samples:
                continue
            logs = np.log([np.median(s) for s in outcome.samples])
            if np.exp(np.median(logs)) >= WIDTH_FLOOR_S:
                sd = float(np.std(logs, ddof=1)) if len(logs) > 1 else math.nan
                found.setdefault(group(t.framework, [t]), []).append((sd, len(logs)))
        return found

    def group_walls(self) -> dict[str, float]:
        """The slowest wall of each shared group's processes since the first round (whose first process of a group
        also takes the counts): what partial_round expects a further process of the group to take."""
        slowest: dict[str, float] = {}
        for p in self.runs["per_process"]:
            if p["group"] and p["round"] > 1:
                slowest[p["group"]] = max(slowest.get(p["group"], 0.0), p["wall_s"])
        return slowest

    def failed(self) -> list[str]:
        return sorted(t.id for t in self.chosen if self.outcomes.get(t.id) and self.outcomes[t.id].error)


def _record(profile: str | None, selection: list[str], budget: float | None, chosen: list[Task],
            started: datetime.datetime) -> dict[str, Any]:
    """The runner's record of a run before its first round ("worker_runs" in the result file)."""
    return {"started": started.isoformat(), "profile": profile, "selection": selection, "budget_s": budget,
            "rounds_planned": max(t.rounds for t in chosen), "rounds": 0, "stopped": None, "processes": 0,
            "graphs": {}, "wall_s": 0.0, "round_wall_s": [], "per_process": [], "copies": [],
            "layout": {"id": LAYOUT, "copies": f"under a budget, a shared group runs again in its round while its "
                                             f"copies fit in {COPY_SHARE:g} of the slowest group's cheapest wall, "
                                             f"at most {MAX_COPIES} in all: each further process to the group it "
                                             f"narrows most per second (sum of its rows' squared half-widths, times "
                                             f"of 1 ms or more) once every such row has {SPREAD_PROCESSES} "
                                             f"processes, by cost alone before; a round's copies only while the "
                                             f"round with them is expected to end within the budget",
                       "partial": "under a budget, of the round that would not fit whole the processes that fit run, "
                                  "each expected at its group's slowest wall since the first round; the run ends "
                                  "with it",
                       "settings": sorted(list(s) for s in {t.settings for t in chosen}),
                       "compiled_with_eager": sorted(paired_across_modes(frameworks.detect_device())),
                       "fresh_shared_by_point": sorted({t.name for t in chosen if t.point})}}


def _start(results_dir: Path, regexes: list[str] | None, rounds: int | None, machine_name: str | None,
           log: Callable[[str], None], budget: float | None, profile: str | None, extend: bool = False,
           rows: tuple[Any, ...] = ()) -> _Run:
    """The machine recorded, the benchmarks discovered and chosen, the results folder ready."""
    from tape_vs_trace.results import machine

    fields = machine.record()
    if machine_name and machine_name != fields["machine"]:
        fields = {**fields, "machine": machine_name}
    machine.write_asv_machine_file(fields)
    commit, date = _commit()
    benchmarks = discover(log)
    selection = select(benchmarks, regexes, rows)
    asked = [str(r) for r in rows] or list(regexes or [])
    if not selection:
        raise RunError(f"no benchmark matches {' '.join(asked)!r}")
    chosen = tasks(benchmarks, selection, rounds)
    held: dict[str, Outcome] = {}
    if extend:
        try:
            chosen, held = held_rounds(chosen, ResultsFolder(results_dir).result_file(fields["machine"], commit), log,
                                       benchmarks)
        except ValueError as exc:
            raise RunError(str(exc)) from None
        if not chosen:
            raise RunError("nothing to run: this commit's result file holds every round of the selection")
    folder = ResultsFolder(results_dir)
    folder.write_benchmarks({b["name"]: b for b in benchmarks})  # as `asv run` writes it, from this discovery
    folder.write_machine_record(fields["machine"], {**fields, "version": 1})
    started = datetime.datetime.now(datetime.UTC)
    return _Run(benchmarks, chosen, fields, results_dir, commit, date,
                _record(profile, asked, budget, chosen, started), started, outcomes=held)


def _round(state: _Run, r: int, caches: dict[str, Path], scratch: Path, log: Callable[[str], None],
           timeout: float, t0: float, plans: list[tuple[str, list[Task]]] | None = None) -> None:
    """Round `r`: each of its processes (round_plans, or `plans`: part of the round) measured, its wall time
    recorded, and the groups it ran more than once."""
    round_started = time.perf_counter()
    plans = round_plans(state.chosen, r, state.repeats()) if plans is None else plans
    runs_of = Counter(group(framework, batch) for framework, batch in plans)
    state.runs["copies"].append({g: n for g, n in sorted(runs_of.items()) if g and n > 1})
    log(f"[run] round {r + 1}/{state.runs['rounds_planned']}: {len(plans)} processes, "
        f"{sum(len(b) for _, b in plans)} combinations, {time.perf_counter() - t0:.0f} s so far")
    for i, (framework, batch) in enumerate(plans):
        batch = [t for t in batch if not (state.outcomes.get(t.id) and state.outcomes[t.id].error)]
        if not batch:
            continue
        started_batch, ticks = time.perf_counter(), host_load.cpu_ticks()
        found = measure_round(batch, framework, caches, scratch, f"r{r}-{i}", log, timeout)
        host = host_load.shares(ticks, host_load.cpu_ticks())
        state.add_process(r, framework, batch, found, time.perf_counter() - started_batch, host)
    state.runs["rounds"] = r + 1
    state.runs["wall_s"] = round(time.perf_counter() - t0, 1)
    # the first round's wall from the start: it pays discovery and the shared counts, later rounds do not
    state.runs["round_wall_s"].append(round(time.perf_counter() - (t0 if r == 0 else round_started), 1))


def run(results_dir: Path, regexes: list[str] | None = None, rounds: int | None = None, machine_name: str | None = None,
        log: Callable[[str], None] = print, timeout: float = WORKER_TIMEOUT_S, budget: float | None = None,
        profile: str | None = None, extend: bool = False, rows: tuple[Any, ...] = ()) -> Finished:
    """Measure the selected benchmarks (those `rows` name, by what they are, or those asv's -b `regexes` match;
    every one without either) in worker rounds, saving the asv result file
    of HEAD for this machine after every round; returns its path and the combinations that failed. With `budget`
    (seconds from the start, set-up included), a round after the first MIN_ROUNDS starts only while it is expected
    to end within it; `profile` names the selection in the result file. `extend`: add to what this commit's result
    file holds only the rounds each combination lacks (running.outcomes.held_rounds)."""
    if rounds is not None and rounds < 1:
        raise RunError(f"--rounds must be at least 1, not {rounds}")
    if budget is not None and not budget > 0:
        raise RunError(f"--budget must be a positive number of seconds, not {budget}")
    t0 = time.perf_counter()  # the budget and the wall time count from here: discovery and set-up included
    state = _start(results_dir, regexes, rounds, machine_name, log, budget, profile, extend, rows)
    path = results_dir
    with tempfile.TemporaryDirectory(prefix="tvt-run-") as tmp:
        scratch = Path(tmp)
        caches = setup_caches(state.chosen, state.benchmarks, scratch, state.outcomes, log)
        for r in range(state.runs["rounds_planned"]):
            fits, expected = next_round_fits(r, time.perf_counter() - t0, state.runs["round_wall_s"], budget)
            if not fits:
                left = budget - (time.perf_counter() - t0)
                whole = round_plans(state.chosen, r, state.repeats())
                part = partial_round(whole, state.group_walls(), left)
                how = f"run in part, {len(part)} of {len(whole)} processes" if part else "not started"
                rest = (f"{left:.0f} s of the {budget:.0f} s budget left" if left >= 0 else
                        f"the {budget:.0f} s budget overrun by {-left:.0f} s")
                state.runs["stopped"] = (f"round {r + 1} of {state.runs['rounds_planned']} {how}: about "
                                         f"{expected:.0f} s, {rest}")
                log(f"[run] {state.runs['stopped']}")
                if part:
                    _round(state, r, caches, scratch, log, timeout, t0, part)
                path = state.save()  # the file records why the run stopped
                break
            repeats = affordable(state.repeats(), state.cheapest_walls(), time.perf_counter() - t0, expected, budget)
            _round(state, r, caches, scratch, log, timeout, t0, round_plans(state.chosen, r, repeats))
            path = state.save()
            log(f"[run] round {r + 1}/{state.runs['rounds_planned']} saved to {path}")
    failed = state.failed()
    if failed:
        log(f"[run] {len(failed)} combinations failed: {', '.join(failed[:10])}{' ...' if len(failed) > 10 else ''}")
        log(f"[run] the first failure: {state.outcomes[failed[0]].error.splitlines()[-1]}")
    log(f"[run] {state.runs['processes']} worker processes, {state.runs['wall_s']:.0f} s")
    return Finished(path, failed)


@dataclass(frozen=True)
class Finished:
    path: Path
    failed: list[str]
