"""What a run's budget and copies rule would make of a committed run's spreads: the projected median 95 % half-width
(times of 1 ms or more) of `make bench`'s worker runner, from a result file alone.

Each timed row of a shared process group keeps the between-process SD of the logarithms of its process medians in
that file; each group costs its median process wall after round 1 there. Rounds after the first are replayed with
what the runner would do: every group once a round and its copies by `suite_plan.spread_copies` (the committed rule,
the runner's own function), until the budget left after the file's first round runs out (the last round in part,
whole processes that fit). Each row's half-width is then `intervals.projected_half_width` of its SD at the
processes it got. The alternative rule `parts` gives a copy only the combinations of a group that a further
process narrows most per second (each combination's set-up and samples from a costs file that `costs` measures on
this host, scaled to the file's group walls; the group's start-up paid once per copy), within the same envelope.

    python scripts/copies_model.py costs --out /tmp/costs.json        # one process per group, this host
    python scripts/copies_model.py project RESULT.json [...] [--budgets 480,540,600] [--costs /tmp/costs.json]

A projection, not a measurement: the model holds each row's spread fixed and each group's wall at its median.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tape_vs_trace import result_files  # noqa: E402
from tape_vs_trace.intervals import WIDTH_FLOOR_S, projected_half_width  # noqa: E402
from tape_vs_trace.suite_plan import COPY_SHARE, spread_copies  # noqa: E402


@dataclass(frozen=True)
class Row:
    key: str  # "<benchmark>-<index>", the worker's name of the combination
    group: str
    sd: float  # SD of the log process medians in the file
    cost: float = 0.0  # seconds of set-up and samples in one process (the parts rule only)


def median_width(rows: list[Row], processes: dict[str, int]) -> float:
    """The median over rows of the projected relative half-width at the processes each got."""
    return float(np.median([projected_half_width(r.sd, processes[r.key]) for r in rows]))


def committed(rows: list[Row], walls: dict[str, float], left: float) -> dict[str, int]:
    """Processes per row after round 1 (one each) and the rounds `left` seconds hold under the committed rule."""
    processes = {r.key: 1 for r in rows}
    while True:
        spreads: dict[str, list[tuple[float, int]]] = {}
        for r in rows:
            spreads.setdefault(r.group, []).append((r.sd, processes[r.key]))
        runs = spread_copies(walls, spreads)
        ran = False
        for g in sorted(walls, key=lambda g: -walls[g]):
            for _ in range(runs.get(g, 1)):
                if walls[g] > left:
                    continue
                left -= walls[g]
                ran = True
                for r in rows:
                    if r.group == g:
                        processes[r.key] += 1
        if not ran:
            return processes


def parts(rows: list[Row], walls: dict[str, float], left: float) -> dict[str, int]:
    """As committed(), but each round's copies hold single combinations chosen one at a time where they narrow most
    per second (their group's start-up paid by the first of a group), within COPY_SHARE of the slowest wall."""
    startup = {g: max(0.0, w - sum(r.cost for r in rows if r.group == g)) for g, w in walls.items()}
    envelope = COPY_SHARE * max(walls.values())
    processes = {r.key: 1 for r in rows}
    while True:
        extra: dict[str, set[str]] = {}
        spent = 0.0
        while True:
            best, best_gain, best_cost = None, 0.0, 0.0
            for r in rows:
                taken = extra.get(r.group, set())
                if r.key in taken:
                    continue
                cost = r.cost + (0.0 if taken else startup[r.group])
                if spent + cost > envelope or cost <= 0:
                    continue
                n = processes[r.key] + 1  # after this round's whole process
                gain = (projected_half_width(r.sd, n) ** 2 - projected_half_width(r.sd, n + 1) ** 2) / cost
                if gain > best_gain:
                    best, best_gain, best_cost = r, gain, cost
            if best is None:
                break
            extra.setdefault(best.group, set()).add(best.key)
            spent += best_cost
        round_cost = sum(walls.values()) + spent
        if round_cost > left:
            return processes
        left -= round_cost
        for r in rows:
            processes[r.key] += 1 + (r.key in extra.get(r.group, set()))


RULES = {"committed": committed, "parts": parts}


def read_run(path: Path, costs: dict | None = None) -> tuple[list[Row], dict[str, float], float, float, float]:
    """The file's timed rows of 1 ms or more in shared groups (three processes at least), each group's median wall
    after round 1, its first round's wall, its budget and its measured median half-width over those rows."""

    rf = result_files.read(path)
    runs = (rf.details or {}).get("worker_runs") or {}
    if not runs.get("per_process") or not runs.get("budget_s"):
        raise SystemExit(f"error: {path} holds no worker run under a budget (make bench's runner writes one)")
    walls_of: dict[str, list[float]] = {}
    for p in runs["per_process"]:
        if p["group"] and p["round"] > 1:
            walls_of.setdefault(p["group"], []).append(p["wall_s"])
    walls = {g: statistics.median(w) for g, w in walls_of.items()}
    groups = _groups()
    scale = {g: walls[g] / costs[g]["wall"] for g in walls if costs and g in costs}
    bench_meta = json.loads((path.parents[1] / "benchmarks.json").read_text())
    rows, measured = [], []
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
        seconds = ((costs or {}).get(g) or {}).get("seconds", {}).get(key)
        cost = (seconds["setup"] + seconds["samples"]) * scale[g] if seconds and g in scale else 0.0
        sd = float(np.std(logs, ddof=1))
        rows.append(Row(key, g, sd, cost))
        measured.append(projected_half_width(sd, len(procs)))
    return rows, walls, runs["round_wall_s"][0], runs["budget_s"], float(np.median(measured))


def _groups() -> dict[str, str]:
    """The cited profile's timed combinations in shared groups, by worker key."""
    from tape_vs_trace import profiles, suite_runner
    from tape_vs_trace.suite_plan import group

    benchmarks = suite_runner.discover(lambda _: None)
    chosen = suite_runner.tasks(benchmarks, suite_runner.select(benchmarks, list(profiles.get("cited").bench)), None)
    return {t.id: group(t.framework, [t]) for t in chosen if not t.fresh and t.kind == "time"}


def project(paths: list[Path], budgets: list[float] | None, costs: dict | None) -> list[str]:
    lines = []
    for path in paths:
        rows, walls, first, budget, measured = read_run(path, costs)
        lines.append(f"{path.name}: {len(rows)} rows, measured {measured:.1%} (t half-widths of its own processes); "
                     f"group walls after round 1 " + ", ".join(f"{g} {w:.1f} s" for g, w in sorted(walls.items())))
        for b in budgets or [budget]:
            cells = []
            for name, rule in RULES.items():
                if name == "parts" and not all(r.cost > 0 for r in rows):
                    continue
                cells.append(f"{name} {median_width(rows, rule(rows, walls, b - first)):.1%}")
            lines.append(f"  runner budget {b:.0f} s: " + ", ".join(cells))
    return lines


def measure_costs(out: Path) -> None:
    """One worker process of each shared group of the cited profile's round 2, alone on this host: its wall and
    each combination's set-up and samples (the worker's "seconds")."""
    from tape_vs_trace import profiles, suite_runner
    from tape_vs_trace.suite_plan import group, round_plans
    from tape_vs_trace.suite_processes import run_worker, setup_caches

    benchmarks = suite_runner.discover(lambda _: None)
    chosen = suite_runner.tasks(benchmarks, suite_runner.select(benchmarks, list(profiles.get("cited").bench)), None)
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
    except (OSError, ValueError, result_files.ResultFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
