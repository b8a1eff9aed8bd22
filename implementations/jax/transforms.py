"""Function transforms and higher-order derivatives with jax (mirror of implementations.torch.transforms;
docs/transforms.md has the table of what each transform runs on both sides, compiled or not, and what the benchmarks
differentiate).

Each transform has a builder, ``make_<transform>(f, ..., compiled=False)``, that returns the transformed function
(with ``compiled=True`` jitted), and a one-call form, ``<transform>(f, x, ...)``. PyTorch's tape APIs (grad methods
'autograd' and 'backward', jvp method 'dual', hvp mode 'double_backward') have no JAX counterpart: those
raise NotImplementedError with the reason and the JAX form that does the same work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from implementations import frameworks

GRAD_METHODS = ("func", "autograd", "backward")
JVP_METHODS = ("func", "dual")
HVP_MODES = ("fwd_rev", "rev_rev", "rev_fwd", "double_backward")
JACOBIAN_MODES = ("fwd", "rev")
TRANSFORMS = frameworks.get("jax").transforms
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
