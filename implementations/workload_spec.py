"""The vocabulary of a workload spec (implementations.workloads holds the specs themselves): dtypes, formulations,
styles and attentions; which sizes each benchmark family runs per device (On, grid); the spec's fields
(WorkloadSpec); and the checks every spec's grid must pass."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

DTYPES: tuple[str, ...] = ("float32", "float64", "bfloat16")
# How a workload's layer or time loop runs: a Python loop over per-layer parameters ("unrolled", what PyTorch always
# runs), or JAX's lax.scan over the stacked parameters ("scan"). A workload without such a loop has no formulation.
FORMULATIONS: tuple[str, ...] = ("unrolled", "scan")
# How the program is written, where the frameworks' obvious code keeps different residuals (program_of):
# "default" is each framework's own primitives as a user writes them first (F.layer_norm, softmax, F.silu, a boolean
# mask; jax.nn.standardize, jax.nn.softmax and jax.nn.silu at JAX's default flags, jnp.where); "matched" keeps the
# same residuals on both sides (JAX's softmax custom-JVP flag, a custom_vjp layer norm, a custom-JVP silu, an additive
# causal bias on both sides), so that what remains is the framework.
STYLES: tuple[str, ...] = ("default", "matched")
# The transformer's attention: written out as matmuls and a softmax, or each framework's fused attention
# (F.scaled_dot_product_attention, jax.nn.dot_product_attention) with its backend pinned (attention_backend).
ATTENTIONS: tuple[str, ...] = ("written", "fused")
# bfloat16 only where it makes sense: matmul-heavy workloads. The ADBench objectives are float64 problems, and a
# 1023-step recurrence or a 100-link chain in 8 mantissa bits measures rounding, not autodiff.
MATMUL_DTYPES = DTYPES


@dataclass(frozen=True)
class On:
    """The sizes one family runs on CPU machines and on CUDA machines."""

    cpu: tuple[str, ...]
    cuda: tuple[str, ...]


def on(*cpu: str, cuda: str | tuple[str, ...] | None = None) -> On:
    """`On` for the CPU sizes `cpu` and the CUDA sizes `cuda` (one name or a tuple; the CPU sizes if omitted)."""
    return On(tuple(cpu), tuple(cpu) if cuda is None else (cuda,) if isinstance(cuda, str) else tuple(cuda))


def grid(entries: dict[tuple[str, ...], On]) -> dict[str, On]:
    """A spec's grid from {(family, ...): sizes}: families that run the same sizes share one entry."""
    return {family: sizes for families, sizes in entries.items() for family in families}


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    description: str
    variants: tuple[str, ...]
    sizes: dict[str, dict[str, int]]
    generate: Callable[[np.random.Generator, dict[str, int]], tuple[dict, dict, dict]] = field(repr=False)
    output_shape: Callable[[dict[str, int]], tuple[int, ...]] = field(repr=False)
    dtypes: tuple[str, ...] = ("float32", "float64")
    test_size: str = "tiny"
    # Which sizes each benchmark family and side grid runs, per device (implementations.pillars.FAMILIES): the one
    # grid that the asv suite, the count cache, saved, paired, gpucheck and the GPU chunks read.
    grid: dict[str, On] = field(default_factory=dict)
    formulations: tuple[str, ...] = ()  # FORMULATIONS where the workload has a layer or time loop, else none
    styles: tuple[str, ...] = ()  # STYLES where the frameworks' default programs keep different residuals
    attentions: tuple[str, ...] = ()  # ATTENTIONS where the workload has attention
    # sha256 (first 16 hex digits) of the test size's float64 inputs at seed 0 (tests/test_inputs.py's digest): the
    # pin of "a (workload, size) never generates different arrays"; a changed digest is that break.
    inputs_digest: str = ""
    # The assert_close bound of bfloat16 (tests/helpers.py tolerance) where dtypes has bfloat16: twice the worst error
    # seen, torch against jax and each against the reference; it grows with a workload's depth.
    bfloat16_tolerance: float | None = None
    # How a size reads in words, a format string of its dimensions ("{layers} layers, batch {batch}"): the report's
    # headline; '' reads as its dimensions, `name value`.
    size_words: str = ""

    @property
    def matmul_heavy(self) -> bool:
        """Whether matmuls make the workload's cost: the workloads that run bfloat16 (MATMUL_DTYPES), whose steps
        the roofline sets against the calibrated matmul rate."""
        return "bfloat16" in self.dtypes

    def runs(self, family: str, device: str) -> tuple[str, ...]:
        """The sizes `family` runs on `device` ('cuda', or any other device: the CPU sizes)."""
        on = self.grid.get(family)
        return () if on is None else on.cuda if device == "cuda" else on.cpu


# The size entry that counts a workload's repeated units: the chain's links, the transformer's blocks.
DEPTH_KEYS: tuple[str, ...] = ("depth", "layers")
# The families whose sizes are a depth series (depth_series): each of their sizes needs a depth.
DEPTH_FAMILIES: tuple[str, ...] = ("CompilePhases",)
# The families that compare a variant with plain autodiff: a workload runs them only where it has that variant.
VARIANT_FAMILIES: dict[str, str] = {"CustomStep": "custom", "CustomMemory": "custom", "paired.custom": "custom"}


def check_grid(specs: dict[str, WorkloadSpec]) -> None:
    """Raise a ValueError naming the first grid entry that names an unknown family or size, a size without a depth
    in a depth series, a family whose variant the workload lacks, size words that name a dimension a size lacks, or a
    spec whose bfloat16 tolerance and dtypes disagree."""
    from implementations.pillars import FAMILIES

    for name, s in specs.items():
        for family, sizes in s.grid.items():
            if family not in FAMILIES:
                raise choices_error(f"benchmark family in {name}'s grid", family, FAMILIES)
            if VARIANT_FAMILIES.get(family, "plain") not in s.variants:
                raise ValueError(f"{name}'s grid runs {family} but it has no {VARIANT_FAMILIES[family]!r} variant")
            for size in (*sizes.cpu, *sizes.cuda):
                if size not in s.sizes:
                    raise choices_error(f"size in {name}'s grid for {family}", size, s.sizes)
                if family in DEPTH_FAMILIES and not any(k in s.sizes[size] for k in DEPTH_KEYS):
                    raise ValueError(f"{name}'s {family} runs {size}, which has no depth ({', '.join(DEPTH_KEYS)})")
        for size, dims in s.sizes.items() if s.size_words else ():
            try:
                s.size_words.format(**dims)
            except KeyError as missing:
                raise ValueError(f"{name}'s size_words names {missing}, which its size {size} lacks") from None
        if ("bfloat16" in s.dtypes) != (s.bfloat16_tolerance is not None):
            raise ValueError(f"{name}: a bfloat16 tolerance where, and only where, its dtypes have bfloat16")


def choices_error(kind: str, value: object, valid: object) -> ValueError:
    return ValueError(f"unknown {kind} {value!r}; valid choices: {', '.join(map(str, valid))}")
