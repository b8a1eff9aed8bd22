"""Same math, proved: forward outputs and every gradient agree between PyTorch and JAX on the spec's inputs."""

from __future__ import annotations

import pytest

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.torch import common as torch_common
from tests.helpers import assert_close

# Errors are max |torch - jax| / max |jax| per tensor (tests/helpers.py).
# float64: both sides round at 1.1e-16 per operation; the largest error seen over all workloads here is ~3e-14 (chain
#   at depth 100), so 1e-10 leaves four orders of magnitude for other BLAS libraries while still catching any
#   formula difference (a wrong term shows up at 1e-3 or more).
# float32: unit roundoff 6e-8; reductions over up to 4096 terms and a few dozen chained ops give ~1e-6 seen here
#   (2e-6 transformer, 4e-6 gmm on the tiny case). 2e-5 covers that with 5x margin. A chain of L links multiplies L
#   Jacobians, so its error grows linearly with depth: we allow 1e-6 per link (4e-5 seen at depth
#   100, 2e-5 at depth 50).
# bfloat16: 8 significant bits, one ulp is 7.8e-3 relative. XLA fuses elementwise chains and rounds to bfloat16 at
#   fusion boundaries, eager PyTorch after every op, so the two differ by a few ulps per layer: 1.2 ulps seen for
#   one mlp block, 6.4 for four transformer layers. 0.1 (13 ulps) still fails any formula error, which is O(1).
TOLERANCE = {"float64": 1e-10, "float32": 2e-5, "bfloat16": 0.1}


def _tolerance(inputs: workloads.Inputs) -> float:
    tol = TOLERANCE[inputs.dtype]
    if inputs.dtype == "float32" and "depth" in inputs.static:
        tol = max(tol, 1e-6 * inputs.static["depth"])
    return tol


def _cases(size_of) -> list:
    return [
        pytest.param(name, size_of(spec), variant, dtype, id=f"{name}-{size_of(spec)}-{variant}-{dtype}")
        for name, spec in workloads.WORKLOADS.items()
        for variant in spec.variants
        for dtype in spec.dtypes
    ]


def _check(workload: str, size: str, variant: str, dtype: str) -> None:
    inputs = workloads.make_inputs(workload, size, dtype)
    torch_out, torch_gparams, torch_gdata = torch_common.value_and_grad(inputs, variant)
    jax_out, jax_gparams, jax_gdata = jax_common.value_and_grad(inputs, variant)
    tol = _tolerance(inputs)
    assert_close("output", torch_out, jax_out, tol)
    assert set(torch_gparams) == set(jax_gparams) == set(inputs.params)
    assert set(torch_gdata) == set(jax_gdata) == set(inputs.data)
    for name in inputs.params:
        assert_close(f"d/d {name}", torch_gparams[name], jax_gparams[name], tol)
    for name in inputs.data:
        assert_close(f"d/d {name}", torch_gdata[name], jax_gdata[name], tol)


@pytest.mark.parametrize(("workload", "size", "variant", "dtype"), _cases(lambda spec: spec.test_size))
def test_parity_test_size(workload: str, size: str, variant: str, dtype: str) -> None:
    _check(workload, size, variant, dtype)


# The first non-test size of each workload is the CPU benchmark size (mlp 64x256x1024, linear_gelu 8x4096, ...):
# the numbers the suite publishes are only comparable if these agree too.
@pytest.mark.parametrize(("workload", "size", "variant", "dtype"), _cases(lambda spec: list(spec.sizes)[1]))
def test_parity_benchmark_size(workload: str, size: str, variant: str, dtype: str) -> None:
    _check(workload, size, variant, dtype)
