"""External references: the GMM and LSTM objectives and gradients equal ADBench's expected values (1e-8 absolute)."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
import torch

from implementations.jax import adbench as jax_adbench
from implementations.torch import adbench as torch_adbench
from tests.helpers import ADBENCH, read_gmm, read_lstm

ATOL = 1e-8  # ADBench's own tests assert |expected - actual| < 1e-8 per element, in float64

GMM = read_gmm(ADBENCH / "gmm" / "adbench_gmm_test_d2_k3_n1.txt")
GMM_EXPECTED = json.loads((ADBENCH / "gmm" / "expected_adbench_gmm_test.json").read_text())
LSTM = read_lstm(ADBENCH / "lstm" / "adbench_lstm_l2_c1024.txt")
LSTM_EXPECTED = json.loads((ADBENCH / "lstm" / "expected_adbench_lstm_l2_c1024.json").read_text())
GMM_DIFF = ("alphas", "means", "icf")
LSTM_DIFF = ("main_params", "extra_params")


def _torch_value_and_grad(objective, arrays: dict, diff: tuple[str, ...], **static):
    tensors = {k: torch.tensor(v, dtype=torch.float64, requires_grad=k in diff) for k, v in arrays.items()}
    value = objective(**tensors, **static)
    assert value.dtype == torch.float64 and value.dim() == 0
    grads = torch.autograd.grad(value, [tensors[k] for k in diff])
    return value.item(), np.concatenate([g.numpy().ravel() for g in grads])


def _jax_value_and_grad(objective, arrays: dict, diff: tuple[str, ...], **static):
    def fn(*diff_args):
        return objective(**{**arrays, **dict(zip(diff, diff_args))}, **static)

    value, grads = jax.value_and_grad(fn, argnums=tuple(range(len(diff))))(*(arrays[k] for k in diff))
    assert value.dtype == np.float64 and value.ndim == 0
    return float(value), np.concatenate([np.asarray(g).ravel() for g in grads])


def _check(value: float, grad: np.ndarray, expected: dict, value_atol: float) -> None:
    assert abs(value - expected["objective"]) < value_atol, f"objective {value!r} != {expected['objective']!r}"
    reference = np.asarray(expected["gradient"])
    assert grad.shape == reference.shape
    worst = int(np.argmax(np.abs(grad - reference)))
    assert abs(grad[worst] - reference[worst]) < ATOL, (
        f"gradient[{worst}] = {grad[worst]!r}, expected {reference[worst]!r}")


GMM_ARRAYS = {k: GMM[k] for k in ("alphas", "means", "icf", "x")}


@pytest.mark.parametrize("custom", [False, True], ids=["plain", "custom"])
def test_gmm_torch(custom: bool) -> None:
    value, grad = _torch_value_and_grad(torch_adbench.gmm_objective, GMM_ARRAYS, GMM_DIFF, gamma=GMM["gamma"],
                                        m=GMM["m"], custom_logsumexp=custom)
    _check(value, grad, GMM_EXPECTED, ATOL)


@pytest.mark.parametrize("custom", [False, True], ids=["plain", "custom"])
def test_gmm_jax(custom: bool) -> None:
    arrays = {k: jax.numpy.asarray(v) for k, v in GMM_ARRAYS.items()}
    value, grad = _jax_value_and_grad(jax_adbench.gmm_objective, arrays, GMM_DIFF, gamma=GMM["gamma"], m=GMM["m"],
                                      custom_logsumexp=custom)
    _check(value, grad, GMM_EXPECTED, ATOL)


# The LSTM objective is published with 8 significant digits only (0.66666518): it is checked to 5e-9, half a unit in
# the last place; the 266 gradient entries carry full precision and are checked to 1e-8.
LSTM_VALUE_ATOL = 5e-9


@pytest.mark.parametrize("unroll", [True, False], ids=["unrolled", "scan"])
def test_lstm_torch(unroll: bool) -> None:
    value, grad = _torch_value_and_grad(torch_adbench.lstm_objective, LSTM, LSTM_DIFF, unroll=unroll)
    _check(value, grad, LSTM_EXPECTED, LSTM_VALUE_ATOL)


def _lstm_case() -> dict[str, np.ndarray]:
    from implementations import workloads

    inputs = workloads.make_inputs("lstm", "l2-c32-b14", "float64")
    return {**inputs.params, **inputs.data}


LSTM_ALL = ("main_params", "extra_params", "state", "sequence")  # every input, the sequence and the state too


def _torch_scan_against_loop_and_jax(compile_scan: bool) -> None:
    """torch's scan form: the loss and the gradients of every input equal the Python loop's and JAX's lax.scan's
    in float64, to rounding (1e-13: the same operations in another order of accumulation at most)."""
    arrays = _lstm_case()
    objective = torch_adbench.lstm_objective
    if compile_scan:
        objective = torch.compile(objective, dynamic=False)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        scan_value, scan_grad = _torch_value_and_grad(objective, arrays, LSTM_ALL, unroll=False)
    torch._dynamo.reset()
    loop_value, loop_grad = _torch_value_and_grad(torch_adbench.lstm_objective, arrays, LSTM_ALL, unroll=True)
    jax_value, jax_grad = _jax_value_and_grad(jax_adbench.lstm_objective,  # x64: tests/conftest.py
                                              {k: jax.numpy.asarray(v) for k, v in arrays.items()}, LSTM_ALL)
    assert scan_grad.shape == loop_grad.shape == jax_grad.shape
    assert abs(scan_value - loop_value) < 1e-13 and abs(scan_value - jax_value) < 1e-13
    np.testing.assert_allclose(scan_grad, loop_grad, rtol=0, atol=1e-13)
    np.testing.assert_allclose(scan_grad, jax_grad, rtol=0, atol=1e-13)
    assert np.abs(scan_grad).max() > 1e-3  # a gradient that is there, not zeros on both sides


def test_lstm_torch_scan_equals_the_loop_and_jax() -> None:
    _torch_scan_against_loop_and_jax(compile_scan=False)


@pytest.mark.slow  # torch.compile of the scan
def test_compiled_lstm_torch_scan_equals_the_loop_and_jax() -> None:
    _torch_scan_against_loop_and_jax(compile_scan=True)


def test_lstm_torch_scan_from_carries_that_require_grad_matches_the_loop(monkeypatch) -> None:
    """The start a torch without the scan fix gets (SCAN_NEEDS_GRAD_CARRIES): on any torch, carries that require
    grad leave the loss and the parameters' gradients those of the Python loop."""
    monkeypatch.setattr(torch_adbench, "SCAN_NEEDS_GRAD_CARRIES", True)
    scan_value, scan_grad = _torch_value_and_grad(torch_adbench.lstm_objective, LSTM, LSTM_DIFF, unroll=False)
    loop_value, loop_grad = _torch_value_and_grad(torch_adbench.lstm_objective, LSTM, LSTM_DIFF, unroll=True)
    assert abs(scan_value - loop_value) < 1e-13
    np.testing.assert_allclose(scan_grad, loop_grad, rtol=0, atol=1e-13)
    assert np.abs(scan_grad).max() > 1e-3


def test_the_scan_workaround_is_on_where_scan_drops_closed_over_gradients() -> None:
    """SCAN_NEEDS_GRAD_CARRIES against the installed torch's scan: a two-step recurrence closed over `a`, its initial
    carry not requiring grad, whose gradient d/da of a * (a * 1 + 1) + 1 at a = 0.5 is 2 (pytorch/pytorch#184528:
    torch 2.11 gets it wrong, 2.13 right). Red where the version bound is wrong either way."""
    from torch._higher_order_ops.scan import scan

    a = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    final, _ = scan(lambda carry, x: ((a * carry + x).clone(), ()), torch.ones((), dtype=torch.float64),
                    torch.ones(2, dtype=torch.float64))
    (grad,) = torch.autograd.grad(final, a)
    assert torch_adbench.SCAN_NEEDS_GRAD_CARRIES == (abs(float(grad) - 2.0) > 1e-12), (torch.__version__, float(grad))


def test_lstm_torch_scan_refuses_remat() -> None:
    arrays = {k: torch.tensor(v) for k, v in _lstm_case().items()}
    with pytest.raises(ValueError, match="remat_full has no scan form"):
        torch_adbench.lstm_objective(**arrays, remat_steps=True, unroll=False)


def test_lstm_jax() -> None:
    arrays = {k: jax.numpy.asarray(v) for k, v in LSTM.items()}
    value, grad = _jax_value_and_grad(jax_adbench.lstm_objective, arrays, LSTM_DIFF)
    _check(value, grad, LSTM_EXPECTED, LSTM_VALUE_ATOL)
