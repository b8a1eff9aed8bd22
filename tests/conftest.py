"""Test-session settings: float64 on in JAX, since the float64 parity and ADBench tests need it (benchmark
processes turn it on only for float64 runs; float32 arrays keep their dtype either way). A benchmark built in a
test configures JAX as its process would (float64 off): each test starts from the session's setting again."""

import pytest

import implementations.jax as jax_side


@pytest.fixture(autouse=True)
def _float64_on():
    jax_side.configure("highest", None, float64=True)
