"""Hand-written backward passes: checked against finite differences and equal to the autodiff they replace."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.test_util
import numpy as np
import pytest
import torch

from implementations import workloads
from implementations.jax import adbench as jax_adbench
from implementations.jax import common as jax_common
from implementations.jax import swiglu as jax_swiglu
from implementations.torch import adbench as torch_adbench
from implementations.torch import common as torch_common
from implementations.torch import swiglu as torch_swiglu
from tests.helpers import assert_close

RNG = np.random.default_rng(7)
GATE, UP = RNG.standard_normal((5, 7)) * 3, RNG.standard_normal((5, 7))
LOGITS = RNG.standard_normal((4, 6)) * 5


def _torch(*arrays: np.ndarray) -> tuple[torch.Tensor, ...]:
    return tuple(torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays)


def test_torch_silu_mul_gradcheck() -> None:
    assert torch.autograd.gradcheck(torch_swiglu.SiluMul.apply, _torch(GATE, UP))


def test_torch_logsumexp_gradcheck() -> None:
    assert torch.autograd.gradcheck(torch_adbench.LogSumExp.apply, _torch(LOGITS))


def test_jax_silu_mul_check_grads() -> None:
    jax.test_util.check_grads(jax_swiglu.silu_mul, (jnp.asarray(GATE), jnp.asarray(UP)), order=1, modes=["rev"])


def test_jax_logsumexp_check_grads() -> None:
    jax.test_util.check_grads(jax_adbench.logsumexp, (jnp.asarray(LOGITS),), order=1, modes=["rev"])


def test_check_grads_catches_a_wrong_backward() -> None:
    # The checks above can fail: the same check on a backward off by a factor of two raises.
    @jax.custom_vjp
    def square(x):
        return x * x

    square.defvjp(lambda x: (x * x, x), lambda x, g: (g * x,))
    with pytest.raises(AssertionError):
        jax.test_util.check_grads(square, (jnp.asarray(GATE),), order=1, modes=["rev"])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_custom_ops_equal_autodiff(dtype: str) -> None:
    tol = {"float64": 1e-13, "float32": 1e-6}[dtype]
    gate, up, logits = (torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in (GATE, UP, LOGITS))
    cot = torch.tensor(RNG.standard_normal(GATE.shape), dtype=gate.dtype)
    custom = torch.autograd.grad((torch_swiglu.silu_mul(gate, up) * cot).sum(), (gate, up))
    plain = torch.autograd.grad((torch_swiglu.silu_mul_autodiff(gate, up) * cot).sum(), (gate, up))
    for name, a, b in zip(("d gate", "d up"), custom, plain):
        assert_close(name, a.numpy(), b.numpy(), tol)
    custom_lse = torch.autograd.grad(torch_adbench.logsumexp(logits).sum(), logits)[0]
    plain_lse = torch.autograd.grad(torch.logsumexp(logits, -1).sum(), logits)[0]
    assert_close("d logits", custom_lse.numpy(), plain_lse.numpy(), tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_jax_custom_ops_equal_autodiff(dtype: str) -> None:
    tol = {"float64": 1e-13, "float32": 1e-6}[dtype]
    gate, up, logits = (jnp.asarray(a, dtype) for a in (GATE, UP, LOGITS))
    cot = jnp.asarray(RNG.standard_normal(GATE.shape), dtype)
    custom = jax.grad(lambda g, u: (jax_swiglu.silu_mul(g, u) * cot).sum(), argnums=(0, 1))(gate, up)
    plain = jax.grad(lambda g, u: (jax_swiglu.silu_mul_autodiff(g, u) * cot).sum(), argnums=(0, 1))(gate, up)
    for name, a, b in zip(("d gate", "d up"), custom, plain):
        assert_close(name, np.asarray(a), np.asarray(b), tol)
    custom_lse = jax.grad(lambda x: jax_adbench.logsumexp(x).sum())(logits)
    plain_lse = jax.grad(lambda x: jax.nn.logsumexp(x, axis=-1).sum())(logits)
    assert_close("d logits", np.asarray(custom_lse), np.asarray(plain_lse), tol)


@pytest.mark.parametrize("workload", ["swiglu", "gmm"])
@pytest.mark.parametrize("common", [torch_common, jax_common], ids=["torch", "jax"])
def test_custom_variant_equals_plain_variant(workload: str, common) -> None:
    # Whole workloads in float64: the custom backward changes nothing but the saved residuals.
    inputs = workloads.make_inputs(workload, list(workloads.spec(workload).sizes)[1], "float64")
    custom, plain = common.value_and_grad(inputs, "custom"), common.value_and_grad(inputs, "plain")
    assert_close("output", custom[0], plain[0], 1e-12)
    for part in (1, 2):
        for name in custom[part]:
            assert_close(f"d/d {name}", custom[part][name], plain[part][name], 1e-12)
