"""What scripts/gpu_chunks.py plans from: the per-phase costs the pre-flight measured
(tape_vs_trace/running/preflight.py) or, where it did not, the defaults below, marked assumed; and the arithmetic that
turns them into a chunk's wall time (scripts/gpu_chunks.py's docstring states it). Plain Python: the caller puts the
repository on sys.path.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from implementations import sampling  # imports no framework
from tape_vs_trace.running.profiles import Combo

SAVE_S = 2.0  # the worker runner saves and scrubs the results after every round, assumed

# The defaults, used where the pre-flight timed nothing: per phase, by (framework, workload), "*" for any other and
# "" for a benchmark without a workload (the harness's 1 ms spin), in seconds. Chosen so that one eager mlp process
# adds up to at least what an asv process of it took on the H200 (docs/history.md); the inputs as generated, the
# compiles and JAX's op-by-op first calls (each primitive compiled on its first call) are assumed. `inputs_cached`:
# the same inputs read back from TVT_INPUT_CACHE's file by a later process (gpu_bench.sh and make bench set it), the
# median read on a loaded 2-core CPU host (docs/gpu.md), assumed to hold on a GPU machine's host (the larger for any
# other workload); the pre-flight's `inputs` is such a read (its second call): where it timed one, both are that.
DEFAULTS: dict[str, dict[tuple[str, str], float]] = {
    "discovery": {("*", "*"): 8.0},
    "startup": {("torch", "*"): 12.0, ("jax", "*"): 10.0},
    "inputs": {("*", "mlp"): 4.0, ("*", "transformer"): 8.0, ("*", "*"): 2.0},
    "inputs_cached": {("*", "mlp"): 1.0, ("*", "transformer"): 1.4, ("*", "*"): 1.4},
    "eager_build": {("torch", "*"): 3.0, ("jax", "*"): 5.0, ("jax", "transformer"): 12.0, ("jax", "lstm"): 12.0,
                    ("*", ""): 0.5},
    "eager_step": {("*", "mlp"): 0.05, ("*", "transformer"): 0.5, ("*", "swiglu"): 0.02, ("*", ""): 1e-3,
                   ("*", "*"): 0.1},
    "compile": {("torch", "mlp"): 12.0, ("torch", "transformer"): 45.0, ("torch", "*"): 25.0,
                ("jax", "mlp"): 4.0, ("jax", "transformer"): 12.0, ("jax", "*"): 10.0},
    "compiled_step": {("*", "mlp"): 0.05, ("*", "transformer"): 0.5, ("*", "swiglu"): 0.02, ("*", "*"): 0.1},
}
# A compile whose program both frameworks' persistent caches (TVT_COMPILE_CACHE, which gpu_bench.sh sets) already
# hold, as a share of its cold compile: a chunk's first round compiles cold, its later rounds read the caches. The
# pre-flight's compile_warm over its compile where it timed both; else these, the warm/cold ratios of
# recording.CompileSeconds_mlp in the committed CPU results, rounded up (docs/gpu.md), assumed to hold on a GPU.
WARM_COMPILE_SHARE = {"torch": 0.1, "jax": 0.4}
# The same for an eager step's build in a later round: JAX compiles each primitive on its first call and, with the
# caches on, persists it (implementations/jax: every executable, however small), so a later process reads them.
# JAX's: its transformer's op-by-op build with warm-up in a fresh process reading the caches over one with empty
# caches on a loaded 2-core CPU host (docs/gpu.md), its largest rounded up, assumed to hold on a GPU; PyTorch's eager
# build compiles nothing.
EAGER_WARM_SHARE = {"torch": 1.0, "jax": 0.5}
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
                             "(python -m tape_vs_trace.running.preflight)")
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
        if phase == "inputs_cached":
            phase = "inputs"  # the pre-flight times the read of the file its first, untimed call wrote
        if phase == "discovery":
            return self.measured.get("discovery")
        entry = self.measured["frameworks"].get(framework, {}).get(phase)
        if phase == "startup" or entry is None:
            return entry
        return entry.get(workload)

    def warm_share(self, framework: str, workload: str, assumed: set[str]) -> float:
        """A warm compile's share of a cold one: the pre-flight's compile_warm over its compile where it timed both,
        else WARM_COMPILE_SHARE, assumed."""
        warm, cold = self._record("compile_warm", framework, workload), self._record("compile", framework, workload)
        if warm is not None and cold is not None and "seconds" in warm and cold.get("seconds"):
            return min(1.0, float(warm["seconds"]) / float(cold["seconds"]))
        assumed.add(f"{framework} warm compile share (WARM_COMPILE_SHARE)")
        return WARM_COMPILE_SHARE[framework]

    def describe(self) -> str:
        if self.measured is None:
            return "estimated from the stated defaults (no pre-flight)"
        return f"measured by the pre-flight ({self.source}, device {self.measured.get('device', '?')})"


def _check_record(rec: Any, path: Path, where: str) -> None:
    ok = isinstance(rec, dict) and (
        (isinstance(rec.get("seconds"), int | float) and rec["seconds"] >= 0) or isinstance(rec.get("not_timed"), str))
    if not ok:
        raise CostsError(f"cost file {path}: {where} is neither {{'seconds': s >= 0}} nor {{'not_timed': why}}")


@dataclass
class Estimate:
    seconds: float = 0.0
    combinations: int = 0
    processes: int = 0
    rounds: int = 0
    assumed: set[str] = field(default_factory=set)


def rounds_of(combo: Combo, chunk_rounds: int, runner: str) -> int:
    """Processes of `combo` in a chunk of `chunk_rounds` (0: the benchmark's own); a count is taken once."""
    if combo.kind == "track" and runner == "worker":
        return 1
    return chunk_rounds or combo.rounds


def calls_per_sample(step_s: float) -> int:
    """sampling.calls_for's count for a step of `step_s` seconds."""
    return max(1, min(sampling.MAX_CALLS, math.ceil(sampling.MIN_SAMPLE_SECONDS / max(step_s, 1e-7))))


def combo_seconds(c: Combo, costs: Costs, assumed: set[str], warm: bool = False) -> float:
    """One combination's share of its process: build, then samples (a count: its probe's build). `warm`: a round
    after the chunk's first, whose compiles (and JAX's op-by-op first calls) read the persistent caches (a
    compile-time benchmark's never do)."""
    if c.skipped:
        return 0.0
    fw, w = c.framework, c.workload
    if c.method == "time_compile_seconds":  # a warm cache is filled by one compile before the timed one
        return costs.get("compile", fw, w, assumed) * (2 if c.mode == "warm" else 1)
    if c.kind == "track":
        return costs.get(PROBE_BUILD.get(fw, "eager_build"), fw, w, assumed)
    compiled = c.mode == "compiled"
    build = costs.get("compile" if compiled else "eager_build", fw, w, assumed)
    if warm and compiled:
        build *= costs.warm_share(fw, w, assumed)
    elif warm and EAGER_WARM_SHARE.get(fw, 1.0) < 1:
        build *= EAGER_WARM_SHARE[fw]
        assumed.add(f"{fw} eager warm share (EAGER_WARM_SHARE)")
    step = costs.get("compiled_step" if compiled else "eager_step", fw, w, assumed)
    return build + step + c.repeat * calls_per_sample(step) * step


def process_seconds(framework: str, group: list[Combo], costs: Costs, assumed: set[str], warm: bool = False,
                    cached: set[tuple] | None = None) -> float:
    """One process running `group`: start-up, each distinct input once (the suite memoises them), the combinations.
    An input in `cached` is read from the input cache's file, which the first process to need it wrote (added to
    `cached` here). A process whose combinations all skip imports the suite and no framework."""
    live = [c for c in group if not c.skipped]
    if not live:
        return costs.get("discovery", assumed=assumed)
    cached = set() if cached is None else cached
    inputs = sorted({(c.workload, c.size, c.dtype) for c in live if c.workload})
    seconds = sum(costs.get("inputs_cached" if key in cached else "inputs", framework, key[0], assumed)
                  for key in inputs)
    cached.update(inputs)
    return (costs.get("startup", framework, assumed=assumed) + seconds
            + sum(combo_seconds(c, costs, assumed, warm) for c in live))


@functools.cache
def compiled_with_eager(device: str) -> frozenset[str]:
    """The benchmarks whose compiled combinations the worker runner keeps in the process of the eager ones."""
    from tape_vs_trace.running import plan

    return frozenset(plan.paired_across_modes(device))


def apart(c: Combo) -> bool:
    """Whether the worker runner gives `c` the process of a round's compiled combinations (plan.tasks)."""
    return c.mode == "compiled" and c.benchmark not in compiled_with_eager(dict(c.params).get("device", "cpu"))


def settings(c: Combo) -> tuple[str, bool]:
    """What `c`'s set-up sets for its whole process: the worker runner keeps combinations that differ in it apart."""
    from benchmarks.common import process_settings  # here: the suite reads TVT_DEVICE when it is imported

    return process_settings(dict(c.params))


def estimate(picked: list[Combo], chunk_rounds: int, costs: Costs, runner: str = "worker") -> Estimate:
    """The wall time of one run of `picked` in `chunk_rounds` under `runner`: per round and framework, the worker
    runner's process of the compiled combinations and its process of the others, each split by process-wide
    settings (plan.round_plans), and one per fresh combination (asv run: one per combination); compiles after
    the first round warm; each input generated by the first process that needs it, read from its file after."""
    result = Estimate(combinations=sum(not c.skipped for c in picked))
    if not picked:
        return result
    result.seconds = costs.get("discovery", assumed=result.assumed)
    result.rounds = max(rounds_of(c, chunk_rounds, runner) for c in picked)
    cached: set[tuple] = set()  # the chunk's inputs written to the input cache so far (none at its start)
    for r in range(result.rounds):
        for fw in dict.fromkeys(c.framework for c in picked):
            due = [c for c in picked if c.framework == fw and rounds_of(c, chunk_rounds, runner) > r]
            if runner == "asv":
                groups = [[c] for c in due]
            else:
                shared = [c for c in due if not c.fresh]
                kinds = dict.fromkeys((apart(c), settings(c)) for c in shared)
                groups = [*([c for c in shared if (apart(c), settings(c)) == k] for k in kinds),
                          *([c] for c in due if c.fresh)]
            for group in (g for g in groups if g):
                result.seconds += process_seconds(fw, group, costs, result.assumed, r > 0, cached)
                result.processes += 1
        if runner == "worker":
            result.seconds += SAVE_S
    return result
