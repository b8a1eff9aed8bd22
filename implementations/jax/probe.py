"""Measurement probe for the JAX side: saved bytes, peak memory, graph size, flops, compile time.

The mirror of ``implementations.torch.probe``: the same public names and signatures, so a benchmark can pick either
module and call the same functions. Each docstring says what exactly the number counts on this side; the
differences to PyTorch that a reader must know are spelled out there, not hidden.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import jax.extend.core as jex
import numpy as np

# (device, buffer pointer) names one allocation; device is part of the key because pointers of different devices
# live in different address spaces.
_BufferKey = tuple[str, int]


@dataclass(frozen=True)
class SavedBytes:
    """What the backward pass keeps: distinct buffers, their bytes, and the bytes beyond the arguments."""

    count: int
    total_bytes: int
    extra_bytes: int


@dataclass(frozen=True)
class PeakBytes:
    """Peak bytes of one step above the memory resident before it, and the method that measured them."""

    bytes: int
    method: str


def _buffers(tree: Any) -> Iterator[tuple[_BufferKey, int]]:
    """(key, bytes) of every device buffer under `tree`; a sharded array yields one per addressable shard."""
    for leaf in jax.tree_util.tree_leaves(tree):
        if isinstance(leaf, jax.Array):
            for shard in leaf.addressable_shards:
                if shard.data.nbytes:
                    yield (str(shard.device), shard.data.unsafe_buffer_pointer()), shard.data.nbytes
        elif isinstance(leaf, np.ndarray) and leaf.nbytes:
            yield ("numpy", leaf.__array_interface__["data"][0]), leaf.nbytes


def saved_bytes(fn: Callable[..., Any], *args: Any) -> SavedBytes:
    """The residuals that ``jax.vjp(fn, *args)`` keeps for the backward pass, deduplicated by buffer.

    The residuals are the leaves of the returned VJP function: concrete arrays, so they can be deduplicated by
    buffer pointer (``x * x`` saves one buffer twice: counted once) and matched against the arguments' buffers,
    which ``extra_bytes`` leaves out. They agree with ``jax.ad_checkpoint.print_saved_residuals`` (the tests
    check it), but that public helper only prints, and the function behind it is private and sees traced values,
    not buffers. Call it eagerly, not under ``jit``.
    JAX has no notion of a parameter: an array that `fn` closes over is a constant, not an argument, and counts
    as extra, so pass parameters as arguments (PyTorch's probe also leaves out captured leaves that get gradients).

    This is JAX's plan before XLA, the counterpart of PyTorch's eager tape: the forward runs op by op, so a
    transposed operand (``w.T``) is a materialised copy and counts as extra, where PyTorch saves a view.
    Under ``jit`` XLA may fuse, rematerialise or CSE residuals; ``peak_bytes`` sees that, this does not.
    """
    _, vjp_fn = jax.vjp(fn, *args)
    arguments = dict(_buffers(args))
    kept = dict(_buffers(vjp_fn))
    extra = sum(nbytes for key, nbytes in kept.items() if key not in arguments)
    return SavedBytes(count=len(kept), total_bytes=sum(kept.values()), extra_bytes=extra)


def _device(args: Any) -> jax.Device:
    for leaf in jax.tree_util.tree_leaves(args):
        if isinstance(leaf, jax.Array):
            return next(iter(leaf.devices()))
    return jax.devices()[0]


def peak_bytes(step: Callable[..., Any], *args: Any) -> PeakBytes:
    """Peak bytes allocated during one call of ``jax.jit(step)(*args)`` above what was resident before it.

    The outputs (and gradients) are live at the end, so they are part of the peak. The step is compiled before
    the baseline is read, so compilation is not part of it.

    GPU: the BFC allocator's ``peak_bytes_in_use`` minus ``bytes_in_use`` before the call. That peak cannot be
    reset (JAX 0.10/0.11), so a benchmark must call this once per fresh process, with preallocation off and
    nothing but the step's inputs resident. If the step does not exceed the process's earlier peak, the value is
    only an upper bound and the method string says so; a warm-up run is not done for the same reason.

    CPU (no allocator statistics): XLA's buffer assignment, ``memory_analysis()``: output + temp - alias. The
    arguments are the resident baseline, so they are left out; XLA:CPU allocates the temp buffer and the outputs
    for the whole run, so this is what the run allocates, decided at compile time.
    """
    compiled = jax.jit(step).lower(*args).compile()
    device = _device(args)
    before = device.memory_stats()
    if before is None:
        analysis = compiled.memory_analysis()
        if analysis is None:
            raise RuntimeError(f"{device.platform}: neither memory_stats() nor memory_analysis() is available")
        size = analysis.output_size_in_bytes + analysis.temp_size_in_bytes - analysis.alias_size_in_bytes
        return PeakBytes(int(size), "jax compiled.memory_analysis (output+temp-alias; arguments are the baseline)")
    jax.block_until_ready(compiled(*args))
    after = device.memory_stats()
    method = "jax peak_bytes_in_use"
    if after["peak_bytes_in_use"] <= before["peak_bytes_in_use"]:
        method += " (upper bound: the step did not exceed an earlier peak of this process)"
    return PeakBytes(int(after["peak_bytes_in_use"] - before["bytes_in_use"]), method)


def _equations(jaxpr: jex.Jaxpr) -> int:
    # Nested jaxprs (jit, checkpoint, custom_vjp, scan bodies) are counted once each, like cost_analysis counts a
    # scan body once; counting only the top level would make a checkpointed function look like one equation.
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


def flops(step: Callable[..., Any], *args: Any) -> float:
    """Flops of ``jax.jit(step)`` as XLA's ``cost_analysis()`` of the compiled program counts them.

    Elementwise ops count (PyTorch's FlopCounterMode counts only matmul-like ops), and a loop body (``lax.scan``)
    is counted once, not once per iteration. XLA:CPU can CSE away the recompute of ``jax.checkpoint`` in
    straight-line code, and then the flops show it.
    """
    cost = jax.jit(step).lower(*args).compile().cost_analysis()
    # Older jaxlibs return a one-element list of dicts.
    cost = cost[0] if isinstance(cost, list) else cost
    return float(cost["flops"])


def compile_seconds(step: Callable[..., Any], *args: Any) -> dict[str, float]:
    """Seconds of ``jax.jit(step).trace``, ``.lower`` and ``.compile``, each timed alone, all caches cleared first.

    The persistent compilation cache is only on when a cache directory is configured; a benchmark must not set one.
    """
    jax.clear_caches()
    start = time.perf_counter()
    traced = jax.jit(step).trace(*args)
    traced_at = time.perf_counter()
    lowered = traced.lower()
    lowered_at = time.perf_counter()
    lowered.compile()
    compiled_at = time.perf_counter()
    return {"trace": traced_at - start, "lower": lowered_at - traced_at, "compile": compiled_at - lowered_at}


def _matmul_flops(jaxpr: jex.Jaxpr) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            (contracting, _), _ = eqn.params["dimension_numbers"]
            lhs_shape = eqn.invars[0].aval.shape
            total += 2 * int(np.prod(eqn.outvars[0].aval.shape)) * int(np.prod([lhs_shape[d] for d in contracting]))
        # A scan body runs `length` times; other nested jaxprs (jit, checkpoint, custom_vjp) run once.
        times = eqn.params["length"] if eqn.primitive.name == "scan" else 1
        for sub in jex.jaxprs_in_params(eqn.params):
            total += times * _matmul_flops(sub)
    return total


def matmul_flops(step: Callable[..., Any], *args: Any) -> float:
    """Matmul flops of one call of ``step(*args)`` (2 M N K per dot_general): the numerator of the roofline.

    Counted from the traced jaxpr, so unlike ``cost_analysis`` a ``lax.scan`` body counts once per iteration and
    checkpointed recompute counts as traced (XLA:CPU may still remove it when compiling straight-line code).
    """
    return float(_matmul_flops(jax.make_jaxpr(step)(*args).jaxpr))


def matmul_rate(dtype: str, device: str = "cpu") -> float:
    """Flop/s of a square matmul on `device`, measured now: the denominator of the roofline.

    The best of five timed products after a warm-up, under the current matmul precision setting.
    """
    target = jax.devices(device)[0]
    n = 8192 if target.platform == "gpu" else 1024
    a = jax.device_put(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32), target).astype(dtype)
    product = jax.jit(lambda x: x @ x)
    seconds = []
    for _ in range(6):
        start = time.perf_counter()
        jax.block_until_ready(product(a))
        seconds.append(time.perf_counter() - start)
    return 2 * n**3 / min(seconds[1:])
