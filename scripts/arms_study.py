"""Interleaved arms: what a setting or a process layout does to the between-process spread, with the host's drift
over time shared by every arm.

scripts/noise_study.py runs one setting after another, so a setting and the host's state at its time cannot be told
apart (its baseline, run again 20 minutes later, came out as narrow as the best setting). Here every round runs one
worker process per arm, the arms' order rotated by round, each arm a process group of the cited profile (the eager
combinations of one framework, as `make bench`'s shared process measures them) under one setting. Per arm: the
median over combinations of the between-process CV of the process medians and of the 95 % half-width (times of
1 ms or more), and the correlation of a round's process factor (the mean log deviation of its combinations) between
two arms of one group: processes of one round that move together are not independent draws.

    python scripts/arms_study.py run --out /tmp/arms --rounds 12 [ARM ...]
    python scripts/arms_study.py summary --out /tmp/arms

ARM: one of ARMS below (default: all). Each setting applies to both frameworks' workers alike. `run` appends one
line per process to <out>/log.jsonl, so a run cut short keeps its rounds; `summary` reads it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tape_vs_trace.results import host_load  # noqa: E402
from tape_vs_trace.results.intervals import half_width, median_interval  # noqa: E402
from tape_vs_trace.running import profiles  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Arm:
    framework: str
    env: tuple[tuple[str, str], ...] = ()
    repeat_factor: int = 1  # samples per combination, times the benchmark's own `repeat`


# name: Arm; "-again" arms repeat their group's baseline in the same round (the same-round correlation)
ARMS = {
    "torch": Arm("torch"),
    "torch-again": Arm("torch"),
    "torch-x4": Arm("torch", repeat_factor=4),  # four times the samples: a wider window of the host's drift
    "torch-thp": Arm("torch", (("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1"),)),  # malloc's memory in huge pages
    "jax": Arm("jax"),
    "jax-again": Arm("jax"),
    "jax-thp": Arm("jax", (("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1"),)),
    # OpenMP threads sleep when idle instead of spinning: a spinning thread holds a core a neighbour wants
    "torch-passive": Arm("torch", (("OMP_WAIT_POLICY", "PASSIVE"),)),
    "jax-passive": Arm("jax", (("OMP_WAIT_POLICY", "PASSIVE"),)),
}


def groups() -> tuple[dict[str, list], list[dict]]:
    """The cited profile's eager shared-process tasks (time benchmarks, default process settings), by framework."""
    from tape_vs_trace.running import plan

    benchmarks = plan.discover(log=lambda m: None)
    selection = plan.select(benchmarks, None, profiles.CITED.selection)
    chosen = plan.tasks(benchmarks, selection, profiles.CITED.rounds)
    default = min({t.settings for t in chosen})
    found: dict[str, list] = {}
    for t in chosen:
        if t.kind == "time" and not t.fresh and not t.compiled and t.settings == default:
            found.setdefault(t.framework, []).append(t)
    return found, benchmarks


def run(out: Path, rounds: int, arms: list[str]) -> None:
    from tape_vs_trace.running.plan import rotated
    from tape_vs_trace.running.processes import run_worker, setup_caches

    found, benchmarks = groups()
    log_path = out / "log.jsonl"
    done_rounds = {json.loads(line)["round"] for line in log_path.read_text().splitlines()} if log_path.exists() \
        else set()
    start = max(done_rounds, default=-1) + 1
    with tempfile.TemporaryDirectory(prefix="tvt-arms-") as tmp:
        scratch = Path(tmp)
        all_tasks = [t for ts in found.values() for t in ts]
        caches = setup_caches(all_tasks, benchmarks, scratch, {}, print)
        for r in range(start, start + rounds):
            for name in rotated(arms, r):
                arm = ARMS[name]
                batch = [dataclasses.replace(t, repeat=t.repeat * arm.repeat_factor)
                         for t in rotated(found[arm.framework], r)]
                saved = {k: os.environ.get(k) for k, _ in arm.env}
                os.environ.update(dict(arm.env))
                try:
                    ticks, t0 = host_load.cpu_ticks(), time.perf_counter()
                    result, why = run_worker(arm.framework, batch, caches, scratch, f"r{r}-{name}")
                    wall = time.perf_counter() - t0
                    host = host_load.shares(ticks, host_load.cpu_ticks())
                finally:
                    for k, v in saved.items():
                        os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
                medians = {k: float(np.median(v["samples"])) for k, v in result.items()
                           if isinstance(v, dict) and v.get("samples")}
                line = {"round": r, "arm": name, "wall_s": round(wall, 2), "host": host, "error": why,
                        "medians": medians}
                with log_path.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                print(f"round {r} {name:12} {wall:5.1f} s  {len(medians)} combinations  steal "
                      f"{(host or {}).get('steal', 0):.1%}{'  ' + why if why else ''}", flush=True)


def summary(out: Path) -> list[str]:
    lines = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    by_arm: dict[str, dict[int, dict[str, float]]] = {}
    walls: dict[str, list[float]] = {}
    for x in lines:
        by_arm.setdefault(x["arm"], {})[x["round"]] = x["medians"]
        walls.setdefault(x["arm"], []).append(x["wall_s"])
    rounds = sorted({x["round"] for x in lines})
    report = [f"{len(rounds)} rounds"]
    factors = {}
    for arm, per_round in by_arm.items():
        keys = sorted(set.intersection(*(set(m) for m in per_round.values())))
        logs = np.log([[per_round[r][k] for k in keys] for r in sorted(per_round)])
        dev = logs - logs.mean(axis=0)
        factors[arm] = dict(zip(sorted(per_round), dev.mean(axis=1), strict=True))
        cv = np.std(logs, axis=0, ddof=1)
        widths = [half_width(float(np.exp(np.median(col))), *median_interval(list(np.exp(col)))) for col in logs.T]
        widths = [w for w in widths if np.isfinite(w)]
        resid = np.std(dev - dev.mean(axis=1, keepdims=True), ddof=1)
        report.append(f"{arm:12} {len(per_round)} processes, {len(keys)} combinations: between-process CV median "
                      f"{np.median(cv):.1%}, half-width median {np.median(widths):.1%} ({len(widths)} rows); "
                      f"process factor SD {np.std(dev.mean(axis=1), ddof=1):.1%}, the rest {resid:.1%}; "
                      f"wall {np.median(walls[arm]):.1f} s")
    for base in ("torch", "jax"):
        for other in [a for a in factors if base in factors and a.startswith(base + "-")]:
            common = sorted(set(factors[base]) & set(factors[other]))
            if len(common) >= 3:
                rho = np.corrcoef([factors[base][r] for r in common], [factors[other][r] for r in common])[0, 1]
                report.append(f"process factors of {base} and {other}, same round: correlation {rho:+.2f} "
                              f"({len(common)} rounds)")
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/arms_study.py", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("run", "summary"))
    parser.add_argument("arms", nargs="*", default=list(ARMS), help=f"of {', '.join(ARMS)}")
    parser.add_argument("--out", type=Path, required=True, help="scratch folder (outside results/)")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_intermixed_args(argv)
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown:
        print(f"error: unknown arm {unknown[0]!r}; valid: {', '.join(ARMS)}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.action == "run":
        run(args.out, args.rounds, args.arms)
    print("\n".join(summary(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
