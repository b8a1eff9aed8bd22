"""The chunks of `scripts/gpu_bench.sh` and their plan: which benchmark combinations each run selects, in which
order, how long each is estimated to take (scripts/gpu_costs.py: the pre-flight's costs, else stated defaults), and
which of them this machine's results for this commit already hold (scripts/gpu_resume.py).

    python scripts/gpu_chunks.py plan quick|full [--costs FILE] [--budget S] [--spent S] [--runner worker|asv]
                                 [--results FILE [--commit HASH]]
        # the plan on stderr; on stdout a line per chunk to run, tab-separated: name, timeout s, estimated s,
        # rounds (0: the benchmarks' own), -b regex (exactly its combinations still to run)
    python scripts/gpu_chunks.py estimate [--costs FILE] [--profile quick|full] [--runner worker|asv] [--summary]

A chunk selects combinations by what they are (tape_vs_trace/profiles.py: the selection `make bench`'s profiles use
too); its -b regex names exactly the combinations still to run. The arithmetic, one for every use: a chunk costs the
suite's discovery, then per round and framework one worker process: start-up, the inputs of each (workload, size,
dtype) it sets up, and per combination its build (the eager step with its warm-up, or the compile; a count: the
probe's form of the step) and its samples: one call that sizes the loop, then `repeat` samples of `calls` steps
each (sampling.calls_for). A combination that needs a process of its own (`fresh_process`: a CUDA peak, a cold
compile) pays start-up and inputs itself; under asv run every combination and round does, counts included. The
worker runner puts a round's compiled combinations in a process apart from the others. A time benchmark runs the
chunk's rounds (its own without them), a count once (asv: every round).

Plain Python: it imports the benchmark files (never a framework) to list the grid of a CUDA machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, Path(__file__).resolve().parent):  # the repository (implementations/) and these scripts
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import gpu_resume  # noqa: E402
from gpu_costs import DEFAULTS, SAVE_S, WARM_COMPILE_SHARE, Costs, CostsError  # noqa: E402,F401  (the tests')
from gpu_plan import Planned, contacts, estimate, plan, select, split  # noqa: E402,F401  (one module's API)

from tape_vs_trace import profiles  # noqa: E402
from tape_vs_trace.profiles import QUICK, Chunk, Combo  # noqa: E402,F401

# A contact's device time, the machine's start included (the target), and that start at its longest (1-2
# minutes); the command's budget leaves the rest for the tarball's transfer and the tool's own steps.
CONTACT_S = 600
MACHINE_START_S = 120
# One H200 contact's command, everything included: set-up, calibration, pre-flight, the chunks, the copies.
QUICK_BUDGET_S = 420
# What a quick run spends before the chunks when nobody has timed it (the estimate command; gpu_bench.sh passes
# what it spent): offline set-up, machine record and calibration, assumed; and the pre-flight's budget.
SETUP_S = 40.0
PREFLIGHT_S = 60.0
MIN_TIMEOUT_S = 300  # a chunk's timeout: twice its estimate, never under this (gpu_bench.sh cuts it to the budget)
RUNNERS = ("worker", "asv")


def discover() -> list[str]:
    """asv's names of every benchmark x parameter combination of this process's grid (TVT_DEVICE decides it)."""
    return [c.name for c in combinations()]


def combinations() -> list[Combo]:
    """Every benchmark x parameter combination of this process's grid (TVT_DEVICE decides it)."""
    return profiles.combinations()


def timeout_s(seconds: float) -> int:
    return max(MIN_TIMEOUT_S, math.ceil(2 * seconds))


def full(names: list[str]) -> list[Chunk]:
    return profiles.full_chunks(names)


def profile(name: str, combos: list[Combo]) -> list[Chunk]:
    """The chunks of profile `name` ('quick' or 'full'); a ValueError names the valid profiles."""
    return profiles.gpu_chunks(name, combos)


def _status(p: Planned) -> str:
    if p.cumulative_s is not None:
        return f"{math.ceil(p.cumulative_s):12}" + (f"  {p.done} of {p.done + len(p.todo)} held" if p.done else "")
    if p.finished:
        return f"{'-':>12}  done at this commit ({p.done} combinations" + (
            f", {p.failed} failed: not retried)" if p.failed else ")")
    return f"{'-':>12}  {'selects nothing on this grid' if p.empty else 'does not fit'}"


def format_plan(title: str, planned: list[Planned], costs: Costs, budget_s: float, spent_s: float,
                spent_label: str) -> list[str]:
    """The plan as printed: a row per chunk (combinations to run, rounds, estimate, cumulative), what is done
    already, what does not fit, the assumed costs."""
    total = sum(p.estimate.seconds for p in planned)
    fitting = [p for p in planned if p.cumulative_s is not None]
    lines = [f"{title}: {len(planned)} chunks, {sum(p.estimate.combinations for p in planned)} combinations to run, "
             f"{sum(p.estimate.processes for p in planned)} processes, {_duration(total)} (estimated); costs "
             f"{costs.describe()}" + (f"; budget {budget_s:.0f} s" if budget_s else ""),
             f"  {'chunk':40} {'combinations':>12} {'rounds':>6} {'estimate s':>10} {'cumulative s':>12}"]
    if spent_s:
        lines.append(f"  {spent_label:40} {'':>12} {'':>6} {spent_s:10.0f} {spent_s:12.0f}")
    for p in planned:
        lines.append(f"  {p.chunk.name:40} {p.estimate.combinations:12} {p.estimate.rounds:6} "
                     f"{math.ceil(p.estimate.seconds):10} {_status(p)}")
    left_out = [p.chunk.name for p in planned if p.cumulative_s is None and p.todo]
    if budget_s:
        end = math.ceil(max((p.cumulative_s for p in fitting), default=spent_s))
        lines.append(f"  fits: {len(fitting)} of {len(planned)} chunks, ending at about {end} s of {budget_s:.0f}"
                     + (f"; not run (over the budget): {', '.join(left_out)}" if left_out else ""))
    assumed = sorted(set().union(*(p.estimate.assumed for p in planned)))
    if costs.measured is None:
        lines.append("  assumed: every cost (DEFAULTS in scripts/gpu_costs.py)")
    elif assumed:
        lines.append(f"  assumed ({len(assumed)} costs the pre-flight did not time; DEFAULTS, or how long it ran "
                     f"if longer): {'; '.join(assumed)}")
    return lines


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"about {seconds / 60:.1f} min"
    return f"about {seconds / 3600:.1f} h"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="scripts/gpu_chunks.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in ("plan", "estimate"):
        p = sub.add_parser(name)
        if name == "plan":
            p.add_argument("profile", choices=("quick", "full"))
            p.add_argument("--budget", type=float, default=None,
                           help=f"seconds in all (default: {QUICK_BUDGET_S} for quick, none for full)")
            p.add_argument("--spent", type=float, default=0.0, help="seconds already spent before the chunks")
            p.add_argument("--results", type=Path, help="this machine's result file for this commit: what it "
                                                         "holds is not run again")
            p.add_argument("--commit", help="the commit the result file must be of")
            p.add_argument("--only", nargs="+", metavar="CHUNK", help="these chunks of the profile alone")
            p.add_argument("--planned-only", action="store_true",
                           help="list only the chunks the plan fits (default: every one still to run; the caller "
                                "starts each while its estimate fits in what is actually left)")
        else:
            p.add_argument("--profile", choices=("quick", "full"), action="append",
                           help="the profile (repeatable; default both)")
            p.add_argument("--summary", action="store_true", help="one line: the full profile's wall time")
        p.add_argument("--costs", type=Path, help="a pre-flight's cost file (default: the stated defaults)")
        p.add_argument("--runner", choices=RUNNERS, default="worker",
                       help="tape-vs-trace run (worker, default) or asv run (a process per combination)")
    return parser


def _plan(args: argparse.Namespace, combos: list[Combo], costs: Costs, runner_name: str) -> int:
    held = gpu_resume.read(args.results, args.commit)
    budget = args.budget if args.budget is not None else QUICK_BUDGET_S if args.profile == "quick" else 0
    chosen = profile(args.profile, combos)
    if args.only:
        unknown = sorted(set(args.only) - {c.name for c in chosen})
        if unknown:
            raise CostsError(f"no chunk {', '.join(unknown)} in the {args.profile} profile; valid choices: "
                             f"{', '.join(c.name for c in chosen)}")
        chosen = [c for c in chosen if c.name in args.only]
    planned = plan(chosen, combos, costs, args.runner, budget, args.spent, held)
    if args.results is not None:
        print(f"results for this commit: {args.results}" + (f" ({len(held)} combinations)" if held else
                                                             " (none yet: every chunk is to run)"), file=sys.stderr)
    for line in format_plan(f"plan of the {args.profile} profile under {runner_name}", planned, costs, budget,
                            args.spent, "(set-up and pre-flight)"):
        print(line, file=sys.stderr)
    for p in (p for p in planned if p.todo and (p.cumulative_s is not None or not args.planned_only)):
        print(f"{p.chunk.name}\t{timeout_s(p.estimate.seconds)}\t{math.ceil(p.estimate.seconds)}\t"
              f"{p.chunk.rounds}\t{p.regex}")
    return 0


def main(argv: list[str]) -> int:
    os.environ.setdefault("TVT_DEVICE", "cuda")
    args = _parser().parse_args(argv)
    try:
        costs = Costs.load(args.costs) if args.costs else Costs()
        combos = combinations()
        runner_name = "tape-vs-trace run" if args.runner == "worker" else "asv run"
        if args.command == "plan":
            return _plan(args, combos, costs, runner_name)
    except (CostsError, gpu_resume.ResultsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.summary:
        planned = plan(profile("full", combos), combos, costs, args.runner)
        total = sum(p.estimate.seconds for p in planned)
        basis = f"this machine's pre-flight ({costs.source})" if costs.measured else "the stated defaults (an H200's)"
        print(f"estimated from {basis}: the full suite under {runner_name} takes {_duration(total)} "
              f"({sum(p.estimate.processes for p in planned)} processes); for {QUICK_BUDGET_S // 60} minutes of the "
              "most cited benchmarks: scripts/gpu_bench.sh OUTDIR quick")
        return 0
    for name in args.profile or ("quick", "full"):
        budget = QUICK_BUDGET_S if name == "quick" else 0
        spent = SETUP_S + PREFLIGHT_S if name == "quick" else 0.0
        planned = plan(profile(name, combos), combos, costs, args.runner, budget, spent)
        for line in format_plan(f"{name} under {runner_name}", planned, costs, budget, spent,
                                "(set-up and pre-flight, assumed)"):
            print(line)
        if budget:
            rounds, never = contacts(planned, budget, spent)
            print(f"  contacts of {budget:.0f} s each that complete it (estimated): {len(rounds)}"
                  + (f"; fits in none: {', '.join(p.chunk.name for p in never)}" if never else ""))
            for i, taken in enumerate(rounds, 1):
                end = math.ceil(spent + sum(p.estimate.seconds for p in taken))
                print(f"    {i}: {', '.join(p.chunk.name for p in taken)} (ending at about {end} s; "
                      f"{end + MACHINE_START_S} s of {CONTACT_S} with a machine start of {MACHINE_START_S} s)")
    return 0


def to_json(combos: list[Combo]) -> str:
    return json.dumps([asdict(c) for c in combos])


def from_json(text: str) -> list[Combo]:
    return [Combo(**{**c, "params": tuple(tuple(p) for p in c.get("params", ()))}) for c in json.loads(text)]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
