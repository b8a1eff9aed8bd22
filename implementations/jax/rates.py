"""The host calibration measured by JAX: matmul rate, copy bandwidth and op-by-op dispatch cost
(tape_vs_trace.running.calibrate stores them with every result; the report's roofline divides by the matmul rate).

The mirror of ``implementations.torch.rates``: the same public names and signatures.
"""

from __future__ import annotations

import statistics

import jax
import jax.numpy as jnp
import numpy as np

from implementations import sampling


def _target(device: str) -> tuple[jax.Device, str]:
    """The first JAX device of `device` ('cpu', 'cuda') and its key in the calibration sizes."""
    target = jax.devices(device)[0]
    return target, "cuda" if target.platform == "gpu" else "cpu"


def matmul_rate(dtype: str, device: str = "cpu") -> float:
    """Flop/s of a square matmul on `device`, measured now: the denominator of the roofline, and the calibration's.

    The best of `sampling.CALIBRATION_REPEATS` timed products after a warm-up, under the current matmul precision
    setting.
    """
    target, kind = _target(device)
    n = sampling.MATMUL_N[kind]
    a = jax.device_put(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32), target).astype(dtype)
    product = jax.jit(lambda x: x @ x)
    return 2 * n**3 / min(sampling.repeat_seconds(lambda: jax.block_until_ready(product(a))))


def copy_rate(device: str = "cpu") -> float:
    """Bytes read + written per second copying one large float32 array on `device` (a jitted `jnp.copy` into a new
    buffer), measured now: the best repeat after a warm-up."""
    target, kind = _target(device)
    src = jax.device_put(jnp.ones(sampling.COPY_BYTES[kind] // 4, dtype=jnp.float32), target)
    copy = jax.jit(jnp.copy)
    return 2 * src.nbytes / min(sampling.repeat_seconds(lambda: jax.block_until_ready(copy(src))))


def dispatch_cost(device: str = "cpu") -> float:
    """Seconds per op of op-by-op dispatch on `device` (no jit, as in an un-jitted gradient step): a loop of adds on
    a 16-element float32 array, the median repeat after a warm-up (a typical cost, not a lucky one)."""
    target, _ = _target(device)
    x = jax.device_put(jnp.ones(16, dtype=jnp.float32), target)
    ops = sampling.DISPATCH_OPS["jax"]

    def adds() -> None:
        y = x
        for _ in range(ops):
            y = y + 1
        y.block_until_ready()

    return statistics.median(sampling.repeat_seconds(adds)) / ops
