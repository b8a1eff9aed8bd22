"""The profiles of `make bench` (`tape-vs-trace run --profile`): which benchmarks a run measures, in how many rounds,
within how many seconds.

- `cited`, the default on CPU machines: what the headline and each pillar's first finding cite (every gradient
  step of the recording pillar in both modes, the custom and plain eager steps, the eager remat curve, the
  no-grad forwards, the engine's features, the harness's overhead), with every count (one shared count process
  takes them all); 12 processes per combination, each round after the third started only while the runner's
  budget has room for it. More processes for fewer rows: its intervals are the narrow ones.
- `full`, the default on CUDA machines: every benchmark, five rounds (a cold compile keeps its own 3), no budget.

A profile is a list of asv `-b` regexes (asv's rule: re.search on `module.Class.method(param, ...)`, each parameter
as its repr); `-b` on the command line replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass


class ProfileError(ValueError):
    """An unknown profile: one line naming the valid ones."""


@dataclass(frozen=True)
class Profile:
    name: str
    bench: tuple[str, ...]  # asv -b regexes; empty: every benchmark
    rounds: int
    budget_s: float | None  # the runner's seconds, set-up included; None: every round runs
    summary: str


CITED = Profile(
    "cited",
    (r"^recording\.GradStep_\w+\.time_step\(",
     r"^custom_backward\.CustomStep_\w+\.time_step\(.*'eager'",
     r"^remat\.RematCurve_\w+\.time_step\(.*'eager'",
     r"^inference\.Forward_\w+\.time_forward\(",
     r"^engine\.EngineStep_\w+\.time_step\(",
     r"^harness\.",
     # compile time's growth, a few small points: JAX's first call of the chain at two depths, unrolled and scan
     r"^recording\.CompilePhases_chain\.time_compile_phase\('jax', 'chain', 'd(8|16)-4x64', '(unrolled|scan)', "
     r"'cold', 'first_call'",
     r"\.track_"),
    rounds=12,
    # make bench's 10 minutes less what it does outside the runner (machine record, calibration, the paired
    # division, report, dashboard), with room for a host slower at those than the ones measured (docs/history.md).
    budget_s=480.0,
    summary="the cited rows (gradient steps, eager custom and remat steps, no-grad forwards, engine, harness, "
            "every count)",
)
FULL = Profile("full", (), rounds=5, budget_s=None, summary="every benchmark")
PROFILES = {p.name: p for p in (CITED, FULL)}


def get(name: str) -> Profile:
    """The profile called `name`; a ProfileError names the valid ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r}; valid choices: {', '.join(PROFILES)}") from None
