"""Whether the host's speed drifts inside a process, and whether the drift is common to both frameworks: what a
narrower JAX/PyTorch interval on a noisy host depends on.

One like pair of combinations (an asv benchmark and its parameters, PyTorch's and JAX's) is measured in three arms,
interleaved round by round so the host's drift reaches each arm alike:
- sequential: a PyTorch process takes samples for --seconds, then a JAX process does, as the runner's processes
  follow one another;
- cotimed: both processes alive, one sample of each in turn (which goes first swaps every pass);
- cotimed-rewarm: as cotimed, with one untimed call of the step before each sample, which keeps the other process's
  cache footprint and still-spinning threads out of the timed calls.
Per arm it prints each side's between-round spread (standard deviation of the log of the round medians), the
JAX/PyTorch ratio's spread with rounds paired, the 95 % half-widths these give, and each side's median against the
sequential arm's (what taking turns costs); and, from the sequential processes, the drift inside one process: the
spread of its 1-second window medians and their lag-1 autocorrelation. Samples are the suite's own (asv_runner's
timer through tape_vs_trace.running.worker, `calls` calls a sample of at least 10 ms).

    python scripts/drift_study.py --out /tmp/drift [--rounds 4] [--seconds 10] [--workload mlp] [--mode eager]

Writes OUT/samples.json (every sample with its time) and OUT/summary.json, and prints the summary.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tape_vs_trace.results.intervals import median_interval, ratio_interval  # noqa: E402

ARMS = ("sequential", "cotimed", "cotimed-rewarm")
WINDOW_S = 1.0


class StudyError(Exception):
    """Bad input: printed as one line."""


# --- statistics -----------------------------------------------------------------------------------------------

def window_medians(samples: list[tuple[float, float]], width: float = WINDOW_S) -> list[float]:
    """Medians of the samples (time, seconds) in consecutive `width`-second windows holding at least 3 samples."""
    if not samples:
        return []
    start = samples[0][0]
    windows: dict[int, list[float]] = {}
    for t, s in samples:
        windows.setdefault(int((t - start) // width), []).append(s)
    return [statistics.median(v) for _, v in sorted(windows.items()) if len(v) >= 3]


def drift(samples: list[tuple[float, float]], width: float = WINDOW_S) -> dict[str, float]:
    """Inside one process: the coefficient of variation of its window medians and their lag-1 autocorrelation
    (near 0: window to window noise; near 1: a level that wanders slowly)."""
    meds = window_medians(samples, width)
    if len(meds) < 3:
        return {"windows": len(meds), "cv": math.nan, "lag1": math.nan}
    mean = statistics.fmean(meds)
    dev = [m - mean for m in meds]
    var = sum(d * d for d in dev)
    lag1 = sum(a * b for a, b in zip(dev, dev[1:])) / var if var else math.nan
    return {"windows": len(meds), "cv": statistics.pstdev(meds) / mean, "lag1": lag1}


def _relative_half_width(value: float, low: float, high: float) -> float:
    return (high - low) / 2 / value if all(math.isfinite(v) for v in (value, low, high)) else math.nan


def _spread(logs: list[float]) -> dict[str, float]:
    """Standard deviation of log values, and the 95 % t interval's half-width of their mean as a share of it (the
    report's median_interval over per-process values)."""
    if len(logs) < 2:
        return {"sd": math.nan, "half_width": math.nan}
    value = math.exp(statistics.fmean(logs))
    return {"sd": statistics.stdev(logs), "half_width": _relative_half_width(
        value, *median_interval([math.exp(v) for v in logs]))}


def arm_summary(rounds: list[dict[str, list[float]]]) -> dict[str, object]:
    """One arm's rounds ({"torch": samples, "jax": samples} each): per side the geometric mean of the round medians
    and their spread; the ratio jax/torch paired by round and its spread, beside the report's unpaired interval
    (Welch's, over the same round medians)."""
    meds = {fw: [statistics.median(r[fw]) for r in rounds] for fw in ("torch", "jax")}
    logs = {fw: [math.log(m) for m in values] for fw, values in meds.items()}
    ratio = [j - t for t, j in zip(logs["torch"], logs["jax"])]
    out: dict[str, object] = {"rounds": len(rounds)}
    for fw, values in logs.items():
        out[fw] = {"median_s": math.exp(statistics.fmean(values)), **_spread(values)}
    value = math.exp(statistics.fmean(ratio))
    out["ratio"] = {"value": value, **_spread(ratio),
                    "unpaired_half_width": _relative_half_width(value, *ratio_interval(meds["jax"], meds["torch"]))}
    return out


def summarise(found: dict[str, list[dict[str, list[list[float]]]]]) -> dict[str, object]:
    """Every arm's summary, each side's median against the sequential arm's, and the sequential processes' drift."""
    arms = {arm: arm_summary([{fw: [s for _, s in r[fw]] for fw in r} for r in rounds])
            for arm, rounds in found.items() if rounds}
    base = arms.get("sequential")
    for arm, summary in arms.items():
        if base and arm != "sequential":
            summary["against_sequential"] = {fw: summary[fw]["median_s"] / base[fw]["median_s"]
                                             for fw in ("torch", "jax")}
    inside = {fw: [drift([tuple(x) for x in r[fw]]) for r in found.get("sequential", [])] for fw in ("torch", "jax")}
    return {"arms": arms, "drift_inside_a_process": {
        fw: {"cv": statistics.fmean(d["cv"] for d in ds), "lag1": statistics.fmean(d["lag1"] for d in ds)}
        for fw, ds in inside.items() if ds and all(not math.isnan(d["cv"]) for d in ds)}}


# --- the processes ----------------------------------------------------------------------------------------------

def serve(asv_id: str, rewarm: bool) -> int:
    """The worker: set up `asv_id`, say "ready", then per input line take one sample and print "time seconds"."""
    from implementations import frameworks
    from tape_vs_trace.running.worker import BENCHMARK_DIR, Worker

    frameworks.isolate_allocators()
    from asv_runner.discovery import get_benchmark_from_name

    bench = get_benchmark_from_name(str(BENCHMARK_DIR), asv_id)
    bench.set_cache(None)
    if bench.do_setup():
        raise StudyError(f"{asv_id} is skipped in its setup")
    worker = Worker({"tasks": []}, Path("/dev/null"), get_benchmark=lambda _: bench)
    worker.last_setup = bench
    step = getattr(getattr(bench.func, "__self__", None), "step", None)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "sample":
            break
        if rewarm and step is not None:
            step()
        seconds, _ = worker.sample(bench)
        print(f"{time.time()} {seconds}", flush=True)
    return 0


class Served:
    """One serve process: sample() asks it for one sample."""

    def __init__(self, asv_id: str, rewarm: bool):
        argv = [sys.executable, __file__, "serve", asv_id] + (["--rewarm"] if rewarm else [])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        if self.proc.stdout.readline().strip() != "ready":
            raise StudyError(f"the worker for {asv_id} did not start (exit status {self.proc.wait()})")

    def sample(self) -> list[float]:
        self.proc.stdin.write("sample\n")
        self.proc.stdin.flush()
        t, s = self.proc.stdout.readline().split()
        return [float(t), float(s)]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def _for(seconds: float, take) -> None:
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        take()


def one_round(arm: str, ids: dict[str, str], seconds: float) -> dict[str, list[list[float]]]:
    """One round of `arm`: {"torch": [[time, seconds], ...], "jax": [...]}."""
    got: dict[str, list[list[float]]] = {"torch": [], "jax": []}
    if arm == "sequential":
        for fw in ("torch", "jax"):
            worker = Served(ids[fw], rewarm=False)
            _for(seconds, lambda w=worker, f=fw: got[f].append(w.sample()))
            worker.close()
        return got
    workers = {fw: Served(ids[fw], rewarm=arm == "cotimed-rewarm") for fw in ("torch", "jax")}
    passes = [0]

    def one_pass() -> None:
        order = ("torch", "jax") if passes[0] % 2 == 0 else ("jax", "torch")
        for fw in order:
            got[fw].append(workers[fw].sample())
        passes[0] += 1

    _for(2 * seconds, one_pass)  # as long as the sequential arm's two processes take
    for worker in workers.values():
        worker.close()
    return got


def like_pair(workload: str, mode: str) -> dict[str, str]:
    """The asv ids (`benchmark-index`) of the float32 matched gradient step of `workload` in `mode`, per framework."""
    from tape_vs_trace.running import profiles

    name = f"recording.GradStep_{workload}.time_step"
    combos = [c for c in profiles.combinations() if c.benchmark == name]
    if not combos:
        raise StudyError(f"no benchmark {name}")
    ids = {}
    for index, c in enumerate(combos):  # asv's index: the position in its product of parameter values
        p = dict(c.params)
        if (p.get("mode") == mode and p.get("style", "matched") == "matched" and p.get("dtype") == "float32"
                and p.get("precision", "highest") == "highest" and p.get("formulation", "unrolled") == "unrolled"
                and p.get("attention", "written") == "written" and not c.skipped):
            ids.setdefault(c.framework, f"{name}-{index}")
    if set(ids) != {"torch", "jax"}:
        raise StudyError(f"{workload} has no {mode} float32 matched step on both frameworks")
    return ids


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["serve"]:
        return serve(args[1], "--rewarm" in args[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--mode", default="eager")
    opts = parser.parse_args(args)
    try:
        if opts.rounds < 2 or opts.seconds <= 0:
            raise StudyError("--rounds must be at least 2 and --seconds positive")
        ids = like_pair(opts.workload, opts.mode)
        found: dict[str, list] = {arm: [] for arm in ARMS}
        for r in range(opts.rounds):
            for arm in ARMS[r % len(ARMS):] + ARMS[:r % len(ARMS)]:  # the arms' order rotates round by round
                print(f"[drift] round {r + 1}/{opts.rounds}: {arm}", flush=True)
                found[arm].append(one_round(arm, ids, opts.seconds))
    except StudyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "samples.json").write_text(json.dumps({"pair": ids, "seconds": opts.seconds, "arms": found}))
    summary = {"pair": ids, **summarise(found)}
    (opts.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
