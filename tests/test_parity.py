"""Same math, proved on what is timed: the benchmarks' own steps (steps.grad_fn, steps.forward_fn, and grad_step /
forward_step in 'compiled' mode) agree between PyTorch and JAX, and both agree with an independent numpy float64
reference (tests/reference.py, gradients by central finite differences), in the dtype that was asked for."""

from __future__ import annotations

import numpy as np
import pytest

from implementations import frameworks, workloads
from tests.helpers import (
    FD_TOLERANCE,
    TOLERANCES,
    StepResult,
    assert_close,
    forward_result,
    grad_fn_result,
    grad_step_result,
    inputs_of,
    reference_output,
    reference_result,
    tolerance,
)

# Every bound is tests/helpers.py's, per dtype (helpers.tolerance): max |actual - expected| / max |expected|.


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


def _formulation(framework: str, jax_formulation: str | None) -> str | None:
    """The formulation `framework` runs in a case: JAX the case's, PyTorch its only one (None: the default)."""
    return jax_formulation if framework == "jax" else None


def check(workload: str, size: str, variant: str, dtype: str, with_reference_grads: bool,
          jax_formulation: str | None = None) -> None:
    inputs = inputs_of(workload, size, dtype)
    tol = tolerance(inputs)
    grads = {fw: grad_fn_result(fw, inputs, variant, _formulation(fw, jax_formulation)) for fw in frameworks.NAMES}
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
        forward = {fw: forward_result(fw, inputs, variant, mode, _formulation(fw, jax_formulation))
                   for fw in frameworks.NAMES}
        for fw, result in forward.items():
            assert_dtypes(f"{fw} forward_fn {mode}", result, dtype)
            assert_close(f"{fw} forward {mode} vs reference", result.value, out, tol)
        assert_close(f"forward {mode} torch vs jax", forward["torch"].value, forward["jax"].value, tol)


def _forms(name: str) -> list[tuple[str, str | None]]:
    """(variant, JAX formulation) pairs: every variant in JAX's default formulation and, where the workload has a
    loop, its plain autodiff unrolled too (PyTorch runs its one form in both). The remat policies differ from plain
    in what they keep, not in the loop, which test_formulation.py checks jitted in both forms."""
    unrolled = [("plain", "unrolled")] if workloads.spec(name).formulations else []
    return [(variant, None) for variant in workloads.variants(name)] + unrolled


def _test_size_cases() -> list:
    return [
        pytest.param(name, spec.test_size, variant, dtype, form,
                     id="-".join(filter(None, (name, variant, form, dtype))))
        for name, spec in workloads.WORKLOADS.items()
        for variant, form in _forms(name)
        for dtype in spec.dtypes
    ]


@pytest.mark.parametrize(("workload", "size", "variant", "dtype", "jax_formulation"), _test_size_cases())
def test_parity_test_size(workload: str, size: str, variant: str, dtype: str, jax_formulation: str | None) -> None:
    check(workload, size, variant, dtype, with_reference_grads=True, jax_formulation=jax_formulation)


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
        pytest.param(name, variant, form, id="-".join(filter(None, (name, variant, form))),
                     marks=() if name in fast and variant == "plain" and form is None else pytest.mark.slow)
        for name in workloads.WORKLOADS
        for variant, form in _forms(name)
    ]


@pytest.mark.parametrize(("workload", "variant", "jax_formulation"), _compiled_cases())
def test_parity_compiled_steps(workload: str, variant: str, jax_formulation: str | None) -> None:
    spec = workloads.spec(workload)
    inputs = inputs_of(workload, spec.test_size, "float32")
    tol = tolerance(inputs)
    out, ref = reference_result(workload, spec.test_size, "float32")
    for fw in frameworks.NAMES:
        if fw == "torch" and variant == "remat_names":
            # No compiled PyTorch form (torch.steps.grad_step says why): refused with one line, not run as eager.
            with pytest.raises(ValueError, match="remat_names has no torch.compile form"):
                grad_step_result(fw, inputs, variant, "compiled")
        else:
            grads = grad_step_result(fw, inputs, variant, "compiled", _formulation(fw, jax_formulation))
            assert_dtypes(f"{fw} grad_step compiled", grads, "float32")
            assert_grads_close(f"{fw} grad_step compiled vs reference", grads, ref, tol, tol)
        forward = forward_result(fw, inputs, variant, "compiled", _formulation(fw, jax_formulation))
        assert_dtypes(f"{fw} forward_step compiled", forward, "float32")
        assert_close(f"{fw} forward_step compiled vs reference", forward.value, out, tol)


def test_bounds_are_scaled_to_the_array() -> None:
    # An entry far below the array's largest that differs in its last bits passes (an AMD host's gradient entry, which
    # a per-entry relative bound failed); a formula error in the largest entry still fails.
    want = np.array([0.25, -9.233676201974173e-07])
    assert_close("near zero", np.array([0.25, -9.233676203431341e-07]), want, TOLERANCES["float64"])
    with pytest.raises(AssertionError, match="max relative error"):
        assert_close("largest", want * [1 + 1e-9, 1], want, TOLERANCES["float64"])
