"""The pre-flight's child process (tape_vs_trace/running/preflight.py): a framework's phases, or the suite's discovery,
run in order through the suite's own code paths, one JSON event per phase's start and end."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[2]
# The workloads the quick profile's chunks cite, by the family whose size they run at, and those whose compiled
# steps it times; the rest of the grid is planned from the defaults.
WORKLOADS = (("GradStep", "mlp"), ("GradStep", "transformer"), ("CustomStep", "swiglu"))
COMPILED = ("mlp", "transformer")
NEEDS = {"eager_build": "inputs", "compile": "inputs", "eager_step": "eager_build", "compiled_step": "compile",
         "compile_warm": "compile"}


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
