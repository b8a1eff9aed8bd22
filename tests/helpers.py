"""Shared test helpers: tolerance-checked comparison that names the tensor, ADBench file readers, and adapters that
run the benchmarks' own step functions and map their results to the spec's layout."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from implementations.workloads import Inputs, make_inputs, spec

ADBENCH = Path(__file__).parent / "data" / "adbench"


def max_rel_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """max |actual - expected| over max |expected|: one number per tensor, robust to entries near zero."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    scale = max(float(np.max(np.abs(expected), initial=0.0)), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(actual - expected), initial=0.0)) / scale


def assert_close(name: str, actual: np.ndarray, expected: np.ndarray, tol: float) -> None:
    """|actual - expected| <= tol * max|expected| in every entry: rtol 0 and an absolute term scaled to the array."""
    err = max_rel_error(actual, expected)
    assert np.all(np.isfinite(actual)), f"{name}: non-finite values"
    assert err <= tol, f"{name}: max relative error {err:.3e} > tolerance {tol:.1e}"


# Bounds for assert_close across frameworks and against tests/reference.py, the one place each dtype's is defended.
# Scaled to the largest entry, not per entry: an entry far below the rest (a gradient near zero) carries the
# rounding of the sums it came from, so a per-entry relative bound fails on a last-bit difference there.
TOLERANCES = {
    # unit roundoff 1.1e-16: leaves orders of magnitude for other BLAS libraries and CPUs, fails any formula error
    "float64": 1e-10,
    # unit roundoff 6e-8; twice the worst error seen, as for bfloat16; a chain multiplies Jacobians (see tolerance())
    "float32": 2.4e-5,
}
# bfloat16 (8 significant bits): XLA rounds at fusion boundaries, eager PyTorch after every op, so the error grows
# with a workload's depth: each spec's own bound (WorkloadSpec.bfloat16_tolerance), never under one another host's
# bfloat16 kernels have passed. Any formula error is of order one.
# float64 gradients by central finite differences (tests/reference.py) carry step^2 and roundoff/step errors.
FD_TOLERANCE = 1e-7


def tolerance(inputs: Inputs) -> float:
    """TOLERANCES for inputs' dtype (the spec's own for bfloat16), float32 widened by 1e-6 per link of a chain."""
    if inputs.dtype == "bfloat16":
        return spec(inputs.workload).bfloat16_tolerance
    tol = TOLERANCES[inputs.dtype]
    if inputs.dtype == "float32" and "depth" in inputs.static:
        tol = max(tol, 1e-6 * inputs.static["depth"])
    return tol


def read_gmm(path: Path) -> dict:
    """ADBench GMM input: d k n; k alphas; k means; k icf rows; n points; gamma m."""
    tokens = path.read_text().split()
    d, k, n = (int(t) for t in tokens[:3])
    values = np.array(tokens[3:], dtype=np.float64)
    icf_len = d + d * (d - 1) // 2
    sizes = [k, k * d, k * icf_len, n * d]
    parts = np.split(values[: sum(sizes)], np.cumsum(sizes)[:-1])
    gamma, m = values[sum(sizes)], int(values[sum(sizes) + 1])
    return {
        "alphas": parts[0], "means": parts[1].reshape(k, d), "icf": parts[2].reshape(k, icf_len),
        "x": parts[3].reshape(n, d), "gamma": float(gamma), "m": m,
    }


def read_lstm(path: Path) -> dict:
    """ADBench LSTM input: l c b, then main_params, extra_params, state, sequence as blank-line separated blocks."""
    blocks = [b for b in path.read_text().strip().split("\n\n")]
    layers, chars, bits = (int(t) for t in blocks[0].split())

    def matrix(text: str, rows: int, cols: int) -> np.ndarray:
        return np.array(text.split(), dtype=np.float64).reshape(rows, cols)

    return {
        "main_params": matrix(blocks[1], 2 * layers, 4 * bits),
        "extra_params": matrix(blocks[2], 3, bits),
        "state": matrix(blocks[3], 2 * layers, bits),
        "sequence": matrix(blocks[4], chars, bits),
    }


# ---- The benchmarks' own step functions, mapped to the spec's layout ---------------------------------------------
# Parity and reference tests run what is timed: implementations.<fw>.steps.grad_fn / forward_fn / grad_step /
# forward_step, not a test-only helper. Both sides are mapped to one layout: numpy arrays (bfloat16 as float32),
# layer-stacked parameters stacked again, plus the dtype each framework returned, before any conversion.


@dataclass(frozen=True)
class StepResult:
    """One framework's step in the spec's layout; `dtypes` names each returned tensor's dtype ('loss', 'output',
    'd/d <name>') as the framework produced it."""

    value: np.ndarray  # the loss (grad steps) or the forward output (forward steps)
    grad_params: dict[str, np.ndarray]
    grad_data: dict[str, np.ndarray]
    dtypes: dict[str, str]


def _dtype_name(array: Any) -> str:
    return str(array.dtype).removeprefix("torch.")


def _torch_result(inputs: Inputs, value: Any, grads: tuple) -> StepResult:
    from implementations.torch import common

    params, data = common.prepare(inputs)  # only the structure: leaves((params, data)) is grad_fn's order
    grad_params, grad_data = common.unflatten(list(grads), (params, data))
    dtypes = {"loss": _dtype_name(value)}
    for name, g in {**grad_params, **grad_data}.items():
        dtypes[f"d/d {name}"] = ",".join(sorted({_dtype_name(t) for t in common.leaves(g)}))
    return StepResult(common.to_numpy(value), common.to_numpy(grad_params), common.to_numpy(grad_data), dtypes)


def _jax_result(value: Any, grads: tuple) -> StepResult:
    from implementations.jax import common

    grad_params, grad_data = grads
    dtypes = {"loss": _dtype_name(value)}
    for name, g in {**grad_params, **grad_data}.items():  # the loop form gets per-layer leaves: a list per name
        dtypes[f"d/d {name}"] = ",".join(sorted({_dtype_name(t) for t in (g if isinstance(g, list) else [g])}))

    def stacked(tree: dict) -> dict:
        return {k: np.stack(common.to_numpy(v)) if isinstance(v, list) else common.to_numpy(v)
                for k, v in tree.items()}

    return StepResult(common.to_numpy(value), stacked(grad_params), stacked(grad_data), dtypes)


def grad_fn_result(framework: str, inputs: Inputs, variant: str, formulation: str | None = None) -> StepResult:
    """Loss and gradients from `framework`'s steps.grad_fn, the function the grad benchmarks time, in `formulation`
    (None: the framework's default).

    JAX's is jitted (grad_step 'compiled') except for 'unrolled', which the benchmarks run op by op: jitting it
    would cost XLA a compile that grows faster than linearly with the loop length.
    """
    if framework == "torch":
        from implementations.torch import steps

        fn, (params, data) = steps.grad_fn(inputs, variant, formulation=formulation)
        return _torch_result(inputs, *fn(params, data))
    import jax

    from implementations.jax import steps

    fn, (params, data) = steps.grad_fn(inputs, variant, formulation=formulation)
    return _jax_result(*(fn if formulation == "unrolled" else jax.jit(fn))(params, data))


def grad_step_result(framework: str, inputs: Inputs, variant: str, mode: str,
                     formulation: str | None = None) -> StepResult:
    """Loss and gradients from one call of `framework`'s steps.grad_step (after its own warm-up)."""
    if framework == "torch":
        from implementations.torch import steps

        return _torch_result(inputs, *steps.grad_step(inputs, variant, mode, formulation=formulation)())
    from implementations.jax import steps

    return _jax_result(*steps.grad_step(inputs, variant, mode, formulation=formulation)())


def forward_result(framework: str, inputs: Inputs, variant: str, mode: str,
                   formulation: str | None = None) -> StepResult:
    """The forward output of `framework`'s steps.forward_fn ('record', 'no_grad') or forward_step ('compiled')."""
    if framework == "torch":
        from implementations.torch import common, steps
    else:
        from implementations.jax import common, steps
    if mode == "compiled":
        out = steps.forward_step(inputs, variant, mode, formulation=formulation)()
    else:
        fn, (params, data) = steps.forward_fn(inputs, variant, mode, formulation=formulation)
        if framework == "jax" and mode == "no_grad" and formulation != "unrolled":
            import jax

            fn = jax.jit(fn)  # as grad_fn_result: op by op, a lax.scan would be compiled again on every call
        out = fn(params, data)
        if framework == "jax" and mode == "record":
            out = out[0]  # (output, residuals)
    return StepResult(common.to_numpy(out), {}, {}, {"output": _dtype_name(out)})


def forward_callable(framework: str, inputs: Inputs, variant: str) -> Any:
    """numpy data dict -> numpy output through `framework`'s steps.forward_fn('no_grad'), built (and for JAX jitted,
    as in forward_result) once, so that many calls with other data cost one compile."""
    if framework == "torch":
        from implementations.torch import common, steps
    else:
        from implementations.jax import common, steps
    fn, (params, _) = steps.forward_fn(inputs, variant, "no_grad")
    if framework == "jax":
        import jax

        fn = jax.jit(fn)

    def run(data: dict[str, np.ndarray]) -> np.ndarray:
        _, device_data = common.prepare(replace(inputs, data=data))
        return common.to_numpy(fn(params, device_data))

    return run


@functools.cache
def inputs_of(workload: str, size: str, dtype: str) -> Inputs:
    """make_inputs(workload, size, dtype), generated once per process: the tests and references only read the arrays
    (the frameworks take copies), and the larger benchmark sizes take seconds to generate."""
    return make_inputs(workload, size, dtype)


@functools.cache
def reference_result(workload: str, size: str, dtype: str) -> tuple[np.ndarray, StepResult]:
    """(forward output, loss and gradients) of tests/reference.py in float64 on the spec's inputs cast to `dtype`
    (the values the frameworks receive), gradients by central finite differences."""
    from tests import reference

    inputs = inputs_of(workload, size, dtype)
    out, loss, gp, gd = reference.loss_and_grads(workload, inputs.params, inputs.data, inputs.static,
                                                 inputs.cotangent)
    return out, StepResult(np.asarray(loss), gp, gd, {})


@functools.cache
def reference_output(workload: str, size: str, dtype: str) -> np.ndarray:
    """The forward output of tests/reference.py in float64 on the spec's inputs cast to `dtype` (no gradients: for
    sizes where finite differences would take too long)."""
    from tests import reference

    inputs = inputs_of(workload, size, dtype)
    return reference.FORWARD[workload](inputs.params, inputs.data, inputs.static)
