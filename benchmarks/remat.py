"""Pillar 3, rematerialization: torch.utils.checkpoint (and selective checkpointing) against jax.checkpoint policies.

The recompute must be real in both frameworks: flops go up and saved/peak bytes go down (tests/test_benchmarks.py).
The JAX LSTM puts jax.checkpoint inside lax.scan.

The transformer's trade-off curve (every policy, torch.compile's memory budgets and the layers-per-checkpoint
granularity at two depths, both modes, JAX as lax.scan and as a loop) is RematCurve_*: one step time per point.
`tape-vs-trace paired` divides its points pass by pass from tape-vs-trace run's samples and adds their costs,
counted by the count mixins over the curve's own combinations (curve_counts).
"""

from __future__ import annotations

from typing import Any

from benchmarks import common
from benchmarks.common import DEVICE, Benchmark, _GradStepTime, _StepCosts, by_device, by_workload, formulations
from benchmarks.counts import _Flops, _PeakBytes, _SavedBytes, skip_method
from implementations import experiments, workloads

VARIANTS = ["plain", "remat_full", "remat_dots", "remat_names", "remat_every2", *by_device([], ["remat_offload"])]


def _policies(names: list[str]):
    def variants(workload: str) -> list[str]:
        """The remat policies `workload` has (the LSTM has no matmuls to save)."""
        return [v for v in names if v in workloads.spec(workload).variants]

    return variants


class _RematCost(_SavedBytes, _PeakBytes, _Flops, _StepCosts, Benchmark):
    """Peak bytes, saved bytes and matmul flops of one forward + backward per remat policy."""

    axes = [("variant", _policies(VARIANTS))]
    rounds = 1


# (framework, workload, size, mode, formulation, attention, point) of every point of the curve -> its torch.compile
# budget (or None); formulation '' where the workload has no loop
_CURVE = {(e.framework, e.workload, e.size, p.mode, e.formulation, e.attention or "written", experiments.point_id(p)):
          p.budget for e in experiments.experiments(DEVICE) if e.group == "remat" for p in e.points}


def _point(case) -> tuple:
    return (case.framework, case.workload, case.size, case.mode, case.formulation or "", case.attention or "written",
            case.point)


class _RematCurve(_GradStepTime, Benchmark):
    """The trade-off curve's step time: every point (a checkpoint policy, or one of torch.compile's activation
    memory budgets) of every remat experiment of implementations.experiments, both frameworks, both modes, JAX also
    as lax.scan, and the first size's policies again with fused attention, compiled. tape-vs-trace run's worker
    times a framework's points in turn, pass by pass, in one process per round, which is what `tape-vs-trace
    paired` divides (asv run gives each point its own process: no pairing)."""

    axes = [("mode", ["eager", "compiled"]), ("formulation", formulations), ("point", experiments.point_ids(DEVICE))]
    attentions = workloads.ATTENTIONS
    repeat = 10  # passes per process: a paired ratio is the median over them

    def skip(self, case):
        if _point(case) not in _CURVE:
            return "not a point of the remat curve (implementations.experiments)"
        return None

    def build(self, case):
        variant, budget = _variant_budget(case)
        return {"step": case.fw.steps.grad_step(case.inputs, variant, case.mode, case.device, case.formulation,
                                                budget=budget)}


def _variant_budget(case) -> tuple[str, float | None]:
    """The policy a curve point runs and its torch.compile budget: a budget point is the plain step under it."""
    budget = _CURVE[_point(case)]
    return ("plain" if budget is not None else case.point), budget


def no_peak(framework: str, mode: str, device: str) -> str:
    """Why the memory method of (framework, mode, device) cannot see the step's peak as timed, or ''."""
    if device == "cuda":  # the allocators see every step but JAX's op-by-op one (its probe measures a jitted program)
        return "an op-by-op JAX step's peak is not taken here" if framework == "jax" and mode == "eager" else ""
    if framework == "torch" and mode == "compiled":
        return "the live-storage tracker cannot see inside Inductor's kernels"
    if framework == "jax" and mode == "eager":
        return "an op-by-op step has no XLA buffer plan"
    return ""


EAGER_COSTS = "eager probes (saved-tensor hooks / jax.vjp residuals; FlopCounterMode / jaxpr matmuls)"


class _CurveCounts(_SavedBytes, _PeakBytes, _Flops, _StepCosts):
    """Mixin over a RematCurve_<workload> class: the counts of one point of the curve through the count mixins, in
    the point's mode, formulation, policy and torch.compile budget. Compiled steps are costed as compiled
    (compile_probe.compiled_costs: torch.compile's partition under the budget, JAX's differentiated jaxpr), eager
    ones by the eager probes; a peak where the framework's memory method sees the step as timed (no_peak). Not an
    asv class (the cited profile's track_ selection stays as it is): `tape-vs-trace paired` counts with it."""

    def saved_fn(self, case):
        return case.fw.steps.loss_fn(case.inputs, _variant_budget(case)[0], case.device, case.formulation)

    def peak_fn(self, case):
        variant, budget = _variant_budget(case)
        if case.framework == "torch" and case.mode == "compiled":
            # The allocator sees inside Inductor's kernels: the compiled step itself, built here (compiled_costs
            # reset TorchDynamo); the args only tell the probe the device, and its warm-up call does the compile.
            step = case.fw.steps.grad_step(case.inputs, variant, case.mode, case.device, case.formulation,
                                           budget=budget)
            _, args = self.saved_fn(case)
            return (lambda *_: step()), args
        return self.flops_fn(case)

    def flops_fn(self, case):
        return case.fw.steps.grad_fn(case.inputs, _variant_budget(case)[0], case.device, case.formulation)

    def compiled(self) -> Any:
        """compile_probe.compiled_costs of a compiled point, once per process for its saved bytes and flops."""
        case = self.case

        def count() -> Any:
            fn, args = self.saved_fn(case)
            return case.fw.compile_probe.compiled_costs(fn, *args, budget=_variant_budget(case)[1])

        return common.memo(("compiled_costs", type(self).__name__, tuple(case.params.values())), count)

    def count_saved_bytes(self) -> int:
        return self.compiled().saved_bytes if self.case.mode == "compiled" else super().count_saved_bytes()

    def count_flops(self) -> float:
        return self.compiled().matmul_flops if self.case.mode == "compiled" else super().count_flops()

    def count_peak_bytes(self) -> int:
        reason = self.reason_to_skip_method("track_peak_bytes", self.case)
        if reason:
            skip_method(reason)
        return self.peak().bytes  # the method the probe names goes with it (costs), not refused

    def reason_to_skip_method(self, method: str, case: common.Case) -> str | None:
        if method == "track_peak_bytes":
            return no_peak(case.framework, case.mode, case.device) or None
        if method == "track_workspace_bytes":
            return "not a cost of the curve's points"
        return super().reason_to_skip_method(method, case)

    def costs(self) -> dict[str, Any]:
        """The paired table's cost columns of this point (tape_vs_trace.side.paired.FIELDS)."""
        case = self.case
        saved, flops = self.count_saved_bytes(), self.count_flops()
        method = self.compiled().method if case.mode == "compiled" else EAGER_COSTS
        reason = self.reason_to_skip_method("track_peak_bytes", case)
        peak, peak_method = None, f"not measured: {reason}"
        if not reason:
            peak, peak_method = self.count_peak_bytes(), self.peak().method
            if case.device == "cuda":  # an allocator's high-water mark carries this process's earlier points
                peak_method += "; not a fresh state: taken after other points in the same process"
        return {"saved_bytes": saved, "flops": flops, "cost_method": method, "peak_bytes": peak,
                "peak_method": peak_method}


def curve_counts(workload: str) -> type:
    """The count class of RematCurve_<workload>'s points: its parameters, skips and inputs, counted by the mixins."""
    timed = globals()[f"RematCurve_{workload}"]
    return type(f"_RematCurveCounts_{workload}", (_CurveCounts, timed), {"__module__": __name__})


globals().update(by_workload(_RematCost))
globals().update(by_workload(_RematCurve))
