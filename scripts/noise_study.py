"""What sets a process's speed on a noisy host: the same selection run by `tape-vs-trace run` under each setting
(threads, spin-waits, memory layout, placement), and the between-process spread each leaves.

For every setting the runner measures the selection in fresh worker processes (--rounds of them per combination),
into a scratch results folder; this script splits each combination's samples into its processes (as the report
does), and prints per setting: the median over combinations of the between-process coefficient of variation of the
process medians, the median within-process one, and the median 95 % half-width of the t interval the report prints
(times of 1 ms or more). A setting that narrows the between-process spread names a cause.

    python scripts/noise_study.py --out /tmp/noise [--rounds 6] [-b REGEX ...] [SETTING ...]

SETTING: one of SETTINGS below (default: all). Writes <out>/<setting>/ and <out>/summary.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tape_vs_trace.results import asv_files  # noqa: E402
from tape_vs_trace.results.folder import MACHINE_RECORD  # noqa: E402
from tape_vs_trace.results.intervals import half_width, median_interval  # noqa: E402

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
# name: (environment added, command prefix); each applies to both frameworks' workers alike (they inherit both)
SETTINGS: dict[str, tuple[dict[str, str], list[str]]] = {
    "baseline": ({}, []),
    "one-thread": (ONE_THREAD, []),
    "passive-wait": ({"OMP_WAIT_POLICY": "PASSIVE"}, []),
    "fixed-layout": ({"PYTHONHASHSEED": "0"}, ["setarch", "x86_64", "-R"]),  # address randomisation off
    "one-core": (ONE_THREAD, ["taskset", "-c", "1"]),
}
DEFAULT_BENCH = [r"^recording\.GradStep_mlp\.time_step", r"^recording\.GradStep_transformer\.time_step\(.*'unrolled', "
                 r"'matched', 'written'"]


def per_process(result_file: Path, rounds: int) -> dict[str, list[list[float]]]:
    """Each measured combination's samples, split into its `rounds` processes (in order, as the report splits them),
    by "<benchmark>-<index>"; one with fewer than two samples per process is left out."""
    file = asv_files.read(result_file)
    found = {}
    for name in file.benchmarks:
        for c in file.combinations(name):
            s = c.samples
            if c.measured and isinstance(s, list) and len(s) >= 2 * rounds and len(s) % rounds == 0:
                found[f"{name}-{c.index}"] = asv_files.Split(rounds, len(s) // rounds).chunks(s)[0]
    return found


def _process_of(file: asv_files.ResultFile, key: str) -> tuple[str, bool]:
    """(framework, compiled) of combination `key` ("<name>-<index>"), from its benchmark's parameters."""
    name, index = key.rsplit("-", 1)
    values = [v.strip("'") for v in file.combinations(name)[int(index)].values]
    return values[0], "compiled" in values


def steal_effect(result_file: Path, processes: dict[str, list[list[float]]]) -> dict[str, float]:
    """Per worker process: the host's steal share while it ran (the runner's record) and its slowdown (the geometric
    mean over its combinations of its median over the combination's median across processes); their Spearman
    correlation, and the median slowdown of the processes above and below the median steal."""
    file = asv_files.read(result_file)
    records = {(p["round"], p["framework"], p.get("compiled")): p.get("host") for p in
               (file.details or {})["worker_runs"]["per_process"]}
    logs: dict[tuple, list[float]] = {}
    for key, chunks in processes.items():
        framework, compiled = _process_of(file, key)
        medians = np.log([np.median(c) for c in chunks])
        for r, m in enumerate(medians, start=1):
            logs.setdefault((r, framework, compiled), []).append(float(m - np.median(medians)))
    pairs = [(records[k]["steal"], float(np.exp(np.mean(v)))) for k, v in logs.items() if records.get(k)]
    if len(pairs) < 4:
        return {}
    steal, slow = np.array(pairs).T
    high = steal > np.median(steal)
    return {"processes": len(pairs), "steal_median": float(np.median(steal)), "steal_max": float(steal.max()),
            "spearman": float(spearmanr(steal, slow).statistic),
            "slowdown_high_steal": float(np.median(slow[high])), "slowdown_low_steal": float(np.median(slow[~high]))}


def spread(processes: dict[str, list[list[float]]]) -> dict[str, float]:
    """Medians over combinations: between-process CV, within-process CV, 95 % half-width (times of 1 ms or more)."""
    between, within, widths = [], [], []
    for chunks in processes.values():
        medians = np.array([np.median(c) for c in chunks])
        between.append(float(np.std(np.log(medians), ddof=1)))
        within.append(float(np.median([np.std(np.log(c), ddof=1) for c in chunks])))
        low, high = median_interval(list(medians))
        widths.append(half_width(float(np.median(medians)), low, high))
    widths = [w for w in widths if np.isfinite(w)]
    return {"combinations": len(processes), "between_cv": float(np.median(between)),
            "within_cv": float(np.median(within)), "half_width": float(np.median(widths)) if widths else float("nan"),
            "timed_rows": len(widths)}


def run_setting(name: str, out: Path, rounds: int, bench: list[str]) -> dict[str, float]:
    env_add, prefix = SETTINGS[name]
    folder = out / name
    argv = prefix + [str(ROOT / ".venv" / "bin" / "tape-vs-trace"), "run", "--results", str(folder),
                     "--rounds", str(rounds), "--machine", f"noise-{name}"]
    for b in bench:
        argv += ["-b", b]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env={**os.environ, **env_add}, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"error: setting {name}: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    files = sorted((folder / f"noise-{name}").glob("*-*.json"))
    files = [f for f in files if f.name != MACHINE_RECORD]
    processes = per_process(files[-1], rounds)
    return {"setting": name, "env": env_add, "prefix": prefix, "wall_s": round(wall, 1), **spread(processes),
            "host": steal_effect(files[-1], processes)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/noise_study.py", description=__doc__.splitlines()[0])
    parser.add_argument("settings", nargs="*", default=list(SETTINGS), help=f"of {', '.join(SETTINGS)}")
    parser.add_argument("--out", type=Path, required=True, help="scratch folder (outside results/)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("-b", "--bench", action="append", help="regex, as tape-vs-trace run -b")
    args = parser.parse_args(argv)
    unknown = [s for s in args.settings if s not in SETTINGS]
    if unknown:
        print(f"error: unknown setting {unknown[0]!r}; valid: {', '.join(SETTINGS)}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.settings:
        row = run_setting(name, args.out, args.rounds, args.bench or DEFAULT_BENCH)
        rows.append(row)
        print(f"{name:14} between-process CV {row['between_cv']:6.1%}  within {row['within_cv']:6.1%}  "
              f"half-width {row['half_width']:6.1%} ({row['timed_rows']} rows)  {row['wall_s']:.0f} s", flush=True)
        if row["host"]:
            h = row["host"]
            print(f"{'':14} steal median {h['steal_median']:.1%} max {h['steal_max']:.1%}; slowdown against steal: "
                  f"Spearman {h['spearman']:+.2f}, median {h['slowdown_high_steal']:.3f}x above the median steal, "
                  f"{h['slowdown_low_steal']:.3f}x below", flush=True)
        (args.out / "summary.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
