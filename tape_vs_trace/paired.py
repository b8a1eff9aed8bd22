"""`tape-vs-trace paired`: comparisons inside one framework, measured call by call in the same process, repeated in
several processes; and the rematerialization trade-off curve, every policy and memory budget of both frameworks.

asv gives each parameter combination its own process, so two variants of one framework (remat against plain,
inference_mode against no_grad, hooks against none, custom against autodiff backward) are compared across
processes, where the same step differs by tens of percent on a shared machine. Here one process builds every point
of an experiment and alternates them call by call (the order rotated every pass); noise that hits both points of a
pass cancels in their ratio. Each framework runs in its own processes (`python -m tape_vs_trace.paired worker`),
`rounds` of them, interleaved with the other framework's; the value of a point is the geometric mean of the
per-process medians, and its 95 % interval, like that of the paired ratio, comes from the spread between processes
(tape_vs_trace.report.stats).

The remat experiments also take each point's costs, in the first round: bytes kept for the backward, matmul flops
(recomputation included) and peak bytes where the framework's memory method can see the step (see `costs`).

`make bench` takes the first round before the asv suite and the others after it (`--stage first`, then
`--stage rest`, the first round kept in a folder between them): the processes of one point then lie minutes apart,
like asv's interleaved rounds, and the interval of an absolute time covers the host's drift over the run. Rounds
taken within three minutes at the end of a run gave intervals that a rerun missed (run-level states of the shared
host moved every paired time by 7-24 % between two runs of `38325324`, their ratios agreeing).

Output: OUT/<machine>-<commit8>.csv, one row per point (FIELDS), read by the report.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from implementations import frameworks, sampling, workloads

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("experiment", "group", "framework", "workload", "size", "mode", "formulation", "point", "variant",
          "budget", "baseline", "time_s", "time_ci_low", "time_ci_high", "ratio", "ratio_ci_low", "ratio_ci_high",
          "processes", "passes", "process_medians", "saved_bytes", "flops", "peak_bytes", "cost_method",
          "peak_method", "device", "commit", "machine")
# Each experiment's points are cycled until about this long has passed, at least MIN_PASSES times, per process.
# 0.5 s (it was 1.0; the paired ratios' median half-width was 7.5 % with it): the suite's 15 minutes on a 2-core CPU.
TARGET_SECONDS = 0.5
MIN_PASSES, MAX_PASSES = 5, 40
ROUNDS = 3
CACHE_ENV = "TVT_PAIRED_JAX_CACHE"  # the runner's scratch folder for JAX's persistent compilation cache
STAGES = ("all", "first", "rest")  # every round now; the first round only, kept in --raw; the others, then the CSV
FIRST_ROUND = "paired-first-round.json"  # the first round's raw measurements and what they were taken of, in --raw

# torch.compile's memory budgets (torch._functorch.config.activation_memory_budget) on the compiled PyTorch curve.
# 1.0 is the default and the 'plain' point; JAX's counterpart is its choice of policy.
BUDGETS = (0.5, 0.25, 0.1, 0.0)
# The transformer's remat policies, ordered from saving everything to saving least (implementations/jax/common.py
# has the table of what each saves on both sides). 'remat_every<k>' checkpoints groups of k layers.
POLICIES = ("plain", "remat_dots", "remat_names", "remat_every2", "remat_full")


class PairedError(Exception):
    """Bad input or a failed worker: printed as one line by the CLI."""


@dataclass(frozen=True)
class Point:
    label: str  # what the report prints
    kind: str = "grad"  # grad (grad_step), forward (forward_step) or engine (engine_step)
    variant: str = "plain"  # the workload variant (a remat policy for the remat curve)
    mode: str = "eager"  # grad and engine modes; the forward kind's own mode (no_grad, inference_mode, ...)
    budget: float | None = None  # torch.compile's activation memory budget (compiled PyTorch only)
    feature: str = ""  # engine kind: the engine feature


@dataclass(frozen=True)
class Experiment:
    name: str
    group: str  # 'remat' (the trade-off curve, costs taken) or 'paired' (two variants of one framework)
    framework: str
    workload: str
    size: str
    mode: str  # the mode the report prints for the experiment ('eager', 'compiled', or the forward modes')
    formulation: str  # 'unrolled' (a Python loop over layers) or 'scan' (JAX's lax.scan over stacked layers)
    points: tuple[Point, ...] = field(default_factory=tuple)

    @property
    def baseline(self) -> Point:
        return self.points[0]


def _remat(framework: str, size: str, mode: str, formulation: str, policies: tuple[str, ...],
           budgets: tuple[float, ...] = ()) -> Experiment:
    points = [Point(p, variant=p, mode=mode) for p in policies]
    points += [Point(f"budget {b:g}", variant="plain", mode=mode, budget=b) for b in budgets]
    return Experiment(f"remat {size} {framework} {mode} {formulation}", "remat", framework, "transformer", size,
                      mode, formulation, tuple(points))


def _pair(framework: str, workload: str, size: str, mode: str, a: Point, b: Point, name: str) -> Experiment:
    return Experiment(f"{name} {workload} {framework} {mode}", "paired", framework, workload, size, mode,
                      "plain", (a, b))


def experiments(device: str) -> list[Experiment]:
    """Every experiment of this device, both frameworks."""
    cuda = device == "cuda"
    small, deep = ("L12-B8-S1024-D1024", "L24-B8-S1024-D1024") if cuda else ("L4-B4-S64-D128", "L8-B4-S64-D128")
    mlp, swiglu, gmm = (("512x1024x4096", "2048x1024x4096", "d64-K100-n10000") if cuda
                        else ("64x256x1024", "64x256x1024", "d10-K25-n1000"))
    # Every policy at the smaller depth; at twice the depth, the granularity (k layers per checkpoint) beside none
    # and per layer, so the sqrt(n) schedule shows. remat_names has no torch.compile form (torch.steps.grad_step);
    # op-by-op JAX runs the loop form only (an un-jitted lax.scan is compiled anew on every call).
    offload = ("remat_offload",) if cuda else ()
    every = tuple(p for p in POLICIES if p != "remat_names")
    grain = ("plain", "remat_every2", "remat_every4", "remat_full")
    found = [
        _remat("torch", small, "eager", "unrolled", POLICIES + offload),
        _remat("torch", small, "compiled", "unrolled", every, BUDGETS),
        _remat("jax", small, "eager", "unrolled", POLICIES),
        _remat("jax", small, "compiled", "unrolled", POLICIES + offload),
        _remat("jax", small, "compiled", "scan", POLICIES),
        # At the second depth: PyTorch both ways, JAX as the scan (jitted straight-line code lets XLA:CPU undo the
        # remat, which the loop form at the first depth already shows).
        _remat("torch", deep, "eager", "unrolled", grain),
        _remat("torch", deep, "compiled", "unrolled", grain),
        _remat("jax", deep, "compiled", "scan", grain),
    ]
    found += [
        _pair("torch", "mlp", mlp, "forward", Point("no_grad", "forward", mode="no_grad"),
              Point("inference_mode", "forward", mode="inference_mode"), "inference_mode against no_grad"),
        _pair("torch", "mlp", mlp, "eager", Point("no hooks", "engine", feature="no_hooks"),
              Point("hooks", "engine", feature="hooks"), "hooks against none"),
        _pair("torch", "mlp", mlp, "eager", Point("zero_grad to None", "engine", feature="zero_grad_none"),
              Point("zero_grad to zeros", "engine", feature="zero_grad_zeros"), "zero_grad to zeros against None"),
        _pair("torch", "mlp", mlp, "eager", Point("sum of grads", "engine", feature="accumulate_tree_add"),
              Point("into .grad", "engine", feature="accumulate_grad_attr"), "accumulation into .grad against a sum"),
    ]
    for framework in frameworks.NAMES:
        for workload, size in (("swiglu", swiglu), ("gmm", gmm)):
            for mode in ("eager", "compiled"):
                if workload == "gmm" and mode == "compiled" and framework == "torch" and not cuda:
                    continue  # torch.compile of the GMM objective takes minutes on a 2-core CPU
                found.append(_pair(framework, workload, size, mode, Point("autodiff", variant="plain", mode=mode),
                                   Point("custom", variant="custom", mode=mode), "custom against autodiff"))
    return found


def select(device: str, only: str | None = None) -> list[Experiment]:
    """The experiments whose name contains `only` (all without it); an `only` that matches none is an error."""
    found = [e for e in experiments(device) if only is None or only in e.name]
    if not found:
        names = "; ".join(e.name for e in experiments(device))
        raise PairedError(f"no experiment matches {only!r}; experiments: {names}")
    return found


# --- the worker: one framework, one process ------------------------------------------------------------------------

def _layout(experiment: Experiment) -> str | None:
    if experiment.workload != "transformer":
        return None
    return "stacked" if experiment.formulation == "scan" else "layers"


def build(fw: Any, experiment: Experiment, point: Point, inputs: workloads.Inputs, device: str) -> Callable[[], Any]:
    """The step of one point, built (compiled and warmed up) once."""
    if point.kind == "grad":
        return fw.steps.grad_step(inputs, point.variant, point.mode, device, layout=_layout(experiment),
                                  budget=point.budget)
    if point.kind == "forward":
        return fw.steps.forward_step(inputs, point.variant, point.mode, device)
    if point.kind == "engine":
        return fw.steps.engine_step(inputs, point.variant, point.feature, point.mode, device)
    raise ValueError(f"unknown point kind {point.kind!r}")


def interleave(steps: list[Callable[[], Any]], calls: list[int]) -> list[list[float]]:
    """Per-call seconds of every step in every pass; each pass runs every step once, in an order rotated by one
    per pass, until TARGET_SECONDS have passed (at least MIN_PASSES passes)."""
    times: list[list[float]] = [[] for _ in steps]
    start = time.perf_counter()
    passes = 0
    while passes < MIN_PASSES or (time.perf_counter() - start < TARGET_SECONDS and passes < MAX_PASSES):
        order = list(range(len(steps)))
        shift = passes % len(steps)
        for i in order[shift:] + order[:shift]:
            t0 = time.perf_counter()
            for _ in range(calls[i]):
                steps[i]()
            times[i].append((time.perf_counter() - t0) / calls[i])
        passes += 1
    return times


def costs(fw: Any, experiment: Experiment, point: Point, inputs: workloads.Inputs, device: str) -> dict[str, Any]:
    """Saved bytes, matmul flops and peak bytes of one remat point.

    Compiled steps are costed as compiled (probe.compiled_costs: torch.compile's partition under the point's budget,
    JAX's differentiated jaxpr); eager steps by the eager probes (saved-tensor hooks and FlopCounterMode on
    PyTorch's tape; JAX's residuals and jaxpr). Peak bytes come from the framework's memory method on this device
    where it sees the step: on a CPU, PyTorch's live-storage tracker cannot see inside Inductor's kernels, and JAX's
    buffer plan exists for jitted steps only, so compiled PyTorch and eager JAX have no CPU peak.
    """
    layout = _layout(experiment)
    loss, args = fw.steps.loss_fn(inputs, point.variant, device, layout)
    grads, _ = fw.steps.grad_fn(inputs, point.variant, device, layout)
    if point.mode == "compiled":
        found = fw.probe.compiled_costs(loss, *args, budget=point.budget)
        saved, flops, method = found.saved_bytes, found.matmul_flops, found.method
    else:
        saved, flops = fw.probe.saved_bytes(loss, *args).extra_bytes, fw.probe.flops(grads, *args)
        method = "eager probes (saved-tensor hooks / jax.vjp residuals; FlopCounterMode / jaxpr matmuls)"
    peak, peak_method = None, "not measured: " + _no_peak(experiment.framework, point.mode, device)
    if not _no_peak(experiment.framework, point.mode, device):
        if experiment.framework == "torch" and point.mode == "compiled":
            # The allocator sees inside Inductor's kernels: the compiled step itself, built again (compiled_costs
            # reset TorchDynamo); `args` only tell the probe the device, and its warm-up call does the compile.
            step = build(fw, experiment, point, inputs, device)
            result = fw.probe.peak_bytes(lambda *_: step(), *args)
        else:
            result = fw.probe.peak_bytes(grads, *args)
        peak, peak_method = result.bytes, result.method
    return {"saved_bytes": saved, "flops": flops, "cost_method": method, "peak_bytes": peak,
            "peak_method": peak_method}


def _no_peak(framework: str, mode: str, device: str) -> str:
    """Why the memory method of (framework, mode, device) cannot see the step's peak, or ''."""
    if device == "cuda":  # the allocators see every step but JAX's op-by-op one (its probe measures a jitted program)
        return "an op-by-op JAX step's peak is not taken here" if framework == "jax" and mode == "eager" else ""
    if framework == "torch" and mode == "compiled":
        return "the live-storage tracker cannot see inside Inductor's kernels"
    if framework == "jax" and mode == "eager":
        return "an op-by-op step has no XLA buffer plan"
    return ""


def worker(framework: str, names: list[str], with_costs: bool, out: Path) -> None:
    """Run the named experiments of `framework` in this process and write their raw measurements to `out`."""
    frameworks.isolate_allocators()
    device = frameworks.detect_device()
    fw = frameworks.load(framework, "highest", float64=False)
    if framework == "jax" and os.environ.get(CACHE_ENV):
        import jax

        # Compile time is not measured here: later rounds load the first round's executables.
        jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_ENV])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if framework == "torch":
        import torch._dynamo

        # Every compiled point is a torch.compile of the same loss function (one code object); TorchDynamo's default
        # limit of 8 compiled versions per code object would send the ninth back to eager without an error.
        torch._dynamo.config.recompile_limit = 1024
        torch._dynamo.config.accumulated_recompile_limit = 4096
    chosen = [e for e in experiments(device) if e.name in names and e.framework == framework]
    raw: dict[str, Any] = {}
    inputs_of: dict[tuple[str, str], workloads.Inputs] = {}
    for experiment in chosen:
        key = (experiment.workload, experiment.size)
        if key not in inputs_of:
            inputs_of[key] = workloads.make_inputs(*key, "float32", cache_dir=os.environ.get("TVT_INPUT_CACHE"))
        steps = [build(fw, experiment, p, inputs_of[key], device) for p in experiment.points]
        calls = [sampling.calls_for(s) for s in steps]
        raw[experiment.name] = {"times": interleave(steps, calls), "calls": calls}
        del steps
        print(f"  {experiment.name}: {len(raw[experiment.name]['times'][0])} passes", file=sys.stderr, flush=True)
    if with_costs:  # after every timing: compiled_costs resets TorchDynamo's caches
        for experiment in chosen:
            if experiment.group == "remat":
                inputs = inputs_of[(experiment.workload, experiment.size)]
                raw[experiment.name]["costs"] = [costs(fw, experiment, p, inputs, device) for p in experiment.points]
    out.write_text(json.dumps(raw))


# --- the runner: rounds of worker processes, then the statistics --------------------------------------------------

def _run_worker(framework: str, names: list[str], with_costs: bool, scratch: Path, index: int) -> dict[str, Any]:
    out = scratch / f"{framework}-{index}.json"
    argv = [sys.executable, "-m", "tape_vs_trace.paired", "worker", framework, str(out), *names]
    if with_costs:
        argv.insert(5, "--costs")
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, CACHE_ENV: str(scratch / "jax-cache")})
    if done.returncode != 0 or not out.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PairedError(f"{framework} worker failed (status {done.returncode}): {last}")
    return json.loads(out.read_text())


def measure(chosen: list[Experiment], rounds: int = ROUNDS, log: Callable[[str], None] = print,
            scratch: Path | None = None, start: int = 0, stop: int | None = None) -> dict:
    """Raw measurements of rounds `start` to `stop` - 1 (to the last of `rounds` without it), one process per
    framework and round, the frameworks alternating (costs in round 1). `scratch` holds the workers' files and
    JAX's compilation cache (a temporary folder without it)."""
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tape_vs_trace.paired")
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker")
    w.add_argument("framework", choices=frameworks.NAMES)
    w.add_argument("out", type=Path)
    w.add_argument("--costs", action="store_true")
    w.add_argument("names", nargs="+")
    args = parser.parse_args(argv)
    worker(args.framework, args.names, args.costs, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
