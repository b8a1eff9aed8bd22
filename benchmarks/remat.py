"""Pillar 3, rematerialization: torch.utils.checkpoint (and selective checkpointing) against jax.checkpoint policies.

The recompute must be real in both frameworks: flops go up and saved/peak bytes go down (tests/test_benchmarks.py).
The JAX LSTM puts jax.checkpoint inside lax.scan.

The transformer's trade-off curve (every policy, torch.compile's memory budgets and the layers-per-checkpoint
granularity at two depths, both modes, JAX as lax.scan and as a loop, step times paired inside each process) is
measured by `tape-vs-trace paired` (tape_vs_trace/paired.py), which `make bench` runs after asv: as one asv process
per point it would take several times the suite's time budget.
"""

from __future__ import annotations

from benchmarks.common import Benchmark, _Flops, _PeakBytes, _SavedBytes, _StepCosts, by_device, by_workload
from implementations import workloads

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


globals().update(by_workload(_RematCost))
