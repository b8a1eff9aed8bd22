"""Function transforms and higher-order derivatives with jax (mirror of implementations.torch.transforms, whose
docstring has the tables of what each transform runs on both sides and what the benchmarks differentiate).

Each transform has a builder, ``make_<transform>(f, ..., compiled=False)``, that returns the transformed function
(with ``compiled=True`` jitted), and a one-call form, ``<transform>(f, x, ...)``. PyTorch's tape APIs (grad methods
'autograd' and 'backward', jvp method 'dual', hvp mode 'double_backward') have no JAX counterpart: those
raise NotImplementedError with the reason and the JAX form that does the same work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from implementations import frameworks, sampling, workloads
from implementations.jax.common import cotangent, load, prepare, sync
from implementations.jax.objectives import layer
from implementations.workloads import Inputs

GRAD_METHODS = ("func", "autograd", "backward")
JVP_METHODS = ("func", "dual")
HVP_MODES = ("fwd_rev", "rev_rev", "rev_fwd", "double_backward")
JACOBIAN_MODES = ("fwd", "rev")
TRANSFORMS = frameworks.get("jax").transforms
STEP_MODES = ("eager", "compiled")
_TAPE = {
    "autograd": "torch.autograd.grad walks a recorded tape; JAX has none: its reverse mode is jax.grad "
                     "(method 'func')",
    "backward": "loss.backward() accumulates into .grad attributes; JAX has neither: its reverse mode is jax.grad "
                "(method 'func')",
    "dual": "JAX has no dual-number API: its forward mode is jax.jvp (method 'func')",
    "double_backward": "create_graph=True differentiates a recorded backward; JAX's reverse-over-reverse is mode "
                       "'rev_rev' (jax.vjp of jax.grad)",
}


def _choose(kind: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r}; valid choices: {', '.join(valid)}")
    if value in _TAPE:
        raise NotImplementedError(f"{kind} {value!r}: {_TAPE[value]}")


def _compiled(fn: Callable, compiled: bool) -> Callable:
    return jax.jit(fn) if compiled else fn


def make_grad(f: Callable, method: str = "func", compiled: bool = False) -> Callable:
    """x -> the gradient of the scalar f at x: jax.grad ('func'; the tape methods raise NotImplementedError)."""
    _choose("grad method", method, GRAD_METHODS)
    return _compiled(jax.grad(f), compiled)


def grad(f: Callable, x: Any, method: str = "func", compiled: bool = False) -> Any:
    """The gradient of the scalar f at x (make_grad)."""
    return make_grad(f, method, compiled)(x)


def make_jvp(g: Callable, compiled: bool = False, method: str = "func") -> Callable:
    """(x, v) -> (g(x), J v), J the Jacobian of g at x: jax.jvp ('func'; 'dual' raises NotImplementedError)."""
    _choose("jvp method", method, JVP_METHODS)

    def func(x: Any, v: Any) -> tuple[jax.Array, jax.Array]:
        return jax.jvp(g, (x,), (v,))

    return _compiled(func, compiled)


def jvp(g: Callable, x: Any, v: Any, compiled: bool = False, method: str = "func") -> tuple[Any, Any]:
    """(g(x), J v) (make_jvp)."""
    return make_jvp(g, compiled, method)(x, v)


def make_hvp(f: Callable, mode: str = "fwd_rev", compiled: bool = False) -> Callable:
    """(x, v) -> H v, H the Hessian of the scalar f at x, by `mode` (HVP_MODES; 'double_backward' raises
    NotImplementedError: its counterpart is 'rev_rev')."""
    _choose("hvp mode", mode, HVP_MODES)

    def fwd_rev(x: Any, v: Any) -> Any:
        return jax.jvp(jax.grad(f), (x,), (v,))[1]

    def rev_rev(x: Any, v: Any) -> Any:
        _, vjp = jax.vjp(jax.grad(f), x)
        return vjp(v)[0]  # H is symmetric: v^T H = (H v)^T

    def rev_fwd(x: Any, v: Any) -> Any:
        return jax.grad(lambda y: jax.jvp(f, (y,), (v,))[1])(x)

    return _compiled({"fwd_rev": fwd_rev, "rev_rev": rev_rev, "rev_fwd": rev_fwd}[mode], compiled)


def hvp(f: Callable, x: Any, v: Any, mode: str = "fwd_rev", compiled: bool = False) -> Any:
    """H v at x (make_hvp)."""
    return make_hvp(f, mode, compiled)(x, v)


def make_jacobian(g: Callable, mode: str = "fwd", compiled: bool = False) -> Callable:
    """x -> the Jacobian of g at x, [*out, *in]: 'fwd' jax.jacfwd (one JVP per input, vmapped), 'rev' jax.jacrev
    (one VJP per output)."""
    _choose("jacobian mode", mode, JACOBIAN_MODES)
    return _compiled(jax.jacfwd(g) if mode == "fwd" else jax.jacrev(g), compiled)


def jacobian(g: Callable, x: Any, mode: str = "fwd", compiled: bool = False) -> Any:
    """The Jacobian of g at x (make_jacobian)."""
    return make_jacobian(g, mode, compiled)(x)


def make_per_example_grads(loss: Callable, compiled: bool = False) -> Callable:
    """(params, xs, ys) -> the gradient of loss(params, x, y) of each example with respect to params, a dict with a
    leading batch axis: jax.vmap of jax.grad over the examples' leading axis."""
    return _compiled(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)), compiled)


def per_example_grads(loss: Callable, params: dict, xs: jax.Array, ys: jax.Array, compiled: bool = False) -> dict:
    """Per-example gradients (make_per_example_grads)."""
    return make_per_example_grads(loss, compiled)(params, xs, ys)


def make_per_example_grads_loop(loss: Callable, compiled: bool = False) -> Callable:
    """The baseline of make_per_example_grads: a Python loop of jax.grad, one example at a time, the gradients
    stacked; `compiled` jits the per-example gradient (the loop stays in Python, as PyTorch's)."""
    one = _compiled(jax.grad(loss), compiled)

    def loop(params: dict, xs: jax.Array, ys: jax.Array) -> dict:
        grads = [one(params, x, y) for x, y in zip(xs, ys)]
        return jax.tree.map(lambda *g: jnp.stack(g), *grads)

    return loop


def per_example_grads_loop(loss: Callable, params: dict, xs: jax.Array, ys: jax.Array,
                           compiled: bool = False) -> dict:
    """Per-example gradients by the loop (make_per_example_grads_loop)."""
    return make_per_example_grads_loop(loss, compiled)(params, xs, ys)


# ---- The benchmarks' steps: one transform of one workload -----------------------------------------------------


def _first_matrix(params: dict) -> jax.Array:
    return next(a for a in jax.tree.leaves(params) if a.ndim == 2)


class _Workload(NamedTuple):
    """What every transform of a workload is built from (transform_fn, saved_fn)."""

    params: dict
    data: dict
    tangent: dict
    seed: jax.Array
    loss: Callable  # params -> sum(forward * cotangent)
    forward: Callable  # params -> the forward output
    one: Callable  # (params, x, y) -> the loss of one example
    jacobian: Callable  # kind 'tall' or 'wide' -> (tanh layer, its point)


def _workload(inputs: Inputs, device: str) -> _Workload:
    module = load(inputs.workload)
    # 'unrolled' where the workload has a loop: the per-layer arrays PyTorch's transforms see too
    formulation = "unrolled" if workloads.spec(inputs.workload).formulations else None
    params, data = prepare(inputs, device, formulation)
    tangent = prepare(replace(inputs, params=workloads.tangents(inputs)), device, formulation)[0]
    seed = cotangent(inputs, device)

    def loss(p: dict) -> jax.Array:
        return (module.forward(p, data, inputs.static, "plain", formulation) * seed).sum()

    def forward(p: dict) -> jax.Array:
        return module.forward(p, data, inputs.static, "plain", formulation)

    def one(p: dict, x: jax.Array, y: jax.Array) -> jax.Array:
        return (module.forward(p, dict(data, x=x[None]), inputs.static, "plain", formulation) * y[None]).sum()

    def jacobian(kind: str) -> tuple[Callable, jax.Array]:
        w, t = _first_matrix(params), _first_matrix(tangent)
        # tall: n inputs to m outputs at a column of the tangent; wide: m inputs to n outputs at a row of it
        return ((lambda a: layer(a, w)), t[:, 0]) if kind == "tall" else ((lambda a: layer(a, w.T)), t[0])

    return _Workload(params, data, tangent, seed, loss, forward, one, jacobian)


def _refuse_tape_api(transform: str) -> None:
    if transform in frameworks.TRANSFORMS and transform not in TRANSFORMS:
        raise NotImplementedError(f"transform {transform!r}: {_TAPE[transform.partition('_')[2]]}")


def transform_fn(inputs: Inputs, transform: str, mode: str = "eager",
                 device: str = "cpu") -> tuple[Callable, tuple]:
    """(fn, args): fn(*args) runs `transform` (TRANSFORMS) of the workload in `mode` ('eager' op by op, 'compiled'
    jitted), differentiating what implementations.torch.transforms' second table says; the tangents
    workloads.tangents(inputs)."""
    _refuse_tape_api(transform)
    _choose("transform", transform, TRANSFORMS)
    _choose("mode", mode, STEP_MODES)
    compiled = mode == "compiled"
    w = _workload(inputs, device)
    family, _, kind = transform.partition("_")
    if family == "grad":
        return make_grad(w.loss, "func", compiled), (w.params,)
    if family == "jvp":
        return make_jvp(w.forward, compiled), (w.params, w.tangent)
    if family == "hvp":
        return make_hvp(w.loss, kind, compiled), (w.params, w.tangent)
    if family in ("jacfwd", "jacrev"):
        fn, point = w.jacobian(kind)
        return make_jacobian(fn, family.removeprefix("jac"), compiled), (point,)
    build = make_per_example_grads if transform == "per_example_vmap" else make_per_example_grads_loop
    return build(w.one, compiled), (w.params, w.data["x"], w.seed)


def saved_fn(inputs: Inputs, transform: str, device: str = "cpu") -> tuple[Callable, tuple]:
    """(fn, args) for probe.saved_bytes: the function whose residuals the outermost reverse pass of `transform`
    keeps (jax.vjp of it), as implementations.torch.transforms.saved_fn says per transform. The forward-mode
    transforms (frameworks.TAPELESS_TRANSFORMS) keep none: a ValueError."""
    _refuse_tape_api(transform)
    _choose("transform with a tape", transform, tuple(t for t in TRANSFORMS if t not in frameworks.TAPELESS_TRANSFORMS))
    w = _workload(inputs, device)
    family, _, kind = transform.partition("_")
    if family == "grad":
        return w.loss, (w.params,)
    if transform == "hvp_rev_rev":
        return jax.grad(w.loss), (w.params,)
    if transform == "hvp_rev_fwd":
        return (lambda p: jax.jvp(w.loss, (p,), (w.tangent,))[1]), (w.params,)
    if family == "jacrev":
        fn, point = w.jacobian(kind)
        return fn, (point,)
    xs = w.data["x"]
    if transform == "per_example_vmap":
        return (lambda p: jax.vmap(w.one, in_axes=(None, 0, 0))(p, xs, w.seed)), (w.params,)
    return (lambda p: w.one(p, xs[0], w.seed[0])), (w.params,)


def transform_step(inputs: Inputs, transform: str, mode: str = "eager", device: str = "cpu") -> Callable[[], Any]:
    """One call of transform_fn's function, synchronised, after its warm-up (the first compiles)."""
    fn, args = transform_fn(inputs, transform, mode, device)

    def step() -> Any:
        return sync(fn(*args), device)

    sampling.warm_up(step, device)
    return step
