"""`tape-vs-trace paired`: comparisons inside one framework, paired pass by pass in the same process, repeated in
several processes; and the rematerialization trade-off curve, every policy and memory budget of both frameworks.

Two variants of one framework (remat against plain, inference_mode against no_grad, hooks against none, custom
against autodiff backward) compared across processes differ by tens of percent on a shared machine from the noise
alone. Every point of an experiment is an asv combination (experiments.asv_combination), and tape-vs-trace run's
worker sets up every combination of a benchmark in one process and takes one sample of each in turn, pass by pass
(the order rotated every pass and round): noise that hits both points of a pass cancels in their ratio. This module
reads those samples from the asv result file, splits them into their processes (asv's `repeat` per process), and
gives each point its time (the geometric mean of the per-process medians) and its paired ratio to the experiment's
baseline (per process the median of the per-pass log ratios), each with its 95 % interval from the spread between
processes (tape_vs_trace.results.intervals). The rounds of the run lie minutes apart, so an absolute time's interval
covers the host's drift over the run.

The remat experiments also take each point's costs, in a process per framework (tape_vs_trace.side.paired_worker):
bytes kept for the backward, matmul flops (recomputation included) and peak bytes where the framework's memory
method can see the step.

Output: OUT/<machine>-<commit8>.csv, one row per point (FIELDS), read by the report.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from implementations import frameworks
from implementations.experiments import Experiment, asv_combination, experiments
from tape_vs_trace.results import asv_files
from tape_vs_trace.results.folder import ResultsFolder
from tape_vs_trace.results.schema import PAIRED_FIELDS as FIELDS

ROOT = Path(__file__).resolve().parents[2]

# --- the measurements: tape-vs-trace run's samples, and the remat points' costs -----------------------------------

class PairedError(Exception):
    """Bad input or a failed worker: printed as one line by the CLI."""


def select(device: str, only: str | None = None) -> list[Experiment]:
    """The experiments whose name contains `only` (all without it); an `only` that matches none is an error."""
    found = [e for e in experiments(device) if only is None or only in e.name]
    if not found:
        names = "; ".join(e.name for e in experiments(device))
        raise PairedError(f"no experiment matches {only!r}; experiments: {names}")
    return found


def _run_costs(framework: str, names: list[str], scratch: Path) -> dict[str, Any]:
    """The remat points' costs of `framework`'s experiments `names`, in a process of its own (paired_worker)."""
    out = scratch / f"{framework}-costs.json"
    argv = [sys.executable, "-m", "tape_vs_trace.side.paired_worker", framework, str(out), *names]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                          env={frameworks.COMPILE_CACHE_ENV: str(scratch / "compile-cache"), **os.environ})
    if done.returncode != 0 or not out.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PairedError(f"{framework} cost worker failed (status {done.returncode}): {last}")
    return json.loads(out.read_text())


def result_file(results: Path, machine_name: str, commit: str) -> tuple[asv_files.ResultFile, dict]:
    """The asv result file of `commit` on `machine_name` (scrubbed) and benchmarks.json, or a one-line error."""
    folder = ResultsFolder(results)
    path = folder.result_file(machine_name, commit)
    for needed in (path, folder.benchmarks_path):
        if not needed.is_file():
            raise PairedError(f"no results to pair: {needed} is missing (run `tape-vs-trace run` first)")
    try:
        return asv_files.read(path), folder.benchmarks()
    except (OSError, ValueError, asv_files.ResultFileError) as exc:
        raise PairedError(f"cannot read the results in {results} ({type(exc).__name__}: {exc})") from None


def _combination(file: asv_files.ResultFile, meta: dict, name: str,
                 params: dict[str, str]) -> asv_files.Combination | None:
    """The combination `params` of benchmark `name` in the result file, None where its grid has no such one."""
    wanted = [str(params[n]) for n in meta["param_names"]]
    return next((c for c in file.combinations(name, meta)
                 if [str(asv_files.literal(v)) for v in c.values] == wanted), None)


def available(chosen: list[Experiment], file: asv_files.ResultFile, benchmarks: dict, device: str,
              log: Callable[[str], None] = print) -> list[Experiment]:
    """The experiments whose every point has samples in the results; each one left out is named with the first
    reason (a failed combination, or a run that selected part of the suite)."""
    kept = []
    for e in chosen:
        try:
            processes([e], file, benchmarks, device)
        except PairedError as exc:
            log(f"[paired] left out: {exc}")
            continue
        kept.append(e)
    if not kept:
        raise PairedError(f"none of the {len(chosen)} experiments has samples for every point in the results")
    return kept


def processes(chosen: list[Experiment], file: asv_files.ResultFile, benchmarks: dict,
              device: str) -> dict[str, list[dict]]:
    """Per framework, per worker process, per experiment, the per-pass seconds of every point ({"times": [...]}):
    each point's samples (asv_combination) split into its processes by the benchmark's `repeat`. Pass j of two
    points of one benchmark was taken in one sweep of tape-vs-trace run's worker, which is what makes a ratio of
    them paired; results of another runner (asv run: a process per combination) are refused."""
    runs: dict[str, list[dict]] = {}
    runner_of = (file.details or {}).get("runner_of", {})
    for e in chosen:
        per_point = []
        for point in e.points:
            name, params = asv_combination(e, point, device)
            meta = benchmarks.get(name)
            if meta is None:
                raise PairedError(f"{e.name}: benchmarks.json has no {name}")
            if name not in file.benchmarks:
                raise PairedError(f"{e.name}: {name} was not run for this commit (not in the run's profile or "
                                  "selection)")
            if runner_of.get(name) != "worker":
                raise PairedError(f"{e.name}: {name} was measured by {runner_of.get(name, 'another runner')}, not "
                                  "tape-vs-trace run, so its points were not timed in turn in one process")
            found = _combination(file, meta, name, params)
            if found is None or not (isinstance(found.samples, list) and found.samples):
                outcome = "not in the run's grid" if found is None else found.outcome
                raise PairedError(f"{e.name}: point {point.label!r} has no samples in the results ({outcome}: "
                                  f"{name} {params})")
            repeat, (chunks, why) = meta.get("repeat"), found.processes()
            if not isinstance(repeat, int) or repeat < 1 or chunks is None:
                raise PairedError(f"{e.name}: the samples of {name} do not split into processes: "
                                  f"{why or f'repeat is {repeat}'}")
            per_point.append(chunks)
        counts = {len(p) for p in per_point}
        if len(counts) != 1:
            raise PairedError(f"{e.name}: its points ran in different numbers of processes ({sorted(counts)})")
        framework_runs = runs.setdefault(e.framework, [])
        for i in range(counts.pop()):
            if i == len(framework_runs):
                framework_runs.append({})
            framework_runs[i][e.name] = {"times": [p[i] for p in per_point]}
    return runs


def add_costs(chosen: list[Experiment], runs: dict[str, list[dict]], scratch: Path,
              log: Callable[[str], None] = print) -> None:
    """Each remat experiment's costs (saved bytes, flops, peak), one process per framework, into its first
    process's entry (where rows() reads them)."""
    by_framework: dict[str, list[str]] = {}
    for e in chosen:
        if e.group == "remat":
            by_framework.setdefault(e.framework, []).append(e.name)
    for framework, names in by_framework.items():
        log(f"[paired] costs of {len(names)} {framework} remat experiments")
        for name, found in _run_costs(framework, names, scratch).items():
            runs[framework][0][name]["costs"] = found["costs"]


def rows(chosen: list[Experiment], runs: dict, device: str, commit: str, machine_name: str) -> list[dict]:
    """One row per point: time and paired ratio to the experiment's baseline, each with its between-process 95 %
    interval, and the costs of remat points."""
    import numpy as np

    from tape_vs_trace.results.intervals import WITHIN_PROCESS, median_interval, paired_ratios, ratio_interval

    table = []
    for e in chosen:
        # experiments of one framework may run in different numbers of processes (a cheap group's copies)
        processes = [run[e.name] for run in runs[e.framework] if e.name in run]
        base = [p["times"][0] for p in processes]
        first_costs = processes[0].get("costs")
        for i, point in enumerate(e.points):
            medians = [float(np.median(p["times"][i])) for p in processes]
            # The paired ratio to the baseline: the one ratio rule at the resolution of one process's passes.
            times = [p["times"][i] for p in processes]
            per_process = paired_ratios(times, base)
            low, high = median_interval(medians)
            rlow, rhigh = ratio_interval(times, base, WITHIN_PROCESS)
            row = dict(experiment=e.name, group=e.group, framework=e.framework, workload=e.workload, size=e.size,
                       mode=point.mode if e.group == "remat" else e.mode, formulation=e.formulation,
                       attention=e.attention, point=point.label, variant=point.variant,
                       budget="" if point.budget is None else point.budget,
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


def run(out: Path, results: Path = Path("results"), only: str | None = None) -> Path:
    """The rows of the experiments (those whose name contains `only`) from tape-vs-trace run's results of HEAD on
    this machine, with the remat points' costs, written as the CSV; returns its path. An experiment without samples
    for every point is left out and named; none at all is an error."""
    from tape_vs_trace.results import machine

    device = frameworks.detect_device()
    chosen = select(device, only)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if not commit:
        raise PairedError(f"cannot name the commit: git rev-parse HEAD failed in {ROOT}")
    machine_name = machine.record()["machine"]
    file, benchmarks = result_file(results, machine_name, commit)
    chosen = available(chosen, file, benchmarks, device)
    runs = processes(chosen, file, benchmarks, device)
    with tempfile.TemporaryDirectory() as tmp:
        add_costs(chosen, runs, Path(tmp))
    return write(rows(chosen, runs, device, commit, machine_name), out, machine_name, commit)
