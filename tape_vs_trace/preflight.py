"""The GPU pre-flight: what a worker process of `tape-vs-trace run` costs on this machine, phase by phase, timed
within a fixed budget, so that scripts/gpu_chunks.py plans the quick profile from measured costs.

    python -m tape_vs_trace.preflight --out FILE [--budget-s 60]

One fresh process per framework (both side by side, so the budget covers both: a figure is what the phase cost next
to the other framework's process, at most what it costs alone, so the plan errs long), and a third that times the
benchmarks' discovery (asv_runner importing the suite: what every chunk and every process pays besides a framework).
A framework's phases, in the order the plan needs them:

    startup        interpreter, import and configuration (frameworks.load), a tiny array to the device and back
    inputs         workloads.make_inputs at this device's size of the workload's family, as a benchmark process
                   pays it: a second call (the first, untimed, writes TVT_INPUT_CACHE's file where it is set)
    eager_build    steps.grad_step(..., "eager"), its warm-up included (sampling.warm_up), as a benchmark's setup
    eager_step     one call of that step
    compile        steps.grad_step(..., "compiled"): trace, compile, warm-up
    compiled_step  one call of that step
    compile_warm   the same compile in a fresh process, served by the persistent caches the compile filled (only
                   where TVT_COMPILE_CACHE is set, as gpu_bench.sh sets it): what a chunk's later rounds pay

Every phase has a timeout (PHASE_TIMEOUT_S) and all of them the budget. A phase past either is stopped (its
process group killed) and recorded as not timed, with how long it had run; a fresh process then goes on with the
phases that do not need it, while the budget lasts. A phase that raises is recorded with its error.

FILE (JSON): {"device", "budget_s", "wall_s", "sizes": {workload: size}, "discovery": REC,
"frameworks": {framework: {"startup": REC, phase: {workload: REC}}}}, where REC is {"seconds": s}, or
{"not_timed": why, "over_s": s}: how long it had run when it was stopped (0 if it never started).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 60.0
# Each phase's own limit; the budget limits all of them. A cold torch.compile of the GPU transformer can take longer
# than its limit: it is then recorded as not timed, with the time it had run, and the plan takes no less than that.
PHASE_TIMEOUT_S = {"startup": 40.0, "inputs": 20.0, "eager_build": 20.0, "eager_step": 10.0, "compile": 30.0,
                   "compiled_step": 10.0, "compile_warm": 30.0, "discovery": 30.0}
# The workloads the quick profile's chunks cite, by the family whose size they run at, and those whose compiled
# steps it times; the rest of the grid is planned from the defaults.
WORKLOADS = (("GradStep", "mlp"), ("GradStep", "transformer"), ("CustomStep", "swiglu"))
COMPILED = ("mlp", "transformer")
# Left for the parent after the last kill: joining the processes and writing FILE.
MARGIN_S = 1.0
POLL_S = 0.05
# The children alive, each in a session of its own: a SIGTERM to the pre-flight (gpu_bench.sh's `timeout`) would
# not reach them, so its handler kills them.
_LIVE: set[subprocess.Popen] = set()
NEEDS = {"eager_build": "inputs", "compile": "inputs", "eager_step": "eager_build", "compiled_step": "compile",
         "compile_warm": "compile"}
# Phases that start a process of their own: in-process caches would serve them, not only the persistent ones.
FRESH = ("compile_warm",)


class PreflightError(Exception):
    """Bad input (a budget, an --out that cannot be written): one line on stderr."""


@dataclass(frozen=True)
class Phase:
    kind: str
    workload: str = ""
    size: str = ""

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.workload}" if self.workload else self.kind

    def needs(self) -> list[str]:
        """The phases this one builds on: startup, and within a workload, inputs, then the step's build."""
        found = [] if self.kind in ("startup", "discovery") else ["startup"]
        kind = self.kind
        while kind in NEEDS:
            kind = NEEDS[kind]
            found.append(f"{kind}:{self.workload}")
        return found


def phases(device: str) -> list[Phase]:
    """A framework's phases on `device`: start-up, per workload its inputs and eager step, then the compiled steps
    (the costliest last: a phase cut by the budget loses what comes after it), then, where the compile caches are
    on, the warm compiles."""
    from implementations import frameworks, workloads

    sized = [(w, workloads.spec(w).runs(family, device)[0]) for family, w in WORKLOADS]
    eager = [Phase(k, w, size) for w, size in sized for k in ("inputs", "eager_build", "eager_step")]
    compiled = [Phase(k, w, size) for w, size in sized if w in COMPILED for k in ("compile", "compiled_step")]
    warm = [Phase("compile_warm", w, size) for w, size in sized if w in COMPILED
            if os.environ.get(frameworks.COMPILE_CACHE_ENV)]
    return [Phase("startup"), *eager, *compiled, *warm]


# --- the child: runs phases, writes an event per start and end ----------------------------------------------------


class Runner(Protocol):
    def prepare(self, phase: Phase) -> None:
        """What `phase` builds on and this process has not done yet (untimed: a restarted process redoes it)."""

    def run(self, phase: Phase) -> None:
        """The timed work of `phase`."""


class FrameworkRunner:
    """The phases for one framework, through the suite's own code paths (frameworks.load, make_inputs, grad_step)."""

    def __init__(self, framework: str, device: str):
        self.framework, self.device = framework, device
        self.fw: Any = None
        self.inputs: dict[str, Any] = {}
        self.steps: dict[tuple[str, str], Any] = {}

    def prepare(self, phase: Phase) -> None:
        if phase.kind != "startup" and self.fw is None:
            self.run(Phase("startup"))
        if phase.kind != "startup" and phase.workload not in self.inputs:
            self.run(Phase("inputs", phase.workload, phase.size))
        mode = {"eager_step": "eager", "compiled_step": "compiled"}.get(phase.kind)
        if mode and (phase.workload, mode) not in self.steps:
            self.run(Phase("eager_build" if mode == "eager" else "compile", phase.workload, phase.size))

    def run(self, phase: Phase) -> None:
        from implementations import frameworks, workloads

        if phase.kind == "startup":
            self.fw = frameworks.load(self.framework)
            tiny = workloads.make_inputs("mlp", "tiny")
            common = self.fw.common
            common.to_numpy(common.sync(common.cotangent(tiny, self.device), self.device))
        elif phase.kind == "inputs":
            self.inputs[phase.workload] = workloads.make_inputs(phase.workload, phase.size, "float32",
                                                                cache_dir=os.environ.get("TVT_INPUT_CACHE"))
        elif phase.kind in ("eager_build", "compile", "compile_warm"):
            mode = "eager" if phase.kind == "eager_build" else "compiled"
            formulation = "unrolled" if workloads.spec(phase.workload).formulations else None
            self.steps[(phase.workload, mode)] = self.fw.steps.grad_step(self.inputs[phase.workload], "plain", mode,
                                                                         self.device, formulation)
        elif phase.kind in ("eager_step", "compiled_step"):
            self.steps[(phase.workload, "eager" if phase.kind == "eager_step" else "compiled")]()
        else:
            raise ValueError(f"unknown phase {phase.kind!r}")


class DiscoveryRunner:
    """asv_runner's discovery of the suite, as `tape-vs-trace run` and asv start every run with."""

    def prepare(self, phase: Phase) -> None:
        pass

    def run(self, phase: Phase) -> None:
        from asv_runner.discovery import list_benchmarks

        with open(os.devnull, "w") as sink:
            list_benchmarks(str(ROOT / "benchmarks"), sink)


def run_child(plan_path: str, events_path: str, runner: Runner) -> None:
    """Run the plan's phases with `runner`, appending one JSON line per event to `events_path`: {"phase", "start"}
    before the timed part, then {"phase", "seconds"} or {"phase", "error"}; {"phase", "unmet"} instead where a
    phase it needs failed here. "at" is the wall clock of each."""
    plan = json.loads(Path(plan_path).read_text())
    with open(events_path, "a") as events:
        def event(**fields: Any) -> None:
            events.write(json.dumps({**fields, "at": time.time()}) + "\n")
            events.flush()

        untimed: set[str] = set()
        for entry in plan["phases"]:
            phase = Phase(**entry)
            unmet = next((n for n in phase.needs() if n in untimed), None)
            if unmet is not None:
                untimed.add(phase.id)
                event(phase=phase.id, unmet=unmet)
                continue
            try:
                runner.prepare(phase)
            except Exception as exc:
                untimed.add(phase.id)
                event(phase=phase.id, error=f"while preparing it: {_one_line(exc)}")
                continue
            event(phase=phase.id, start=True)
            start = time.perf_counter()
            try:
                runner.run(phase)
            except Exception as exc:
                untimed.add(phase.id)
                event(phase=phase.id, error=_one_line(exc))
                continue
            event(phase=phase.id, seconds=time.perf_counter() - start)


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- the parent: one watcher per process, each phase under its timeout and the budget -----------------------------


def _not_timed(why: str, over_s: float = 0.0) -> dict[str, Any]:
    return {"not_timed": why, "over_s": round(over_s, 2)}


def _stop_children(signum: int, frame: Any) -> None:
    for process in list(_LIVE):
        _kill(process)
    print(f"error: the pre-flight was stopped (signal {signum})", file=sys.stderr)
    os._exit(1)


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


# --- the whole pre-flight ----------------------------------------------------------------------------------------


def child_command(what: str, device: str) -> list[str]:
    return [sys.executable, "-m", "tape_vs_trace.preflight", "--child", what, "--device", device]


def preflight(budget_s: float = BUDGET_S, device: str | None = None,
              commands: dict[str, Sequence[str]] | None = None,
              plans: dict[str, list[Phase]] | None = None) -> dict[str, Any]:
    """Both frameworks' phases and the discovery, side by side, within `budget_s`: FILE's content. `commands` and
    `plans` (by label: a framework name or "discovery") replace the real processes' (for tests)."""
    from implementations import frameworks

    started = time.monotonic()
    device = device or frameworks.detect_device()
    if plans is None:
        plans = {**{name: phases(device) for name in frameworks.NAMES}, "discovery": [Phase("discovery")]}
    commands = commands or {label: child_command(label, device) for label in plans}
    deadline = started + budget_s - MARGIN_S
    found: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="tvt-preflight-") as tmp:
        threads = [threading.Thread(target=lambda label=label: found.__setitem__(
            label, measure(label, plans[label], deadline, commands[label], scratch=Path(tmp)))) for label in plans]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    sizes = {p.workload: p.size for plan in plans.values() for p in plan if p.workload}
    result: dict[str, Any] = {"device": device, "budget_s": budget_s, "sizes": sizes, "frameworks": {}}
    for label, plan in plans.items():
        records = found[label]
        if label == "discovery":
            result["discovery"] = records["discovery"]
            continue
        entry: dict[str, Any] = {}
        for p in plan:
            if p.workload:
                entry.setdefault(p.kind, {})[p.workload] = records[p.id]
            else:
                entry[p.kind] = records[p.id]
        result["frameworks"][label] = entry
    result["wall_s"] = round(time.monotonic() - started, 2)
    return result


def write(result: dict[str, Any], out: Path) -> None:
    """Written whole or not at all, as the calibration file is."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, out)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m tape_vs_trace.preflight", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where to write the costs (JSON)")
    parser.add_argument("--budget-s", type=float, default=BUDGET_S, help=f"seconds in all (default {BUDGET_S:.0f})")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a framework's process (or "discovery")
    parser.add_argument("--device", help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)  # a child's PLAN and EVENTS
    args = parser.parse_args(argv)
    if args.child:
        runner = DiscoveryRunner() if args.child == "discovery" else FrameworkRunner(args.child, args.device)
        run_child(*args.files, runner)
        return 0
    try:
        if args.out is None:
            raise PreflightError("--out FILE is required")
        if not 5 <= args.budget_s <= 600:
            raise PreflightError(f"--budget-s must be between 5 and 600 s, not {args.budget_s:g}")
        if not args.out.parent.is_dir():
            raise PreflightError(f"--out {args.out}: folder {args.out.parent} does not exist")
        from implementations import frameworks

        device = frameworks.detect_device()
    except (PreflightError, ValueError) as exc:  # ValueError: a bad TVT_DEVICE
        print(f"error: {exc}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, _stop_children)
    result = preflight(args.budget_s, device)
    try:
        write(result, args.out)
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    untimed = [(f"{fw} {name}", rec["not_timed"]) for fw, entry in result["frameworks"].items()
               for name, rec in _records(entry) if "seconds" not in rec]
    causes = [f"{name} ({why})" for name, why in untimed if not why.startswith("it needs ")]
    following = len(untimed) - len(causes)
    print(f"pre-flight: {result['wall_s']:.0f} s of {args.budget_s:.0f}, written to {args.out}"
          + (f"; not timed: {'; '.join(causes)}" if causes else "")
          + (f"; and {following} phases that need them" if following else ""))
    return 0


def _records(entry: dict[str, Any]):
    """(name, REC) of a framework's entry: 'startup', 'compile transformer', ..."""
    for kind, value in entry.items():
        if "seconds" in value or "not_timed" in value:
            yield kind, value
        else:
            for workload, rec in value.items():
                yield f"{kind} {workload}", rec


if __name__ == "__main__":
    sys.exit(main())
