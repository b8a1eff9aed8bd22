"""make bench's one clock: the whole target has one goal (GOAL_S, its 10 minutes), and the worker runner gets what
the steps around it leave of it, on this host, instead of a fixed share.

`start` marks the target's start; `step NAME -- CMD ...` runs one of the steps after the runner and records its wall
time; `budget` prints the runner's budget: the goal less what the target has already spent (machine record,
calibration) and less the last recorded cost of every step after the runner, on this machine in this profile. A
host slow at the side steps thus leaves the runner fewer rounds, never fewer than suite_plan.MIN_ROUNDS, and the
runner's record names the round it did not start and why. Before a machine has a record in a profile, the profile's
own budget stands. A step left out of this run (FIRST_STEP=0) still counts at its last cost until it runs again.

The record (.asv/bench-clock.json beside the compile caches) keeps the last wall time of each step per machine and
profile.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tape_vs_trace.running import profiles

GOAL_S = 600.0  # make bench's goal for the whole target on a 2-core CPU host
# the side steps' costs are taken this much higher: they move between consecutive quiet runs (docs/history.md)
SIDE_MARGIN = 0.10
MIN_BUDGET_S = 1.0  # the runner refuses a budget that is not positive; its first rounds run whatever it is


class ClockError(ValueError):
    """A bad command line or an unreadable record: one line for the user."""


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError) as exc:
        raise ClockError(f"cannot read {path}: {exc}") from None


def _save(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def start(path: Path, machine: str, profile: str, now: float | None = None) -> None:
    """Mark the target's start on `machine` in `profile`; every recorded cost stays."""
    record = _load(path)
    _save(path, {**record, "current": f"{machine} {profile}", "started": time.time() if now is None else now})


def record_step(path: Path, name: str, seconds: float) -> None:
    record = _load(path)
    if "started" not in record:
        raise ClockError(f"{path} has no start: run `start` first")
    record.setdefault("steps", {}).setdefault(record["current"], {})[name] = round(seconds, 1)
    _save(path, record)


def run_step(path: Path, name: str, command: list[str]) -> int:
    """Run `command`, record its wall time as step `name` (a failed step's too: it cost that), return its status."""
    if not command:
        raise ClockError("step needs a command after --")
    began = time.perf_counter()
    status = subprocess.call(command)
    record_step(path, name, time.perf_counter() - began)
    return status


def budget(path: Path, fallback: float | None, now: float | None = None) -> tuple[float | None, str]:
    """(the runner's budget in seconds, a line saying how it was reached); `fallback` (the profile's budget, None for
    none) where this machine has no recorded step yet, or where the profile has no budget at all."""
    record = _load(path)
    if fallback is None:
        return None, "the profile has no budget: every round runs"
    if "started" not in record:
        raise ClockError(f"{path} has no start: run `start` first")
    steps = record.get("steps", {}).get(record["current"], {})
    if not steps:
        return fallback, f"no side step recorded on this machine in this profile yet: the profile's {fallback:.0f} s"
    spent = (time.time() if now is None else now) - record["started"]
    side = sum(steps.values()) * (1 + SIDE_MARGIN)
    left = GOAL_S - spent - side
    parts = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(steps.items()))
    return max(left, MIN_BUDGET_S), (f"make bench's {GOAL_S:.0f} s less {spent:.0f} s spent and the side steps' last "
                                     f"costs here with {SIDE_MARGIN:.0%} more for their spread, {side:.0f} s "
                                     f"({parts}): the runner's budget {left:.0f} s")


def main(argv: list[str]) -> int:
    """python -m tape_vs_trace.running.bench_clock RECORD start MACHINE PROFILE | step NAME -- CMD ... | budget
    PROFILE"""
    try:
        if len(argv) < 2:
            raise ClockError("usage: bench_clock RECORD start MACHINE PROFILE | step NAME -- CMD ... | budget PROFILE")
        path, action, rest = Path(argv[0]), argv[1], argv[2:]
        if action == "start" and len(rest) == 2:
            start(path, *rest)
            return 0
        if action == "step" and len(rest) >= 2 and rest[1] == "--":
            return run_step(path, rest[0], rest[2:])
        if action == "budget" and len(rest) == 1:
            seconds, why = budget(path, profiles.get(rest[0]).budget_s)
            print(f"runner budget: {why}", file=sys.stderr)
            if seconds is not None:
                print(f"--budget {seconds:.0f}")
            return 0
        raise ClockError(f"unknown bench_clock command {' '.join(argv[1:])!r}; valid: start, step, budget")
    except (ClockError, profiles.ProfileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
