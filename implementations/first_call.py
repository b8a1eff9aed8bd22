"""The first call of a compiled step split into phases, framework-neutral: the timing both sides'
``compile_phases`` modules share (each reads its own framework's timers). Imports no framework."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Unattributed seconds a first call may keep (dispatch, guards, Python between graphs): this fraction of it, plus
# ABSOLUTE_S; tests/test_compile_phases.py holds both frameworks to it.
TOLERANCE, ABSOLUTE_S = 0.10, 0.05


def check_formulation(workload: str, formulation: str, valid: tuple[str, ...]) -> None:
    """A ValueError lists the formulations where `formulation` is not one of `valid`."""
    if formulation not in valid:
        raise ValueError(f"unknown formulation {formulation!r} of {workload}'s compile; valid choices: "
                         f"{', '.join(valid)}")


def measured_once(step: Callable[[], Any], phases: Callable[[], dict[str, float]]) -> Callable[[], dict[str, float]]:
    """`measure`: the first call of `step` (which synchronises), then `phases()` (the compile phases its timers
    recorded during it), then a second call as the execution; returns those seconds, "first_call" (the whole first
    call) and "unattributed" (the first call less the phases: dispatch, guards and the first execution's one-time
    cost beyond a steady call). Callable once: a second call would not compile."""
    done: list[int] = []

    def measure() -> dict[str, float]:
        if done:
            raise RuntimeError("measure was called before: this call would not compile")
        done.append(1)
        start = time.perf_counter()
        step()
        wall = time.perf_counter() - start
        seconds = phases()
        start = time.perf_counter()
        step()
        seconds["execution"] = time.perf_counter() - start
        return {**seconds, "first_call": wall, "unattributed": wall - sum(seconds.values())}

    return measure
