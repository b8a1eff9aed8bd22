"""The compile-time depth series (recording.CompilePhases_*, docs/compile-time.md) as one run of its own, what
`make compile-series` does between the machine record and the scrub: every depth of this device's series, each
formulation, both frameworks, the cold cache, the processes per point the benchmark declares.

    python scripts/compile_series.py --machine NAME [--results DIR] [--workload W] [--framework F] [--depth N]
                                     [--formulation F] [--budget S] [--again] [--plan]

It prints the points and the estimated wall time first and refuses (exit 1, one line) a plan over --budget. Then it
runs `tape-vs-trace run` once per (workload, framework), each saved and merged into this commit's result file before
the next starts (results.merge.merge_results keeps every other row of the file), so an interrupted series loses one
part at most; a point whose first call the file already holds is not run again (--again runs it anyway).
Plain Python until the runner starts: it lists the grid from the benchmark files, importing no framework.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, Path(__file__).resolve().parent):  # the repository (implementations/) and these scripts
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import gpu_resume  # noqa: E402

from implementations import frameworks, workloads  # noqa: E402
from tape_vs_trace.results.folder import ResultsFolder  # noqa: E402
from tape_vs_trace.running import profiles  # noqa: E402

BENCHMARK = "recording.CompilePhases_*.time_compile_phase"
BUDGET_S = 720.0  # what the series may take on a 2-core host: make bench's 10 minutes and a little
# Assumed costs, rounded up from the worker record of the committed 2-core CPU run that held the chain's points
# (docs/compile-time.md): a point's process pays start-up, inputs and the compiler's warm-up on another function...
PROCESS_S = {"torch": 17.0, "jax": 3.0}
# ...and its first call: seconds at the series' shallowest depth, growing as depth ** GROWTH from there.
FIRST_CALL_S = {("torch", "chain"): 6.0, ("torch", "transformer"): 8.0, ("jax", "chain"): 0.5,
                ("jax", "transformer"): 1.5}
# Unrolled programs grow with the depth (assumed linear: the fits measured so far grew more slowly); a block
# compiled once (scan, regional) does not.
GROWTH = {"unrolled": 1.0}
RUNNER_S = 10.0  # per runner call: discovery, the save and the scrub, assumed


class SeriesError(ValueError):
    """Bad input or a plan over the budget: one line on stderr."""


@dataclass(frozen=True)
class Point:
    """One process of the series: every parameter but the phase, with the asv names of its phase rows."""

    workload: str
    framework: str
    formulation: str
    depth: int
    size: str
    names: tuple[str, ...]
    shallowest: int  # the series' first depth on this device
    rounds: int  # processes: the benchmark's own rounds on this device

    def estimate_s(self) -> float:
        growth = GROWTH.get(self.formulation, 0.0)
        first = FIRST_CALL_S[(self.framework, self.workload)] * (self.depth / self.shallowest) ** growth
        return self.rounds * (PROCESS_S[self.framework] + first)


def points(combos: list[profiles.Combo], workload: str | None = None, framework: str | None = None,
           depth: int | None = None, formulation: str | None = None) -> list[Point]:
    """The series' cold-cache points among `combos` (this device's grid), those the filters keep; a filter that
    names nothing of the series is refused in one line listing the valid choices."""
    chosen = profiles.select([profiles.rows(BENCHMARK, cache="cold")], combos)
    chosen = [c for c in chosen if not c.skipped]
    for name, value in (("workload", workload), ("framework", framework), ("formulation", formulation)):
        valid = sorted({dict(c.params)[name] for c in chosen})
        if value is not None and value not in valid:
            raise SeriesError(f"unknown {name} {value!r} of the compile series; valid choices: {', '.join(valid)}")
    device = frameworks.detect_device()
    series = {w: workloads.depth_series(w, device) for w in ([workload] if workload else
                                                              sorted({c.workload for c in chosen}))}
    if depth is not None and not any(depth in s for s in series.values()):
        valid = "; ".join(f"{w} {', '.join(map(str, s))}" for w, s in series.items())
        raise SeriesError(f"depth {depth} is in no compile series on {device}; valid choices: {valid}")
    found: dict[tuple, list[str]] = {}
    rounds = {}
    for c in chosen:
        p = dict(c.params)
        key = (c.workload, c.framework, p["formulation"], workloads.depth_of(c.workload, c.size), c.size)
        if (workload in (None, key[0]) and framework in (None, key[1]) and formulation in (None, key[2])
                and depth in (None, key[3])):
            found.setdefault(key, []).append(c.name)
            rounds[key] = c.rounds
    return [Point(*key, tuple(names), min(series[key[0]]), rounds[key]) for key, names in found.items()]


def pending(series: list[Point], held: dict[str, gpu_resume.State]) -> list[Point]:
    """The points whose first call `held` (the result file's combinations) has no value or failure for."""
    return [p for p in series if not any(n in held and "'first_call'" in n for n in p.names)]


def parts(series: list[Point]) -> dict[tuple[str, str], list[Point]]:
    """The series by (workload, framework): one runner call each, saved before the next starts."""
    out: dict[tuple[str, str], list[Point]] = {}
    for p in series:
        out.setdefault((p.workload, p.framework), []).append(p)
    return out


def estimate_s(series: list[Point]) -> float:
    return sum(p.estimate_s() for p in series) + RUNNER_S * len(parts(series))


def describe(series: list[Point], skipped: int, budget: float) -> list[str]:
    """The plan in lines: each part's points and estimate, what was held already, the total against the budget."""
    lines = []
    for (workload, framework), part in parts(series).items():
        forms = ", ".join(sorted({p.formulation for p in part}))
        depths = ", ".join(str(d) for d in sorted({p.depth for p in part}))
        lines.append(f"[compile-series] {workload}, {framework} ({forms}) at depths {depths}: "
                     f"{sum(p.rounds for p in part)} processes, about {sum(p.estimate_s() for p in part):.0f} s")
    if skipped:
        lines.append(f"[compile-series] {skipped} points held already by this commit's result file (--again runs "
                     "them)")
    total = estimate_s(series)
    lines.append(f"[compile-series] {len(series)} points, {sum(p.rounds for p in series)} processes, estimated "
                 f"{total:.0f} s ({total / 60:.1f} min; assumed costs of a quiet host, scripts/compile_series.py) "
                 f"of a {budget:.0f} s budget")
    return lines


def _result_file(results: Path, machine: str) -> Path:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return ResultsFolder(results).result_file(machine, commit)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.error = lambda message: (_ for _ in ()).throw(SeriesError(message))  # one line, not the usage block
    parser.add_argument("--machine", required=True, help="machine name (tape-vs-trace machine's)")
    parser.add_argument("--results", type=Path, default=Path("results"), help="asv results folder")
    parser.add_argument("--workload", help="one workload of the series only")
    parser.add_argument("--framework", help="one framework only (torch, jax)")
    parser.add_argument("--depth", type=int, help="one depth of the series only")
    parser.add_argument("--formulation", help="one formulation only (unrolled, scan, regional)")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help=f"seconds (default {BUDGET_S:.0f})")
    parser.add_argument("--again", action="store_true", help="run points the result file holds already")
    parser.add_argument("--plan", action="store_true", help="print the plan and the estimate only")
    return parser


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
        series = points(profiles.combinations(), args.workload, args.framework, args.depth, args.formulation)
        held = {} if args.again else gpu_resume.read(_result_file(args.results, args.machine))
        todo = pending(series, held)
        print("\n".join(describe(todo, len(series) - len(todo), args.budget)), flush=True)
        if estimate_s(todo) > args.budget:
            raise SeriesError(f"the estimate is over the {args.budget:.0f} s budget: narrow the series (--workload, "
                              "--framework, --depth) or raise --budget")
    except (SeriesError, gpu_resume.ResultsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.plan or not todo:
        return 0
    from tape_vs_trace import cli

    status = 0
    for (workload, framework), part in parts(todo).items():
        print(f"[compile-series] running {workload}, {framework}", flush=True)
        regex = profiles.names_regex(n for p in part for n in p.names)
        status = max(status, cli.main(["run", "--results", str(args.results), "--machine", args.machine,
                                       "-b", regex]))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
