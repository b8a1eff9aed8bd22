"""The chunks of `scripts/gpu_bench.sh` and their plan: which benchmarks each run selects, in which order, and how
long each is estimated to take, from per-phase costs that the pre-flight measured (tape_vs_trace/preflight.py) or,
where it did not, from the defaults below (marked assumed).

    python scripts/gpu_chunks.py plan quick|full [--costs FILE] [--budget S] [--spent S] [--runner worker|asv]
        # the plan on stderr; on stdout a line per chunk, tab-separated: name, timeout s, estimated s, rounds
        # (0: the benchmarks' own), -b regex
    python scripts/gpu_chunks.py estimate [--costs FILE] [--profile quick|full] [--runner worker|asv] [--summary]

The arithmetic, one for every use. A chunk is one run (`tape-vs-trace run`, or `asv run` with --runner asv) over
the benchmarks its regex selects; asv matches a parametrised benchmark's `-b` regex against
`module.Class.method(param, ...)`, each parameter as its repr (`'torch'`). It costs the suite's discovery, then
per round and framework one worker process: start-up, the inputs of each (workload, size, dtype) it sets up, and
per combination its build (the eager step with its warm-up, or the compile; a count: the probe's form of the step)
and its samples: one call that sizes the loop, then `repeat` samples of `calls` steps each (sampling.calls_for: at
least MIN_SAMPLE_SECONDS a sample). A combination that needs a process of its own (`fresh_process`: a CUDA peak, a
cold compile) pays start-up and inputs itself; under asv run every combination and round does, counts included.
A time benchmark runs the chunk's rounds (its own without them), a count once (asv: every round).

Plain Python: it imports the benchmark files (never a framework) to list the grid of a CUDA machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python scripts/gpu_chunks.py` puts scripts/ on the path, not the repository
    sys.path.insert(0, str(ROOT))

from implementations import sampling  # noqa: E402  (imports no framework)

# One H200, everything included: set-up, calibration, pre-flight, the chunks, the copies.
QUICK_BUDGET_S = 420
# What a quick run spends before the chunks when nobody has timed it (the estimate command; gpu_bench.sh passes
# what it spent): offline set-up, machine record and calibration, assumed; and the pre-flight's budget.
SETUP_S = 40.0
PREFLIGHT_S = 60.0
SAVE_S = 2.0  # the worker runner saves and scrubs the results after every round, assumed
MIN_TIMEOUT_S = 300  # a chunk's timeout: twice its estimate, never under this (gpu_bench.sh cuts it to the budget)

# The defaults, used where the pre-flight timed nothing: per phase, by (framework, workload), "*" for any other and
# "" for a benchmark without a workload (the harness's 1 ms spin), in seconds. Chosen so that one eager mlp process
# adds up to at least what an asv process of it took on the H200 (docs/history.md); the inputs as generated (the
# input cache makes them cheaper), the compiles and JAX's op-by-op first calls (each primitive compiled on its first
# call) are assumed.
DEFAULTS: dict[str, dict[tuple[str, str], float]] = {
    "discovery": {("*", "*"): 8.0},
    "startup": {("torch", "*"): 12.0, ("jax", "*"): 10.0},
    "inputs": {("*", "mlp"): 4.0, ("*", "transformer"): 8.0, ("*", "*"): 2.0},
    "eager_build": {("torch", "*"): 3.0, ("jax", "*"): 5.0, ("jax", "transformer"): 12.0, ("jax", "lstm"): 12.0,
                    ("*", ""): 0.5},
    "eager_step": {("*", "mlp"): 0.05, ("*", "transformer"): 0.5, ("*", "swiglu"): 0.02, ("*", ""): 1e-3,
                   ("*", "*"): 0.1},
    "compile": {("torch", "mlp"): 12.0, ("torch", "transformer"): 45.0, ("torch", "*"): 25.0,
                ("jax", "mlp"): 4.0, ("jax", "transformer"): 12.0, ("jax", "*"): 10.0},
    "compiled_step": {("*", "mlp"): 0.05, ("*", "transformer"): 0.5, ("*", "swiglu"): 0.02, ("*", "*"): 0.1},
}
# The step a count's probe builds: PyTorch's probes run the eager tape; JAX's jit the step (peak bytes, flops).
PROBE_BUILD = {"torch": "eager_build", "jax": "compile"}


class CostsError(Exception):
    """A cost file that cannot be read or is not a pre-flight's: one line on stderr."""


class Costs:
    """Per-phase seconds: measured (a pre-flight's file) where it timed them, else DEFAULTS, assumed; a phase it
    stopped counts at no less than how long it had run."""

    def __init__(self, measured: dict[str, Any] | None = None, source: str = ""):
        self.measured = measured
        self.source = source

    @classmethod
    def load(cls, path: Path) -> Costs:
        try:
            data = json.loads(Path(path).read_text())
        except OSError as exc:
            raise CostsError(f"cannot read cost file {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise CostsError(f"cost file {path} is not JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("frameworks"), dict):
            raise CostsError(f"cost file {path} has no 'frameworks' object: not a pre-flight's "
                             "(python -m tape_vs_trace.preflight)")
        for fw, entry in data["frameworks"].items():
            if not isinstance(entry, dict):
                raise CostsError(f"cost file {path}: frameworks.{fw} is not an object")
            for phase, value in entry.items():
                records = [value] if phase == "startup" else list(value.values()) if isinstance(value, dict) else [0]
                for rec in records:
                    _check_record(rec, path, f"frameworks.{fw}.{phase}")
        if "discovery" in data:
            _check_record(data["discovery"], path, "discovery")
        return cls(data, str(path))

    def get(self, phase: str, framework: str = "", workload: str = "", assumed: set[str] | None = None) -> float:
        """Seconds of `phase`; where it is not measured, its default, and its name added to `assumed`."""
        rec = self._record(phase, framework, workload)
        if rec is not None and "seconds" in rec:
            return float(rec["seconds"])
        table = DEFAULTS[phase]
        default = next(table[k] for k in ((framework, workload), ("*", workload), (framework, "*"), ("*", "*"))
                       if k in table)
        if assumed is not None:
            why = f" (not timed: {rec['not_timed']})" if rec is not None else ""
            assumed.add(" ".join(filter(None, (framework, phase, workload))) + why)
        return max(default, float(rec.get("over_s", 0.0))) if rec is not None else default

    def _record(self, phase: str, framework: str, workload: str) -> dict[str, Any] | None:
        if self.measured is None:
            return None
        if phase == "discovery":
            return self.measured.get("discovery")
        entry = self.measured["frameworks"].get(framework, {}).get(phase)
        if phase == "startup" or entry is None:
            return entry
        return entry.get(workload)

    def describe(self) -> str:
        if self.measured is None:
            return "estimated from the stated defaults (no pre-flight)"
        return f"measured by the pre-flight ({self.source}, device {self.measured.get('device', '?')})"


def _check_record(rec: Any, path: Path, where: str) -> None:
    ok = isinstance(rec, dict) and (
        (isinstance(rec.get("seconds"), int | float) and rec["seconds"] >= 0) or isinstance(rec.get("not_timed"), str))
    if not ok:
        raise CostsError(f"cost file {path}: {where} is neither {{'seconds': s >= 0}} nor {{'not_timed': why}}")


@dataclass(frozen=True)
class Combo:
    """One benchmark x parameter combination, as the runners see it."""

    name: str  # asv's `module.Class.method(param, ...)`, what a -b regex is matched against
    framework: str
    kind: str  # 'time' or 'track'
    rounds: int  # the class's own
    repeat: int
    fresh: bool  # a process of its own (fresh_process)
    skipped: bool = False  # its setup skips it (the class's rules, evaluated here without a framework)
    workload: str = ""
    size: str = ""
    dtype: str = "float32"
    mode: str = ""  # 'eager', 'compiled', ...; a compile-time benchmark's cache ('cold', 'warm')
    method: str = ""


@dataclass(frozen=True)
class Chunk:
    name: str
    regex: str  # -b
    rounds: int = 0  # processes per timed combination; 0: each benchmark's own


@dataclass
class Estimate:
    seconds: float = 0.0
    combinations: int = 0
    processes: int = 0
    rounds: int = 0
    assumed: set[str] = field(default_factory=set)


# The matched program (written attention) where a workload has program axes: the other programs have their own chunk.
_MATCHED = r"('matched', )?('written', )?"
_F32 = _MATCHED + r"'float32', 'highest'"
_PRECISIONS = _MATCHED + r"('float32', 'tf32'|'bfloat16', 'highest')"
_OTHER = r"('default', '\w+'|'matched', 'fused'), 'float32', 'highest'"
# The quick profile, the most cited benchmarks, in priority order: gpu_bench.sh starts a chunk only while its
# estimate fits in what is left of the budget, so the last ones are the first to go (a later, smaller one may still
# fit). Timings run in 2 rounds, the fewest that give a between-process interval. A chunk that selects nothing on
# this grid (the remat curve's step times, on a suite without remat.RematCurve_*) is left out and named.
QUICK: tuple[Chunk, ...] = (
    Chunk("gradstep-eager", rf"recording\.GradStep_(mlp|transformer)\.time_step\(.*'eager', ('unrolled', )?{_F32}",
          2),
    Chunk("gradstep-compiled",
          rf"recording\.GradStep_(mlp|transformer)\.time_step\(.*'compiled', ('unrolled', |'scan', )?{_F32}", 2),
    Chunk("remat-peaks", r"remat\.RematCost_\w+\.track_peak_bytes\(", 2),
    Chunk("remat-curve-policies",
          r"remat\.RematCurve_\w+\.time_step\(.*'L12-B8-S1024-D1024', 'eager', ('unrolled', )?'(plain|remat_\w+)'", 2),
    Chunk("custom-swiglu", rf"custom_backward\.CustomStep_swiglu\.time_step\(.*'eager', {_F32}", 2),
    Chunk("inference-transformer", r"inference\.\w+_transformer\.", 2),
    # the transformer's out-of-the-box program and fused attention, against the matched program above
    Chunk("gradstep-eager-programs",
          rf"recording\.GradStep_transformer\.time_step\(.*'eager', 'unrolled', {_OTHER}", 2),
    Chunk("gradstep-compiled-programs",
          rf"recording\.GradStep_transformer\.time_step\(.*'compiled', ('unrolled'|'scan'), {_OTHER}", 2),
    Chunk("gradstep-eager-precisions",
          rf"recording\.GradStep_(mlp|transformer)\.time_step\(.*'eager', ('unrolled', )?{_PRECISIONS}", 2),
    Chunk("gradstep-compiled-precisions",
          rf"recording\.GradStep_(mlp|transformer)\.time_step\(.*'compiled', ('unrolled', |'scan', )?{_PRECISIONS}",
          2),
)

# The full profile: one chunk per benchmark class, these first (most cited), then every other class discovered.
FULL_FIRST = ("harness.", "recording.GradStep_mlp", "recording.GradStep_transformer",
              "remat.RematCost_mlp", "custom_backward.CustomStep_swiglu",
              "custom_backward.CustomMemory", "inference.")
RUNNERS = ("worker", "asv")


def discover() -> list[str]:
    """asv's names of every benchmark x parameter combination of this process's grid (TVT_DEVICE decides it)."""
    return [c.name for c in combinations()]


def combinations() -> list[Combo]:
    """Every benchmark x parameter combination of this process's grid (TVT_DEVICE decides it)."""
    from benchmarks import common

    combos = []
    for cls in common.suite_classes():
        for method in sorted(m for m in dir(cls) if m.startswith(("time_", "track_", "peakmem_", "mem_"))):
            base = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}.{method}"
            params = getattr(cls, "params", None) or []
            if params and not isinstance(params[0], list):  # asv allows one flat list for a single parameter
                params = [params]
            names = list(getattr(cls, "param_names", []))
            timed = method.startswith("time_")
            fresh = bool(getattr(getattr(cls, method), "fresh_process", getattr(cls, "fresh_process", False)))
            for values in itertools.product(*params) if params else [()]:
                p = dict(zip(names, values))
                skipped = "framework" in p and bool(cls().reason_to_skip(common.Case(p)))
                combos.append(Combo(
                    name=f"{base}({', '.join(repr(v) for v in values)})" if values else base,
                    framework=p.get("framework", "torch"), kind="time" if timed else "track",
                    rounds=int(getattr(cls, "rounds", 1)), repeat=int(getattr(cls, "repeat", 1) or 1), fresh=fresh,
                    skipped=skipped, workload=p.get("workload", ""), size=p.get("size", ""),
                    dtype=p.get("dtype", "float32"), mode=p.get("mode", p.get("cache", "")), method=method))
    return combos


def select(chunk: Chunk, combos: list[Combo]) -> list[Combo]:
    """The combinations `chunk`'s regex selects (asv's rule: re.search on the name with its parameters)."""
    pattern = re.compile(chunk.regex)
    return [c for c in combos if pattern.search(c.name)]


def rounds_of(combo: Combo, chunk: Chunk, runner: str) -> int:
    if combo.kind == "track" and runner == "worker":
        return 1
    return chunk.rounds or combo.rounds


def calls_per_sample(step_s: float) -> int:
    """sampling.calls_for's count for a step of `step_s` seconds."""
    return max(1, min(sampling.MAX_CALLS, math.ceil(sampling.MIN_SAMPLE_SECONDS / max(step_s, 1e-7))))


def combo_seconds(c: Combo, costs: Costs, assumed: set[str]) -> float:
    """One combination's share of its process: build, then samples (a count: its probe's build)."""
    if c.skipped:
        return 0.0
    fw, w = c.framework, c.workload
    if c.method == "time_compile_seconds":  # a warm cache is filled by one compile before the timed one
        return costs.get("compile", fw, w, assumed) * (2 if c.mode == "warm" else 1)
    if c.kind == "track":
        return costs.get(PROBE_BUILD.get(fw, "eager_build"), fw, w, assumed)
    compiled = c.mode == "compiled"
    build = costs.get("compile" if compiled else "eager_build", fw, w, assumed)
    step = costs.get("compiled_step" if compiled else "eager_step", fw, w, assumed)
    return build + step + c.repeat * calls_per_sample(step) * step


def process_seconds(framework: str, group: list[Combo], costs: Costs, assumed: set[str]) -> float:
    """One process running `group`: start-up, each distinct input once (the suite memoises them), the combinations.
    A process whose combinations all skip imports the suite and no framework."""
    live = [c for c in group if not c.skipped]
    if not live:
        return costs.get("discovery", assumed=assumed)
    inputs = {(c.workload, c.size, c.dtype) for c in live if c.workload}
    return (costs.get("startup", framework, assumed=assumed)
            + sum(costs.get("inputs", framework, w, assumed) for w, _, _ in sorted(inputs))
            + sum(combo_seconds(c, costs, assumed) for c in live))


def estimate(chunk: Chunk, combos: list[Combo], costs: Costs, runner: str = "worker") -> Estimate:
    """`chunk`'s wall time under `runner` (see the module's docstring)."""
    picked = select(chunk, combos)
    result = Estimate(combinations=sum(not c.skipped for c in picked))
    if not picked:
        return result
    result.seconds = costs.get("discovery", assumed=result.assumed)
    result.rounds = max(rounds_of(c, chunk, runner) for c in picked)
    for r in range(result.rounds):
        for fw in dict.fromkeys(c.framework for c in picked):
            due = [c for c in picked if c.framework == fw and rounds_of(c, chunk, runner) > r]
            if runner == "asv":
                groups = [[c] for c in due]
            else:
                groups = [[c for c in due if not c.fresh], *([c] for c in due if c.fresh)]
            for group in (g for g in groups if g):
                result.seconds += process_seconds(fw, group, costs, result.assumed)
                result.processes += 1
        if runner == "worker":
            result.seconds += SAVE_S
    return result


def timeout_s(seconds: float) -> int:
    return max(MIN_TIMEOUT_S, math.ceil(2 * seconds))


def full(names: list[str]) -> list[Chunk]:
    """One chunk per class of asv's `names`, FULL_FIRST order first, each benchmark's own rounds."""
    classes = list(dict.fromkeys(n.split("(")[0].rsplit(".", 1)[0] for n in names))
    first = [c for prefix in FULL_FIRST for c in classes if c.startswith(prefix)]
    return [Chunk(cls, rf"^{re.escape(cls)}\.") for cls in dict.fromkeys(first + classes)]


def profile(name: str, combos: list[Combo]) -> list[Chunk]:
    """The chunks of profile `name` ('quick' or 'full'); a ValueError names the valid profiles."""
    if name == "quick":
        return list(QUICK)
    if name == "full":
        return full([c.name for c in combos])
    raise ValueError(f"unknown profile {name!r}; valid choices: quick, full")


@dataclass
class Planned:
    chunk: Chunk
    estimate: Estimate
    cumulative_s: float | None  # None: not run (it does not fit in the budget, or selects nothing)

    @property
    def empty(self) -> bool:
        return not self.estimate.combinations


def plan(chunks: list[Chunk], combos: list[Combo], costs: Costs, runner: str, budget_s: float = 0,
         spent_s: float = 0.0) -> list[Planned]:
    """Each chunk with its estimate and, in order, the time at which it would end: a chunk that would end past
    `budget_s` (0: no budget) is left out and the next ones are tried; so is one that selects nothing."""
    found, at = [], spent_s
    for chunk in chunks:
        est = estimate(chunk, combos, costs, runner)
        fits = est.combinations > 0 and (not budget_s or at + est.seconds <= budget_s)
        if fits:
            at += est.seconds
        found.append(Planned(chunk, est, at if fits else None))
    return found


def format_plan(title: str, planned: list[Planned], costs: Costs, budget_s: float, spent_s: float,
                spent_label: str) -> list[str]:
    """The plan as printed: a row per chunk (combinations, rounds, estimate, cumulative), what does not fit, the
    assumed costs."""
    total = sum(p.estimate.seconds for p in planned)
    fitting = [p for p in planned if p.cumulative_s is not None]
    lines = [f"{title}: {len(planned)} chunks, {sum(p.estimate.combinations for p in planned)} combinations, "
             f"{sum(p.estimate.processes for p in planned)} processes, {_duration(total)}; costs "
             f"{costs.describe()}" + (f"; budget {budget_s:.0f} s" if budget_s else ""),
             f"  {'chunk':40} {'combinations':>12} {'rounds':>6} {'estimate s':>10} {'cumulative s':>12}"]
    if spent_s:
        lines.append(f"  {spent_label:40} {'':>12} {'':>6} {spent_s:10.0f} {spent_s:12.0f}")
    for p in planned:
        cumulative = f"{math.ceil(p.cumulative_s):12}" if p.cumulative_s is not None else \
            f"{'-':>12}  {'selects nothing on this grid' if p.empty else 'does not fit'}"
        lines.append(f"  {p.chunk.name:40} {p.estimate.combinations:12} {p.estimate.rounds:6} "
                     f"{math.ceil(p.estimate.seconds):10} {cumulative}")
    left_out = [p.chunk.name for p in planned if p.cumulative_s is None and not p.empty]
    if budget_s:
        end = math.ceil(max((p.cumulative_s for p in fitting), default=spent_s))
        lines.append(f"  fits: {len(fitting)} of {len(planned)} chunks, ending at about {end} s of {budget_s:.0f}"
                     + (f"; not run (over the budget): {', '.join(left_out)}" if left_out else ""))
    assumed = sorted(set().union(*(p.estimate.assumed for p in planned)))
    if costs.measured is None:
        lines.append("  assumed: every cost (DEFAULTS in scripts/gpu_chunks.py)")
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
        else:
            p.add_argument("--profile", choices=("quick", "full"), action="append",
                           help="the profile (repeatable; default both)")
            p.add_argument("--summary", action="store_true", help="one line: the full profile's wall time")
        p.add_argument("--costs", type=Path, help="a pre-flight's cost file (default: the stated defaults)")
        p.add_argument("--runner", choices=RUNNERS, default="worker",
                       help="tape-vs-trace run (worker, default) or asv run (a process per combination)")
    return parser


def main(argv: list[str]) -> int:
    os.environ.setdefault("TVT_DEVICE", "cuda")
    args = _parser().parse_args(argv)
    try:
        costs = Costs.load(args.costs) if args.costs else Costs()
    except CostsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    combos = combinations()
    runner_name = "tape-vs-trace run" if args.runner == "worker" else "asv run"
    if args.command == "plan":
        budget = args.budget if args.budget is not None else QUICK_BUDGET_S if args.profile == "quick" else 0
        planned = plan(profile(args.profile, combos), combos, costs, args.runner, budget, args.spent)
        for line in format_plan(f"plan of the {args.profile} profile under {runner_name}", planned, costs, budget,
                                args.spent, "(set-up and pre-flight)"):
            print(line, file=sys.stderr)
        for p in (p for p in planned if not p.empty):  # `tape-vs-trace run` refuses a regex that selects nothing
            print(f"{p.chunk.name}\t{timeout_s(p.estimate.seconds)}\t{math.ceil(p.estimate.seconds)}\t"
                  f"{p.chunk.rounds}\t{p.chunk.regex}")
        return 0
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
    return 0


def to_json(combos: list[Combo]) -> str:
    return json.dumps([asdict(c) for c in combos])


def from_json(text: str) -> list[Combo]:
    return [Combo(**c) for c in json.loads(text)]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
