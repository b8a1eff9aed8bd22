"""The GPU pre-flight: what a worker process of `tape-vs-trace run` costs on this machine, phase by phase, timed
within a fixed budget, so that scripts/gpu_chunks.py plans the quick profile from measured costs.

    python -m tape_vs_trace.running.preflight --out FILE [--budget-s 60]

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

Every phase has a timeout (preflight_watch.PHASE_TIMEOUT_S) and all of them the budget. A phase past either is
stopped (its process group killed) and recorded as not timed, with how long it had run; a fresh process then goes on
with the phases that do not need it, while the budget lasts. A phase that raises is recorded with its error.

FILE (JSON): {"device", "budget_s", "wall_s", "sizes": {workload: size}, "discovery": REC,
"frameworks": {framework: {"startup": REC, phase: {workload: REC}}}}, where REC is {"seconds": s}, or
{"not_timed": why, "over_s": s}: how long it had run when it was stopped (0 if it never started).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tape_vs_trace.running.preflight_child import DiscoveryRunner, FrameworkRunner, Phase, phases, run_child
from tape_vs_trace.running.preflight_watch import kill_all, measure

BUDGET_S = 60.0
# Left for the parent after the last kill: joining the processes and writing FILE.
MARGIN_S = 1.0


class PreflightError(Exception):
    """Bad input (a budget, an --out that cannot be written): one line on stderr."""


def _stop_children(signum: int, frame: Any) -> None:
    kill_all()
    print(f"error: the pre-flight was stopped (signal {signum})", file=sys.stderr)
    os._exit(1)


def child_command(what: str, device: str) -> list[str]:
    return [sys.executable, "-m", "tape_vs_trace.running.preflight", "--child", what, "--device", device]


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
    parser = _Parser(prog="python -m tape_vs_trace.running.preflight", description=__doc__.splitlines()[0])
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
