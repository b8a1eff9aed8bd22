"""One flop count on both sides: matmul-like ops at 2 M N K, every scan iteration and every recompute counted.

Before this count, JAX's ``flops`` was XLA's ``cost_analysis``: 434.5 MFLOP for the transformer at L4 and at L8
(the scan body counted once), 10 kFLOP for the LSTM (elementwise ops), where PyTorch counts 0.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from implementations import workloads
from implementations.jax import probe as jax_probe
from implementations.jax import steps as jax_steps
from implementations.torch import probe as torch_probe
from implementations.torch import steps as torch_steps

SIDES = ((torch_steps, torch_probe), (jax_steps, jax_probe))


def _counts(workload: str, size: str, variant: str, jax_formulation: str | None = None) -> list[float]:
    """[PyTorch, JAX] flops of the benchmarks' forward + backward step (JAX in `jax_formulation`, None: its default;
    PyTorch in its one form)."""
    return list(_counted(workload, size, variant, jax_formulation))


@functools.cache  # several tests count the same step (the mlp and the L4 transformer at the CPU benchmark size)
def _counted(workload: str, size: str, variant: str, jax_formulation: str | None) -> tuple[float, ...]:
    inputs = workloads.make_inputs(workload, size, "float32")
    counts = []
    for steps, probe in SIDES:
        fn, args = steps.grad_fn(inputs, variant, formulation=jax_formulation if steps is jax_steps else None)
        counts.append(probe.flops(fn, *args))
        assert probe.matmul_flops(fn, *args) == counts[-1]
    return tuple(counts)


@pytest.mark.parametrize(("workload", "variant", "jax_formulation"), [
    ("mlp", "plain", None), ("transformer", "plain", None), ("transformer", "plain", "unrolled"),
    ("swiglu", "plain", None), ("swiglu", "custom", None), ("gmm", "plain", None)])
@pytest.mark.parametrize("which", ["test", "cpu bench"])
def test_flops_agree_between_frameworks(workload: str, variant: str, jax_formulation: str | None, which: str) -> None:
    spec = workloads.spec(workload)
    # The CPU suite runs each workload at its first size after the test size.
    size = spec.test_size if which == "test" else [s for s in spec.sizes if s != spec.test_size][0]
    torch_count, jax_count = _counts(workload, size, variant, jax_formulation)
    assert torch_count > 0
    assert jax_count == pytest.approx(torch_count, rel=0.01)


def test_mlp_flops_are_six_products():
    # [64, 256] @ [256, 1024] forward and back: x @ w1, h @ w2, and two products per matmul in the backward.
    assert _counts("mlp", "64x256x1024", "plain") == [6 * 2 * 64 * 256 * 1024] * 2


def test_flops_double_when_layers_double():
    # cost_analysis read the same 434.5 MFLOP at L4 and L8: a scan body counted once.
    l4 = _counts("transformer", "L4-B4-S64-D128", "plain")
    l8 = _counts("transformer", "L8-B4-S64-D128", "plain")
    assert l8 == [2 * count for count in l4]


@pytest.mark.parametrize(("workload", "size"), [("mlp", "64x256x1024"), ("transformer", "tiny")])
def test_remat_full_counts_the_recompute(workload: str, size: str) -> None:
    plain = _counts(workload, size, "plain")
    remat = _counts(workload, size, "remat_full")
    assert all(r > p for r, p in zip(remat, plain))
    assert remat[1] == pytest.approx(remat[0], rel=0.01)


def test_elementwise_ops_count_zero():
    # The LSTM's gates are elementwise: no matmul-like op, on either side (cost_analysis gave JAX 10 kFLOP).
    assert _counts("lstm", "l2-c128-b14", "plain") == [0.0, 0.0]


def test_convolution_flops_agree():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 9, 9), np.float32), rng.standard_normal((4, 3, 3, 3), np.float32)

    def torch_step(a, b):
        return torch.autograd.grad(torch.nn.functional.conv2d(a, b).sum(), (a, b))

    def jax_step(a, b):
        return jax.grad(lambda p, q: jax.lax.conv(p, q, (1, 1), "VALID").sum(), argnums=(0, 1))(a, b)

    args_torch = [torch.from_numpy(v).requires_grad_() for v in (x, w)]
    counted_torch = torch_probe.flops(torch_step, *args_torch)
    # Forward: 2 * (2 * 4 * 7 * 7 outputs) * (3 * 3 * 3 kernel); the two gradients are convolutions of the same size.
    assert counted_torch == 3 * 2 * (2 * 4 * 7 * 7) * 27
    assert jax_probe.flops(jax_step, *map(jnp.asarray, (x, w))) == counted_torch
