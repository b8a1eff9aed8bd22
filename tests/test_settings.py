"""Fairness settings take effect in both frameworks through frameworks.load: matmul precision, dtype, CPU threads."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from implementations import frameworks, workloads


@pytest.fixture(autouse=True)
def _restore_settings():
    torch_precision, jax_precision = torch.get_float32_matmul_precision(), jax.config.jax_default_matmul_precision
    torch_threads = torch.get_num_threads()
    yield
    torch.set_num_threads(torch_threads)
    torch.set_float32_matmul_precision(torch_precision)
    jax.config.update("jax_default_matmul_precision", jax_precision)


@pytest.mark.parametrize(("precision", "torch_value", "xla_precision"),
                         [("highest", "highest", "HIGHEST"), ("tf32", "high", "HIGH")])
def test_precision_reaches_both_frameworks(precision: str, torch_value: str, xla_precision: str) -> None:
    # float64=True: the test session keeps JAX's x64 on (tests/conftest.py).
    frameworks.load("torch", precision, float64=True)
    assert torch.get_float32_matmul_precision() == torch_value
    frameworks.load("jax", precision, float64=True)
    # What XLA is asked for, not just the config flag: the precision attribute of the lowered matmul.
    text = jax.jit(lambda a: a @ a).lower(jnp.ones((4, 4), jnp.float32)).as_text()
    assert f"precision = [{xla_precision}, {xla_precision}]" in text


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="valid choices: highest, tf32"):
        frameworks.load("torch", "fp8")


def test_threads_are_every_core() -> None:
    # XLA:CPU uses every core and cannot be told otherwise, so PyTorch is given the same count.
    assert frameworks.threads() == os.cpu_count()


def test_load_gives_torch_the_suite_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # A count PyTorch would not pick by itself (its default is the physical cores), so the test fails unless
    # load() applies frameworks.threads().
    torch.set_num_threads(1)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    frameworks.load("torch", "highest", float64=True)
    assert torch.get_num_threads() == frameworks.threads() == 3


@pytest.mark.parametrize("dtype", workloads.DTYPES)
def test_dtype_parameter_reaches_the_arrays(dtype: str) -> None:
    from implementations.jax import common as jax_common
    from implementations.torch import common as torch_common

    spec = workloads.spec("mlp")
    inputs = workloads.make_inputs("mlp", spec.test_size, dtype)
    torch_params, _ = torch_common.prepare(inputs)
    jax_params, _ = jax_common.prepare(inputs)
    assert torch_params["w1"].dtype == getattr(torch, dtype)
    assert jax_params["w1"].dtype == jnp.dtype(dtype)
    # Both frameworks hold the same values, bit for bit.
    np.testing.assert_array_equal(torch_common.to_numpy(torch_params["w1"]).astype(np.float64),
                                  np.asarray(jax_params["w1"]).astype(np.float64))
