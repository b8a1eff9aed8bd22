"""The asv result file of `tape-vs-trace run`: each combination's outcome over the rounds, written through asv's
own API (asv.results.Results) with the runner's record, then scrubbed and merged by tape_vs_trace.results.run_record."""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tape_vs_trace.running.worker import key

RUNNER = "worker"


@dataclass
class Task:
    name: str  # asv's benchmark name, module.Class.method
    index: int  # asv's parameter index
    framework: str
    kind: str  # 'time' or 'track'
    rounds: int
    repeat: int
    fresh: bool  # a process of its own
    compiled: bool = False  # in the round's process of compiled combinations (mode 'compiled'; see paired_across_modes)
    settings: tuple[str, bool] = ("highest", False)  # process-wide: benchmarks.common.process_settings
    point: str = ""  # a fresh task's process, shared by the tasks of one point ("": its own; see round_plans)

    @property
    def id(self) -> str:
        return key(self.name, self.index)

    def plan(self) -> dict[str, Any]:
        return {"name": self.name, "index": self.index, "repeat": self.repeat, "kind": self.kind}


@dataclass
class Outcome:
    """What the rounds gave one combination: samples per round, a value, a skip or an error."""

    samples: list[list[float]] = field(default_factory=list)
    number: int | None = None
    value: Any = None
    skip: str | None = None
    error: str | None = None


def record(outcome: Outcome, found: dict[str, Any] | None) -> None:
    """One round's finding of a combination added to its outcome."""
    if found is None:
        outcome.error = outcome.error or "not reached by its worker"
    elif "error" in found:
        outcome.error = found["error"]
    elif "skip" in found:
        outcome.skip = found["skip"]
    elif "samples" in found:
        outcome.samples.append(list(found["samples"]))
        outcome.number = found["number"]
    else:
        outcome.value = found["value"]


def env_name(python: str) -> str:
    """The name `asv run -E existing:PYTHON` gives the environment (asv.environment.get_env_name)."""
    from asv.environment import get_env_name

    return get_env_name("existing", python.replace(os.sep, "_"), {}, {})


def to_results(benchmarks: list[dict[str, Any]], outcomes: dict[str, Outcome], chosen: list[Task],
               machine_params: dict[str, str], python: str, commit: str, date: int, started: datetime.datetime,
               durations: dict[str, float]) -> Any:
    """asv Results of every benchmark with a chosen combination: samples of every round, a track's value, NaN for
    a skip (asv's n/a), None for a failure; combinations not chosen keep NaN, as asv writes them."""
    from asv.results import Results
    from asv.runner import BenchmarkResult

    results = Results({**machine_params, "python": python}, {}, commit, date, python, env_name(python), {})
    by_name = {b["name"]: b for b in benchmarks}
    for name in dict.fromkeys(t.name for t in chosen):
        bench = by_name[name]
        count = len(list(itertools.product(*bench["params"]))) if bench["params"] else 1
        value: list[Any] = [float("nan")] * count
        samples: list[Any] = [None] * count
        number: list[Any] = [None] * count
        errors = []
        for t in (t for t in chosen if t.name == name):
            o = outcomes.get(t.id)
            if o is None:
                continue
            if o.error:
                value[t.index] = None
                errors.append(f"For parameters index {t.index}: {o.error}")
            elif o.skip:
                continue
            elif t.kind == "time" and o.samples:
                value[t.index] = True
                samples[t.index] = [s for per_round in o.samples for s in per_round]
                number[t.index] = o.number
            elif t.kind == "track":
                value[t.index] = o.value
        result = BenchmarkResult(result=value, samples=samples, number=number, errcode=1 if errors else 0,
                                 stderr="\n".join(errors), profile=None)
        results.add_result(bench, result, started_at=started, duration=durations.get(name),
                           record_samples=True)
    return results


def save(results: Any, folder: Path, runs: dict[str, Any], chosen: list[Task],
         failures: dict[str, list[dict[str, str]]] | None = None) -> Path:
    """Write the asv result file (asv's save, a fresh file that scrub-results names and merges), with this
    runner's record, its choice of combinations (NaN is asv's n/a for a skip and for one not chosen alike: the
    merge keeps an earlier run's value of one not chosen) and its failures (combination id -> the run and its
    error; the merge keeps every run's), then scrub: returns the scrubbed file."""
    from asv.results import get_filename

    from tape_vs_trace.results import asv_files, run_record

    results.save(str(folder.parent))
    path = folder.parent / get_filename(folder.name, results.commit_hash, results.env_name)
    choice = {name: sorted(t.index for t in chosen if t.name == name) for name in dict.fromkeys(t.name for t in chosen)}
    asv_files.write(path, record={"runner": RUNNER, "worker_runs": runs, "chosen": choice,
                                     "failures": failures or {}})
    scrubbed = run_record.scrub_results(folder.parent)
    return next((p for p in scrubbed if p.parent == path.parent), path)


def held_rounds(chosen: list[Task], path: Path, log: Callable[[str], None],
                benchmarks: list[dict[str, Any]]) -> tuple[list[Task], dict[str, Outcome]]:
    """The tasks with the processes `path` (this commit's result file) already holds of each time combination taken
    off its rounds, and those held samples as their outcomes' first rounds: a contact that was cut keeps the rounds
    it completed and the next one adds the missing rounds only. A task is paired with the file's combination of the
    same parameter values (its index is one in the discovered `benchmarks`' grid, the file's may be another: a merge
    keeps a value an earlier grid had). A count it holds, and a time with every round, drop out; one whose samples
    do not split into processes of its repeat runs all its rounds again. A file that cannot be read: ValueError, in
    one line."""
    from tape_vs_trace.results import asv_files

    if not path.exists():
        return chosen, {}
    try:
        file = asv_files.read(path)
    except asv_files.ResultFileError as exc:
        raise ValueError(f"cannot extend: {exc}") from None
    combos = {(c.benchmark, c.values): c for name in file.benchmarks for c in file.combinations(name)}
    grids = {b["name"]: list(itertools.product(*b["params"])) if b["params"] else [()] for b in benchmarks}
    kept, held = [], {}
    for t in chosen:
        c = combos.get((t.name, grids[t.name][t.index]))
        if c is None or not c.measured:
            kept.append(t)
        elif t.kind != "time":
            continue
        elif isinstance(c.samples, list) and c.samples and len(c.samples) % t.repeat == 0:
            rounds = [list(c.samples[i:i + t.repeat]) for i in range(0, len(c.samples), t.repeat)]
            if len(rounds) < t.rounds:
                held[t.id] = Outcome(samples=rounds)
                kept.append(dataclasses.replace(t, rounds=t.rounds - len(rounds)))
        else:
            log(f"[run] {t.id}: {len(c.samples or [])} held samples are no processes of {t.repeat}: all rounds again")
            kept.append(t)
    log(f"[run] extending {path.name}: {len(chosen) - len(kept)} combinations complete, {len(held)} of "
        f"{len(kept)} to run adding the rounds they lack")
    return kept, held

