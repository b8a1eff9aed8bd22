"""Function transforms (implementations/<framework>/transforms.py): every transform equal between the frameworks and
equal to an independent reference (numpy closed forms: the exact Hessians of least squares, A^T A, and of
log-sum-exp, diag(p) - p p^T; the Jacobian of tanh(u @ w); the mlp's per-example gradients; finite differences of
the mlp's gradient for its HVP), eager and compiled; and each form a framework cannot run refused with its reason.

Compiled PyTorch (seconds per torch.compile on a 2-core CPU) is checked on the transforms the CPU suite compiles
(frameworks.TORCH_COMPILED_ON_CPU) and on the closed forms once, marked slow."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from benchmarks import common as bench_common
from benchmarks import counts
from benchmarks import transforms as transform_benchmarks
from implementations import frameworks, workloads
from implementations.jax import objectives as jax_objectives
from implementations.jax import transform_steps as jax_steps
from implementations.jax import transforms as jax_transforms
from implementations.torch import objectives as torch_objectives
from implementations.torch import transform_steps as torch_steps
from implementations.torch import transforms as torch_transforms
from implementations.torch.common import to_numpy
from tests.helpers import FD_TOLERANCE, TOLERANCES, assert_close

ROOT = Path(__file__).resolve().parents[1]
RNG = np.random.default_rng(24)
M, N = 7, 5  # least squares' A is [M, N], not square: a transposed A^T A would not even have its shape
A, B, X, V = RNG.standard_normal((M, N)), RNG.standard_normal(M), RNG.standard_normal(N), RNG.standard_normal(N)
LOGITS, LOGIT_V = RNG.standard_normal(6) * 2, RNG.standard_normal(6)
W_TALL = RNG.standard_normal((3, 8)) / 2  # tanh(u @ w): 3 inputs to 8 outputs; its transpose 8 to 3
U_TALL, U_WIDE = RNG.standard_normal(3), RNG.standard_normal(8)
BOTH_HVP = ("fwd_rev", "rev_rev", "rev_fwd")


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.tensor(a, dtype=torch.float64)


def _j(a: np.ndarray) -> jax.Array:
    return jnp.asarray(a, jnp.float64)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


# ---- Closed forms, float64 ----------------------------------------------------------------------------------------


def _objective(name: str, side):
    """(f, x, v, exact gradient, exact Hessian) of a closed-form objective on `side` (torch or jax objectives)."""
    conv = _t if side is torch_objectives else _j
    if name == "least_squares":
        a, b = conv(A), conv(B)
        return (lambda x: side.least_squares(x, a, b)), X, V, A.T @ (A @ X - B), A.T @ A
    p = _softmax(LOGITS)
    return side.log_sum_exp, LOGITS, LOGIT_V, p, np.diag(p) - np.outer(p, p)


@pytest.mark.parametrize("objective", ["least_squares", "log_sum_exp"])
@pytest.mark.parametrize("mode", [*BOTH_HVP, "double_backward"])
def test_torch_hvp_is_the_exact_hessian_times_v(objective: str, mode: str) -> None:
    f, x, v, _, hessian = _objective(objective, torch_objectives)
    hv = torch_transforms.hvp(f, _t(x), _t(v), mode)
    assert_close(f"torch hvp {mode} {objective}", to_numpy(hv), hessian @ v, TOLERANCES["float64"])


@pytest.mark.parametrize("objective", ["least_squares", "log_sum_exp"])
@pytest.mark.parametrize("mode", BOTH_HVP)
@pytest.mark.parametrize("compiled", [False, True])
def test_jax_hvp_is_the_exact_hessian_times_v(objective: str, mode: str, compiled: bool) -> None:
    f, x, v, _, hessian = _objective(objective, jax_objectives)
    hv = jax_transforms.hvp(f, _j(x), _j(v), mode, compiled)
    assert_close(f"jax hvp {mode} {objective}", np.asarray(hv), hessian @ v, TOLERANCES["float64"])


@pytest.mark.parametrize("objective", ["least_squares", "log_sum_exp"])
@pytest.mark.parametrize("method", torch_transforms.GRAD_METHODS)
def test_torch_grad_is_the_exact_gradient_every_method(objective: str, method: str) -> None:
    f, x, _, gradient, _ = _objective(objective, torch_objectives)
    fn = torch_transforms.make_grad(f, method)
    point = _t(x).requires_grad_(True)
    first, second = fn(point), fn(point)  # a second call must not add into the first's .grad
    for name, g in (("first", first), ("second", second)):
        assert_close(f"torch grad {method} {objective} {name} call", to_numpy(g), gradient, TOLERANCES["float64"])


@pytest.mark.parametrize("objective", ["least_squares", "log_sum_exp"])
@pytest.mark.parametrize("compiled", [False, True])
def test_jax_grad_is_the_exact_gradient(objective: str, compiled: bool) -> None:
    f, x, _, gradient, _ = _objective(objective, jax_objectives)
    g = jax_transforms.grad(f, _j(x), compiled=compiled)
    assert_close(f"jax grad {objective}", np.asarray(g), gradient, TOLERANCES["float64"])


def _layer_exact(u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """tanh(u @ w) and its Jacobian [outputs, inputs] = diag(1 - tanh^2) w^T."""
    out = np.tanh(u @ w)
    return out, (1 - out**2)[:, None] * w.T


@pytest.mark.parametrize("shape", ["tall", "wide"])
@pytest.mark.parametrize("mode", torch_transforms.JACOBIAN_MODES)
def test_jacobians_are_exact_with_outputs_first(shape: str, mode: str) -> None:
    w, u = (W_TALL, U_TALL) if shape == "tall" else (W_TALL.T, U_WIDE)
    _, exact = _layer_exact(u, w)
    tw, jw = _t(w), _j(w)
    torch_jac = torch_transforms.jacobian(lambda a: torch_objectives.layer(a, tw), _t(u), mode)
    for compiled in (False, True):
        jax_jac = jax_transforms.jacobian(lambda a: jax_objectives.layer(a, jw), _j(u), mode, compiled)
        assert_close(f"jax jac{mode} {shape} compiled={compiled}", np.asarray(jax_jac), exact, TOLERANCES["float64"])
    assert_close(f"torch jac{mode} {shape}", to_numpy(torch_jac), exact, TOLERANCES["float64"])


@pytest.mark.parametrize("method", torch_transforms.JVP_METHODS)
def test_jvp_is_the_value_and_the_exact_directional_derivative(method: str) -> None:
    out, jacobian = _layer_exact(U_TALL, W_TALL)
    v = RNG.standard_normal(3)
    tw, jw = _t(W_TALL), _j(W_TALL)
    value, tangent = torch_transforms.jvp(lambda a: torch_objectives.layer(a, tw), _t(U_TALL), _t(v),
                                           method=method)
    assert_close(f"torch jvp {method} value", to_numpy(value), out, TOLERANCES["float64"])
    assert_close(f"torch jvp {method} tangent", to_numpy(tangent), jacobian @ v, TOLERANCES["float64"])
    if method == "func":
        for compiled in (False, True):
            value, tangent = jax_transforms.jvp(lambda a: jax_objectives.layer(a, jw), _j(U_TALL), _j(v), compiled)
            assert_close("jax jvp value", np.asarray(value), out, TOLERANCES["float64"])
            assert_close("jax jvp tangent", np.asarray(tangent), jacobian @ v, TOLERANCES["float64"])


@pytest.mark.slow
@pytest.mark.parametrize("transform", ["grad", "hvp_fwd_rev", "jacrev"])
def test_torch_compiled_closed_forms(transform: str) -> None:
    f, x, v, gradient, hessian = _objective("log_sum_exp", torch_objectives)
    if transform == "grad":
        result, exact = torch_transforms.grad(f, _t(x), compiled=True), gradient
    elif transform == "hvp_fwd_rev":
        result, exact = torch_transforms.hvp(f, _t(x), _t(v), compiled=True), hessian @ v
    else:
        tw = _t(W_TALL)
        result = torch_transforms.jacobian(lambda a: torch_objectives.layer(a, tw), _t(U_TALL), "rev", True)
        exact = _layer_exact(U_TALL, W_TALL)[1]
    assert_close(f"torch compiled {transform}", to_numpy(result), exact, TOLERANCES["float64"])


# ---- The mlp: the benchmarks' own transform_fn, both frameworks and the references ---------------------------


def _silu(z):
    return z / (1 + np.exp(-z))


def _mlp_grads(params: dict, x: np.ndarray, c: np.ndarray) -> dict:
    """The gradient of sum(silu(x @ w1) @ w2 * c) by hand (the chain rule written out, no autodiff)."""
    w1, w2 = params["w1"].astype(np.float64), params["w2"].astype(np.float64)
    z = x.astype(np.float64) @ w1
    s = 1 / (1 + np.exp(-z))
    dh = (c @ w2.T) * (s * (1 + z * (1 - s)))
    return {"w1": x.T @ dh, "w2": _silu(z).T @ c}


def _mlp_inputs(dtype: str) -> workloads.Inputs:
    return workloads.make_inputs("mlp", "tiny", dtype)


def _reference(transform: str, inputs: workloads.Inputs):
    """The independent value of `transform` on the mlp, in float64 numpy."""
    p = {k: v.astype(np.float64) for k, v in inputs.params.items()}
    x, c = inputs.data["x"].astype(np.float64), inputs.cotangent.astype(np.float64)
    t = {k: v.astype(np.float64) for k, v in workloads.tangents(inputs).items()}
    family, _, kind = transform.partition("_")
    if family == "grad":
        return _mlp_grads(p, x, c)
    if family == "jvp":
        z = x @ p["w1"]
        s = 1 / (1 + np.exp(-z))
        dz = x @ t["w1"]
        return _silu(z) @ p["w2"], (dz * s * (1 + z * (1 - s))) @ p["w2"] + _silu(z) @ t["w2"]
    if family == "hvp":  # central differences of the hand-written gradient along the tangent
        eps = 1e-5
        up = _mlp_grads({k: p[k] + eps * t[k] for k in p}, x, c)
        down = _mlp_grads({k: p[k] - eps * t[k] for k in p}, x, c)
        return {k: (up[k] - down[k]) / (2 * eps) for k in p}
    if family in ("jacfwd", "jacrev"):
        w = p["w1"]
        return _layer_exact(t["w1"][:, 0], w)[1] if kind == "tall" else _layer_exact(t["w1"][0], w.T)[1]
    per = [_mlp_grads(p, x[i:i + 1], c[i:i + 1]) for i in range(len(x))]
    return {k: np.stack([g[k] for g in per]) for k in p}


def _numpy(result) -> object:
    if isinstance(result, tuple):
        return tuple(_numpy(r) for r in result)
    if isinstance(result, dict):
        return {k: _numpy(v) for k, v in result.items()}
    return to_numpy(result) if isinstance(result, torch.Tensor) else np.asarray(result)


def _assert_tree_close(name: str, actual, expected, tol: float) -> None:
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), name
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_tree_close(f"{name}[{i}]", a, e, tol)
    elif isinstance(expected, dict):
        assert set(actual) == set(expected), name
        for k in expected:
            _assert_tree_close(f"{name} d/d {k}", actual[k], expected[k], tol)
    else:
        assert_close(name, actual, expected, tol)


def _run(framework: str, inputs: workloads.Inputs, transform: str, mode: str):
    side = torch_steps if framework == "torch" else jax_steps
    fn, args = side.transform_fn(inputs, transform, mode)
    return _numpy(fn(*args))


def _runs(framework: str) -> list[str]:
    return list(frameworks.get(framework).transforms)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("transform", frameworks.TRANSFORMS)
def test_each_transform_equals_the_reference_and_the_other_framework(transform: str, dtype: str) -> None:
    inputs = _mlp_inputs(dtype)
    tol = TOLERANCES[dtype]
    expected = _reference(transform, inputs)
    ref_tol = max(tol, FD_TOLERANCE) if transform.startswith("hvp") else tol
    results = {(fw, mode): _run(fw, inputs, transform, mode) for fw in frameworks.NAMES if transform in _runs(fw)
               for mode in ("eager", "compiled") if fw == "jax" or mode == "eager"}
    assert ("torch", "eager") in results
    for (fw, mode), result in results.items():
        _assert_tree_close(f"{fw} {mode} {transform} against the reference", result, expected, ref_tol)
    if transform in _runs("jax"):
        _assert_tree_close(f"{transform}: torch against jax", results[("torch", "eager")], results[("jax", "eager")],
                           tol)


_TORCH_COMPILED = [t for t in frameworks.TRANSFORMS if t not in frameworks.get("torch").uncompiled_transforms]


@pytest.mark.slow
@pytest.mark.parametrize("transform", _TORCH_COMPILED)
def test_torch_compiled_transform_equals_the_reference_and_jax_jit(transform: str) -> None:
    # Every form a CUDA machine compiles (a CPU machine compiles frameworks.TORCH_COMPILED_ON_CPU of them).
    inputs = _mlp_inputs("float64")
    result = _run("torch", inputs, transform, "compiled")
    tol = TOLERANCES["float64"]
    _assert_tree_close(f"torch compiled {transform} against the reference", result, _reference(transform, inputs),
                       max(tol, FD_TOLERANCE) if transform.startswith("hvp") else tol)
    if transform in _runs("jax"):
        _assert_tree_close(f"{transform} compiled: torch against jax", result,
                           _run("jax", inputs, transform, "compiled"), tol)


def test_the_tangents_are_fixed_and_not_the_parameters() -> None:
    inputs = _mlp_inputs("float32")
    first, second = workloads.tangents(inputs), workloads.tangents(inputs)
    for k, v in inputs.params.items():
        np.testing.assert_array_equal(first[k], second[k])
        assert first[k].shape == v.shape and first[k].dtype == v.dtype and not np.allclose(first[k], v)


def test_per_example_gradients_sum_to_the_batch_gradient() -> None:
    # A mean where the loss sums (or a vmap over the wrong axis) breaks this, whatever the reference says.
    inputs = _mlp_inputs("float64")
    batch = _run("jax", inputs, "grad", "eager")
    for fw in frameworks.NAMES:
        for transform in ("per_example_vmap", "per_example_loop"):
            per = _run(fw, inputs, transform, "eager")
            assert {k: v.shape[0] for k, v in per.items()} == {k: len(inputs.data["x"]) for k in per}
            _assert_tree_close(f"{fw} {transform} summed", {k: v.sum(0) for k, v in per.items()}, batch,
                               TOLERANCES["float64"])


def test_the_hvp_modes_differ_from_the_gradient() -> None:
    # The mlp's HVP is not its gradient, nor the tangent: a mode that returned either would pass a weak check.
    inputs = _mlp_inputs("float64")
    hv, g = _reference("hvp_fwd_rev", inputs), _reference("grad", inputs)
    t = workloads.tangents(inputs)
    for k in hv:
        assert not np.allclose(hv[k], g[k]) and not np.allclose(hv[k], t[k])


# The one-call forms the issue names, in its parameter order: a caller writing jvp(g, x, v, True) compiles.
_ISSUE_SIGNATURES = {
    "jvp": ["g", "x", "v", "compiled", "method"],
    "hvp": ["f", "x", "v", "mode", "compiled"],
    "per_example_grads": ["loss", "params", "xs", "ys", "compiled"],
}


@pytest.mark.parametrize("side", [torch_transforms, jax_transforms], ids=["torch", "jax"])
@pytest.mark.parametrize("function", list(_ISSUE_SIGNATURES))
def test_the_one_call_forms_take_the_issues_positional_order(side, function: str) -> None:
    parameters = inspect.signature(getattr(side, function)).parameters
    assert list(parameters) == _ISSUE_SIGNATURES[function]
    assert parameters["compiled"].default is False


def test_jvp_compiled_positionally_is_jitted() -> None:
    # compiled as the 4th positional argument reaches jax.jit: under it the primal g sees is traced, not an array
    seen = []

    def g(a):
        seen.append(isinstance(a.primal, jax.core.Tracer))
        return jnp.sin(a)

    for compiled in (False, True):
        jax_transforms.jvp(g, _j(U_TALL), _j(U_TALL), compiled)
    assert seen == [False, True]


# ---- What a framework cannot run: refused with the reason ------------------------------------------------------


@pytest.mark.parametrize("framework", frameworks.NAMES)
@pytest.mark.parametrize("transform", frameworks.TRANSFORMS)
@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_refused_exactly_where_the_registry_says(framework: str, transform: str, mode: str) -> None:
    """transform_fn raises NotImplementedError (with a reason) exactly where frameworks' registry, which the
    benchmark skips read, says the framework has no such form; building compiles nothing (compiling is lazy)."""
    fw = frameworks.get(framework)
    refused = transform not in fw.transforms or (mode == "compiled" and transform in fw.uncompiled_transforms)
    side = torch_steps if framework == "torch" else jax_steps
    if refused:
        with pytest.raises(NotImplementedError, match=r"\w+.*: .{20,}"):
            side.transform_fn(_mlp_inputs("float32"), transform, mode)
    else:
        fn, _ = side.transform_fn(_mlp_inputs("float32"), transform, mode)
        assert callable(fn)


@pytest.mark.parametrize("transform", frameworks.TRANSFORMS)
def test_a_cpu_budget_skip_is_not_worded_as_a_framework_limit(transform: str) -> None:
    """Compiled PyTorch skipped on a CPU for time says so and what takes long; a true limit (what the builder refuses
    with NotImplementedError) says it is one and names the feature; a CUDA machine compiles every form but those."""
    cpu, cuda = (frameworks.transform_skip("torch", transform, "compiled", device) for device in ("cpu", "cuda"))
    limit = frameworks.get("torch").uncompiled_transforms.get(transform)
    if limit:
        assert cpu == cuda and cpu.startswith("not implemented in PyTorch (a framework limit): ") and limit in cpu
        assert "budget" not in cpu and "torch.compile" in cpu
    elif transform in frameworks.TORCH_COMPILED_ON_CPU:
        assert cpu is None and cuda is None
    else:
        assert cuda is None
        assert cpu.startswith("outside the CPU budget, not a framework limit: ") and "not implemented" not in cpu
        assert f"torch.compile of {transform} takes seconds" in cpu


def test_jax_refuses_the_tape_apis_and_names_its_counterpart() -> None:
    f = jax_objectives.log_sum_exp
    with pytest.raises(NotImplementedError, match="rev_rev"):
        jax_transforms.make_hvp(f, "double_backward")
    with pytest.raises(NotImplementedError, match="jax.jvp"):
        jax_transforms.make_jvp(f, method="dual")
    for method in ("autograd", "backward"):
        with pytest.raises(NotImplementedError, match="jax.grad"):
            jax_transforms.make_grad(f, method)
    with pytest.raises(ValueError, match="valid choices: fwd_rev, rev_rev, rev_fwd, double_backward"):
        jax_transforms.make_hvp(f, "fwd_fwd")


def test_torch_refuses_its_uncompilable_forms() -> None:
    f = torch_objectives.log_sum_exp
    for mode in ("double_backward", "rev_fwd"):
        with pytest.raises(NotImplementedError, match="no compiled form in PyTorch"):
            torch_transforms.make_hvp(f, mode, compiled=True)
    with pytest.raises(ValueError, match="valid choices: func, autograd, backward"):
        torch_transforms.make_grad(f, "grad")


# Runs what make_hvp refuses, in a child process: the crash it is refused for would take the test process down.
_REV_FWD_COMPILED = textwrap.dedent("""
    import torch
    a = torch.randn(7, 5, dtype=torch.float64)
    def f(x):
        return 0.5 * ((a @ x) ** 2).sum()  # closes over a tensor
    x, v = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    def rev_fwd(x, v):
        return torch.func.grad(lambda y: torch.func.jvp(f, (y,), (v,))[1])(x)
    got = torch.compile(rev_fwd, dynamic=False)(x, v)
    assert torch.allclose(got, a.T @ a @ v), "wrong values"
""")


@pytest.mark.slow
def test_the_refused_compiled_reverse_over_forward_still_fails_in_pytorch() -> None:
    """The reason for refusing compiled 'rev_fwd' holds: torch.compile of it fails (crashes or raises) in a child
    process. The day it passes, PyTorch fixed it: drop the refusal (frameworks' uncompiled_transforms)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-S", "-c", _REV_FWD_COMPILED], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode != 0, "torch.compile of reverse-over-forward now works: drop the refusal"


@pytest.mark.slow
def test_the_refused_compiled_double_backward_still_raises_in_pytorch() -> None:
    """The reason for refusing compiled 'double_backward' holds (it raises, so it may run in this process): the
    eager form, compiled by hand, fails. The day it passes, drop the refusal."""
    f, x, v, _, _ = _objective("least_squares", torch_objectives)
    compiled = torch.compile(torch_transforms.make_hvp(f, "double_backward"), dynamic=False)
    # torch 2.11 says it otherwise: in both the compiled first backward leaves nothing to differentiate.
    refusal = ("not have been used in the graph" if torch.__version__ >= "2.13"
               else "does not require grad and does not have a grad_fn")
    with pytest.raises(RuntimeError, match=refusal):
        compiled(_t(x), _t(v))


# ---- Memory per transform: the pillar's count classes, through the shared count path --------------------------

def _count(cls: type, framework: str, transform: str) -> dict:
    params = next(p for p in counts.grid(cls, framework) if p[cls.param_names.index("transform")] == transform)
    return counts.count_one(cls, params)


def test_saved_bytes_of_the_tape_transforms_are_the_mlps_residuals() -> None:
    # PyTorch's tape of silu(x @ w1) @ w2 keeps z = x @ w1 and silu(z), [batch, hidden] each, beyond the inputs;
    # the loop holds one example's tape (a loop that kept the batch's, or a vmap counted per example, is off by
    # the batch), jacrev the layer's tanh output, vmap the batch's tape.
    cls = transform_benchmarks.TransformSaved_mlp
    size = workloads.spec("mlp").sizes[cls.params[2][0]]
    batch, hidden, width = size["batch"], size["hidden"], size["width"]
    tape = 2 * batch * hidden * 4
    expected = {"grad": tape, "grad_autograd": tape, "grad_backward": tape, "per_example_vmap": tape,
                "per_example_loop": tape // batch, "jacrev_tall": hidden * 4, "jacrev_wide": width * 4}
    for transform, saved in expected.items():
        assert _count(cls, "torch", transform) == {"values": {"track_saved_bytes": saved}}, transform


@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_saved_bytes_are_skipped_where_no_tape_exists_with_the_reason(framework: str) -> None:
    cls = transform_benchmarks.TransformSaved_mlp
    for transform in frameworks.get(framework).transforms:
        entry = _count(cls, framework, transform)
        if transform in frameworks.TAPELESS_TRANSFORMS:
            assert entry == {"skip": frameworks.transform_saved_skip(framework, transform, "cpu")}
            assert "keeps no tape" in entry["skip"] and "forward mode" in entry["skip"]
        elif transform in frameworks.get(framework).unsaved_transforms:
            assert "a framework limit" in entry["skip"] and "saved_tensors_hooks" in entry["skip"]
        else:
            assert entry["values"]["track_saved_bytes"] > 0, transform


def _one_more_array(module, name: str, monkeypatch, nbytes: int) -> None:
    """`module.<name>`'s function, wrapped to keep one more array of `nbytes` bytes: saved for the backward (its
    result times a fresh product of the first argument's leaves) or returned beside its output (a peak)."""
    real = getattr(module, name)

    def wrapped(*args, **kwargs):
        fn, fn_args = real(*args, **kwargs)
        if name == "saved_fn":
            def keeps_more(p):
                first = next(iter(p.values()))
                extra = first.flatten()[: nbytes // 4] * 2.0  # a new array, saved by the product below
                return fn(p) + (extra * extra).sum()
            return keeps_more, fn_args

        def returns_more(*a):
            extra = next(iter(a[0].values())).flatten()[: nbytes // 4] * 2.0  # live from before the step on
            return fn(*a), extra
        return returns_more, fn_args

    monkeypatch.setattr(module, name, wrapped)


@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_one_more_array_kept_changes_saved_and_peak_bytes_by_its_size(framework: str, monkeypatch) -> None:
    side = torch_steps if framework == "torch" else jax_steps
    saved_cls, peak_cls = transform_benchmarks.TransformSaved_mlp, transform_benchmarks.TransformMemory_mlp
    before = (_count(saved_cls, framework, "grad")["values"]["track_saved_bytes"],
              _count(peak_cls, framework, "grad")["values"]["track_peak_bytes"])
    nbytes = 4096
    _one_more_array(side, "saved_fn", monkeypatch, nbytes)
    _one_more_array(side, "transform_fn", monkeypatch, nbytes)
    # a process probes a combination's peak once (its peak and workspace rows share the call): probe the new step
    monkeypatch.setattr(bench_common, "_MEMO", {k: v for k, v in bench_common._MEMO.items() if k[0] != "peak"})
    after = (_count(saved_cls, framework, "grad")["values"]["track_saved_bytes"],
             _count(peak_cls, framework, "grad")["values"]["track_peak_bytes"])
    # PyTorch's tape keeps exactly the array; JAX's residuals may add a scalar of the sum's backward
    assert nbytes <= after[0] - before[0] < nbytes + 16, "a saved extra array must raise the saved bytes by its size"
    # XLA's buffer plan may pad an output by a few bytes
    assert nbytes <= after[1] - before[1] < nbytes + 16, "an extra array live through the step must raise the peak"


@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_every_transform_peak_is_counted_by_the_frameworks_declared_method(framework: str, monkeypatch) -> None:
    # _PeakBytes refuses a peak whose method is not the one results declare: every transform must pass it
    methods = []
    probe = frameworks.load(framework).probe
    real = probe.peak_bytes

    def recording(fn, *args):
        result = real(fn, *args)
        methods.append(result.method)
        return result

    monkeypatch.setattr(probe, "peak_bytes", recording)
    for transform in frameworks.get(framework).transforms:
        entry = _count(transform_benchmarks.TransformMemory_mlp, framework, transform)
        assert entry["values"]["track_peak_bytes"] > 0, (transform, entry)
    assert set(methods) == {frameworks.memory_method(framework, "cpu")}
