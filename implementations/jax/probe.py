"""Measurement probe for the JAX side: saved bytes, peak memory, graph size and flops (compile costs
and compile time in compile_probe.py, the host calibration in rates.py).

The mirror of ``implementations.torch.probe``: the same public names and signatures, so a benchmark can pick either
module and call the same functions. Each docstring says what exactly the number counts on this side; the
differences to PyTorch that a reader must know are spelled out there, not hidden.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import jax
import jax.extend.core as jex
import jax.numpy as jnp
import numpy as np

from implementations.probe_results import PeakBytes, SavedBytes, SavedTensor
from implementations.workloads import fused_attention_flops

# Primitives whose one sub-jaxpr has their inputs and outputs in the same order (a scan's outputs are its carry and
# its stacked per-iteration values): a residual they return is looked for inside.
_CALLS = ("pjit", "jit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call", "custom_vjp_call",
          "scan")


def _call_body(eqn: Any) -> jex.Jaxpr | None:
    if eqn.primitive.name not in _CALLS:
        return None
    bodies = list(jex.jaxprs_in_params(eqn.params))
    return bodies[0] if len(bodies) == 1 and len(bodies[0].outvars) == len(eqn.outvars) else None


def _producer(var: Any, jaxpr: jex.Jaxpr) -> str | None:
    """The primitive that computes `var` in `jaxpr`, looking through calls; None if `var` is an input of `jaxpr`."""
    for eqn in jaxpr.eqns:
        if not any(out is var for out in eqn.outvars):
            continue
        if eqn.primitive.name == "reduce_precision":
            # checkpoint's partial evaluation wraps saved values in a no-op reduce_precision; JAX's own
            # saved_residuals looks through it as well.
            return _producer(eqn.invars[0], jaxpr)
        body = _call_body(eqn)
        if body is None:
            return eqn.primitive.name
        inner = body.outvars[[out is var for out in eqn.outvars].index(True)]
        if isinstance(inner, jex.Literal):
            return "literal"
        if any(inner is v for v in body.invars):
            # Passed through: the value of an input (a scan's stacked slices of a parameter, say) returned anew.
            outer = eqn.invars[[v is inner for v in body.invars].index(True)]
            found = None if isinstance(outer, jex.Literal) else _producer(outer, jaxpr)
        else:
            found = _producer(inner, body)
        return found or eqn.primitive.name
    return None


def saved_breakdown(fn: Callable[..., Any], *args: Any) -> list[SavedTensor]:
    """One record per distinct residual of ``jax.vjp(fn, *args)``, with the primitive that produced it.

    The residuals are the leaves of the VJP function, traced: ``jax.vjp`` under ``make_jaxpr`` returns them as
    outputs of the jaxpr, and the forward equations in front of them say which primitive computed each (through
    jit, checkpoint and custom-rule calls). A residual that is an input of the traced function (an argument) or one
    of its closed-over constants (a parameter or the output cotangent a loss closes over) existed before the call:
    its op is "argument". These are the lines ``jax.ad_checkpoint.print_saved_residuals`` prints, counted once each
    (``x * x`` saves ``x`` twice).
    """
    closed = jax.make_jaxpr(lambda *a: jax.tree_util.tree_leaves(jax.vjp(fn, *a)[1]))(*args)
    jaxpr = closed.jaxpr
    records, seen = [], set()
    for var in jaxpr.outvars:
        if not isinstance(var, jex.Literal) and id(var) in seen:
            continue
        seen.add(id(var))
        aval = var.aval
        existed = not isinstance(var, jex.Literal) and any(var is v for v in (*jaxpr.invars, *jaxpr.constvars))
        op = "argument" if existed else "literal" if isinstance(var, jex.Literal) else _producer(var, jaxpr)
        nbytes = int(np.prod(aval.shape, dtype=np.int64)) * aval.dtype.itemsize
        records.append(SavedTensor(op, tuple(aval.shape), str(aval.dtype), nbytes, existed))
    return records


def saved_bytes(fn: Callable[..., Any], *args: Any) -> SavedBytes:
    """The residuals that ``jax.vjp(fn, *args)`` keeps for the backward pass (see ``saved_breakdown``).

    ``extra_bytes`` leaves out the residuals that existed before the call: the arguments and the arrays `fn`
    closes over (parameters, the output cotangent of a loss), as PyTorch's probe leaves out storages allocated
    before the call.

    This is JAX's plan before XLA, the counterpart of PyTorch's eager tape: a transposed operand (``w.T``) is a
    value of its own and counts as extra, where PyTorch saves a view. Under ``jit`` XLA may fuse, rematerialise or
    CSE residuals; ``peak_bytes`` sees that, this does not.
    """
    records = saved_breakdown(fn, *args)
    return SavedBytes(count=len(records), total_bytes=sum(r.nbytes for r in records),
                      extra_bytes=sum(r.nbytes for r in records if not r.is_argument))


def device_of(args: Any) -> jax.Device:
    for leaf in jax.tree_util.tree_leaves(args):
        if isinstance(leaf, jax.Array):
            return next(iter(leaf.devices()))
    return jax.devices()[0]


def _analysed_peak(compiled: Any, platform: str, why: str = "") -> PeakBytes:
    analysis = compiled.memory_analysis()
    if analysis is None:
        raise RuntimeError(f"{platform}: neither an allocator peak nor memory_analysis() is available")
    size = analysis.output_size_in_bytes + analysis.temp_size_in_bytes - analysis.alias_size_in_bytes
    return PeakBytes(int(size), "jax compiled.memory_analysis (output+temp-alias; arguments are the baseline)" + why)


def _ballast(nbytes: int, device: Any) -> jax.Array:
    """`nbytes` bytes allocated on `device` (uint8 zeros), held only to raise the allocator's baseline."""
    with jax.default_device(device):
        return jnp.zeros((nbytes,), jnp.uint8)


def _measured_peak(run: Callable[[], Any], device: Any, compiled: Any,
                   fill: Callable[[int, Any], Any] = _ballast) -> PeakBytes:
    """The allocator's peak of one `run`, if the allocator can show it; memory_analysis otherwise.

    ``peak_bytes_in_use`` is a high-water mark of the process that cannot be reset, and compilation (XLA's
    autotuner included) allocates from the same BFC allocator. So the step is run once first, and its outputs are
    kept: the measured run starts from a baseline higher by their size, and its peak (baseline + the step's own
    peak) can rise above the mark the warm-up set. Only if it does is the mark the step's: otherwise the step's
    peak is hidden below an earlier one, and XLA's buffer assignment is reported, under its own method name.
    """
    peaks = _allocator_peaks(run, [device], fill)
    if peaks is None:
        return _analysed_peak(compiled, device.platform)
    if peaks[0] is not None:
        return PeakBytes(peaks[0], "jax peak_bytes_in_use")
    return _analysed_peak(compiled, device.platform, "; the allocator peak was hidden by an earlier one")


def _allocator_peaks(run: Callable[[], Any], devices: list, fill: Callable[[int, Any], Any] = _ballast,
                     ) -> list[int | None] | None:
    """Per device of `devices` (those `run` computes on), the peak of one `run` above the bytes in use before it,
    after a warm-up run whose outputs are kept and ballast up to each device's mark (see ``_measured_peak``); None
    for a device whose mark the run did not raise, and None for all where the allocator shows no statistics."""
    if any(device.memory_stats() is None for device in devices):
        return None
    held = jax.block_until_ready(run())
    # Ballast up to the mark: the baseline then sits at the high-water mark, and anything the measured run
    # allocates sets a new one. Without it a step smaller than the autotuner's trials (the GPU LSTM) stays hidden.
    ballast = []
    for device in devices:
        warm = device.memory_stats()
        gap = warm["peak_bytes_in_use"] - warm["bytes_in_use"]
        ballast.append(jax.block_until_ready(fill(gap, device)) if gap > 0 else None)
    before = [device.memory_stats() for device in devices]
    jax.block_until_ready(run())
    after = [device.memory_stats() for device in devices]
    del held, ballast
    return [int(end["peak_bytes_in_use"] - start["bytes_in_use"])
            if end["peak_bytes_in_use"] > start["peak_bytes_in_use"] else None for start, end in zip(before, after)]


# XLA:GPU's library calls that take a workspace: the GEMM rewriter and the cuDNN passes give each such custom call
# the result shape (outputs..., s8[workspace bytes]), the workspace last.
_WORKSPACE_TARGET = re.compile(r'custom_call_target="__(cublas|cudnn)\$[^"]*"')
_WORKSPACE_SHAPE = re.compile(r"\bs8\[(\d+)\]")


def _gemm_workspace_bytes(hlo_text: str) -> int:
    """The largest GEMM-library workspace in compiled HLO text (``compiled.as_text()``): the trailing ``s8[N]`` of
    each cuBLAS, cuBLASLt or cuDNN custom call's result tuple; 0 without such calls (XLA:CPU).

    The largest, not the sum: buffer assignment may give several calls one workspace buffer, so only the largest
    is known to be in the temp buffer, and PyTorch's cuBLAS keeps one workspace per handle and stream likewise.
    """
    largest = 0
    for line in hlo_text.splitlines():
        if "custom-call(" not in line or "=" not in line or not _WORKSPACE_TARGET.search(line):
            continue
        shape = line.split("=", 1)[1].split("custom-call(", 1)[0].strip()
        sizes = _WORKSPACE_SHAPE.findall(shape) if shape.startswith("(") else []
        if sizes:
            largest = max(largest, int(sizes[-1]))
    return largest


def peak_bytes(step: Callable[..., Any], *args: Any) -> PeakBytes:
    """Peak bytes allocated during one call of ``jax.jit(step)(*args)`` above what was resident before it.

    The outputs (and gradients) are live at the end, so they are part of the peak. Compilation and a warm-up run
    come before the baseline is read, so neither is part of it.

    GPU: the BFC allocator's ``peak_bytes_in_use`` minus ``bytes_in_use`` before the measured run, when the run
    set a new high-water mark; see ``_measured_peak`` for why that is checked and what is returned otherwise.
    Preallocation must be off. CPU (no allocator statistics): XLA's buffer assignment, ``memory_analysis()``:
    output + temp - alias. The arguments are the resident baseline, so they are left out; XLA:CPU allocates the
    temp buffer and the outputs for the whole run, so this is what the run allocates, decided at compile time.

    Workspaces count inside the peak, as on the PyTorch side: XLA keeps the cuBLAS/cuDNN workspace in the step's
    temp buffer, which both methods include; ``workspace_bytes`` says how much of it that is
    (``_gemm_workspace_bytes``). The autotuner's trial workspaces are compile-time and stay out.
    """
    compiled = jax.jit(step).lower(*args).compile()
    peak = _measured_peak(lambda: compiled(*args), device_of(args), compiled)
    return replace(peak, workspace_bytes=_gemm_workspace_bytes(compiled.as_text()))


def _equations(jaxpr: jex.Jaxpr) -> int:
    # Nested jaxprs (jit, checkpoint, custom_vjp, scan bodies) are counted once each; counting only the top level
    # would make a checkpointed function look like one equation.
    return len(jaxpr.eqns) + sum(_equations(sub) for sub in jex.subjaxprs(jaxpr))


def graph_size(fn: Callable[..., Any], *args: Any) -> int:
    """Equations JAX traces for a gradient of ``fn(*args)``: the jaxpr of forward plus backward (a VJP), nested
    jaxprs included.

    The cotangent is an input of the traced function, so seeding it adds no equation. PyTorch's count is the tape
    of the forward, which is the backward graph only; JAX has no tape, it traces both directions into one program,
    so this count is roughly forward ops plus backward ops.
    """

    def forward_backward(primals: tuple, cotangent: Any) -> Any:
        _, vjp_fn = jax.vjp(fn, *primals)
        return vjp_fn(cotangent)

    return _equations(jax.make_jaxpr(forward_backward)(args, jax.eval_shape(fn, *args)).jaxpr)


# cuDNN's fused attention (jax.nn.dot_product_attention, implementation="cudnn"): primitives whose matmuls no
# dot_general shows, counted by workloads.fused_attention_flops as PyTorch's probe counts its kernels. XLA's
# composite (the CPU's) is dot_generals, which count the same.
# jax.nn.dot_product_attention binds the "_wrapper" primitives (lowered to the others), in its [batch, seq, heads,
# head_dim] layout.
_ATTENTION_PRIMITIVES = {"dot_product_attention_fwd": False, "dot_product_attention_bwd": True,
                         "dot_product_attention_fwd_wrapper": False, "dot_product_attention_bwd_wrapper": True}


def _eqn_flops(eqn: Any) -> int:
    """2 M N K of one matmul-like equation (with its batch dimensions), 0 for any other."""
    if eqn.primitive.name in _ATTENTION_PRIMITIVES:
        q, k, v = (var.aval.shape for var in eqn.invars[:3])  # [batch, seq, heads, head_dim]
        return fused_attention_flops(q[0] * q[2], q[1], k[1], q[3], v[3], _ATTENTION_PRIMITIVES[eqn.primitive.name])
    if eqn.primitive.name not in ("dot_general", "conv_general_dilated"):
        return 0
    out_elements = int(np.prod(eqn.outvars[0].aval.shape, dtype=np.int64))
    if eqn.primitive.name == "dot_general":
        (contracting, _), _ = eqn.params["dimension_numbers"]
        lhs_shape = eqn.invars[0].aval.shape
        return 2 * out_elements * int(np.prod([lhs_shape[d] for d in contracting], dtype=np.int64))
    # conv_general_dilated: each output element is a dot over (input features per group) x kernel window, or each
    # input element meets every tap of every output feature of its group; the fewer of the two. A gradient
    # convolution with respect to the input pads its operand with zeros, which the second count leaves out, as
    # FlopCounterMode's formula for a transposed convolution does.
    lhs_shape, rhs_shape = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
    numbers, kernel = eqn.params["dimension_numbers"], int(np.prod(rhs_shape, dtype=np.int64))
    by_output = out_elements * kernel // rhs_shape[numbers.rhs_spec[0]]
    by_input = (int(np.prod(lhs_shape, dtype=np.int64)) * kernel // rhs_shape[numbers.rhs_spec[1]]
                // eqn.params["feature_group_count"])
    return 2 * min(by_output, by_input)


def _matmul_flops(jaxpr: jex.Jaxpr) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        total += _eqn_flops(eqn)
        subs = [_matmul_flops(sub) for sub in jex.jaxprs_in_params(eqn.params)]
        if eqn.primitive.name == "scan":
            total += eqn.params["length"] * sum(subs)
        elif eqn.primitive.name == "cond":
            # One branch runs; which one is data-dependent: the costliest is counted.
            total += max(subs, default=0)
        else:
            # jit, checkpoint, custom rules run once; a while loop's trip count is not known: its body counts once.
            total += sum(subs)
    return total


def matmul_flops(step: Callable[..., Any], *args: Any) -> float:
    """Matmul-like flops of one call of ``step(*args)``: 2 M N K per dot_general (batch dimensions multiplied in),
    the same per convolution, every ``lax.scan`` iteration counted; elementwise ops count zero.

    Counted from the jaxpr of `step` as traced, which for a gradient is the differentiated program: the forward
    that a checkpointed block recomputes in the backward is in it and counts. This is PyTorch's
    ``FlopCounterMode`` quantity (XLA's ``cost_analysis`` counts a scan body once and elementwise ops too).
    XLA:CPU can still remove a recompute when it compiles straight-line code; this counts what was asked for.
    """
    return float(_matmul_flops(jax.make_jaxpr(step)(*args).jaxpr))


def flops(step: Callable[..., Any], *args: Any) -> float:
    """The flops of one call of ``step(*args)`` that both frameworks count alike: ``matmul_flops``."""
    return matmul_flops(step, *args)


