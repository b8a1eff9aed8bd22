"""The numpy float64 references (tests/reference.py) checked against external numbers, and the properties a
symmetric bug in both frameworks would break: ADBench's GMM prior terms, the exact GELU, causal attention."""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest
import torch

from implementations import frameworks, workloads
from tests import reference
from tests.helpers import (
    ADBENCH,
    FD_TOLERANCE,
    assert_close,
    forward_callable,
    forward_result,
    read_gmm,
    read_lstm,
)

GMM_DIFF = ("alphas", "means", "icf")


def test_reference_gmm_matches_adbench() -> None:
    # The reference itself against ADBench's published value and gradient (d=2, k=3, n=1, gamma=1, m=0).
    gmm = read_gmm(ADBENCH / "gmm" / "adbench_gmm_test_d2_k3_n1.txt")
    expected = json.loads((ADBENCH / "gmm" / "expected_adbench_gmm_test.json").read_text())
    params = {k: gmm[k] for k in GMM_DIFF}

    def objective(p: dict, d: dict) -> float:
        return reference.gmm_objective(**p, x=d["x"], gamma=gmm["gamma"], m=gmm["m"])

    assert abs(objective(params, {"x": gmm["x"]}) - expected["objective"]) < 1e-8  # ADBench's own tolerance
    grads, _ = reference.fd_grads(objective, params, {"x": gmm["x"]})
    flat = np.concatenate([grads[k].ravel() for k in GMM_DIFF])
    np.testing.assert_allclose(flat, expected["gradient"], rtol=0, atol=1e-8)


def test_reference_lstm_matches_adbench() -> None:
    # Published with 8 significant digits (0.66666518): half a unit in the last place.
    lstm = read_lstm(ADBENCH / "lstm" / "adbench_lstm_l2_c1024.txt")
    expected = json.loads((ADBENCH / "lstm" / "expected_adbench_lstm_l2_c1024.json").read_text())
    assert abs(reference.lstm_objective(**lstm) - expected["objective"]) < 5e-9


# ADBench's only published GMM case has gamma = 1, m = 0 and n = 1, where gamma**2 == gamma and the m terms vanish:
# a wrong prior (gamma for gamma**2, +m for -m) or a likelihood summed wrongly over points passes it. This instance
# has gamma != 1, m != 0, n > 1.
GAMMA, M = 1.7, 2


def _gmm_instance() -> dict:
    rng = np.random.default_rng(11)
    d, k, n = 3, 4, 6
    return {
        "alphas": rng.standard_normal(k), "means": rng.uniform(0, 1, (k, d)),
        "icf": rng.standard_normal((k, d + d * (d - 1) // 2)) * 0.3, "x": rng.standard_normal((n, d)),
    }


def _framework_gmm(framework: str, arrays: dict, custom: bool) -> tuple[float, dict]:
    if framework == "torch":
        from implementations.torch import adbench

        tensors = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in arrays.items()}
        value = adbench.gmm_objective(**tensors, gamma=GAMMA, m=M, custom_logsumexp=custom)
        grads = torch.autograd.grad(value, list(tensors.values()))
        return value.item(), {k: g.numpy() for k, g in zip(tensors, grads)}
    import jax

    from implementations.jax import adbench

    def fn(*args):
        return adbench.gmm_objective(*args, gamma=GAMMA, m=M, custom_logsumexp=custom)

    args = [jnp.asarray(arrays[k]) for k in ("alphas", "means", "icf", "x")]
    value, grads = jax.jit(jax.value_and_grad(fn, argnums=(0, 1, 2, 3)))(*args)
    return float(value), {k: np.asarray(g) for k, g in zip(("alphas", "means", "icf", "x"), grads)}


@pytest.mark.parametrize("custom", [False, True], ids=["plain", "custom"])
@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_gmm_objective_with_prior_terms(framework: str, custom: bool) -> None:
    arrays = _gmm_instance()
    params, data = {k: arrays[k] for k in GMM_DIFF}, {"x": arrays["x"]}

    def objective(p: dict, d: dict) -> float:
        return reference.gmm_objective(**p, x=d["x"], gamma=GAMMA, m=M)

    expected = objective(params, data)
    grad_params, grad_data = reference.fd_grads(objective, params, data)
    value, grads = _framework_gmm(framework, arrays, custom)
    # A float64 scalar against its direct evaluation, no finite differences: it holds tighter than TOLERANCES does.
    assert_close("objective", np.asarray(value), np.asarray(expected), 1e-12)
    for name, ref in {**grad_params, **grad_data}.items():
        assert_close(f"d/d {name}", grads[name], ref, FD_TOLERANCE)


# Exact (erf) GELU against its tanh approximation. Their largest difference is 4.7e-4 (at z = 2.7), about 1e-4 of the
# largest output: far below bfloat16's 7.8e-3 relative ulp, so a max-relative comparison cannot tell them apart in
# bfloat16 (float32 can: tests/test_parity.py compares linear_gelu to the erf reference at TOLERANCES["float32"]). But
# bfloat16 is floating point: every element carries its own relative error, and in the negative tail the tanh
# approximation is smaller in magnitude than the exact GELU by 10 % at z = -3, 24 % at -3.5, 45 % at -4, always in the
# same direction. Rounding (of z: 2^-9 relative amplified by |d log gelu / d log z| = 9 at z = -3, 17 at -4; of the
# output: 2^-9) gives elementwise errors of a few percent there, of either sign. So the test takes the mean signed
# relative error over the elements whose reference pre-activation lies in [-4, -3] (a few dozen at 8x4096): rounding
# averages out, the tanh approximation's bias (about -0.2 on these elements) does not.
TAIL = (-4.0, -3.0)
# About twice the worst mean signed relative error seen in the tail at 8x4096, PyTorch's or JAX's.
TAIL_TOLERANCE = 8e-3


def _tail_bias(gelu_of_z) -> float:
    inputs = workloads.make_inputs("linear_gelu", "8x4096", "bfloat16")
    p, d = ({k: np.asarray(v, np.float64) for k, v in tree.items()} for tree in (inputs.params, inputs.data))
    z = d["x"] @ p["weight"].T + p["bias"]
    tail = (z >= TAIL[0]) & (z <= TAIL[1])
    assert tail.sum() >= 20, f"only {tail.sum()} elements in the tail"
    out = gelu_of_z(inputs, z)
    exact = reference.gelu_erf(z)
    return float(np.mean((out[tail] - exact[tail]) / exact[tail]))


@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_exact_gelu_in_bfloat16_tail(framework: str) -> None:
    bias = _tail_bias(lambda inputs, z: forward_result(framework, inputs, "plain", "no_grad").value)
    assert abs(bias) <= TAIL_TOLERANCE, f"{framework}: mean relative error {bias:+.4f} in the GELU tail"


def test_tanh_gelu_fails_the_tail_check() -> None:
    # The test above can fail: the tanh approximation on the same pre-activations is far outside the tolerance.
    assert abs(_tail_bias(lambda inputs, z: reference.gelu_tanh(z))) > 5 * TAIL_TOLERANCE


@pytest.mark.parametrize("variant", workloads.variants("transformer"))
@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_transformer_is_causal(framework: str, variant: str) -> None:
    # The output at position t depends on inputs at positions <= t only: perturbing x[:, t+1:] leaves out[:, :t+1]
    # unchanged (bit for bit) and changes out[:, t+1:] (the perturbation reaches the output at all).
    inputs = workloads.make_inputs("transformer", "tiny", "float64")
    forward = forward_callable(framework, inputs, variant)
    base = forward(inputs.data)
    seq = inputs.data["x"].shape[1]
    for t in range(seq - 1):
        x = inputs.data["x"].copy()
        x[:, t + 1:] += 1.0
        out = forward({"x": x})
        np.testing.assert_array_equal(out[:, : t + 1], base[:, : t + 1],
                                      err_msg=f"{framework} {variant}: positions <= {t} see inputs after {t}")
        assert np.all(out[:, t + 1:] != base[:, t + 1:])
