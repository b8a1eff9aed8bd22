"""Function transforms and higher-order derivatives with torch.func and the autograd tape (mirror of
implementations.jax.transforms; docs/transforms.md has the table of what each transform runs on both sides, compiled
or not, and what the benchmarks differentiate).

Each transform has a builder, ``make_<transform>(f, ..., compiled=False)``, that returns the transformed function
(built, and with ``compiled=True`` wrapped in torch.compile, once), and a one-call form, ``<transform>(f, x, ...)``.
`x` is a tensor or a dict of tensors (a pytree that torch.func and jax both walk); derivatives come back in its
structure. Where PyTorch cannot run a form, the builder raises NotImplementedError with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.autograd import forward_ad

from implementations import frameworks
from implementations.torch.common import leaves, unflatten

GRAD_METHODS = ("func", "autograd", "backward")
JVP_METHODS = ("func", "dual")
HVP_MODES = ("fwd_rev", "rev_rev", "rev_fwd", "double_backward")
JACOBIAN_MODES = ("fwd", "rev")
TRANSFORMS = frameworks.get("torch").transforms


def _choose(kind: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r}; valid choices: {', '.join(valid)}")


def _refuse_compiled(transform: str) -> None:
    reason = frameworks.get("torch").uncompiled_transforms.get(transform)
    if reason:
        raise NotImplementedError(f"{transform} has no compiled form in PyTorch: {reason}")


def _compile(fn: Callable) -> Callable:
    # dynamic=False: every call has the same shapes, and a dynamic graph would time the guards, not the transform
    return torch.compile(fn, mode=frameworks.torch_compile_mode(), dynamic=False)


def _on_tape(x: Any) -> Any:
    """`x` with every leaf requiring grad (the tape records only such leaves): as is where they all do already."""
    if all(t.requires_grad for t in leaves(x)):
        return x
    return unflatten([t.detach().requires_grad_(True) for t in leaves(x)], x)


def _like(flat: list[torch.Tensor], x: Any) -> Any:
    """`flat` in the structure of `x` (a tensor or a dict of tensors)."""
    return flat[0] if isinstance(x, torch.Tensor) else unflatten(flat, x)


def make_grad(f: Callable, method: str = "func", compiled: bool = False) -> Callable:
    """x -> the gradient of the scalar f at x: 'func' torch.func.grad, 'autograd' torch.autograd.grad,
    'backward' f(x).backward() and the leaves' .grad."""
    _choose("grad method", method, GRAD_METHODS)
    if method == "func":
        grad = torch.func.grad(f)
        return _compile(grad) if compiled else grad
    loss = _compile(f) if compiled else f

    def autograd_grad(x: Any) -> Any:
        x = _on_tape(x)
        return _like(list(torch.autograd.grad(loss(x), leaves(x))), x)

    def backward(x: Any) -> Any:
        x = _on_tape(x)
        for t in leaves(x):
            t.grad = None  # a fresh gradient each call, not one accumulated into the last
        loss(x).backward()
        return _like([t.grad for t in leaves(x)], x)

    return autograd_grad if method == "autograd" else backward


def grad(f: Callable, x: Any, method: str = "func", compiled: bool = False) -> Any:
    """The gradient of the scalar f at x (make_grad)."""
    return make_grad(f, method, compiled)(x)


def make_jvp(g: Callable, compiled: bool = False, method: str = "func") -> Callable:
    """(x, v) -> (g(x), J v), J the Jacobian of g at x: 'func' torch.func.jvp, 'dual' forward_ad dual numbers."""
    _choose("jvp method", method, JVP_METHODS)
    if method == "dual":
        if compiled:
            _refuse_compiled("jvp_dual")

        def dual(x: Any, v: Any) -> tuple[torch.Tensor, torch.Tensor]:
            with forward_ad.dual_level():
                duals = [forward_ad.make_dual(p, t) for p, t in zip(leaves(x), leaves(v))]
                out = forward_ad.unpack_dual(g(_like(duals, x)))
                return out.primal, out.tangent

        return _compile(dual) if compiled else dual

    def func(x: Any, v: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.func.jvp(g, (x,), (v,))

    return _compile(func) if compiled else func


def jvp(g: Callable, x: Any, v: Any, compiled: bool = False, method: str = "func") -> tuple[Any, Any]:
    """(g(x), J v) (make_jvp)."""
    return make_jvp(g, compiled, method)(x, v)


def make_hvp(f: Callable, mode: str = "fwd_rev", compiled: bool = False) -> Callable:
    """(x, v) -> H v, H the Hessian of the scalar f at x, by `mode` (HVP_MODES, the table in the docstring)."""
    _choose("hvp mode", mode, HVP_MODES)
    if compiled:
        _refuse_compiled(f"hvp_{mode}")

    def fwd_rev(x: Any, v: Any) -> Any:
        return torch.func.jvp(torch.func.grad(f), (x,), (v,))[1]

    def rev_rev(x: Any, v: Any) -> Any:
        _, vjp = torch.func.vjp(torch.func.grad(f), x)
        return vjp(v)[0]  # H is symmetric: v^T H = (H v)^T

    def rev_fwd(x: Any, v: Any) -> Any:
        return torch.func.grad(lambda y: torch.func.jvp(f, (y,), (v,))[1])(x)

    def double_backward(x: Any, v: Any) -> Any:
        x = _on_tape(x)
        first = torch.autograd.grad(f(x), leaves(x), create_graph=True)
        directional = sum((g * t).sum() for g, t in zip(first, leaves(v)))
        return _like(list(torch.autograd.grad(directional, leaves(x))), x)

    fn = {"fwd_rev": fwd_rev, "rev_rev": rev_rev, "rev_fwd": rev_fwd, "double_backward": double_backward}[mode]
    return _compile(fn) if compiled else fn


def hvp(f: Callable, x: Any, v: Any, mode: str = "fwd_rev", compiled: bool = False) -> Any:
    """H v at x (make_hvp)."""
    return make_hvp(f, mode, compiled)(x, v)


def make_jacobian(g: Callable, mode: str = "fwd", compiled: bool = False) -> Callable:
    """x -> the Jacobian of g at x, [*out, *in]: 'fwd' torch.func.jacfwd (one JVP per input, vmapped), 'rev'
    torch.func.jacrev (one VJP per output)."""
    _choose("jacobian mode", mode, JACOBIAN_MODES)
    jacobian = torch.func.jacfwd(g) if mode == "fwd" else torch.func.jacrev(g)
    return _compile(jacobian) if compiled else jacobian


def jacobian(g: Callable, x: Any, mode: str = "fwd", compiled: bool = False) -> Any:
    """The Jacobian of g at x (make_jacobian)."""
    return make_jacobian(g, mode, compiled)(x)


def make_per_example_grads(loss: Callable, compiled: bool = False) -> Callable:
    """(params, xs, ys) -> the gradient of loss(params, x, y) of each example with respect to params, a dict with a
    leading batch axis: torch.func.vmap of torch.func.grad over the examples' leading axis."""
    per_example = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))
    return _compile(per_example) if compiled else per_example


def per_example_grads(loss: Callable, params: dict, xs: torch.Tensor, ys: torch.Tensor,
                      compiled: bool = False) -> dict:
    """Per-example gradients (make_per_example_grads)."""
    return make_per_example_grads(loss, compiled)(params, xs, ys)


def make_per_example_grads_loop(loss: Callable, compiled: bool = False) -> Callable:
    """The baseline of make_per_example_grads: a Python loop of torch.autograd.grad, one example at a time, the
    gradients stacked; `compiled` compiles the per-example loss."""
    one = _compile(loss) if compiled else loss

    def loop(params: dict, xs: torch.Tensor, ys: torch.Tensor) -> dict:
        params = _on_tape(params)
        grads = [torch.autograd.grad(one(params, x, y), leaves(params)) for x, y in zip(xs, ys)]
        return unflatten([torch.stack(g) for g in zip(*grads)], params)

    return loop


def per_example_grads_loop(loss: Callable, params: dict, xs: torch.Tensor, ys: torch.Tensor,
                           compiled: bool = False) -> dict:
    """Per-example gradients by the loop (make_per_example_grads_loop)."""
    return make_per_example_grads_loop(loss, compiled)(params, xs, ys)
