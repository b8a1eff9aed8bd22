"""Framework-neutral workload specs: the single source of truth for sizes, dtypes and inputs.

Both frameworks receive the same numpy arrays from :func:`make_inputs`, converted once. The generators below
must not change for an existing (workload, size): append new sizes instead, or published numbers stop being
comparable across commits.

Every workload has a forward ``forward(params, data, static, variant, formulation)`` in
``implementations/torch/<name>.py`` and ``implementations/jax/<name>.py``. ``params`` are the trainable arrays,
``data`` the other floating-point inputs (gradients are checked with respect to both); ``static`` holds Python scalars
that are not differentiated. A variant is how the backward is formed ('plain' autodiff, a remat policy, a 'custom'
backward); a formulation how a layer or time loop runs (FORMULATIONS), for workloads that have one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
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
_MATMUL_DTYPES = DTYPES
_NUMPY_DTYPES = {"float32": np.float32, "float64": np.float64, "bfloat16": ml_dtypes.bfloat16}


@dataclass(frozen=True)
class Inputs:
    """Numpy inputs of one (workload, size, dtype): the same arrays go to both frameworks."""

    workload: str
    size: str
    dtype: str
    params: dict[str, np.ndarray]
    data: dict[str, np.ndarray]
    static: dict[str, Any]
    cotangent: np.ndarray  # fixed random output cotangent: loss = sum(forward(...) * cotangent)


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
        """Whether matmuls make the workload's cost: the workloads that run bfloat16 (_MATMUL_DTYPES), whose steps
        the roofline sets against the calibrated matmul rate."""
        return "bfloat16" in self.dtypes

    def runs(self, family: str, device: str) -> tuple[str, ...]:
        """The sizes `family` runs on `device` ('cuda', or any other device: the CPU sizes)."""
        on = self.grid.get(family)
        return () if on is None else on.cuda if device == "cuda" else on.cpu


def _normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return rng.standard_normal(shape) * scale


def _gen_mlp(rng, s):
    b, d, h = s["batch"], s["width"], s["hidden"]
    params = {"w1": _normal(rng, (d, h), 1 / math.sqrt(d)), "w2": _normal(rng, (h, d), 1 / math.sqrt(h))}
    return params, {"x": _normal(rng, (b, d))}, {}


def _gen_linear_gelu(rng, s):
    b, d = s["batch"], s["width"]
    params = {"weight": _normal(rng, (d, d), 1 / math.sqrt(d)), "bias": _normal(rng, (d,), 0.1)}
    return params, {"x": _normal(rng, (b, d))}, {}


def _gen_swiglu(rng, s):
    b, d, h = s["batch"], s["width"], s["hidden"]
    params = {
        "w_gate": _normal(rng, (d, h), 1 / math.sqrt(d)),
        "w_up": _normal(rng, (d, h), 1 / math.sqrt(d)),
        "w_down": _normal(rng, (h, d), 1 / math.sqrt(h)),
    }
    return params, {"x": _normal(rng, (b, d))}, {}


def _gen_transformer(rng, s):
    n, d, f = s["layers"], s["width"], s["ffn"]
    # Layer parameters are stacked on a leading [layers] axis (what lax.scan consumes); PyTorch indexes the stack.
    params = {
        "ln1_scale": 1 + _normal(rng, (n, d), 0.1),
        "ln1_bias": _normal(rng, (n, d), 0.1),
        "w_qkv": _normal(rng, (n, d, 3 * d), 1 / math.sqrt(d)),
        "w_out": _normal(rng, (n, d, d), 1 / math.sqrt(d)),
        "ln2_scale": 1 + _normal(rng, (n, d), 0.1),
        "ln2_bias": _normal(rng, (n, d), 0.1),
        "w_gate": _normal(rng, (n, d, f), 1 / math.sqrt(d)),
        "w_up": _normal(rng, (n, d, f), 1 / math.sqrt(d)),
        "w_down": _normal(rng, (n, f, d), 1 / math.sqrt(f)),
    }
    return params, {"x": _normal(rng, (s["batch"], s["seq"], d))}, {"heads": s["heads"]}


def _gen_chain(rng, s):
    d = s["width"]
    params = {"scale": 1 + _normal(rng, (d,), 0.1), "shift": _normal(rng, (d,), 0.1)}
    return params, {"x": _normal(rng, (s["batch"], d))}, {"depth": s["depth"]}


def _gen_fanout(rng, s):
    d = s["width"]
    params = {"scale": 1 + _normal(rng, (d,), 0.1), "shift": _normal(rng, (d,), 0.1)}
    return params, {"x": _normal(rng, (s["batch"], d))}, {"branches": s["branches"]}


def _gen_gmm(rng, s):
    # Random instance in ADBench's layout (its own generator is a C++ program; this one mirrors its shapes).
    d, k, n = s["d"], s["k"], s["n"]
    params = {
        "alphas": _normal(rng, (k,)),
        "means": rng.uniform(0.0, 1.0, (k, d)),
        "icf": _normal(rng, (k, d + d * (d - 1) // 2), 0.1),
    }
    return params, {"x": rng.uniform(0.0, 1.0, (n, d))}, {"gamma": 1.0, "m": 0}


def _gen_lstm(rng, s):
    l, c, b = s["layers"], s["chars"], s["bits"]
    params = {"main_params": _normal(rng, (2 * l, 4 * b), 0.5), "extra_params": _normal(rng, (3, b), 0.5)}
    state = _normal(rng, (2 * l, b), 0.5)
    sequence = (rng.uniform(0.0, 1.0, (c, b)) < 0.5).astype(np.float64)
    return params, {"state": state, "sequence": sequence}, {}


def _scalar(_: dict[str, int]) -> tuple[int, ...]:
    return ()


WORKLOADS: dict[str, WorkloadSpec] = {
    spec.name: spec
    for spec in (
        WorkloadSpec(
            "mlp",
            "silu(x @ w1) @ w2",
            ("plain", "remat_full", "remat_dots"),
            {
                "tiny": {"batch": 4, "width": 8, "hidden": 16},
                "64x256x1024": {"batch": 64, "width": 256, "hidden": 1024},
                "512x1024x4096": {"batch": 512, "width": 1024, "hidden": 4096},
                # GPU: weights (2 x 256 MiB) far beyond L2, so the step is bound by the matmuls, not by launches.
                "2048x4096x16384": {"batch": 2048, "width": 4096, "hidden": 16384},
                # the transforms pillar's CPU size: 16 per-example gradients and 256 VJPs per Jacobian stay cheap
                "16x64x256": {"batch": 16, "width": 64, "hidden": 256},
            },
            _gen_mlp,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="aa69dfd2570a9c2a", size_words="batch {batch}, width {width}, hidden {hidden}",
            dtypes=_MATMUL_DTYPES, bfloat16_tolerance=6e-2,
            styles=STYLES,  # jax.nn.silu keeps two more arrays of its input's shape than F.silu
            grid=grid({
                ("GradStep", "GraphCost", "CompileSeconds", "RematCost"): on("64x256x1024", cuda="2048x4096x16384"),
                ("EngineStep", "paired.engine", "gpucheck"): on("64x256x1024", cuda="512x1024x4096"),
                # an overhead-bound size and a compute-bound one
                ("Forward",): on("tiny", "64x256x1024", cuda=("64x256x1024", "2048x4096x16384")),
                ("paired.inference",): on("64x256x1024", cuda="2048x4096x16384"),  # one of Forward's sizes
                ("ForwardMemory",): on("512x1024x4096", cuda="2048x4096x16384"),
                ("saved",): on("64x256x1024"),
                ("TransformStep", "TransformMemory", "TransformSaved", "paired.transforms"): on(
                    "16x64x256", cuda="64x256x1024"),
                # tape-vs-trace distributed: a batch that splits over 1, 2 and 4 ranks (the CUDA size over 8 too)
                ("distributed",): on("64x256x1024", cuda="512x1024x4096"),
            }),
        ),
        WorkloadSpec(
            "linear_gelu",
            "gelu(x @ W.T + b), exact (erf) GELU",
            ("plain",),
            {"tiny": {"batch": 2, "width": 16}, "8x4096": {"batch": 8, "width": 4096}},
            _gen_linear_gelu,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="39dbd427f1ac1016", size_words="batch {batch}, width {width}",
            dtypes=_MATMUL_DTYPES, bfloat16_tolerance=2.4e-2,
            # what the tape keeps of one layer: x, the linear output and a reference to the 64 MiB weight
            grid=grid({("saved",): on("8x4096")}),
        ),
        WorkloadSpec(
            "swiglu",
            "(silu(x @ w_gate) * (x @ w_up)) @ w_down; 'custom' fuses silu(gate) * up with a hand-written backward",
            ("plain", "custom"),
            {
                "tiny": {"batch": 4, "width": 8, "hidden": 16},
                "64x256x1024": {"batch": 64, "width": 256, "hidden": 1024},
                "2048x1024x4096": {"batch": 2048, "width": 1024, "hidden": 4096},
            },
            _gen_swiglu,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="b73015aba9be3803", size_words="batch {batch}, width {width}, hidden {hidden}",
            dtypes=_MATMUL_DTYPES, bfloat16_tolerance=3.8e-2,
            styles=STYLES,
            grid=grid({
                ("CustomStep", "CustomMemory", "paired.custom"): on("64x256x1024", cuda="2048x1024x4096"),
                ("saved",): on("64x256x1024"),
            }),
        ),
        WorkloadSpec(
            "transformer",
            "pre-LayerNorm blocks: causal self-attention + SwiGLU MLP",
            ("plain", "remat_full", "remat_dots", "remat_names", "remat_offload", "remat_every2"),
            {
                "tiny": {"layers": 2, "batch": 2, "seq": 4, "width": 8, "heads": 2, "ffn": 16},
                "L4-B4-S64-D128": {"layers": 4, "batch": 4, "seq": 64, "width": 128, "heads": 4, "ffn": 512},
                "L8-B4-S64-D128": {"layers": 8, "batch": 4, "seq": 64, "width": 128, "heads": 4, "ffn": 512},
                "L12-B8-S1024-D1024": {
                    "layers": 12, "batch": 8, "seq": 1024, "width": 1024, "heads": 16, "ffn": 4096,
                },
                # The GPU remat curve's second depth (tape_vs_trace.paired).
                "L24-B8-S1024-D1024": {
                    "layers": 24, "batch": 8, "seq": 1024, "width": 1024, "heads": 16, "ffn": 4096,
                },
                # The compile-time depth series (CompilePhases): small arrays, so the first call is the compile.
                **{f"L{n}-B2-S32-D64": {"layers": n, "batch": 2, "seq": 32, "width": 64, "heads": 2, "ffn": 256}
                   for n in (1, 2, 4, 8, 16)},
            },
            _gen_transformer,
            lambda s: (s["batch"], s["seq"], s["width"]),
            inputs_digest="7a9ad15051696181", size_words="{layers} layers, batch {batch}, {seq} tokens, width {width}",
            dtypes=_MATMUL_DTYPES, bfloat16_tolerance=9.2e-2,
            formulations=FORMULATIONS,
            styles=STYLES,
            attentions=ATTENTIONS,
            grid=grid({
                ("GradStep", "GraphCost", "ForwardRecording", "ForwardMemory", "gpucheck"): on(
                    "L4-B4-S64-D128", cuda="L12-B8-S1024-D1024"),
                # a cold torch.compile of the transformer takes half a minute per process on a 2-core CPU
                ("CompileSeconds",): on(cuda="L12-B8-S1024-D1024"),
                # the remat curve: every policy at the first depth, the granularity at twice the depth
                ("RematCurve",): on("L4-B4-S64-D128", "L8-B4-S64-D128",
                                      cuda=("L12-B8-S1024-D1024", "L24-B8-S1024-D1024")),
                ("saved",): on("L4-B4-S64-D128"),
                ("distributed",): on("L4-B4-S64-D128", cuda="L12-B8-S1024-D1024"),
                ("CompilePhases",): on(*(f"L{n}-B2-S32-D64" for n in (1, 2, 4)),
                                       cuda=tuple(f"L{n}-B2-S32-D64" for n in (1, 2, 4, 8, 16))),
            }),
        ),
        WorkloadSpec(
            "chain",
            "depth x (y = tanh(y * scale + shift)), [batch, width] with [width] broadcast",
            ("plain",),
            {
                "tiny": {"depth": 3, "batch": 2, "width": 4},
                # XLA's CPU compile time of the jitted gradient grows faster than linearly with depth: the CPU suite
                # uses depth 50.
                "d50-4x64": {"depth": 50, "batch": 4, "width": 64},
                "d100-4x64": {"depth": 100, "batch": 4, "width": 64},
                "d100-256x4096": {"depth": 100, "batch": 256, "width": 4096},
                # The compile-time depth series (CompilePhases), a geometric one.
                **{f"d{n}-4x64": {"depth": n, "batch": 4, "width": 64} for n in (8, 16, 32, 64, 128, 256, 512)},
            },
            _gen_chain,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="68f75c7a6e1d9544", size_words="{depth} tanh layers, batch {batch}, width {width}",
            grid=grid({
                ("GradStep", "GraphCost", "ForwardRecording"): on("d50-4x64", cuda="d100-256x4096"),
                ("saved",): on("d50-4x64"),
                ("CompilePhases",): on(*(f"d{n}-4x64" for n in (8, 16, 32)),
                                       cuda=tuple(f"d{n}-4x64" for n in (8, 16, 32, 64, 128, 256, 512))),
            }),
        ),
        WorkloadSpec(
            "fanout",
            "base = x * scale + shift shared by `branches` branches sum_i tanh(base * (1 + i / branches))",
            ("plain",),
            {
                "tiny": {"branches": 3, "batch": 2, "width": 4},
                "b64-4x64": {"branches": 64, "batch": 4, "width": 64},
                "b64-256x4096": {"branches": 64, "batch": 256, "width": 4096},
            },
            _gen_fanout,
            lambda s: (s["batch"], s["width"]),
            inputs_digest="c3deeb4520d8d2b8", size_words="{branches} branches, batch {batch}, width {width}",
            # the engine's per-node cost where one input feeds many nodes: recording the fan-out's forward, and
            # what its tape keeps; outside make bench's cited rows (GradStep, EngineStep and counts are cited)
            grid=grid({("ForwardRecording",): on("b64-4x64", cuda="b64-256x4096"), ("saved",): on("b64-4x64")}),
        ),
        WorkloadSpec(
            "gmm",
            "ADBench Gaussian mixture objective; 'custom' uses a logsumexp with a hand-written backward",
            ("plain", "custom"),
            {
                "tiny": {"d": 2, "k": 3, "n": 5},
                "d10-K25-n1000": {"d": 10, "k": 25, "n": 1000},
                "d64-K100-n10000": {"d": 64, "k": 100, "n": 10000},
            },
            _gen_gmm,
            _scalar,
            inputs_digest="c8706ff382b3a9d0", size_words="{n} points, {k} components, {d} dimensions",
            grid=grid({
                ("CustomStep", "CustomMemory", "paired.custom", "CompileSeconds"): on(
                    "d10-K25-n1000", cuda="d64-K100-n10000"),
                ("saved",): on("d10-K25-n1000"),
            }),
        ),
        WorkloadSpec(
            "lstm",
            "ADBench diagonal LSTM objective over a character sequence",
            ("plain", "remat_full"),
            {
                "tiny": {"layers": 2, "chars": 5, "bits": 3},
                "l2-c128-b14": {"layers": 2, "chars": 128, "bits": 14},
                "l4-c1024-b1024": {"layers": 4, "chars": 1024, "bits": 1024},
                # the CPU's op-by-op size: op-by-op JAX dispatches every op of every time step from Python
                "l2-c32-b14": {"layers": 2, "chars": 32, "bits": 14},
            },
            _gen_lstm,
            _scalar,
            inputs_digest="0d32254f7c31acac", size_words="{layers} layers, {chars} characters",
            formulations=FORMULATIONS,
            grid=grid({
                # l2-c32-b14: the CPU's op-by-op pair (benchmarks/recording.py's LSTM_CPU_EAGER_SIZE)
                ("GradStep",): on("l2-c128-b14", "l2-c32-b14", cuda="l2-c128-b14"),
                ("GraphCost", "RematCost", "saved"): on("l2-c128-b14"),
            }),
        ),
    )
}


def runs(family: str, device: str) -> dict[str, tuple[str, ...]]:
    """{workload: sizes} of every workload whose spec runs `family` on `device`, in the specs' order."""
    found = {name: s.runs(family, device) for name, s in WORKLOADS.items()}
    return {name: sizes for name, sizes in found.items() if sizes}


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
                raise _choices(f"benchmark family in {name}'s grid", family, FAMILIES)
            if VARIANT_FAMILIES.get(family, "plain") not in s.variants:
                raise ValueError(f"{name}'s grid runs {family} but it has no {VARIANT_FAMILIES[family]!r} variant")
            for size in (*sizes.cpu, *sizes.cuda):
                if size not in s.sizes:
                    raise _choices(f"size in {name}'s grid for {family}", size, s.sizes)
                if family in DEPTH_FAMILIES and not any(k in s.sizes[size] for k in DEPTH_KEYS):
                    raise ValueError(f"{name}'s {family} runs {size}, which has no depth ({', '.join(DEPTH_KEYS)})")
        for size, dims in s.sizes.items() if s.size_words else ():
            try:
                s.size_words.format(**dims)
            except KeyError as missing:
                raise ValueError(f"{name}'s size_words names {missing}, which its size {size} lacks") from None
        if ("bfloat16" in s.dtypes) != (s.bfloat16_tolerance is not None):
            raise ValueError(f"{name}: a bfloat16 tolerance where, and only where, its dtypes have bfloat16")


check_grid(WORKLOADS)


def _choices(kind: str, value: object, valid: object) -> ValueError:
    return ValueError(f"unknown {kind} {value!r}; valid choices: {', '.join(map(str, valid))}")


def require_even_split(batch: int, parts: int) -> None:
    """Both sides split a batch into equal micro-batches: torch's chunk would quietly make fewer or unequal ones."""
    if batch % parts:
        raise ValueError(f"a batch of {batch} does not split into {parts} equal micro-batches")


def spec(workload: str) -> WorkloadSpec:
    """The spec of `workload`; a ValueError lists the valid names."""
    try:
        return WORKLOADS[workload]
    except (KeyError, TypeError):
        raise _choices("workload", workload, WORKLOADS) from None


# Variants that only a CUDA device can run: host offload needs a device to offload from.
CUDA_ONLY_VARIANTS: tuple[str, ...] = ("remat_offload",)


def formulation_in(value: object) -> str | None:
    """The formulation a result names, or None where it names none: no axis, '' (a paired row of a workload
    without a loop) or 'plain' (how results before this vocabulary wrote "no loop")."""
    return value if value in FORMULATIONS else None


def program_of(inputs: Inputs, style: str | None = None, attention: str | None = None) -> Inputs:
    """`inputs` whose static values name the program's style and attention (what the forwards read: style_of,
    attention_of); None leaves a value as it is. A ValueError lists the valid choices of one the workload lacks."""
    s, static = spec(inputs.workload), dict(inputs.static)
    for kind, value, valid in (("style", style, s.styles), ("attention", attention, s.attentions)):
        if value is None:
            continue
        if value not in valid:
            raise _choices(f"{kind} for {inputs.workload}", value, valid or (f"none: it has no {kind} axis",))
        static[kind] = value
    return dataclasses.replace(inputs, static=static)


def style_of(static: dict) -> str:
    """The style a forward runs: its static value, "matched" where none is named (the suite's classes without a
    style axis run the matched program, so that their comparisons are of the frameworks)."""
    return static.get("style", "matched")


def attention_of(static: dict) -> str:
    """The attention a forward runs: its static value, "written" where none is named."""
    return static.get("attention", "written")


def attention_backend(framework: str, device: str, dtype: str) -> str:
    """The fused attention's pinned backend: one rule for both frameworks, so a silent fallback is an error. CUDA
    runs the flash-style kernels where each supports the dtype (cuDNN's and PyTorch's flash attention take 16-bit
    floats only; in float32 PyTorch has its memory-efficient kernel and JAX its XLA composite); a CPU runs PyTorch's
    flash-attention CPU kernel and JAX's XLA composite (JAX has no fused CPU kernel)."""
    half = dtype in ("bfloat16", "float16")
    if framework == "torch":
        return ("flash" if half else "efficient") if device == "cuda" else "flash"
    return "cudnn" if device == "cuda" and half else "xla"


def fused_attention_flops(batch_heads: int, seq_q: int, seq_k: int, head_dim: int, value_dim: int,
                          backward: bool) -> int:
    """Matmul flops of one fused attention call, the same formula for both frameworks' kernels: the written form's
    matmuls, 2 M N K each (forward: scores and the weighted sum; backward: the gradients of the scores, the values,
    the queries and the keys). A kernel's recompute of the scores is not counted, as the written form has none."""
    scores, weighted = 2 * batch_heads * seq_q * seq_k * head_dim, 2 * batch_heads * seq_q * seq_k * value_dim
    return 2 * (scores + weighted) if backward else scores + weighted


def variants(workload: str, device: str = "cpu") -> tuple[str, ...]:
    """The variants of `workload` that `device` can run."""
    return tuple(v for v in spec(workload).variants if device == "cuda" or v not in CUDA_ONLY_VARIANTS)


def validate(workload: str, size: str | None = None, dtype: str | None = None, variant: str | None = None,
             formulation: str | None = None) -> None:
    """Raise a ValueError that lists the valid choices for the first argument that is not one."""
    s = spec(workload)
    if formulation is not None and formulation not in s.formulations:
        raise _choices(f"formulation for {workload}", formulation, s.formulations or ("none: it has no loop",))
    if size is not None and size not in s.sizes:
        raise _choices(f"size for {workload}", size, s.sizes)
    if dtype is not None and dtype not in s.dtypes:
        raise _choices(f"dtype for {workload}", dtype, s.dtypes)
    if variant is not None and variant not in s.variants:
        raise _choices(f"variant for {workload}", variant, s.variants)




def depth_of(workload: str, size: str) -> int:
    """The depth of `size` (its DEPTH_KEYS entry); a ValueError where the workload has none."""
    dims = spec(workload).sizes[size]
    found = [dims[k] for k in DEPTH_KEYS if k in dims]
    if not found:
        raise ValueError(f"{workload} has no depth: its sizes have none of {', '.join(DEPTH_KEYS)}")
    return found[0]


def depth_series(workload: str, device: str = "cpu", family: str = "CompilePhases") -> dict[int, str]:
    """{depth: size} of the sizes `family` runs on `device`, shallowest first: the compile-time growth series."""
    return dict(sorted((depth_of(workload, size), size) for size in spec(workload).runs(family, device)))


def size_at_depth(workload: str, depth: int, device: str = "cpu", family: str = "CompilePhases") -> str:
    """The size of the depth series at `depth`; a ValueError lists the depths the spec has."""
    series = depth_series(workload, device, family)
    if depth not in series:
        raise _choices(f"depth of {workload}'s {family} series on {device}", depth, series or ("none",))
    return series[depth]


def _name_seed(workload: str) -> int:
    """The workload's own seed, from its name alone: adding a workload changes no other workload's inputs (a sorted
    index would). sha256, not hash(), which Python salts per process for strings."""
    import hashlib

    return int.from_bytes(hashlib.sha256(workload.encode()).digest()[:8], "little")


def make_inputs(workload: str, size: str | None = None, dtype: str = "float32", seed: int = 0,
                cache_dir: str | Path | None = None) -> Inputs:
    """Deterministic numpy inputs for (workload, size, dtype); generated in float64, then cast.

    With `cache_dir`, the arrays are read from (or written to) one .npz file per (workload, size, dtype, seed): the
    GPU sizes take seconds to generate, and every benchmark process would otherwise generate them again.
    """
    s = spec(workload)
    size = s.test_size if size is None else size
    validate(workload, size, dtype)
    if cache_dir is not None:
        return _cached_inputs(Path(cache_dir), workload, size, dtype, seed)
    dims = s.sizes[size]
    rng = np.random.default_rng([seed, _name_seed(workload)])
    params, data, static = s.generate(rng, dims)
    cotangent = _normal(rng, s.output_shape(dims)) if s.output_shape(dims) else np.array(1.0)
    np_dtype = _NUMPY_DTYPES[dtype]
    cast = {k: np.ascontiguousarray(v, dtype=np_dtype) for k, v in params.items()}
    return Inputs(
        workload=workload,
        size=size,
        dtype=dtype,
        params=cast,
        data={k: np.ascontiguousarray(v, dtype=np_dtype) for k, v in data.items()},
        static=static,
        cotangent=np.asarray(cotangent, dtype=np_dtype),
    )


def _cached_inputs(folder: Path, workload: str, size: str, dtype: str, seed: int) -> Inputs:
    """make_inputs through a file cache. The file name carries the dimensions, so a size whose dimensions change
    (which the rule above forbids) cannot be served stale; bfloat16 is stored as its bits."""
    dims = "-".join(f"{k}{v}" for k, v in sorted(WORKLOADS[workload].sizes[size].items()))
    # "byname": a file written under the earlier seeding (by sorted index) is never read.
    path = folder / f"{workload}-{dims}-{dtype}-seed{seed}-byname.npz"
    stored = {"float32": np.float32, "float64": np.float64, "bfloat16": np.uint16}[dtype]
    try:
        with np.load(path) as archive:
            arrays = {k: archive[k].view(_NUMPY_DTYPES[dtype]) for k in archive.files if k != "static"}
            static = json.loads(str(archive["static"]))
        return Inputs(workload, size, dtype, params={k[2:]: v for k, v in arrays.items() if k.startswith("p:")},
                      data={k[2:]: v for k, v in arrays.items() if k.startswith("d:")}, static=static,
                      cotangent=arrays["cotangent"])
    except (OSError, KeyError, ValueError):
        pass  # absent or unreadable: generate and (re)write it
    inputs = make_inputs(workload, size, dtype, seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {**{f"p:{k}": v for k, v in inputs.params.items()}, **{f"d:{k}": v for k, v in inputs.data.items()},
              "cotangent": inputs.cotangent}
    partial = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(partial, static=np.array(json.dumps(inputs.static)), **{k: v.view(stored) for k, v in arrays.items()})
    partial.replace(path)  # atomic: a concurrent reader never sees half a file
    return inputs


def tangents(inputs: Inputs) -> dict[str, np.ndarray]:
    """A fixed tangent of `inputs`' parameters, in their shapes and dtype: the direction of the transforms pillar's
    JVPs and Hessian-vector products, the same arrays for both frameworks; seeded by the workload's name."""
    rng = np.random.default_rng([_name_seed(inputs.workload), _name_seed("tangents")])
    return {k: np.ascontiguousarray(_normal(rng, v.shape), dtype=v.dtype) for k, v in inputs.params.items()}


def parameter_count(inputs: Inputs) -> int:
    return int(sum(a.size for a in inputs.params.values()))


def gmm_constant(d: int, k: int, n: int, gamma: float, m: int) -> float:
    """The data-independent terms of ADBench's GMM objective (its sign convention, the "+log_wishart_prior")."""
    n_prime = d + m + 1
    multigammaln = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(n_prime / 2 + (1 - j) / 2)
                                                             for j in range(1, d + 1))
    return -n * d / 2 * math.log(2 * math.pi) - k * (n_prime * d * math.log(gamma / math.sqrt(2)) - multigammaln)


def lower_triangle_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the strict lower triangle, column by column: ADBench's order for the l part of icf."""
    pairs = [(row, col) for col in range(d) for row in range(col + 1, d)]
    return np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64)
