"""Which benchmark combinations a run measures, chosen by what they are: the profiles of `make bench`
(`tape-vs-trace run --profile`) and the one selection rule that they and the GPU chunks (scripts/gpu_chunks.py)
share.

- `cited`, the default on CPU machines: what the headline and each pillar's first finding cite (every gradient
  step of the recording pillar in both modes, the custom and plain eager steps, the compiled remat curve at its
  first size in the loop form (`torch.compile` with its policies and memory budgets, `jax.jit` with its
  policies), the no-grad forwards, the engine's features, the harness's overhead, one cold compile's phases per
  framework), with every count (one shared count process takes them all); 12 rounds, each round after the third
  started only while the runner's budget has room for it, a cheap shared process measured more than once a round
  (running.plan.copies). More processes for fewer rows: its
  intervals are the narrow ones.
- `full`, the default on CUDA machines: every benchmark, five rounds (a cold compile keeps its own 3), no budget.

A selection is a list of `Rows`: benchmark names (shell patterns over asv's `module.Class.method`) and, per named
parameter, the values accepted. It chooses from the one grid (running.grid: asv's discovery, each combination by its
asv name and its parameters); where `asv run -b` is called (the GPU chunks, make compile-series), the chosen names
become one regex (`names_regex`). `-b` on the command line replaces a profile's selection.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tape_vs_trace.running.grid import Combo, combinations  # noqa: F401  (the one grid, as the scripts name it)


class ProfileError(ValueError):
    """An unknown profile: one line naming the valid ones."""


@dataclass(frozen=True)
class Rows:
    """Benchmark combinations by what they are: the benchmarks whose asv name matches `benchmark` (a shell pattern,
    `recording.GradStep_*.time_step`), and of those the combinations whose parameters take one of the accepted
    values in `where`; a parameter the benchmark does not have constrains nothing."""

    benchmark: str
    where: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __str__(self) -> str:
        where = ", ".join(f"{axis}={'|'.join(values)}" for axis, values in self.where)
        return f"{self.benchmark}[{where}]" if where else self.benchmark

    def selects(self, name: str, params: Mapping[str, str]) -> bool:
        return fnmatch.fnmatchcase(name, self.benchmark) and all(
            params[axis] in values for axis, values in self.where if axis in params)


def rows(benchmark: str, **where: str | Iterable[str]) -> Rows:
    """Rows(benchmark, where) from keyword arguments: `rows("recording.GradStep_*.time_step", mode="eager")`."""
    return Rows(benchmark, tuple((axis, (values,) if isinstance(values, str) else tuple(values))
                                 for axis, values in where.items()))


def select(selection: Iterable[Rows], combos: Iterable[Combo]) -> list[Combo]:
    """The combinations any of `selection` selects, in `combos`' order."""
    selection = list(selection)
    return [c for c in combos if any(r.selects(c.benchmark, dict(c.params)) for r in selection)]


def names_regex(names: Iterable[str]) -> str:
    """One asv `-b` regex that selects exactly the combinations `names` (asv's `module.Class.method(param, ...)`)."""
    by_benchmark: dict[str, list[str]] = {}
    for name in names:
        benchmark, _, rest = name.partition("(")
        by_benchmark.setdefault(benchmark, []).append(rest[:-1] if rest else "")
    parts = []
    for benchmark, params in by_benchmark.items():
        inner = "|".join(re.escape(p) for p in params)
        parts.append(rf"^{re.escape(benchmark)}\((?:{inner})\)$" if any(params) else rf"^{re.escape(benchmark)}$")
    return "|".join(parts)


@dataclass(frozen=True)
class Profile:
    name: str
    selection: tuple[Rows, ...]  # empty: every benchmark
    rounds: int
    budget_s: float | None  # the runner's seconds, set-up included; None: every round runs
    summary: str


def _first_sizes(grid: str) -> tuple[str, ...]:
    """Each workload's first size in the specs' grid `grid`, on either device."""
    from implementations import workloads

    return tuple(sorted({sizes[0] for device in ("cpu", "cuda")
                         for sizes in workloads.runs(grid, device).values() if sizes}))


_FIRST_CURVE_SIZES = _first_sizes("RematCurve")

CITED = Profile(
    "cited",
    (rows("recording.GradStep_*.time_step"),
     rows("custom_backward.CustomStep_*.time_step", mode="eager"),
     # the curve a user compares: jax.jit against torch.compile, whole experiments (paired draws no part of one);
     # the eager curve, JAX's scan and fused attention are the full profile's (docs/remat-curve.md says why)
     rows("remat.RematCurve_*.time_step", mode="compiled", size=_FIRST_CURVE_SIZES, formulation="unrolled",
          attention="written"),
     rows("inference.Forward_*.time_forward"),
     rows("engine.EngineStep_*.time_step"),
     rows("harness.*"),
     # compile time: one cold point a framework (the chain's shallowest depth unrolled, every phase, one process),
     # so each commit's compile cost is tracked; the depth series is make compile-series' (docs/compile-time.md)
     rows("recording.CompilePhases_chain.time_compile_phase", size="d8-4x64", formulation="unrolled", cache="cold"),
     rows("*.track_*")),
    rounds=12,
    # make bench's 10 minutes less what it does outside the runner (machine record, calibration, the paired
    # division, the time to first step, report, dashboard), until make bench has recorded those steps' costs on a
    # machine: then bench_clock gives the runner what they leave (docs/history.md).
    budget_s=400.0,
    summary="the cited rows (gradient steps, eager custom steps, the compiled remat curve, no-grad forwards, "
            "engine, harness, a cold compile's phases, every count)",
)
FULL = Profile("full", (), rounds=5, budget_s=None, summary="every benchmark")
PROFILES = {p.name: p for p in (CITED, FULL)}


def get(name: str) -> Profile:
    """The profile called `name`; a ProfileError names the valid ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r}; valid choices: {', '.join(PROFILES)}") from None


# --- the GPU's chunks (scripts/gpu_bench.sh, planned by scripts/gpu_chunks.py) -------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One run of scripts/gpu_bench.sh: a selection measured in `rounds` processes per timed combination."""

    name: str
    selection: tuple[Rows, ...]
    rounds: int = 0  # 0: each benchmark's own


def _steps(workloads: tuple[str, ...], mode: str, *programs: dict[str, str]) -> tuple[Rows, ...]:
    """The gradient steps of `workloads` in `mode`, one Rows per program."""
    return tuple(rows("recording.GradStep_*.time_step", workload=workloads, mode=mode, **p) for p in programs)


QUICK_ROUNDS = 3  # the fewest processes whose t interval the report prints (running.plan.MIN_ROUNDS)
CITED_WORKLOADS = ("mlp", "transformer")
# The matched program (written attention, the loop unrolled) in float32 at full precision; the GPU's fast formats;
# the transformer's other programs (its out-of-the-box style, fused attention, the scan).
MATCHED = {"style": "matched", "attention": "written", "formulation": "unrolled"}
F32 = {**MATCHED, "dtype": "float32", "precision": "highest"}
FAST = ({**MATCHED, "dtype": "float32", "precision": "tf32"}, {**MATCHED, "dtype": "bfloat16", "precision": "highest"})
OTHER = ({"style": "default", "formulation": "unrolled", "dtype": "float32", "precision": "highest"},
         {**F32, "attention": "fused"})
SCAN = {**F32, "formulation": "scan"}
REMAT_POINTS = ("plain", "remat_dots", "remat_names", "remat_every2", "remat_every4", "remat_full", "remat_offload")
# The quick profile, the most cited first: a contact runs what its results for this commit still lack, in this
# order, each part only while its estimate fits in what is left of the budget, so k contacts complete it. A chunk
# that selects nothing on this grid is left out and named.
QUICK: tuple[Chunk, ...] = (
    # Both modes of one workload side by side, the mlp first: a contact cut short still has like pairs to divide.
    Chunk("gradstep", tuple(r for w in CITED_WORKLOADS for m in ("eager", "compiled") for r in _steps((w,), m, F32)),
          QUICK_ROUNDS),
    Chunk("gradstep-eager-precisions", _steps(CITED_WORKLOADS, "eager", *FAST), QUICK_ROUNDS),
    Chunk("gradstep-compiled-precisions", _steps(CITED_WORKLOADS, "compiled", *FAST), QUICK_ROUNDS),
    # each peak with the library workspace inside it, read by the same probe call in the same process
    Chunk("remat-peaks", (rows("remat.RematCost_*.track_peak_bytes"), rows("remat.RematCost_*.track_workspace_bytes")),
          QUICK_ROUNDS),
    Chunk("remat-curve-policies", (rows("remat.RematCurve_*.time_step", size="L12-B8-S1024-D1024", mode="eager",
                                        formulation="unrolled", point=REMAT_POINTS),), QUICK_ROUNDS),
    Chunk("custom-swiglu", (rows("custom_backward.CustomStep_swiglu.time_step", mode="eager", dtype="float32",
                                 precision="highest"),), QUICK_ROUNDS),
    Chunk("inference-transformer", (rows("inference.*_transformer.*"),), QUICK_ROUNDS),
    Chunk("gradstep-eager-programs", _steps(("transformer",), "eager", *OTHER), QUICK_ROUNDS),
    Chunk("gradstep-compiled-programs", _steps(("transformer",), "compiled", *OTHER, SCAN), QUICK_ROUNDS),
)
# The full profile: one chunk per benchmark class, these first (most cited), then every other class discovered.
FULL_FIRST = ("harness.", "recording.GradStep_mlp", "recording.GradStep_transformer",
              "remat.RematCost_mlp", "custom_backward.CustomStep_swiglu",
              "custom_backward.CustomMemory", "inference.")


def full_chunks(names: Iterable[str]) -> list[Chunk]:
    """One chunk per class of asv's `names`, FULL_FIRST order first, each benchmark's own rounds."""
    classes = list(dict.fromkeys(n.split("(")[0].rsplit(".", 1)[0] for n in names))
    first = [c for prefix in FULL_FIRST for c in classes if c.startswith(prefix)]
    return [Chunk(cls, (rows(f"{cls}.*"),)) for cls in dict.fromkeys(first + classes)]


def gpu_chunks(name: str, combos: list[Combo]) -> list[Chunk]:
    """The chunks of GPU profile `name` ('quick' or 'full'); a ProfileError names the valid ones."""
    if name == "quick":
        return list(QUICK)
    if name == "full":
        return full_chunks(c.name for c in combos)
    raise ProfileError(f"unknown profile {name!r}; valid choices: quick, full")
