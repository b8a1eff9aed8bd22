"""The pillar registry: each pillar of the suite declared once, with its benchmark module, its benchmark families,
the parameters that name its variants, its figure and its findings. The asv suite, the count cache, the GPU
chunks and the report (figure list, figure per pillar, variant names, findings) all read it. Imports no framework.

To add a pillar: write ``benchmarks/<name>.py`` (one ``_<Family>`` base class per family, made per workload by
``benchmarks.common.by_workload``), the steps it calls on both sides, and one entry below; the workloads that run
it say so in their spec's ``grid`` (implementations/workload_table.py). CONTRIBUTING.md has the steps.
"""

from __future__ import annotations

from implementations import frameworks
from implementations.pillar_spec import Across, Change, Figure, Paired, Panel, Pillar, ProgramChange, Role, Rule, Side

# The parameters every per-workload benchmark has (benchmarks.common.by_workload); a pillar's `axes` come between
# size and dtype and name its variants.
BASE_PARAMS = ("framework", "workload", "size", "dtype", "precision", "device")
# The program's parameters, after a pillar's axes where the workload has them (benchmarks.common.program_axes): they
# name the row's program (report.load.program_name), not its variant.
PROGRAM_PARAMS = ("style", "attention")


_POLICIES = ("remat_full", "remat_dots")
# The transforms both frameworks run (frameworks.TRANSFORMS less PyTorch's tape APIs), each in the modes both run.
_SHARED_TRANSFORMS = [(t, mode) for t in frameworks.get("jax").transforms for mode in ("eager", "compiled")
                      if not (mode == "compiled" and t in frameworks.get("torch").uncompiled_transforms)]
# The transforms both frameworks count saved bytes of: a tape (or residuals) exists and both probes see it.
_SAVED_TRANSFORMS = [t for t in frameworks.get("jax").transforms if t not in frameworks.TAPELESS_TRANSFORMS
                     and t not in frameworks.get("torch").unsaved_transforms]
_HVP_MODES = {"hvp_rev_rev": "reverse-over-reverse", "hvp_rev_fwd": "reverse-over-forward",
              "hvp_double_backward": "double backward"}

PILLARS: dict[str, Pillar] = {
    p.name: p
    for p in (
        Pillar(
            "recording", "graph recording vs tracing", "eager autograd tape; torch.compile",
            "op-by-op jax.value_and_grad; jax.jit",
            ("GradStep", "ForwardRecording", "GraphCost", "CompileSeconds", "CompilePhases"),
            ("mode", "formulation", "cache", "phase"),
            Figure("values"),
            (
                # what the tape keeps against what tracing keeps, and what compiling buys
                Across("track_saved_bytes", "", "JAX's jax.vjp residuals (before XLA) against PyTorch's tape",
                       ops=True),
                Side("track_graph_size", "", "PyTorch autograd nodes and JAX jaxpr equations (forward + backward)"),
                *(Across("time_step", f"eager{form}", "JAX op-by-op jax.value_and_grad against PyTorch's eager tape")
                  for form in ("", "/unrolled")),
                *(Across("time_step", f"compiled{form}", "jax.jit against torch.compile")
                  for form in ("", "/unrolled")),
                *(Change("time_step", f"eager{form}", f"compiled{form}", "compiling the step")
                  for form in ("", "/unrolled")),
                Change("time_step", "compiled/unrolled", "compiled/scan", "lax.scan instead of a Python loop"),
                Change("time_forward", "no_grad", "record", "recording the forward for a backward"),
                # what each framework's out-of-the-box program costs against the matched one, and fused attention
                ProgramChange("track_saved_bytes", "style", "default", "matched", "the matched program", ops=True),
                ProgramChange("time_step", "style", "default", "matched", "the matched program"),
                ProgramChange("track_saved_bytes", "attention", "written", "fused", "fused attention", ops=True),
                ProgramChange("time_step", "attention", "written", "fused", "fused attention"),
            ),
            (("step time", Role("GradStep", "time_step")), ("flops", Role("GraphCost", "track_flops")),
             ("saved bytes", Role("GraphCost", "track_saved_bytes"))),
        ),
        Pillar(
            "custom_backward", "custom backward", "torch.autograd.Function (forward, setup_context, backward)",
            "jax.custom_vjp",
            ("CustomStep", "CustomMemory"), ("variant", "mode"), Figure("values"),
            (
                Change("track_saved_bytes", "plain", "custom", "the custom backward", ops=True),
                Change("track_peak_bytes", "plain", "custom", "the custom backward"),
                ProgramChange("track_saved_bytes", "style", "default", "matched", "the matched program", ops=True),
                Change("time_step", "plain/eager", "custom/eager", "the custom backward, eager", paired=True),
                Change("time_step", "plain/compiled", "custom/compiled", "the custom backward, compiled",
                       paired=True),
            ),
            (("custom step time", Role("CustomStep", "time_step")),),
            paired=Paired("grad", "paired.custom", "CustomStep", "time_step"),
        ),
        Pillar(
            "remat", "rematerialization",
            "torch.utils.checkpoint(use_reentrant=False), selective checkpointing (matmuls, named ops), "
            "torch.compile's activation_memory_budget",
            "jax.checkpoint with dots_saveable / save_only_these_names, as lax.scan and as a loop",
            ("RematCost", "RematCurve"), ("variant",),
            Figure("changes", "remat: each policy's memory against plain (below 0: the policy saves memory)",
                   (Panel("track_peak_bytes", "plain", _POLICIES, "peak memory, change against plain"),
                    Panel("track_saved_bytes", "plain", _POLICIES, "saved for backward, change against plain"))),
            # the memory each policy saves; the transformer's curve, times included, is the paired runner's
            tuple(Change("track_peak_bytes", "plain", policy, policy) for policy in _POLICIES),
            (("curve step time", Role("RematCurve", "time_step")),
             ("remat saved bytes", Role("RematCost", "track_saved_bytes"))),
            docs="remat-curve.md",
        ),
        Pillar(
            "inference", "no-grad inference", "grad-enabled forward, no_grad, inference_mode, compiled",
            "op-by-op and jitted forward", ("Forward", "ForwardMemory"), ("mode",), Figure("values"),
            (
                # paired: inference_mode alone ('record' is no Forward combination; compiled against no_grad would
                # pull the compiled Forward rows into the eager process)
                *(Change("time_forward", "no_grad", mode, mode, paired=mode == "inference_mode")
                  for mode in ("record", "inference_mode", "compiled")),
                Change("track_peak_bytes", "no_grad", "record", "a recording forward"),
                ProgramChange("track_peak_bytes", "attention", "written", "fused", "fused attention"),
            ),
            (("forward time", Role("Forward", "time_forward")),),
            paired=Paired("forward", "paired.inference", "Forward", "time_forward"),
        ),
        Pillar(
            "engine", "autograd engine", ".grad accumulation, tensor hooks, retain_graph, zero_grad",
            "functional counterparts (tree add, calling a VJP twice)", ("EngineStep",), ("feature", "mode"),
            Figure("values"),
            (
                Change("time_step", "no_hooks/eager", "hooks/eager", "tensor hooks", paired=True),
                Change("time_step", "zero_grad_none/eager", "zero_grad_zeros/eager", "zero_grad(set_to_none=False)",
                       paired=True),
                Change("time_step", "accumulate_tree_add/eager", "accumulate_grad_attr/eager",
                       "accumulating into .grad", paired=True),
            ),
            paired=Paired("engine", "paired.engine", "EngineStep", "time_step"),
        ),
        Pillar(
            "transforms", "function transforms and higher-order derivatives",
            "torch.func (grad, jvp, vjp, jacfwd, jacrev, vmap), the tape (.backward(), autograd.grad, "
            "create_graph double backward), forward_ad dual numbers; torch.compile",
            "jax.grad, jax.jvp, jax.vjp, jax.jacfwd, jax.jacrev, jax.vmap; jax.jit",
            ("TransformStep", "TransformMemory", "TransformSaved"),
            ("transform", "mode"), Figure("values"),
            (
                *(Across("time_step", f"{t}/{mode}",
                         f"{t}, {'jax.jit against torch.compile' if mode == 'compiled' else 'eager'}")
                  for t, mode in _SHARED_TRANSFORMS),
                *(Change("time_step", f"per_example_loop/{mode}", f"per_example_vmap/{mode}",
                         "vmap instead of a loop of per-example gradients", paired=True)
                  for mode in ("eager", "compiled")),
                Change("time_step", "grad_backward/eager", "grad/eager", "torch.func.grad instead of .backward()",
                       paired=True),
                Change("time_step", "grad_autograd/eager", "grad/eager", "torch.func.grad instead of autograd.grad",
                       paired=True),
                Change("time_step", "jvp_dual/eager", "jvp/eager", "torch.func.jvp instead of forward_ad duals",
                       paired=True),
                *(Change("time_step", "hvp_fwd_rev/eager", f"{m}/eager", f"{what} instead of forward-over-reverse",
                         paired=True) for m, what in _HVP_MODES.items()),
                Change("time_step", "hvp_fwd_rev/compiled", "hvp_rev_rev/compiled",
                       "reverse-over-reverse instead of forward-over-reverse", paired=True),
                *(Change("time_step", f"jacrev_tall/{mode}", f"jacfwd_tall/{mode}",
                         "forward mode on the tall Jacobian", paired=True) for mode in ("eager", "compiled")),
                *(Change("time_step", f"jacfwd_wide/{mode}", f"jacrev_wide/{mode}",
                         "reverse mode on the wide Jacobian", paired=True) for mode in ("eager", "compiled")),
                Change("time_step", "grad/eager", "grad/compiled", "compiling the gradient", paired=True),
                Change("time_step", "hvp_fwd_rev/eager", "hvp_fwd_rev/compiled", "compiling the HVP", paired=True),
                # memory: JAX's residuals against PyTorch's tape, and each side's peak (a ratio only where both
                # frameworks measured it by one method: on CUDA; on a CPU the row says why not)
                *(Across("track_saved_bytes", t, f"{t}, JAX's jax.vjp residuals against PyTorch's tape")
                  for t in _SAVED_TRANSFORMS),
                *(Across("track_peak_bytes", t, t) for t in frameworks.get("jax").transforms),
                Change("track_peak_bytes", "per_example_loop", "per_example_vmap",
                       "vmap instead of a loop of per-example gradients"),
                *(Change("track_peak_bytes", "hvp_fwd_rev", m, f"{what} instead of forward-over-reverse")
                  for m, what in _HVP_MODES.items()),
                Change("track_peak_bytes", "jacrev_tall", "jacfwd_tall", "forward mode on the tall Jacobian"),
                Change("track_peak_bytes", "jacfwd_wide", "jacrev_wide", "reverse mode on the wide Jacobian"),
            ),
            (("transform step time", Role("TransformStep", "time_step")),),
            paired=Paired("transform", "paired.transforms", "TransformStep", "time_step"),
            docs="transforms.md",
        ),
        Pillar(
            "harness", "harness overhead", "the suite's synchronised path against a direct call",
            "the suite's synchronised path against a direct call", (), ("path",),
            Figure("changes", "harness overhead: the suite's timed path against a direct call",
                   (Panel("time_step", "raw", ("synchronized",),
                          "step time, synchronised path against a direct call"),)),
            (Change("time_step", "raw", "synchronized", "the suite's synchronised path"),),
        ),
    )
}

# The grids outside asv that read the workload specs too: the saved-bytes breakdown (tape_vs_trace.side.saved), the
# paired runner's experiments (tape_vs_trace.side.paired), the peak sanity check (tape_vs_trace.side.gpucheck) and the
# steps over several ranks (tape_vs_trace.side.distributed_run).
# Families whose asv rows only the paired section of the report reads (as tape-vs-trace paired's divisions of them):
# one step time per point of the remat curve, which the dashboard draws and no pillar table repeats.
PAIRED_FAMILIES = ("RematCurve",)
SIDE_GRIDS = ("saved", "paired.inference", "paired.engine", "paired.custom", "paired.transforms", "gpucheck",
              "distributed")
FAMILIES: tuple[str, ...] = (*(f for p in PILLARS.values() for f in p.families), *SIDE_GRIDS)


def pillar_of(family: str) -> Pillar:
    """The pillar whose benchmark file defines `family`; a ValueError lists the families."""
    for p in PILLARS.values():
        if family in p.families:
            return p
    raise ValueError(f"unknown benchmark family {family!r}; valid choices: {', '.join(FAMILIES)}")


def findings() -> list[tuple[str, Rule]]:
    """Every pillar's findings as (pillar, rule), in registry order."""
    return [(p.name, rule) for p in PILLARS.values() for rule in p.findings]


def role(use: str) -> tuple[Pillar, Role]:
    """The pillar that declares the metric read for `use` (its `roles`), and the metric; a ValueError names them."""
    found = [(p, r) for p in PILLARS.values() for u, r in p.roles if u == use]
    if len(found) != 1:
        known = sorted(u for p in PILLARS.values() for u, _ in p.roles)
        raise ValueError(f"the role {use!r} is declared {len(found)} times; declared: {', '.join(known)}")
    return found[0]


def role_benchmark(use: str, workload: str = "") -> str:
    """The asv name of the metric read for `use` on `workload`; without a workload, the prefix every workload's name
    starts with ('recording.GradStep_')."""
    pillar, r = role(use)
    return pillar.benchmark(r.family, workload, r.metric) if workload else f"{pillar.name}.{r.family}_"


def paired_by_kind(kind: str) -> Pillar:
    """The pillar whose paired comparisons run steps of `kind`."""
    return next(p for p in PILLARS.values() if p.paired and p.paired.kind == kind)
