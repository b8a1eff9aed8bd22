"""Pillar 3, rematerialization: torch.utils.checkpoint (and selective checkpointing) against jax.checkpoint policies.

The recompute must be real in both frameworks: flops go up and saved/peak bytes go down (tests/test_benchmarks.py).
The JAX LSTM puts jax.checkpoint inside lax.scan.

The transformer's trade-off curve (every policy, torch.compile's memory budgets and the layers-per-checkpoint
granularity at two depths, both modes, JAX as lax.scan and as a loop) is RematCurve_*: one step time per point.
`tape-vs-trace paired` divides its points pass by pass from tape-vs-trace run's samples and adds their costs.
"""

from __future__ import annotations

from benchmarks.common import DEVICE, Benchmark, _GradStepTime, _StepCosts, by_device, by_workload, formulations
from benchmarks.counts import _Flops, _PeakBytes, _SavedBytes
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
        budget = _CURVE[_point(case)]
        variant = "plain" if budget is not None else case.point
        return {"step": case.fw.steps.grad_step(case.inputs, variant, case.mode, case.device, case.formulation,
                                                budget=budget)}


globals().update(by_workload(_RematCost))
globals().update(by_workload(_RematCurve))
