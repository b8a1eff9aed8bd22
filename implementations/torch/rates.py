"""The host calibration measured by PyTorch: matmul rate, copy bandwidth and eager dispatch cost
(tape_vs_trace.running.calibrate stores them with every result; the report's roofline divides by the matmul rate).

The mirror of ``implementations.jax.rates``: the same public names and signatures.
"""

from __future__ import annotations

import statistics

import torch

from implementations import sampling
from implementations.torch.probe import sync


def matmul_rate(dtype: str, device: str = "cpu") -> float:
    """Flop/s of a square matmul on `device`, measured now: the denominator of the roofline, and the calibration's.

    The best of `sampling.CALIBRATION_REPEATS` timed products after a warm-up, under the current matmul precision
    setting.
    """
    dev = torch.device(device)
    n = sampling.MATMUL_N[dev.type]
    a = torch.randn(n, n, device=dev).to(getattr(torch, dtype))
    return 2 * n**3 / min(sampling.repeat_seconds(lambda: (a @ a, sync(dev))))


def copy_rate(device: str = "cpu") -> float:
    """Bytes read + written per second copying one large float32 array on `device` (`copy_` into a preallocated
    one), measured now: the best repeat after a warm-up."""
    dev = torch.device(device)
    src = torch.ones(sampling.COPY_BYTES[dev.type] // 4, device=dev)
    dst = torch.empty_like(src)
    return 2 * src.nbytes / min(sampling.repeat_seconds(lambda: (dst.copy_(src), sync(dev))))


def dispatch_cost(device: str = "cpu") -> float:
    """Seconds per op of eager dispatch on `device`: a loop of adds on a 16-element float32 tensor, the median
    repeat after a warm-up (a typical cost, not a lucky one)."""
    dev = torch.device(device)
    x = torch.ones(16, device=dev)
    ops = sampling.DISPATCH_OPS["torch"]

    def adds() -> None:
        y = x
        for _ in range(ops):
            y = y + 1
        sync(dev)

    return statistics.median(sampling.repeat_seconds(adds)) / ops
