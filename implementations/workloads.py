"""Framework-neutral workload specs: the single source of truth for sizes, dtypes and inputs.

Both frameworks receive the same numpy arrays from :func:`make_inputs`, converted once. The generators
(implementations/input_generators.py, named by the specs in workload_table.py) must not change for an existing
(workload, size): append new sizes instead, or published numbers stop being comparable across commits.

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
from pathlib import Path

import numpy as np

from implementations.input_generators import Inputs, name_seed, normal, numpy_dtype
from implementations.workload_spec import (
    ATTENTIONS,
    DEPTH_FAMILIES,
    DEPTH_KEYS,
    DTYPES,
    FORMULATIONS,
    STYLES,
    VARIANT_FAMILIES,
    On,
    WorkloadSpec,
    check_grid,
    choices_error,
    grid,
    on,
)
from implementations.workload_table import WORKLOADS

# The spec vocabulary and the specs are read through this module; workload_spec, input_generators and workload_table
# hold their definitions.
__all__ = ["ATTENTIONS", "DEPTH_FAMILIES", "DEPTH_KEYS", "DTYPES", "FORMULATIONS", "STYLES", "VARIANT_FAMILIES",
           "WORKLOADS", "Inputs", "On", "WorkloadSpec", "check_grid", "grid", "on"]


def runs(family: str, device: str) -> dict[str, tuple[str, ...]]:
    """{workload: sizes} of every workload whose spec runs `family` on `device`, in the specs' order."""
    found = {name: s.runs(family, device) for name, s in WORKLOADS.items()}
    return {name: sizes for name, sizes in found.items() if sizes}


def require_even_split(batch: int, parts: int) -> None:
    """Both sides split a batch into equal micro-batches: torch's chunk would quietly make fewer or unequal ones."""
    if batch % parts:
        raise ValueError(f"a batch of {batch} does not split into {parts} equal micro-batches")


def spec(workload: str) -> WorkloadSpec:
    """The spec of `workload`; a ValueError lists the valid names."""
    try:
        return WORKLOADS[workload]
    except (KeyError, TypeError):
        raise choices_error("workload", workload, WORKLOADS) from None


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
            raise choices_error(f"{kind} for {inputs.workload}", value, valid or (f"none: it has no {kind} axis",))
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
        raise choices_error(f"formulation for {workload}", formulation, s.formulations or ("none: it has no loop",))
    if size is not None and size not in s.sizes:
        raise choices_error(f"size for {workload}", size, s.sizes)
    if dtype is not None and dtype not in s.dtypes:
        raise choices_error(f"dtype for {workload}", dtype, s.dtypes)
    if variant is not None and variant not in s.variants:
        raise choices_error(f"variant for {workload}", variant, s.variants)




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
        raise choices_error(f"depth of {workload}'s {family} series on {device}", depth, series or ("none",))
    return series[depth]


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
    rng = np.random.default_rng([seed, name_seed(workload)])
    params, data, static = s.generate(rng, dims)
    cotangent = normal(rng, s.output_shape(dims)) if s.output_shape(dims) else np.array(1.0)
    np_dtype = numpy_dtype(dtype)
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
    np_dtype = numpy_dtype(dtype)
    try:
        with np.load(path) as archive:
            arrays = {k: archive[k].view(np_dtype) for k in archive.files if k != "static"}
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
    rng = np.random.default_rng([name_seed(inputs.workload), name_seed("tangents")])
    return {k: np.ascontiguousarray(normal(rng, v.shape), dtype=v.dtype) for k, v in inputs.params.items()}


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
