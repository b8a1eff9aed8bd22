"""Pillar 1, graph recording vs tracing: PyTorch's eager tape and torch.compile against jax.grad and jax.jit."""

from __future__ import annotations

import ast
import contextlib
import importlib
import sys
from pathlib import Path

from benchmarks.common import (
    STEP_DTYPES,
    STEP_PRECISIONS,
    Benchmark,
    _GradStepTime,
    _StepCosts,
    by_device,
    by_workload,
    formulations,
    unit,
)
from benchmarks.counts import _Flops, _SavedBytes
from implementations import workloads
from implementations.workloads import ATTENTIONS, STYLES


def _skip_formulation(case) -> str | None:
    """Which (framework, mode, formulation) rows exist. Op-by-op, neither scan runs: an un-jitted lax.scan is
    compiled anew on every call, and torch's scan higher-order op is traced by TorchDynamo on every eager call. A
    workload whose PyTorch module has no scan form (the transformer) has no PyTorch scan row."""
    if case.params.get("formulation") != "scan":
        return None
    if case.framework == "torch" and case.workload not in TORCH_SCAN_WORKLOADS:
        return f"PyTorch has no scan form of the {case.workload}: torch.compile traces its Python loop"
    if case.mode in ("eager", "record", "no_grad"):
        if case.framework == "torch":
            return "eager torch scan (torch._higher_order_ops.scan) is traced by TorchDynamo on every call"
        return "op-by-op JAX recompiles an un-jitted lax.scan on every call"
    return None


def _scan_form(workload: str) -> bool:
    """Whether the workload's PyTorch module has a scan form (`SCAN_FORM = True`), read from its source where it is
    not imported: no framework is imported at a benchmark file's module level."""
    module = sys.modules.get(f"implementations.torch.{workload}")
    if module is not None:
        return getattr(module, "SCAN_FORM", False) is True
    path = Path(workloads.__file__).parent / "torch" / f"{workload}.py"
    body = ast.parse(path.read_text()).body if path.exists() else []
    return any(isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["SCAN_FORM"]
               and getattr(node.value, "value", None) is True for node in body)


# The workloads whose PyTorch module has a scan form; tests/test_formulation.py checks them against the modules.
TORCH_SCAN_WORKLOADS = tuple(w for w, s in workloads.WORKLOADS.items() if "scan" in s.formulations and _scan_form(w))
# The LSTM's CPU sizes per mode, its spec's GradStep sizes by sequence length: op-by-op JAX dispatches every op of
# every time step from Python, so the eager pair runs the shortest sequence and the compiled pair the longest.
LSTM_CPU_EAGER_SIZE, *_, LSTM_CPU_COMPILED_SIZE = sorted(workloads.spec("lstm").runs("GradStep", "cpu"),
                                                         key=lambda size: workloads.spec("lstm").sizes[size]["chars"])


class _GradStep(_GradStepTime, Benchmark):
    """One forward + backward step (loss and the gradients of every input), device synchronised.

    mode 'eager': PyTorch records its autograd tape on every call; JAX runs jax.value_and_grad op by op (traced on
    every call). mode 'compiled': torch.compile of the loss / jax.jit of value_and_grad. formulation 'unrolled' is a
    Python loop over layers or time steps (what PyTorch always runs), 'scan' is JAX's lax.scan.
    """

    axes = [("mode", ["eager", "compiled"]), ("formulation", formulations)]
    styles = STYLES
    attentions = ATTENTIONS
    dtypes = STEP_DTYPES
    precisions = STEP_PRECISIONS
    # Op-by-op JAX takes seconds per LSTM step on a CPU: 3 samples per process. The millisecond mlp step, whose
    # jax.jit / torch.compile ratio the report states, moves between processes more than 3 of them show.
    per_workload = {"lstm": {"repeat": 3}, "mlp": {"rounds": 5}}

    def skip(self, case):
        if case.workload == "lstm":
            reason = _skip_lstm(case)
            if reason:
                return reason
        # The fused kernel masks and normalises inside, so the styles differ only in the layer norm and silu, which
        # the written rows time in both styles; CUDA machines run every pair.
        if case.attention == "fused" and case.style == "default" and case.device == "cpu":
            return "fused attention runs in the matched style only on CPU (budget); CUDA machines run both styles"
        return _skip_formulation(case)


def _skip_lstm(case) -> str | None:
    """Where the LSTM's GradStep rows run: every row a pair of the two frameworks. On CPU, eager at the short
    sequence (LSTM_CPU_EAGER_SIZE), compiled at the long one (LSTM_CPU_COMPILED_SIZE); compiled as scan only:
    TorchDynamo unrolls the Python loop into one graph and XLA's compile of the unrolled loop grows faster than
    linearly, so both compiles of the unrolled loop take minutes on a CPU."""
    if case.device == "cpu":
        if case.mode == "eager" and case.size == LSTM_CPU_COMPILED_SIZE:
            return f"op-by-op LSTM steps on CPU run at {LSTM_CPU_EAGER_SIZE} (op-by-op JAX: seconds per step)"
        if case.mode == "compiled" and case.size == LSTM_CPU_EAGER_SIZE:
            return f"{LSTM_CPU_EAGER_SIZE} is the LSTM's op-by-op size on CPU"
    if case.mode == "compiled" and case.formulation == "unrolled":
        compiler = ("torch.compile (torch 2.13, Dynamo unrolls" if case.framework == "torch"
                    else "jax.jit (XLA, unrolled")
        steps = workloads.spec("lstm").sizes[case.size]["chars"] - 1
        return f"{compiler} the {steps}-step loop) takes minutes; the compiled LSTM pair is the scan form"
    return None


class _ForwardRecording(Benchmark):
    """The cost of recording: one forward that keeps what the backward needs (PyTorch grad-enabled / jax.vjp)
    against one that does not (no_grad / a plain op-by-op call). Both op by op."""

    axes = [("mode", ["record", "no_grad"])]
    attentions = ATTENTIONS

    def build(self, case):
        return {"step": case.fw.steps.forward_step(case.inputs, "plain", case.mode, case.device,
                                                   _eager_formulation(case))}

    def time_forward(self, *params):
        self.run_step()


def _eager_formulation(case) -> str | None:
    """Op-by-op forms run the Python loop where the workload has one (see formulations)."""
    return "unrolled" if workloads.spec(case.workload).formulations else None


class _GraphCost(_SavedBytes, _Flops, _StepCosts, Benchmark):
    """What one recorded/traced step keeps before it runs: graph size (PyTorch autograd nodes / JAX jaxpr
    equations: different things, no ratio), the bytes saved for the backward beyond inputs and parameters, and the
    matmul flops of one forward + backward (the report divides GradStep's per-process times by them: the roofline)."""

    axes = [("formulation", formulations)]
    styles = STYLES
    attentions = ATTENTIONS
    rounds = 1

    def skip(self, case):
        if case.framework == "torch" and case.formulation == "scan":
            if case.workload in TORCH_SCAN_WORKLOADS:
                return "PyTorch's scan form is timed only (GradStep): its graph is one scan node"
            return f"PyTorch has no scan form of the {case.workload}"
        return None

    def count_graph_size(self) -> int:
        fn, args = self.saved_fn(self.case)
        return self.case.fw.probe.graph_size(fn, *args)

    def track_graph_size(self, *params):
        return self.counted("track_graph_size")

    track_graph_size.unit = unit("track_graph_size")


class _CompileSeconds(Benchmark):
    """Compile of one forward + backward step (jax.jit / torch.compile of steps.grad_fn), kept apart from step
    time: the timed call is the first call of the compiled step, built fresh in this process (trace, compile and
    one execution of the step, synchronised). That execution is one step, milliseconds against seconds of compile
    on CPU (GradStep's compiled rows give its time). Set-up pays each compiler's one-time start-up on another
    function first and prepares `cache`: 'cold' (caches off or cleared) or 'warm' (Inductor's FX-graph and
    AOTAutograd caches / JAX's persistent compilation cache filled by an earlier compile of the step). One compile
    per process, three processes: the interval is between processes, as for every time."""

    # Warm caches on CUDA machines' mlp only: on a 2-core CPU three processes of each cache state do not fit the
    # suite's 15 minutes (a cold torch.compile of the transformer takes half a minute there).
    axes = [("cache", lambda workload: by_device(cpu=["cold"], cuda=["cold", "warm"] if workload == "mlp"
                                                 else ["cold"]))]
    # One timed call per process, no warm-up call, setup once (asv_runner: with number = repeat = 1 and no
    # warm-up, setup runs before the one timed call and not again).
    repeat = 1
    number = 1
    warmup_time = 0
    version = "6"
    fresh_process = True  # tape-vs-trace run: a cold compile in a process that compiled nothing before it

    def build(self, case):
        fn, args = case.fw.steps.grad_fn(case.inputs, case.variant, case.device)
        return {"fn": fn, "args": args}

    def setup(self, *params):
        Benchmark.setup(self, *params)
        self._compile = contextlib.ExitStack()
        self.first_call = self._compile.enter_context(
            self.case.fw.compile_probe.first_compiled_call(self.fn, *self.args, cache=self.case.cache))

    def teardown(self, *params):
        if hasattr(self, "_compile"):  # not there when setup skipped the combination
            self._compile.close()

    def time_compile_seconds(self, *params):
        self.first_call()


# Each framework's compile phases and layer-loop formulations (implementations/<framework>/compile_phases.py's
# PHASES and FORMULATIONS), named here since no framework is imported at module level; tests/test_compile_phases.py
# checks them against the modules.
COMPILE_PHASES = {"torch": ("dynamo", "aot_autograd", "inductor", "execution"),
                  "jax": ("trace", "lower", "xla_compile", "execution")}
COMPILE_FORMULATIONS = {"torch": ("unrolled", "regional"), "jax": ("unrolled", "scan")}
# What the phase clock reads: the seconds of the row's phase, once measured.
_PHASE = {"seconds": 0.0}
# The point (every parameter but the phase) whose first call this process set up and measured, shared by its phase
# rows: tape-vs-trace run gives a point's rows one process (fresh_process_shared_across), asv one row each.
_POINT: dict = {"key": None, "stack": None, "measure": None, "seconds": None}


def phase_clock() -> float:
    """asv's `timer` of CompilePhases: 0 before the timed call, the row's phase seconds after it, so the one sample
    of the process is that phase of its one first call (as the framework's own timers measured it)."""
    return _PHASE["seconds"]


class _CompilePhases(Benchmark):
    """Where the first call of a freshly compiled gradient step spends its time, at each depth of the workload's
    depth series (workloads.depth_series): one phase per row (`phase`; 'first_call' is the whole call), each
    framework's own timers (implementations/<framework>/compile_phases.py), and how the step is formulated:
    'unrolled' (every layer in the program), JAX's 'scan' or PyTorch's 'regional' (the repeated block compiled once).
    One compile per process, measured once for every phase row of the point set up in it (the worker runner puts a
    point's rows in one process, asv each row in its own); set-up warms the compiler on another function and
    prepares `cache` as CompileSeconds does."""

    # A warm cache on CPU machines for the chain only: PyTorch's transformer processes take minutes on a 2-core CPU.
    axes = [("formulation", ["unrolled", "scan", "regional"]),
            ("cache", lambda workload: by_device(cpu=["cold", "warm"] if workload == "chain" else ["cold"],
                                                 cuda=["cold", "warm"])),
            ("phase", ["first_call", *dict.fromkeys(p for phases in COMPILE_PHASES.values() for p in phases)])]
    # One process per point on CPU: each costs a compile (minutes of them on a 2-core CPU), and a growth exponent's
    # interval comes from the fit over the depths; CUDA machines run three.
    rounds = by_device(cpu=1, cuda=3)
    repeat = 1
    number = 1
    warmup_time = 0
    version = "1"
    fresh_process = True  # tape-vs-trace run: a cold compile in a process that compiled nothing before it
    fresh_process_shared_across = "phase"  # tape-vs-trace run: a point's phase rows read one compile in one process
    timer = staticmethod(phase_clock)

    def skip(self, case):
        if case.phase != "first_call" and case.phase not in COMPILE_PHASES[case.framework]:
            return f"{case.phase} is not a phase of {case.framework}'s compile"
        if case.formulation not in COMPILE_FORMULATIONS[case.framework]:
            return f"{case.framework} has no {case.formulation} formulation"
        shallowest = next(iter(workloads.depth_series(case.workload, case.device).values()))
        if case.cache == "warm" and case.size != shallowest:
            return "a warm cache runs at the depth series' shallowest depth only (each row costs a process)"
        return None

    def build(self, case):
        phases = importlib.import_module(f"implementations.{case.framework}.compile_phases")
        return {"phases": phases}

    def setup(self, *params):
        Benchmark.setup(self, *params)
        _PHASE["seconds"] = 0.0
        point = (type(self).__name__, tuple(p for n, p in zip(self.param_names, params) if n != "phase"))
        if _POINT["key"] != point:  # another point's compile never serves this one
            _release_point()
            stack = contextlib.ExitStack()
            measure = stack.enter_context(self.phases.first_call(
                self.case.inputs, self.case.formulation, self.case.device, self.case.cache))
            _POINT.update(key=point, stack=stack, measure=measure, seconds=None)

    def teardown(self, *params):
        _release_point()

    def time_compile_phase(self, *params):
        if _POINT["seconds"] is None:
            _POINT["seconds"] = _POINT["measure"]()
        _PHASE["seconds"] = _POINT["seconds"][self.case.phase]


def _release_point() -> None:
    """Close the set-up of the point this process measured (its compiler state, its cache directory)."""
    if _POINT["stack"] is not None:
        _POINT["stack"].close()
    _POINT.update(key=None, stack=None, measure=None, seconds=None)


globals().update(by_workload(_GradStep))
globals().update(by_workload(_ForwardRecording))
globals().update(by_workload(_GraphCost))
globals().update(by_workload(_CompileSeconds))
globals().update(by_workload(_CompilePhases))
