"""The pre-flight's parent side (tape_vs_trace/running/preflight.py): one watcher per child process, each phase under
its timeout and the whole under the deadline; a phase past either is stopped and recorded as not timed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tape_vs_trace.running.preflight_child import ROOT, Phase

# Each phase's own limit; the budget limits all of them. A cold torch.compile of the GPU transformer can take longer
# than its limit: it is then recorded as not timed, with the time it had run, and the plan takes no less than that.
PHASE_TIMEOUT_S = {"startup": 40.0, "inputs": 20.0, "eager_build": 20.0, "eager_step": 10.0, "compile": 30.0,
                   "compiled_step": 10.0, "compile_warm": 30.0, "discovery": 30.0}
POLL_S = 0.05
# The children alive, each in a session of its own: a SIGTERM to the pre-flight (gpu_bench.sh's `timeout`) would
# not reach them, so its handler kills them.
_LIVE: set[subprocess.Popen] = set()
# Phases that start a process of their own: in-process caches would serve them, not only the persistent ones.
FRESH = ("compile_warm",)


def _not_timed(why: str, over_s: float = 0.0) -> dict[str, Any]:
    return {"not_timed": why, "over_s": round(over_s, 2)}


def kill_all() -> None:
    """Every child still alive, with what it started."""
    for process in list(_LIVE):
        _kill(process)


def _kill(process: subprocess.Popen) -> None:
    """The child and what it started (Inductor's compile workers): its process group, started for it alone."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def measure(label: str, plan: list[Phase], deadline: float, command: Sequence[str], scratch: Path,
            timeouts: dict[str, float] | None = None) -> dict[str, dict[str, Any]]:
    """Run `plan` in processes `command + [PLAN, EVENTS]` until every phase has a record or `deadline`
    (time.monotonic()) passes: {phase id: REC}. Start-up is timed from the process's spawn, interpreter included."""
    timeouts = {**PHASE_TIMEOUT_S, **(timeouts or {})}
    records: dict[str, dict[str, Any]] = {}
    left = list(plan)
    attempt = 0
    while True:
        _drop_unmet(left, records)
        left = [p for p in left if p.id not in records]
        if not left:
            return records
        if time.monotonic() >= deadline:
            for p in left:
                records[p.id] = _not_timed("the budget ran out before it started")
            return records
        fresh = next((i for i, p in enumerate(left) if i and p.kind in FRESH), len(left))
        batch = left[:fresh]  # up to the next phase that needs a process of its own
        plan_path, events_path = scratch / f"{label}-{attempt}.plan.json", scratch / f"{label}-{attempt}.events"
        plan_path.write_text(json.dumps({"phases": [vars(p) for p in batch]}))
        events_path.write_text("")
        attempt += 1
        spawned_at, spawned_wall = time.monotonic(), time.time()
        process = subprocess.Popen([*command, str(plan_path), str(events_path)], cwd=ROOT, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _LIVE.add(process)
        stderr = _drain(process)
        try:
            stopped = _watch(process, batch, records, events_path, deadline, timeouts, spawned_at, spawned_wall)
        finally:
            _LIVE.discard(process)
        waiting = next((p for p in batch if p.id not in records), None)
        if waiting is not None and not stopped:  # it ended by itself in the middle: that phase is not timed
            last = (stderr() or ["no output"])[-1]
            records[waiting.id] = _not_timed(f"its process ended (status {process.returncode}) in it: {last}")


def _drain(process: subprocess.Popen):
    """Read the child's stderr on a thread (a full pipe would block it); returns a function giving its lines."""
    lines: list[str] = []
    thread = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    thread.start()

    def tail() -> list[str]:
        thread.join(timeout=1.0)
        return [line.rstrip() for line in lines if line.strip()]

    return tail


def _watch(process: subprocess.Popen, plan: list[Phase], records: dict[str, dict[str, Any]], events_path: Path,
           deadline: float, timeouts: dict[str, float], spawned_at: float, spawned_wall: float) -> bool:
    """Follow one process's events, recording each phase, until it exits or is stopped (returns True): by the
    current phase's timeout, by the wait for the next phase's start (start-up's timeout: what a process does
    before a phase), or by the deadline."""
    by_id = {p.id: p for p in plan}
    current: str | None = None
    since = spawned_at  # when the current phase, or the wait for the next one, began
    offset = 0
    while True:
        exited = process.poll() is not None  # before reading: what it wrote before exiting is then read
        with open(events_path) as fh:
            fh.seek(offset)
            chunk = fh.read()
        complete = chunk[:chunk.rfind("\n") + 1]
        offset += len(complete)
        for line in complete.splitlines():
            event = json.loads(line)
            phase_id = event["phase"]
            if "start" in event:
                current = phase_id
                if by_id[phase_id].kind != "startup":  # start-up counts from the spawn
                    since = time.monotonic()
            elif "seconds" in event:
                seconds = event["at"] - spawned_wall if by_id[phase_id].kind == "startup" else event["seconds"]
                records[phase_id] = {"seconds": round(seconds, 3)}
                current, since = None, time.monotonic()
            else:
                records[phase_id] = _not_timed(f"it needs {event['unmet']}, which was not timed" if "unmet" in event
                                               else f"it failed: {event['error']}")
                current, since = None, time.monotonic()
        if exited and not complete:
            return False
        now = time.monotonic()
        waiting = next((p for p in plan if p.id not in records), None)
        if waiting is None:  # all recorded: it exits, unless it hangs on its way out
            try:
                process.wait(timeout=max(0.0, deadline - now))
            except subprocess.TimeoutExpired:
                _kill(process)
            return False
        if current is not None:
            phase = by_id[current]
            limit = min(since + timeouts[phase.kind], deadline)
            if now >= limit:
                _kill(process)
                why = "the budget ran out" if now >= deadline else f"timed out after {timeouts[phase.kind]:.0f} s"
                records[current] = _not_timed(why, now - since)
                return True
        elif now >= min(since + timeouts["startup"], deadline):
            _kill(process)
            why = "the budget ran out" if now >= deadline else \
                f"its process did not reach it within {timeouts['startup']:.0f} s"
            records[waiting.id] = _not_timed(f"{why} before it started")
            return True
        time.sleep(POLL_S)


def _drop_unmet(plan: list[Phase], records: dict[str, dict[str, Any]]) -> None:
    """Record as not timed each phase whose prerequisite was not timed."""
    for phase in plan:
        if phase.id in records:
            continue
        unmet = next((n for n in phase.needs() if n in records and "seconds" not in records[n]), None)
        if unmet is not None:
            records[phase.id] = _not_timed(f"it needs {unmet}, which was not timed")

