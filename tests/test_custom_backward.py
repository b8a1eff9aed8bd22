"""Hand-written backward passes: checked against finite differences and equal to the autodiff they replace."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.test_util
import numpy as np
import pytest
import torch

from implementations import frameworks, workloads
from implementations.jax import adbench as jax_adbench
from implementations.jax import swiglu as jax_swiglu
from implementations.torch import adbench as torch_adbench
from implementations.torch import swiglu as torch_swiglu
from tests.helpers import assert_close, grad_fn_result

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
@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_custom_variant_equals_plain_variant(workload: str, framework: str) -> None:
    # The benchmarks' own steps in float64: the custom backward changes nothing but the saved residuals.
    inputs = workloads.make_inputs(workload, "tiny", "float64")
    custom, plain = (grad_fn_result(framework, inputs, variant) for variant in ("custom", "plain"))
    assert_close("loss", custom.value, plain.value, 1e-12)
    for part in ("grad_params", "grad_data"):
        for name, expected in getattr(plain, part).items():
            assert_close(f"d/d {name}", getattr(custom, part)[name], expected, 1e-12)


# What the custom backward is for: fewer saved bytes than autodiff of the same expression. probe.saved_bytes on the
# benchmarks' steps.loss_fn, float32 at test size, extra_bytes: inputs, parameters and tensors that existed before
# the call (the output cotangent, precomputed index constants) left out.
# swiglu tiny: x [4, 8], hidden 16, so gate = x @ w_gate, up = x @ w_up and act = silu(gate) * up are [4, 16] float32,
#   256 B each. custom: gate + up (the op's residuals) + act (saved by act @ w_down) = 3 * 256 = 768 B on both sides.
#   plain adds silu's intermediates: PyTorch silu(gate) (saved by the multiply) = 768 + 256 = 1,024 B; JAX's
#   jax.nn.silu = gate * sigmoid(gate) keeps sigmoid(gate), silu(gate) and one more [4, 16] term of the sigmoid's
#   derivative: 768 + 3 * 256 = 1,536 B, in the default style; the matched style's silu keeps its input only, as
#   PyTorch's does: 1,024 B. A custom op that also saved sigmoid(gate) would save 1,024 B.
# gmm tiny (d 2, k 3, n 5): both logsumexps save their input beta [5, 3] and output [5] on PyTorch, custom or not
#   (torch.logsumexp's backward also reuses its result): 420 B either way. JAX's jax.nn.logsumexp also keeps the masks
#   and counts of its max shift, which the custom op does not: 625 B plain, 607 B custom (measured; the odd byte
#   counts are the boolean masks). Saving exp(beta - shift) as well would add 60 B.
SAVED_EXTRA_BYTES = {
    ("swiglu", "torch", "default"): {"plain": 1024, "custom": 768},
    ("swiglu", "torch", "matched"): {"plain": 1024, "custom": 768},
    ("swiglu", "jax", "default"): {"plain": 1536, "custom": 768},
    ("swiglu", "jax", "matched"): {"plain": 1024, "custom": 768},
    ("gmm", "torch", None): {"plain": 420, "custom": 420},
    ("gmm", "jax", None): {"plain": 625, "custom": 607},
}


@pytest.mark.parametrize(("workload", "framework", "style"), list(SAVED_EXTRA_BYTES))
def test_custom_backward_saves_less(workload: str, framework: str, style: str | None) -> None:
    if framework == "torch":
        from implementations.torch import probe, steps
    else:
        from implementations.jax import probe, steps
    inputs = workloads.program_of(workloads.make_inputs(workload, "tiny", "float32"), style)
    saved = {}
    for variant in ("plain", "custom"):
        fn, args = steps.loss_fn(inputs, variant)
        saved[variant] = probe.saved_bytes(fn, *args).extra_bytes
    assert saved == SAVED_EXTRA_BYTES[workload, framework, style]
    assert saved["custom"] <= saved["plain"]
    if workload == "swiglu":
        assert saved["custom"] < saved["plain"]
