"""Shared machinery of the asv suite: the base class every benchmark derives from, in the manner of scipy's
``XPBenchmark``: the standard parameter axes, one set-up path (validate once, skip invalid combinations, build
through the per-process memo), the between-process timing settings and the peak-bytes check.

Rules for benchmark writers (numpy's asv README, adapted):
- No framework is imported at module level: asv spawns one process per benchmark x parameter combination and each
  process imports only the framework it measures (``implementations.frameworks.load`` in ``build``).
- Set-up is memoised per process: asv-runner >= 0.3 re-runs ``setup`` before every timed call, so the second call
  of ``setup`` is one dictionary lookup.
- Every timed body ends in a device synchronisation (the steps from implementations.<framework>.steps do it).
- Sizes for CPU and GPU machines are explicit parameter values (``by_device``), chosen by the machine's device.
- Pin ``version`` on every benchmark; bump it when the numbers stop being comparable.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from implementations import frameworks, metrics, pillars, sampling, workloads

frameworks.isolate_allocators()  # before any import of jax in this process

DEVICE = frameworks.detect_device()
FRAMEWORKS = list(frameworks.NAMES)
DTYPES = ["float32"]
PRECISIONS = ["highest"]
# The step-time classes of the recording and custom-backward pillars also run the GPU's fast formats. On CPU,
# bfloat16 matmuls are emulated and TF32 does not exist, so CPU machines run float32 at full precision only.
STEP_DTYPES = ["float32", "bfloat16"] if DEVICE == "cuda" else DTYPES
STEP_PRECISIONS = ["highest", "tf32"] if DEVICE == "cuda" else PRECISIONS

_MEMO: dict[tuple, Any] = {}


class Skip(NotImplementedError):
    """A parameter combination the suite does not run (asv shows n/a); the message says why."""


def by_device(cpu: Any, cuda: Any) -> Any:
    """The parameter values for this machine: CPU machines get the CPU sizes, CUDA machines the GPU sizes."""
    return cuda if DEVICE == "cuda" else cpu


def formulations(workload: str) -> list[str] | None:
    """The formulation axis of `workload` ('unrolled' and 'scan', workloads.FORMULATIONS), or None, no such axis,
    where the workload has no layer or time loop."""
    return list(workloads.spec(workload).formulations) or None


def process_settings(params: dict[str, Any]) -> tuple[str, bool]:
    """What a combination's set-up sets for the whole process (frameworks.load): its matmul precision and float64
    support (JAX's jax_enable_x64). tape-vs-trace run gives combinations that differ in them processes apart."""
    return params.get("precision", "highest"), params.get("dtype", "float32") == "float64"


def memo(key: tuple, build: Callable[[], Any]) -> Any:
    """`build()` once per process and key. Keys start with the benchmark class's name (or a kind such as
    'inputs'), so two classes never share a step built for the other."""
    if key not in _MEMO:
        _MEMO[key] = build()
    return _MEMO[key]


# Steps shorter than sampling.MIN_SAMPLE_SECONDS are timed as a loop of `calls` calls and reported per call; the
# count is chosen once per process in setup (sampling.calls_for) and published here for the timer (one combination
# per process).
_LOOP = {"calls": 1}


def per_call_timer() -> float:
    """asv's `timer`: a clock whose differences are per call of a body that loops `_LOOP['calls']` times."""
    return time.perf_counter() / _LOOP["calls"]


class Case:
    """One parameter combination: its parameters by name, the spec's inputs, and the loaded framework."""

    def __init__(self, params: dict[str, Any]):
        self.params = params
        self.framework: str = params["framework"]
        self.device: str = params.get("device", DEVICE)
        self.dtype: str = params.get("dtype", "float32")
        self.precision: str = params.get("precision", "highest")
        self.workload: str | None = params.get("workload")
        self.inputs: workloads.Inputs | None = None
        self.fw: frameworks.Loaded | None = None

    def __getattr__(self, name: str) -> Any:  # the class-specific axes: case.mode, case.variant, ...
        try:
            return self.__dict__["params"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def variant(self) -> str:
        return self.params.get("variant", "plain")

    @property
    def style(self) -> str | None:
        """The row's style (workloads.STYLES); None where the workload has no style axis."""
        return self.params.get("style")

    @property
    def attention(self) -> str | None:
        """The row's attention (workloads.ATTENTIONS); None where the workload has no attention axis."""
        return self.params.get("attention")

    @property
    def formulation(self) -> str | None:
        """The row's formulation; None (each framework's default) where the class has no formulation axis."""
        return self.params.get("formulation")


class Benchmark:
    """Base of every benchmark class. Subclasses set `axes` (the parameters between size and dtype), and write
    `build(case)` (returns the state the measured methods read, as attributes) and, where some combinations are not
    run, `skip(case)` (returns the reason or None). asv skips classes whose names start with '_'."""

    timeout = 600
    # Timings: `rounds` processes per combination, interleaved with the other benchmarks' rounds, each taking a fixed
    # `repeat` samples (so the report can split asv's recorded samples into processes); `number = 1`.
    rounds = 3
    repeat = 5
    number = 1
    warmup_time = 0  # every step is run three times in setup already (two warm-up calls, one to size the loop)
    version = "5"  # bumped when the numbers stop being comparable; docs/history.md says what each version changed
    timer = staticmethod(per_call_timer)
    axes: list[tuple[str, list]] = []
    per_workload: dict[str, dict[str, Any]] = {}  # class attributes of one workload's class (by_workload)
    dtypes = DTYPES
    precisions = PRECISIONS
    # The program axes by_workload adds where the workload has them (workloads.STYLES, ATTENTIONS): a class runs the
    # matched style and the written attention unless it lists more.
    styles: tuple[str, ...] = ("matched",)
    attentions: tuple[str, ...] = ("written",)
    params: list[list] = []
    param_names: list[str] = []

    def setup(self, *params):
        key = (type(self).__name__, params)
        state = _MEMO.get(key)
        if state is None:
            state = _MEMO[key] = self._prepare(dict(zip(self.param_names, params)))
        elif not isinstance(state, Skip):
            # A memo hit sets the process-wide settings again: another combination's set-up may have set its own.
            frameworks.load(state["case"].framework, *process_settings(state["case"].params))
        if isinstance(state, Skip):
            raise state
        self.__dict__.update(state)
        _LOOP["calls"] = state.get("calls", 1)

    def _prepare(self, params: dict[str, Any]) -> dict[str, Any] | Skip:
        case = Case(params)
        reason = self.reason_to_skip(case)
        if reason:
            return Skip(reason)
        if case.workload is not None:
            inputs = memo(("inputs", case.workload, params["size"], case.dtype),
                          lambda: workloads.make_inputs(case.workload, params["size"], case.dtype,
                                                        cache_dir=os.environ.get("TVT_INPUT_CACHE")))
            case.inputs = workloads.program_of(inputs, case.style, case.attention)
        case.fw = frameworks.load(case.framework, *process_settings(params))
        try:
            state = {"case": case, **self.build(case)}
        except Skip as skip:  # found only once built (a missing calibration, say)
            return skip
        if "step" in state:
            state["calls"] = sampling.calls_for(state["step"])
        return state

    def run_step(self) -> None:
        """The timed body of every time_ method: `calls` calls of the step (see per_call_timer)."""
        for _ in range(self.calls):
            self.step()

    def reason_to_skip(self, case: Case) -> str | None:
        """Why this combination is not run, or None. The generic rules, then the class's own `skip`."""
        if case.workload is not None:
            spec = workloads.spec(case.workload)
            if case.params.get("size") not in spec.sizes:
                return f"{case.params.get('size')} is not a size of {case.workload}"
            if case.dtype not in spec.dtypes:
                return f"{case.workload} is not run in {case.dtype}"
            if case.variant not in spec.variants:
                return f"{case.variant} is not a variant of {case.workload}"
        if case.dtype != "float32" and case.precision != "highest":
            return f"{case.precision} applies to float32 only"  # bfloat16 with tf32 would repeat bfloat16/highest
        return self.skip(case)

    def skip(self, case: Case) -> str | None:
        return None

    def build(self, case: Case) -> dict[str, Any]:
        raise NotImplementedError


def program_axes(base: type, workload: str) -> list[tuple[str, list]]:
    """The style and attention axes of `base` on `workload`: the class's values (`styles`, `attentions`; a function
    of the workload gives that workload's) that the workload has, none where it has no such axis."""
    spec = workloads.spec(workload)
    axes = []
    for name, wanted, valid in (("style", base.styles, spec.styles), ("attention", base.attentions, spec.attentions)):
        wanted = wanted(workload) if callable(wanted) else wanted
        if valid:
            axes.append((name, [v for v in valid if v in wanted]))
    return axes


def by_workload(base: type) -> dict[str, type]:
    """One subclass of `base` per workload whose spec's grid runs the family (`base`'s name without the '_') on this
    device, named `<Family>_<workload>`, whose size parameter lists only that workload's sizes (a workload x size
    product would spawn one asv process per invalid pair), with the parameters
    [framework, workload, size, *axes, style, attention, dtype, precision, device]. An axis given as a function of
    the workload (`formulations`) gets that workload's values, and is left out where they are None; style and
    attention are there where the workload has them (program_axes)."""
    classes = {}
    for workload, workload_sizes in workloads.runs(base.__name__.lstrip("_"), DEVICE).items():
        axes = [(name, values(workload) if callable(values) else values) for name, values in base.axes]
        axes = [(name, values) for name, values in axes if values is not None] + program_axes(base, workload)
        params = [FRAMEWORKS, [workload], list(workload_sizes), *(v for _, v in axes), base.dtypes,
                  base.precisions, [DEVICE]]
        names = ["framework", "workload", "size", *(n for n, _ in axes), "dtype", "precision", "device"]
        name = f"{base.__name__.lstrip('_')}_{workload}"
        classes[name] = type(name, (base,), {"params": params, "param_names": names, "__module__": base.__module__,
                                             "__doc__": base.__doc__, **base.per_workload.get(workload, {})})
    return classes


def suite_classes() -> list[type]:
    """Every public benchmark class of the suite, pillar by pillar in the registry's order (each pillar module
    imported; asv discovers the same files)."""
    import importlib

    found = []
    for pillar in pillars.PILLARS.values():
        module = importlib.import_module(pillar.module)
        found += [cls for name, cls in sorted(vars(module).items())
                  if isinstance(cls, type) and not name.startswith("_") and cls.__module__ == module.__name__]
    return found


def unit(metric: str) -> str:
    """asv's unit of a metric, from the registry."""
    return metrics.get(metric).unit


class _GradStepTime:
    """Mixin: `time_step`, one forward + backward (`steps.grad_step`) of the case's variant in the case's mode."""

    def build(self, case):
        return {"step": case.fw.steps.grad_step(case.inputs, case.variant, case.mode, case.device,
                                                case.formulation)}

    def time_step(self, *params):
        self.run_step()


class _StepCosts:
    """Mixin of the count classes: nothing built for timing; the functions their counts measure are the case's loss
    (saved bytes) and its forward + backward (peak bytes, flops), in the case's variant and formulation."""

    def build(self, case):
        return {}

    def saved_fn(self, case):
        return case.fw.steps.loss_fn(case.inputs, case.variant, case.device, case.formulation)

    def peak_fn(self, case):
        return case.fw.steps.grad_fn(case.inputs, case.variant, case.device, case.formulation)

    flops_fn = peak_fn
