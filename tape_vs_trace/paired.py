"""`tape-vs-trace paired`: comparisons inside one framework, measured call by call in the same process, repeated in
several processes; and the rematerialization trade-off curve, every policy and memory budget of both frameworks.

asv gives each parameter combination its own process, so two variants of one framework (remat against plain,
inference_mode against no_grad, hooks against none, custom against autodiff backward) are compared across
processes, where the same step differs by tens of percent on a shared machine. Here one process builds every point
of an experiment and alternates them call by call (the order rotated every pass); noise that hits both points of a
pass cancels in their ratio. Each framework runs in its own processes (`python -m tape_vs_trace.paired_worker`),
`rounds` of them, interleaved with the other framework's; the value of a point is the geometric mean of the
per-process medians, and its 95 % interval, like that of the paired ratio, comes from the spread between processes
(tape_vs_trace.report.stats).

The remat experiments also take each point's costs, in the first round: bytes kept for the backward, matmul flops
(recomputation included) and peak bytes where the framework's memory method can see the step (see `costs`).

`make bench` takes the first round before the asv suite and the others after it (`--stage first`, then
`--stage rest`, the first round kept in a folder between them): the processes of one point then lie minutes apart,
like asv's interleaved rounds, and the interval of an absolute time covers the host's drift over the run (rounds
taken together at the end of a run gave intervals that a rerun missed: docs/history.md).

Output: OUT/<machine>-<commit8>.csv, one row per point (FIELDS), read by the report.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from implementations import frameworks
from tape_vs_trace.experiments import Experiment, PairedError, select

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("experiment", "group", "framework", "workload", "size", "mode", "formulation", "point", "variant",
          "budget", "baseline", "time_s", "time_ci_low", "time_ci_high", "ratio", "ratio_ci_low", "ratio_ci_high",
          "processes", "passes", "process_medians", "saved_bytes", "flops", "peak_bytes", "cost_method",
          "peak_method", "device", "commit", "machine")
ROUNDS = 3
STAGES = ("all", "first", "rest")  # every round now; the first round only, kept in --raw; the others, then the CSV
FIRST_ROUND = "paired-first-round.json"  # the first round's raw measurements and what they were taken of, in --raw

# --- the runner: rounds of worker processes, then the statistics --------------------------------------------------

def _run_worker(framework: str, names: list[str], with_costs: bool, scratch: Path, index: int) -> dict[str, Any]:
    out = scratch / f"{framework}-{index}.json"
    argv = [sys.executable, "-m", "tape_vs_trace.paired_worker", framework, str(out), *names]
    if with_costs:
        argv.insert(5, "--costs")
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                          env={frameworks.COMPILE_CACHE_ENV: str(scratch / "compile-cache"), **os.environ})
    if done.returncode != 0 or not out.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PairedError(f"{framework} worker failed (status {done.returncode}): {last}")
    return json.loads(out.read_text())


def measure(chosen: list[Experiment], rounds: int = ROUNDS, log: Callable[[str], None] = print,
            scratch: Path | None = None, start: int = 0, stop: int | None = None) -> dict:
    """Raw measurements of rounds `start` to `stop` - 1 (to the last of `rounds` without it), one process per
    framework and round, the frameworks alternating (costs in round 1). `scratch` holds the workers' files and,
    without TVT_COMPILE_CACHE, both frameworks' compilation caches (a temporary folder without it)."""
    if scratch is None:
        with tempfile.TemporaryDirectory() as tmp:
            return measure(chosen, rounds, log, Path(tmp), start, stop)
    by_framework: dict[str, list[str]] = {}
    for e in chosen:
        by_framework.setdefault(e.framework, []).append(e.name)
    runs: dict[str, list[dict]] = {f: [] for f in by_framework}
    started = time.perf_counter()
    for r in range(start, rounds if stop is None else stop):
        order = list(by_framework) if r % 2 == 0 else list(reversed(by_framework))
        for framework in order:
            log(f"[paired] round {r + 1}/{rounds}: {framework} ({len(by_framework[framework])} experiments), "
                f"{time.perf_counter() - started:.0f} s so far")
            runs[framework].append(_run_worker(framework, by_framework[framework], r == 0, scratch, r))
    return runs


def _what(chosen: list[Experiment], device: str, commit: str, machine_name: str, rounds: int) -> dict[str, Any]:
    """What a first round kept in --raw was taken of: the rest must be taken of the same."""
    return {"commit": commit, "device": device, "machine": machine_name, "rounds": rounds,
            "experiments": [e.name for e in chosen]}


def keep_first(raw: Path, what: dict[str, Any], runs: dict) -> Path:
    """Write the first round to RAW/FIRST_ROUND (a temporary file first); returns its path."""
    path = raw / FIRST_ROUND
    tmp = path.with_suffix(".json.tmp")
    try:
        tmp.write_text(json.dumps({"what": what, "runs": runs}))
        tmp.replace(path)
    except OSError as exc:
        raise PairedError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def load_first(raw: Path, what: dict[str, Any], names: list[str]) -> dict:
    """The first round kept in RAW by `--stage first`, if it was taken of `what` (commit, device, machine, rounds,
    experiments), with one process of each framework in `names`; anything else is an error naming the difference."""
    path = raw / FIRST_ROUND
    again = "run `tape-vs-trace paired --stage first` again"
    try:
        kept = json.loads(path.read_text())
        found, runs = kept["what"], kept["runs"]
    except FileNotFoundError:
        raise PairedError(f"no first round in {raw}: run `tape-vs-trace paired --stage first` before --stage rest") \
            from None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise PairedError(f"cannot read the first round {path} ({type(exc).__name__}: {exc}); {again}") from None
    for key, value in what.items():
        if found.get(key) != value:
            raise PairedError(f"the first round in {raw} was taken with {key} {_shown(found.get(key))}, this run "
                              f"has {_shown(value)}; {again}")
    if not isinstance(runs, dict) or sorted(runs) != sorted(names) or \
            any(not isinstance(v, list) or len(v) != 1 for v in runs.values()):
        raise PairedError(f"the first round {path} does not hold one process per framework; {again}")
    return runs


def _shown(value: Any) -> str:
    return f"{len(value)} experiments" if isinstance(value, list) else repr(value)


def rows(chosen: list[Experiment], runs: dict, device: str, commit: str, machine_name: str) -> list[dict]:
    """One row per point: time and paired ratio to the experiment's baseline, each with its between-process 95 %
    interval, and the costs of remat points."""
    import numpy as np

    from tape_vs_trace.report import stats

    table = []
    for e in chosen:
        processes = [run[e.name] for run in runs[e.framework]]
        base = [np.asarray(p["times"][0]) for p in processes]
        first_costs = processes[0].get("costs")
        for i, point in enumerate(e.points):
            medians = [float(np.median(p["times"][i])) for p in processes]
            # The paired ratio: per pass, this point's time over the baseline's in the same pass; per process, the
            # median of those log ratios; between processes, Student's t on them (stats.median_interval).
            per_process = [float(np.exp(np.median(np.log(np.asarray(p["times"][i]) / b))))
                           for p, b in zip(processes, base)]
            low, high = stats.median_interval(medians)
            rlow, rhigh = stats.median_interval(per_process)
            row = dict(experiment=e.name, group=e.group, framework=e.framework, workload=e.workload, size=e.size,
                       mode=point.mode if e.group == "remat" else e.mode, formulation=e.formulation,
                       point=point.label, variant=point.variant, budget="" if point.budget is None else point.budget,
                       baseline=e.baseline.label, time_s=float(np.exp(np.mean(np.log(medians)))), time_ci_low=low,
                       time_ci_high=high, ratio=float(np.exp(np.mean(np.log(per_process)))), ratio_ci_low=rlow,
                       ratio_ci_high=rhigh, processes=len(processes), passes=min(len(p["times"][i]) for p in processes),
                       process_medians=";".join(f"{m:.6g}" for m in medians), saved_bytes="", flops="",
                       peak_bytes="", cost_method="", peak_method="", device=device, commit=commit,
                       machine=machine_name)
            if first_costs:
                row.update({k: ("" if v is None else v) for k, v in first_costs[i].items()})
            table.append(row)
    return table


def write(table: list[dict], out: Path, machine_name: str, commit: str) -> Path:
    """OUT/<machine>-<commit8>.csv, written to a temporary file first so a failure leaves any old file whole."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PairedError(f"cannot create {out}: {exc.strerror or exc}") from None
    path = out / f"{machine_name}-{commit[:8]}.csv"
    tmp = path.with_suffix(".csv.tmp")
    try:
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(table)
        tmp.replace(path)
    except OSError as exc:
        if tmp.is_file():  # a half-written file of ours; anything else under that name is not ours to delete
            tmp.unlink()
        raise PairedError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def run(out: Path, rounds: int = ROUNDS, only: str | None = None, stage: str = "all",
        raw: Path | None = None) -> Path:
    """Measure the experiments (those whose name contains `only`) and write the CSV; returns its path.

    stage 'all' takes every round now. 'first' takes round 1 and keeps it in `raw` (returns that file's path);
    'rest' takes the other rounds, adds round 1 from `raw` (same commit, device, machine, rounds and experiments) and
    writes the CSV."""
    from tape_vs_trace import machine

    if rounds < 2:
        raise PairedError(f"--rounds must be at least 2 (an interval needs two processes), not {rounds}")
    if stage not in STAGES:
        raise PairedError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    if stage != "all" and raw is None:
        raise PairedError(f"--stage {stage} needs --raw, the folder that keeps the first round")
    device = frameworks.detect_device()
    chosen = select(device, only)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if not commit:
        raise PairedError(f"cannot name the commit: git rev-parse HEAD failed in {ROOT}")
    machine_name = machine.record()["machine"]
    what = _what(chosen, device, commit, machine_name, rounds)

    def log(line: str) -> None:
        print(line, flush=True)

    if stage == "all":
        runs = measure(chosen, rounds, log)
    else:
        assert raw is not None
        if stage == "rest":
            runs = load_first(raw, what, sorted({e.framework for e in chosen}))
        try:
            raw.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PairedError(f"cannot create {raw}: {exc.strerror or exc}") from None
        scratch = raw / "scratch"  # the workers' files and JAX's compilation cache: ours to clear
        if stage == "first":
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            return keep_first(raw, what, measure(chosen, rounds, log, scratch, stop=1))
        scratch.mkdir(exist_ok=True)
        for framework, more in measure(chosen, rounds, log, scratch, start=1).items():
            runs[framework] = runs[framework] + more
    return write(rows(chosen, runs, device, commit, machine_name), out, machine_name, commit)
