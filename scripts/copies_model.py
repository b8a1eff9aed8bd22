"""What a run's budget and copies rule would make of a committed run's spreads: the projected median 95 % half-width
(times of 1 ms or more) of `make bench`'s worker runner, from a result file alone.

Each timed row of a shared process group keeps the between-process SD of the logarithms of its process medians in
that file; each group's process costs its median wall after round 1 there. The rounds after the file's first are
replayed as the runner decides them: a round starts while `running.plan.next_round_fits` says it fits; its processes
follow `running.plan.round_plans`' order, each group once and its copies by `running.plan.spread_copies` (reading each
group's cheapest wall, where the runner reads the cheapest so far); of the first round that does not fit, the
processes that fit at their group's slowest wall run, and the run ends. Each row's half-width is then
`intervals.projected_half_width` of its SD at the processes it got. The alternative rule `parts` gives a copy only
the combinations of a group that a further process narrows most per second (each combination's set-up and samples
from a costs file that `costs` measures on this host, scaled to the file's group walls; the group's start-up paid
once per copy), within the same envelope.

    python scripts/copies_model.py costs --out /tmp/costs.json        # one process per group, this host
    python scripts/copies_model.py project RESULT.json [...] [--budgets 480,540,600] [--costs /tmp/costs.json]

A projection, not a measurement: the model holds each row's spread and each group's walls fixed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tape_vs_trace.results import asv_files  # noqa: E402
from tape_vs_trace.results.folder import ResultsFolder  # noqa: E402
from tape_vs_trace.results.intervals import WIDTH_FLOOR_S, projected_half_width  # noqa: E402
from tape_vs_trace.running.plan import COPY_SHARE, next_round_fits, spread_copies  # noqa: E402


@dataclass(frozen=True)
class Row:
    key: str  # "<benchmark>-<index>", the worker's name of the combination
    group: str
    sd: float  # SD of the log process medians in the file
    cost: float = 0.0  # seconds of set-up and samples in one process (the parts rule only)


def median_width(rows: list[Row], processes: dict[str, int]) -> float:
    """The median over rows of the projected relative half-width at the processes each got."""
    return float(np.median([projected_half_width(r.sd, processes[r.key]) for r in rows]))


@dataclass(frozen=True)
class Walls:
    """A group's process walls after round 1 in the file: what a process costs in the replay (the median), what the
    runner's copies rule reads (its cheapest; the runner's is the cheapest so far) and what its partial round
    expects (its slowest)."""

    typical: float
    cheapest: float
    slowest: float


Plan = list[tuple[str, list[str], float, float]]  # a round's processes in order: group, rows, cost, expected cost


def _order(groups: list[str], r: int) -> list[str]:
    """The groups in round `r`'s order (running.plan.round_plans): frameworks alternate, and within one the compiled
    and the other process."""
    frameworks = ["torch", "jax"] if r % 2 == 0 else ["jax", "torch"]
    kinds = ["others", "compiled"] if r % 2 == 0 else ["compiled", "others"]
    ranked = {(f, k): i for i, (f, k) in enumerate((f, k) for f in frameworks for k in kinds)}
    return sorted(groups, key=lambda g: (ranked.get(tuple(g.split()[:2]), len(ranked)), g))


def committed(rows: list[Row], walls: dict[str, Walls], processes: dict[str, int], r: int) -> Plan:
    """Round `r` under the committed rule: each group once and its copies by `running.plan.spread_copies`, which reads
    each group's cheapest wall and its rows' spreads at the processes they have."""
    spreads: dict[str, list[tuple[float, int]]] = {}
    for row in rows:
        spreads.setdefault(row.group, []).append((row.sd, processes[row.key]))
    runs = spread_copies({g: w.cheapest for g, w in walls.items()}, spreads)
    return [(g, [row.key for row in rows if row.group == g], walls[g].typical, walls[g].slowest)
            for g in _order(list(walls), r) for _ in range(runs.get(g, 1))]


def parts(rows: list[Row], walls: dict[str, Walls], processes: dict[str, int], r: int) -> Plan:
    """Round `r` with copies of single combinations instead: each group once, then, within COPY_SHARE of the
    slowest group's cheapest wall, combinations chosen one at a time where they narrow most per second (their
    group's start-up paid by the first of a group), each group's copy right after it."""
    startup = {g: max(0.0, w.typical - sum(row.cost for row in rows if row.group == g)) for g, w in walls.items()}
    envelope = COPY_SHARE * max(w.cheapest for w in walls.values())
    extra: dict[str, list[str]] = {}
    spent = 0.0
    while True:
        best, best_gain, best_cost = None, 0.0, 0.0
        for row in rows:
            taken = extra.get(row.group, [])
            cost = row.cost + (0.0 if taken else startup[row.group])
            if row.key in taken or cost <= 0 or spent + cost > envelope:
                continue
            n = processes[row.key] + 1  # after this round's whole process
            gain = (projected_half_width(row.sd, n) ** 2 - projected_half_width(row.sd, n + 1) ** 2) / cost
            if gain > best_gain:
                best, best_gain, best_cost = row, gain, cost
        if best is None:
            break
        extra.setdefault(best.group, []).append(best.key)
        spent += best_cost
    plan: Plan = []
    for g in _order(list(walls), r):
        plan.append((g, [row.key for row in rows if row.group == g], walls[g].typical, walls[g].slowest))
        if g in extra:
            cost = startup[g] + sum(row.cost for row in rows if row.key in extra[g])
            plan.append((g, extra[g], cost, cost))
    return plan


RULES = {"committed": committed, "parts": parts}


def replay(rows: list[Row], walls: dict[str, Walls], first: float, budget: float, rounds: int,
           rule: Callable[[list[Row], dict[str, Walls], dict[str, int], int], Plan]) -> dict[str, int]:
    """Processes per row after the file's first round (one each) and the rounds after it that `budget` holds, as
    the runner decides them: a round starts while running.plan.next_round_fits says it fits; of the first that does
    not, the processes that fit at their expected cost run in the round's order, and the run ends there."""
    processes = {row.key: 1 for row in rows}
    round_walls, elapsed = [first], first
    for r in range(1, rounds):
        plan = rule(rows, walls, processes, r)
        fits, _ = next_round_fits(r, elapsed, round_walls, budget)
        if not fits:
            left, spent = budget - elapsed, 0.0
            for _, keys, _, expected in plan:
                if spent + expected <= left:
                    spent += expected
                    for k in keys:
                        processes[k] += 1
            return processes
        for _, keys, _, _ in plan:
            for k in keys:
                processes[k] += 1
        round_walls.append(sum(cost for _, _, cost, _ in plan))
        elapsed += round_walls[-1]
    return processes


@dataclass(frozen=True)
class Run:
    rows: list[Row]
    walls: dict[str, Walls]
    first: float  # the file's first round's wall (discovery, the shared counts and the cold compiles included)
    budget: float
    rounds: int  # the rounds its profile plans
    measured: float  # the median of its rows' t half-widths at the processes they had
    left_out: int  # timed rows in a group the file ran no process of after round 1


def read_run(path: Path, costs: dict | None = None) -> Run:
    """The file's timed rows of 1 ms or more in shared groups (three processes at least) and its runner's record."""
    rf = asv_files.read(path)
    runs = (rf.details or {}).get("worker_runs") or {}
    per_process = [p for p in runs.get("per_process") or [] if p.get("group") and p.get("round", 0) > 1]
    if not per_process or not runs.get("budget_s") or not runs.get("round_wall_s"):
        raise ValueError(f"{path}: no worker run under a budget with its processes' groups (the worker runner's "
                         "newer files record them)")
    walls_of: dict[str, list[float]] = {}
    for p in per_process:
        walls_of.setdefault(p["group"], []).append(p["wall_s"])
    walls = {g: Walls(statistics.median(w), min(w), max(w)) for g, w in walls_of.items()}
    groups = _groups()
    scale = {g: walls[g].typical / costs[g]["wall"] for g in walls if costs and g in costs}
    bench_meta = ResultsFolder(path.parents[1]).benchmarks()
    rows, measured, left_out = [], [], 0
    for c in rf.records(bench_meta):
        key = f"{c.benchmark}-{c.index}"
        if key not in groups or not c.measured:
            continue
        procs, _ = c.processes()
        if not procs or len(procs) < 3:
            continue
        logs = np.log([np.median(p) for p in procs])
        if math.exp(float(np.median(logs))) < WIDTH_FLOOR_S:
            continue
        g = groups[key]
        if g not in walls:
            left_out += 1
            continue
        seconds = ((costs or {}).get(g) or {}).get("seconds", {}).get(key)
        cost = (seconds["setup"] + seconds["samples"]) * scale[g] if seconds and g in scale else 0.0
        sd = float(np.std(logs, ddof=1))
        rows.append(Row(key, g, sd, cost))
        measured.append(projected_half_width(sd, len(procs)))
    if not rows:
        raise ValueError(f"{path}: no timed row of 1 ms or more with three processes in a shared group")
    return Run(rows, walls, runs["round_wall_s"][0], runs["budget_s"], runs.get("rounds_planned") or 12,
               float(np.median(measured)), left_out)


def _cited() -> tuple[list, list]:
    """The suite's benchmarks and the cited profile's tasks, as `make bench`'s runner chooses them."""
    from tape_vs_trace.running import profiles
    from tape_vs_trace.running import runner as suite_runner

    benchmarks = suite_runner.discover(lambda _: None)
    selection = suite_runner.select(benchmarks, None, profiles.get("cited").selection)
    return benchmarks, suite_runner.tasks(benchmarks, selection, None)


def _groups() -> dict[str, str]:
    """The cited profile's timed combinations in shared groups, by worker key."""
    from tape_vs_trace.running.plan import group

    return {t.id: group(t.framework, [t]) for t in _cited()[1] if not t.fresh and t.kind == "time"}


def project(paths: list[Path], budgets: list[float] | None, costs: dict | None) -> list[str]:
    lines = []
    for path in paths:
        run = read_run(path, costs)
        lines.append(f"{path.name}: {len(run.rows)} rows, measured {run.measured:.1%} (t half-widths of its own "
                     "processes); group walls after round 1 (median) "
                     + ", ".join(f"{g} {w.typical:.1f} s" for g, w in sorted(run.walls.items()))
                     + (f"; {run.left_out} rows left out, their group not run after round 1" if run.left_out else ""))
        for b in budgets or [run.budget]:
            cells = []
            for name, rule in RULES.items():
                if name == "parts" and not all(r.cost > 0 for r in run.rows):
                    continue
                processes = replay(run.rows, run.walls, run.first, b, run.rounds, rule)
                cells.append(f"{name} {median_width(run.rows, processes):.1%}")
            lines.append(f"  runner budget {b:.0f} s: " + ", ".join(cells))
    return lines


def measure_costs(out: Path) -> None:
    """One worker process of each shared group of the cited profile's round 2, alone on this host: its wall and
    each combination's set-up and samples (the worker's "seconds")."""
    from tape_vs_trace.running.plan import group, round_plans
    from tape_vs_trace.running.processes import run_worker, setup_caches

    benchmarks, chosen = _cited()
    found_all = {}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        caches = setup_caches(chosen, benchmarks, scratch, {}, print)
        for framework, batch in round_plans(chosen, 1, {}):
            g = group(framework, batch)
            if not g:
                continue
            start = time.perf_counter()
            found, why = run_worker(framework, batch, caches, scratch, g.replace(" ", "_"))
            found_all[g] = {"wall": time.perf_counter() - start, "seconds": found.get("seconds", {}), "error": why}
            print(f"{g}: {found_all[g]['wall']:.1f} s {why}", flush=True)
    out.write_text(json.dumps(found_all, indent=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("costs")
    c.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("project")
    p.add_argument("results", type=Path, nargs="+")
    p.add_argument("--budgets", default="", help="runner budgets in seconds, comma-separated (default: the file's)")
    p.add_argument("--costs", type=Path, help="the costs file of `costs` (the parts rule needs it)")
    args = parser.parse_args(argv)
    if args.command == "costs":
        measure_costs(args.out)
        return 0
    try:
        budgets = [float(b) for b in args.budgets.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--budgets takes seconds separated by commas, not {args.budgets!r}")
    try:
        costs = json.loads(args.costs.read_text()) if args.costs else None
        print("\n".join(project(args.results, budgets, costs)))
    except (OSError, ValueError, asv_files.ResultFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
