"""The metric registry: what each published number means, declared once (the pillars: implementations.pillars).

Benchmarks take their asv ``unit`` from here, the report reads here whether a value is sampled (it has a spread
and an interval) or exact, and whether two frameworks' values may be divided; nothing guesses a meaning from a unit
string. Imports no framework.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One kind of published number. `name` is the asv method name (``time_step``, ``track_peak_bytes``...)."""

    name: str
    unit: str  # asv's unit; the report formats by it
    display: str  # in words, for tables and figure axes
    sampled: bool  # a timing with a spread across processes (True), or an exact, deterministic value (False)
    comparable: bool  # may a JAX value be divided by a PyTorch value? False where the two count different things
    description: str  # one sentence: what is measured and how; the dashboard shows it
    lower_is_better: bool = True  # every metric here is a cost, so asv's regression detection reads it right
    # exact values only: a difference within both bounds (in `unit`, and as a fraction of the larger value) reads
    # as equal and is never a direction (a sampled metric's floor is its ratio's rerun band, report/stats.py)
    resolution: tuple[float, float] = (0.0, 0.0)


# Bytes that differ by a few scalars, a negligible share, are equal: JAX keeps its scalar literals among the
# residuals. Both bounds, so that neither a small tensor at a large size nor at a small one is read as equal.
BYTES_RESOLUTION = (64.0, 1e-4)


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("time_step", "seconds", "step time", True, True,
               "Wall time of one step, device synchronised inside the timed region; compile and warm-up excluded."),
        Metric("time_forward", "seconds", "forward time", True, True,
               "Wall time of one forward pass, device synchronised inside the timed region; compile excluded."),
        Metric("time_compile_seconds", "seconds", "compile time", True, True,
               "First call of the freshly compiled step (trace, compile and one execution), one per process, with "
               "each compiler's one-time start-up warmed on another function."),
        Metric("time_compile_phase", "seconds", "compile phase time", True, True,
               "One phase of the first call of a freshly compiled gradient step (JAX: trace, lower, XLA compile; "
               "PyTorch: Dynamo, AOTAutograd, Inductor; both: the execution, and first_call, the whole call), from "
               "each framework's own timers, one compile per process."),
        Metric("track_peak_bytes", "bytes", "peak memory", False, True,
               "Peak bytes live during one step above what was resident before it; the method is recorded.",
               resolution=BYTES_RESOLUTION),
        # A workspace's size is the library's setting (cuBLAS's per handle, XLA's per call), not the autodiff's, and
        # the two probes read it differently (frameworks.workspace_method): no ratio.
        Metric("track_workspace_bytes", "bytes", "GEMM-library workspace", False, False,
               "The part of the CUDA peak (track_peak_bytes, same probe call) that is cuBLAS/cuBLASLt/cuDNN "
               "workspace: PyTorch's cached workspaces in the allocator, JAX's largest in the compiled program.",
               resolution=BYTES_RESOLUTION),
        Metric("track_saved_bytes", "bytes", "saved for backward", False, True,
               "Bytes kept for the backward pass beyond the inputs, the parameters and the output cotangent.",
               resolution=BYTES_RESOLUTION),
        Metric("track_graph_size", "count", "graph size", False, False,
               "Autograd nodes reachable from the loss (PyTorch) or jaxpr equations of forward + backward (JAX): "
               "different things, so no ratio."),
        Metric("track_flops", "flops", "matmul flops", False, True,
               "Matmul-like operations of one step at 2*m*n*k, every loop iteration counted, in both frameworks."),
        Metric("time_over_matmul_peak", "ratio", "time over matmul-peak time", True, True,
               "Derived by the report: each process's median step time (GradStep) times the run's calibrated "
               "matmul rate over the step's matmul flops (GraphCost); 1 would be the matmul roofline."),
        # The distributed step's counts (`tape-vs-trace distributed`; no asv benchmark has them). Each framework's
        # communicated bytes are checked against the analytic count, not divided by the other's: the two read
        # different layers (the tensors given to c10d, the compiled HLO's collectives) and at one rank c10d is still
        # called where XLA drops the collective.
        Metric("track_communicated_bytes", "bytes", "bytes communicated per step", False, False,
               "Operand bytes of the collectives of one distributed step per rank: PyTorch's c10d calls in rank 0's "
               "profile, JAX's collectives in the compiled HLO (loops times their trip counts); the method is "
               "recorded.", resolution=BYTES_RESOLUTION),
        Metric("track_analytic_bytes", "bytes", "analytic bytes per step", False, True,
               "The operand bytes per rank the distributed step's form needs in principle (ddp and shard_map: an "
               "all-reduce of every gradient and the loss; fsdp: adds the all-gather of a rank's parameter shard; "
               "none at one rank), from the parameter count, the same formula for both frameworks."),
        Metric("track_gradient_bytes", "bytes", "gradient bytes", False, True,
               "Bytes of one full gradient of the distributed step (parameter count times item size), what an "
               "all-reduce of every gradient moves per rank."),
        # The saved-bytes breakdown's rows (`tape-vs-trace saved-all`; no asv benchmark has them): an op is a row's
        # parameter, and PyTorch's aten ops and JAX's primitives are different things, so no ratio.
        Metric("track_saved_op_bytes", "bytes", "saved for backward, one producing op", False, False,
               "Bytes kept for the backward pass that one producing op made (saved-all on the CPU; arguments, "
               "parameters and the cotangent left out; a case's ops sum to its track_saved_bytes at the same "
               "commit); PyTorch's aten ops and JAX's primitives are different things, so no ratio.",
               resolution=BYTES_RESOLUTION),
        # Benchmarks of version 4 and older, whose results stay in results/: one process each, no interval.
        Metric("track_compile_seconds", "seconds", "compile time (one process)", True, True,
               "Cold compile time of the step in one process (version 4 and older): PyTorch's first call minus a "
               "steady call, JAX's trace + lower + compile."),
        Metric("track_time_over_matmul_peak", "ratio", "time over matmul-peak time (one process)", True, True,
               "Median of 11 step times in one process over the time its matmul flops take at the calibrated "
               "matmul rate (version 4 and older)."),
    )
}


# Benchmarks whose two frameworks run different formulations of the same workload, so no JAX/PyTorch ratio is
# formed from them (benchmark name prefix -> the reason the report prints). JAX's remat of the LSTM runs inside
# lax.scan (where XLA keeps the recompute), PyTorch's checkpointing a Python loop over steps. The transformer's
# remat curve has a formulation column of its own (report/paired_section.py divides like formulations only).
UNLIKE_FORMULATIONS: dict[str, str] = {
    "remat.RematCost_lstm": "scan against unrolled",
    # Benchmarks of version 3 and older, whose results stay in results/ and are still cited: the transformer's JAX
    # remat ran as lax.scan only (its step times are now on the paired remat curve, both forms).
    "remat.RematStep_transformer": "scan against unrolled",
    "remat.RematCost_transformer": "scan against unrolled",
}


def unlike_formulations(benchmark: str) -> str:
    """Why the two frameworks' rows of `benchmark` may not be divided, or '' where they may."""
    return next((why for prefix, why in UNLIKE_FORMULATIONS.items() if benchmark.startswith(prefix)), "")


def resolution(name: str) -> tuple[float, float]:
    """The resolution of exact metric `name` (Metric.resolution); none for a name the registry does not know."""
    return METRICS[name].resolution if name in METRICS else (0.0, 0.0)


def get(name: str) -> Metric:
    """The metric of an asv method name; a ValueError lists the known ones."""
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; valid choices: {', '.join(METRICS)}") from None
