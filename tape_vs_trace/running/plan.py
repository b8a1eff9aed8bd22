"""The worker runner's plan (`tape-vs-trace run`): which combinations of the one grid (running.grid) a selection
chooses, the task of each chosen combination (its rounds, samples, process-wide settings, and whether it needs a
process of its own), and the processes of each round (round_plans); the rule that lets a later round start within a
budget, and the part of a round that runs where the whole would not fit (partial_round)."""

from __future__ import annotations

import importlib
import itertools
import sys
from collections.abc import Callable
from typing import Any

from implementations import frameworks
from tape_vs_trace.results.asv_files import literal
from tape_vs_trace.results.intervals import projected_half_width
from tape_vs_trace.running import grid, profiles
from tape_vs_trace.running.outcomes import Task
from tape_vs_trace.running.worker import ROOT

MIN_ROUNDS = 3  # rounds a budget never cuts: the fewest processes whose t interval is worth printing
# round_plans' process layout, recorded in the result file: tape_vs_trace.results.history.LAYOUTS lists each one it had
LAYOUT = "worker-compiled-apart"
METHOD = "method"  # fresh_process_shared_across: the class's fresh methods of one combination share a process
# A shared process is measured again in the same round while its copies together take at most COPY_SHARE of the
# wall of the round's slowest shared process, at most MAX_COPIES times: on a noisy host each process draws its own
# speed, and processes of one round draw independently (docs/history.md), so a cheap process buys processes.
COPY_SHARE = 0.5
MAX_COPIES = 3
# Copies go by spread (spread_copies) once every timed row of 1 ms or more has this many processes; by cost before.
SPREAD_PROCESSES = 3


class RunError(Exception):
    """Bad input or a step that cannot go on: printed as one line by the CLI."""


def discover(log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The suite's benchmarks as asv discovers them (running.grid.discover), for this process's device (TVT_DEVICE
    decides); a RunError of one line where a benchmark file cannot be imported."""
    try:
        return grid.discover(log)
    except grid.DiscoveryError as exc:
        raise RunError(str(exc)) from None


def _class_attr(name: str, attr: str, default: Any) -> Any:
    """An attribute of the benchmark's method, else of its class (asv's lookup order)."""
    module_name, class_name, method = name.rsplit(".", 2) if name.count(".") >= 2 else (*name.split("."), None)
    module = importlib.import_module(f"benchmarks.{module_name}")
    cls = getattr(module, class_name)
    for source in (getattr(cls, method, None) if method else None, cls):
        if source is not None and hasattr(source, attr):
            return getattr(source, attr)
    return default


def values_of(bench: dict[str, Any], combination: tuple) -> dict[str, str]:
    """A combination's parameters by name, each value read once from asv's stored repr (asv_files.literal)."""
    return {n: str(literal(v)) for n, v in zip(bench.get("param_names", []), combination, strict=True)}


def select(benchmarks: list[dict[str, Any]], regexes: list[str] | None,
           rows: tuple[Any, ...] = ()) -> dict[str, list[int]]:
    """The chosen combinations, benchmark -> indices: by what they are where `rows` (profiles.Rows) are given, from
    the one grid of the discovered `benchmarks` (running.grid), as the profiles and the GPU chunks select; else by
    asv's -b rule (asv.benchmarks.Benchmarks: a regex matches `name(param, ...)`), as a user's -b asks."""
    if rows:
        return grid.by_benchmark(profiles.select(rows, grid.combinations(benchmarks)), benchmarks)
    from asv.benchmarks import Benchmarks

    chosen = Benchmarks(_config(), benchmarks, regex=regexes or None)
    selection = {}
    for name in chosen:
        indices = chosen.benchmark_selection[name]
        selection[name] = [0] if indices is None else list(indices)
    return selection


def _config() -> Any:
    from asv.config import Config

    return Config.load(str(ROOT / "asv.conf.json"))


def paired_across_modes(device: str) -> set[str]:
    """The benchmarks of a paired experiment that divides an eager point by a compiled one (compiling the
    gradient): a paired ratio divides two samples of one sweep of one process, so their compiled combinations stay
    in the process of the others."""
    from implementations import experiments

    return {experiments.asv_combination(e, e.points[0], device)[0] for e in experiments.experiments(device)
            if len({p.mode == "compiled" for p in e.points}) > 1}


def tasks(benchmarks: list[dict[str, Any]], selection: dict[str, list[int]], rounds: int | None) -> list[Task]:
    """One task per selected combination. A time benchmark runs `rounds` processes (its own `rounds` without it, and
    always where it needs a process of its own); a track benchmark's value is a count, taken once."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks.common import process_settings

    by_name = {b["name"]: b for b in benchmarks}
    together = paired_across_modes(frameworks.detect_device())
    found = []
    for name, indices in selection.items():
        bench = by_name[name]
        combos = list(itertools.product(*bench["params"])) if bench["params"] else [()]
        fresh = bool(_class_attr(name, "fresh_process", False))
        across = _class_attr(name, "fresh_process_shared_across", None) if fresh else None
        timed = bench["type"] == "time"
        own = int(bench.get("rounds", 1))
        for i in indices:
            values = values_of(bench, combos[i])
            compiled = values.get("mode") == "compiled" and name not in together
            # `rounds` buys processes where they are cheap (a round costs two start-ups per framework); a combination
            # that needs a fresh process (a cold compile) keeps its own count.
            found.append(Task(name, i, values.get("framework", "torch"), "time" if timed else "track",
                              (own if fresh or not rounds else rounds) if timed else 1,
                              int(bench.get("repeat") or 1) if timed else 1, fresh, compiled,
                              process_settings(values), _point(name, values, across)))
    return found


def _point(name: str, values: dict[str, str], across: str | None) -> str:
    """The fresh process a combination shares with the others of its point: its name and its values but `across`
    ("" where it shares none); its class and all its values where `across` is METHOD."""
    if across is None:
        return ""
    if across == METHOD:
        return f"{name.rsplit('.', 1)[0]}({', '.join(f'{k}={v}' for k, v in values.items())})"
    if across not in values:
        raise RunError(f"{name}: fresh_process_shared_across names {across!r}, which is not one of its parameters")
    return f"{name}({', '.join(f'{k}={v}' for k, v in values.items() if k != across)})"


def rotated(items: list, r: int) -> list:
    """`items` rotated left by `r` (the round): every round starts somewhere else."""
    if not items:
        return items
    r %= len(items)
    return items[r:] + items[:r]


def group(framework: str, batch: list[Task]) -> str:
    """The shared process group of a round's process ("" for a fresh one): its framework, whether it holds the
    compiled combinations, and its process-wide settings; what copies() counts and the run's record names."""
    first = batch[0]
    if first.fresh:
        return ""
    return f"{framework} {'compiled' if first.compiled else 'others'} {first.settings[0]}" + \
        (" float64" if first.settings[1] else "")


def copies(walls: dict[str, float]) -> dict[str, int]:
    """Processes per round of each shared group, from each group's cost (the wall of its cheapest process so far):
    as many as fit in COPY_SHARE of the slowest group's cost, at least one, at most MAX_COPIES. A group whose cost
    is unknown or not positive gets one."""
    known = {g: w for g, w in walls.items() if w > 0}
    if not known:
        return {}
    budget = COPY_SHARE * max(known.values())
    return {g: max(1, min(MAX_COPIES, int(budget // w))) for g, w in known.items()}


def spread_copies(walls: dict[str, float], spreads: dict[str, list[tuple[float, int]]]) -> dict[str, int]:
    """Processes per round of each shared group, from what a further process of each would narrow: `spreads` holds
    per group, for each of its timed rows of 1 ms or more, the standard deviation of the logarithms of its
    per-process medians and its processes so far. Every group runs once; further processes, together within
    COPY_SHARE of the slowest group's cost (`walls`, as in copies()) and at most MAX_COPIES per group, go one at a
    time to the group whose next process lowers the sum of its rows' squared half-widths most per second. The
    spread of a row sets its width on a noisy host more than its group's cost does (docs/history.md). Where a row
    has fewer than SPREAD_PROCESSES processes its spread is not known yet: copies() decides."""
    known = {g: w for g, w in walls.items() if w > 0}
    rows = [n for g in known for _, n in spreads.get(g, [])]
    if not known or not rows or min(rows) < SPREAD_PROCESSES:
        return copies(walls)
    envelope, spent = COPY_SHARE * max(known.values()), 0.0
    runs = dict.fromkeys(known, 1)

    def gain(g: str) -> float:  # the squared widths one more process of g takes off, per second of its cost
        k = runs[g] - 1
        return sum(projected_half_width(sd, n + k) ** 2 - projected_half_width(sd, n + k + 1) ** 2
                   for sd, n in spreads.get(g, [])) / known[g]

    while True:
        open_ = [g for g in known if runs[g] < MAX_COPIES and spent + known[g] <= envelope and gain(g) > 0]
        if not open_:
            return runs
        best = max(open_, key=gain)
        runs[best] += 1
        spent += known[best]


def affordable(repeats: dict[str, int], cheapest: dict[str, float], elapsed: float, expected: float,
               budget: float | None) -> dict[str, int]:
    """`repeats` where the round with its copies is expected to end within `budget` (`expected`: the round's
    seconds by next_round_fits; a copy costs its group's `cheapest` wall), else none: the first MIN_ROUNDS run
    whatever they cost, so on a host where they overrun the budget their copies are what gives way."""
    if budget is None or not repeats:
        return repeats
    extra = sum((n - 1) * cheapest.get(g, 0.0) for g, n in repeats.items())
    return repeats if elapsed + expected + extra <= budget else {}


def round_plans(all_tasks: list[Task], r: int, repeats: dict[str, int] | None = None) -> list[tuple[str, list[Task]]]:
    """The processes of round `r`: per framework (their order alternating by round), one process for the tasks
    that share one and are not compiled, one for the compiled ones (their order alternating too), each of them split
    by process-wide settings (Task.settings: a precision set for one combination holds for every other in the
    process), each with its benchmarks and each benchmark's combinations rotated by `r`; then a process per fresh
    task, or per point where fresh tasks share one (Task.point: a point's phase rows read one compile). Compiled
    programs resident in a process slowed JAX's op-by-op transformer step beside them by a fifth (docs/history.md);
    which combinations count as compiled here is Task.compiled (paired_across_modes keeps some with the others).
    `repeats` (copies()) measures a shared group's process more than once in the round, each copy after the first
    with the order rotated one further and without the counts (a count is taken once)."""
    frameworks = sorted({t.framework for t in all_tasks}, key=lambda f: (f != "torch", f))
    if r % 2:
        frameworks.reverse()
    plans = []
    for framework in frameworks:
        due = [t for t in all_tasks if t.framework == framework and t.rounds > r]
        for compiled in (True, False) if r % 2 else (False, True):
            for settings in sorted({t.settings for t in due if not t.fresh and t.compiled == compiled}):
                shared = [t for t in due if not t.fresh and t.compiled == compiled and t.settings == settings]
                for copy in range((repeats or {}).get(group(framework, shared), 1)):
                    batch = shared if copy == 0 else [t for t in shared if t.kind == "time"]
                    if not batch:
                        break
                    names = rotated(list(dict.fromkeys(t.name for t in batch)), r + copy)
                    plans.append((framework, [t for n in names
                                              for t in rotated([t for t in batch if t.name == n], r + copy)]))
        fresh: dict[str, list[Task]] = {}
        for t in due:
            if t.fresh:
                fresh.setdefault(t.point or t.id, []).append(t)
        plans += [(framework, batch) for batch in fresh.values()]
    return plans


def next_round_fits(r: int, elapsed: float, walls: list[float], budget: float | None) -> tuple[bool, float]:
    """Whether round `r` (0-based) starts, `elapsed` seconds into a run whose rounds so far took `walls`, and the
    seconds it is expected to take: the slowest round since the first (whose cold compiles and shared counts
    later rounds do not repeat), the first where only it ran. Without a budget every round starts; with one the
    first MIN_ROUNDS always do (an interval needs processes), the others only while they fit."""
    expected = max(walls[1:] or walls or [0.0])
    if budget is None or r < MIN_ROUNDS:
        return True, expected
    return elapsed + expected <= budget, expected


def partial_round(plans: list[tuple[str, list[Task]]], walls: dict[str, float],
                  left: float) -> list[tuple[str, list[Task]]]:
    """The processes of a round that would not fit whole which still fit in the `left` seconds of a budget, in the
    round's order, each expected at `walls` of its group (the slowest of its processes since the first round): a
    process in no group (a fresh one) or of a group with no such wall is left out, as is one that would not fit
    after those before it. Each process draws its own speed, so the budget's last seconds buy processes whole
    (docs/history.md)."""
    chosen, spent = [], 0.0
    for framework, batch in plans:
        shared = group(framework, batch)
        expected = walls.get(shared) if shared else None
        if expected is None or not expected > 0 or spent + expected > left:
            continue
        chosen.append((framework, batch))
        spent += expected
    return chosen
