"""Same math, proved on what is timed: the benchmarks' own steps (steps.grad_fn, steps.forward_fn, and grad_step /
forward_step in 'compiled' mode) agree between PyTorch and JAX, and both agree with an independent numpy float64
reference (tests/reference.py, gradients by central finite differences), in the dtype that was asked for."""

from __future__ import annotations

import pytest

from implementations import frameworks, workloads
from tests.helpers import (
    StepResult,
    assert_close,
    forward_result,
    grad_fn_result,
    grad_step_result,
    reference_output,
    reference_result,
)

# Errors are max |actual - expected| / max |expected| per tensor (tests/helpers.py).
# float64: both sides round at 1.1e-16 per operation; the largest torch-vs-jax error seen is 3e-14 (chain at depth
#   50), so 1e-10 leaves orders of magnitude for other BLAS libraries while failing any formula difference (>1e-3).
# float32: unit roundoff 6e-8; seen up to 5e-6 (gmm tiny, vs jax and vs the float64 reference). 2e-5 is 4x that.
#   A chain of L links multiplies L Jacobians, so its error grows with depth: 1e-6 per link (1.4e-5 seen at depth 50).
# bfloat16: 8 significant bits (one ulp 7.8e-3 relative); XLA rounds at fusion boundaries, eager PyTorch after every
#   op, so errors depend on the workload's depth. Per workload, 2x the worst error seen over torch-vs-jax and
#   each-vs-reference, tiny and benchmark size, gradients included (measured on the CPU builds, torch 2.13, jax 0.10):
#     mlp 3.0e-2 (torch vs reference, d/d w at tiny: 4 rows, no averaging), linear_gelu 1.2e-2 (8x4096 torch vs jax),
#     swiglu 9.0e-3 (64x256x1024 torch vs jax), transformer 4.6e-2 (tiny
#     'unrolled', torch vs jax; 4.4e-2 at L4-B4-S64-D128; 2.3e-2 vs the reference). Any formula error is O(1).
TOLERANCE = {"float64": 1e-10, "float32": 2e-5}
BF16_TOLERANCE = {"mlp": 6e-2, "linear_gelu": 2.4e-2, "swiglu": 1.8e-2, "transformer": 9.2e-2}
# Against the float64 reference, float64 gradients carry the finite-difference error (~step^2 and 1e-16/step, up to
# 7e-9 seen, gmm tiny): 1e-7 for them; outputs and losses keep TOLERANCE["float64"].
FD_TOLERANCE = 1e-7


def tolerance(inputs: workloads.Inputs) -> float:
    if inputs.dtype == "bfloat16":
        return BF16_TOLERANCE[inputs.workload]
    tol = TOLERANCE[inputs.dtype]
    if inputs.dtype == "float32" and "depth" in inputs.static:
        tol = max(tol, 1e-6 * inputs.static["depth"])
    return tol


def assert_dtypes(side: str, result: StepResult, dtype: str) -> None:
    # A step that upcasts its inputs (bfloat16 run in float32) returns float32: the same numbers pass a
    # tolerance check, so the dtype is checked on its own.
    for name, got in result.dtypes.items():
        assert got == dtype, f"{side} {name}: dtype {got}, asked for {dtype}"


def assert_grads_close(label: str, actual: StepResult, expected: StepResult, tol: float, grad_tol: float) -> None:
    assert_close(f"{label} loss", actual.value, expected.value, tol)
    assert set(actual.grad_params) == set(expected.grad_params)
    assert set(actual.grad_data) == set(expected.grad_data)
    for name in expected.grad_params:
        assert_close(f"{label} d/d {name}", actual.grad_params[name], expected.grad_params[name], grad_tol)
    for name in expected.grad_data:
        assert_close(f"{label} d/d {name}", actual.grad_data[name], expected.grad_data[name], grad_tol)


def check(workload: str, size: str, variant: str, dtype: str, with_reference_grads: bool) -> None:
    inputs = workloads.make_inputs(workload, size, dtype)
    tol = tolerance(inputs)
    grads = {fw: grad_fn_result(fw, inputs, variant) for fw in frameworks.NAMES}
    for fw, result in grads.items():
        assert_dtypes(f"{fw} grad_fn", result, dtype)
    assert_grads_close("torch vs jax", grads["torch"], grads["jax"], tol, tol)
    if with_reference_grads:
        out, ref = reference_result(workload, size, dtype)
        for fw, result in grads.items():
            assert_grads_close(f"{fw} vs reference", result, ref, tol, max(tol, FD_TOLERANCE))
    else:
        out = reference_output(workload, size, dtype)
    # 'record' (the forward that keeps residuals) runs the same arithmetic as 'no_grad': checked once, in float32 at
    # test size, where its eager JAX vjp over lax.scan costs a compile per call.
    modes = ("no_grad", "record") if with_reference_grads and dtype == "float32" else ("no_grad",)
    for mode in modes:
        forward = {fw: forward_result(fw, inputs, variant, mode) for fw in frameworks.NAMES}
        for fw, result in forward.items():
            assert_dtypes(f"{fw} forward_fn {mode}", result, dtype)
            assert_close(f"{fw} forward {mode} vs reference", result.value, out, tol)
        assert_close(f"forward {mode} torch vs jax", forward["torch"].value, forward["jax"].value, tol)


def _test_size_cases() -> list:
    return [
        pytest.param(name, spec.test_size, variant, dtype, id=f"{name}-{variant}-{dtype}")
        for name, spec in workloads.WORKLOADS.items()
        for variant in workloads.variants(name)
        for dtype in spec.dtypes
    ]


@pytest.mark.parametrize(("workload", "size", "variant", "dtype"), _test_size_cases())
def test_parity_test_size(workload: str, size: str, variant: str, dtype: str) -> None:
    check(workload, size, variant, dtype, with_reference_grads=True)


# Rounding grows with reductions and depth, so float32 and bfloat16 are also checked at the CPU benchmark size (the
# first non-test size: the numbers the suite publishes), 'plain' only: variants differ in what is saved, not in the
# arithmetic, and are checked at test size. float64 rounding is far below every tolerance at any size. fanout is in
# no benchmark: test size only.
def _benchmark_size_cases() -> list:
    return [
        pytest.param(name, list(spec.sizes)[1], "plain", dtype, id=f"{name}-{list(spec.sizes)[1]}-{dtype}")
        for name, spec in workloads.WORKLOADS.items()
        if name != "fanout"
        for dtype in spec.dtypes
        if dtype != "float64"
    ]


@pytest.mark.parametrize(("workload", "size", "variant", "dtype"), _benchmark_size_cases())
def test_parity_benchmark_size(workload: str, size: str, variant: str, dtype: str) -> None:
    check(workload, size, variant, dtype, with_reference_grads=False)


def _compiled_cases() -> list:
    # torch.compile costs seconds per graph on 2 cores: mlp and the transformer at test size run by default, the
    # rest under the `slow` marker (make test-all).
    fast = {"mlp", "transformer"}
    return [
        pytest.param(name, variant, id=f"{name}-{variant}",
                     marks=() if name in fast and variant == "plain" else pytest.mark.slow)
        for name, spec in workloads.WORKLOADS.items()
        for variant in workloads.variants(name)
    ]


@pytest.mark.parametrize(("workload", "variant"), _compiled_cases())
def test_parity_compiled_steps(workload: str, variant: str) -> None:
    spec = workloads.spec(workload)
    inputs = workloads.make_inputs(workload, spec.test_size, "float32")
    tol = tolerance(inputs)
    out, ref = reference_result(workload, spec.test_size, "float32")
    for fw in frameworks.NAMES:
        if fw == "torch" and variant == "remat_names":
            # No compiled PyTorch form (torch.steps.grad_step says why): refused with one line, not run as eager.
            with pytest.raises(ValueError, match="remat_names has no torch.compile form"):
                grad_step_result(fw, inputs, variant, "compiled")
        else:
            grads = grad_step_result(fw, inputs, variant, "compiled")
            assert_dtypes(f"{fw} grad_step compiled", grads, "float32")
            assert_grads_close(f"{fw} grad_step compiled vs reference", grads, ref, tol, tol)
        forward = forward_result(fw, inputs, variant, "compiled")
        assert_dtypes(f"{fw} forward_step compiled", forward, "float32")
        assert_close(f"{fw} forward_step compiled vs reference", forward.value, out, tol)
