"""Function transforms and higher-order derivatives with torch.func and the autograd tape (mirror of
implementations.jax.transforms).

Each transform has a builder, ``make_<transform>(f, ..., compiled=False)``, that returns the transformed function
(built, and with ``compiled=True`` wrapped in torch.compile, once), and a one-call form, ``<transform>(f, x, ...)``.
`x` is a tensor or a dict of tensors (a pytree that torch.func and jax both walk); derivatives come back in its
structure. Where PyTorch cannot run a form, the builder raises NotImplementedError with the reason
(implementations.frameworks: ``uncompiled_transforms``).

| transform | PyTorch | JAX |
|---|---|---|
| grad, method 'func' | torch.func.grad | jax.grad |
| grad, method 'autograd' | torch.autograd.grad on the tape | - (tape API) |
| grad, method 'backward' | loss.backward(), read .grad | - (tape API) |
| jvp, method 'func' | torch.func.jvp | jax.jvp |
| jvp, method 'dual' | torch.autograd.forward_ad dual numbers | - (jax.jvp is its forward mode) |
| hvp 'fwd_rev' (forward over reverse) | func.jvp(func.grad(f)) | jax.jvp(jax.grad(f)) |
| hvp 'rev_rev' (reverse over reverse) | func.vjp(func.grad(f)) | jax.vjp(jax.grad(f)) |
| hvp 'rev_fwd' (reverse over forward) | func.grad(x -> func.jvp(f)) | jax.grad(x -> jax.jvp(f)) |
| hvp 'double_backward' | autograd.grad(create_graph=True), twice | - (its counterpart is 'rev_rev') |
| jacobian 'fwd' / 'rev' | torch.func.jacfwd / jacrev | jax.jacfwd / jacrev |
| per_example_grads | func.vmap(func.grad(loss)) | jax.vmap(jax.grad(loss)) |
| per_example_grads_loop | autograd.grad per example, stacked | jax.grad per example, stacked |

Compiled forms: torch.compile / jax.jit of the whole transformed function, except where the tape runs outside it
(methods 'autograd' and 'backward', the loop: the loss is compiled, the tape's backward runs
AOTAutograd's compiled backward). PyTorch has no compiled 'double_backward' (the second autograd.grad raises under
torch.compile) and none of 'rev_fwd' (Inductor's CPU code crashed on a float64 objective).

The benchmarks (benchmarks/transforms.py) run `transform_step` on a workload (the grid in
implementations/workloads.py: the mlp), with the workload's loss sum(forward * cotangent):

| benchmark transform | what is differentiated |
|---|---|
| grad*, hvp_* | the loss with respect to the parameters (dict), hvp along a fixed tangent of the parameters |
| jvp* | the forward output with respect to the parameters, along the same tangent |
| jac*_tall | tanh(u @ w), w the workload's first matrix parameter [n, m], n < m: forward mode's shape |
| jac*_wide | tanh(z @ w.T), m inputs to n outputs: reverse mode's shape |
| per_example_* | the loss of each example (one row of x and of the cotangent) with respect to the parameters |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import torch
from torch.autograd import forward_ad

from implementations import frameworks, sampling, workloads
from implementations.torch.common import cotangent, formulation_of, leaves, load, prepare, sync, unflatten
from implementations.torch.objectives import layer
from implementations.workloads import Inputs

GRAD_METHODS = ("func", "autograd", "backward")
JVP_METHODS = ("func", "dual")
HVP_MODES = ("fwd_rev", "rev_rev", "rev_fwd", "double_backward")
JACOBIAN_MODES = ("fwd", "rev")
TRANSFORMS = frameworks.get("torch").transforms
STEP_MODES = ("eager", "compiled")
# The transforms that run on the tape, whose inputs are leaves that require grad (torch.func's need not be).
_TAPE_TRANSFORMS = ("grad_autograd", "grad_backward", "hvp_double_backward", "per_example_loop")


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


# ---- The benchmarks' steps: one transform of one workload -----------------------------------------------------


def _first_matrix(params: dict) -> torch.Tensor:
    return next(t for t in leaves(params) if t.dim() == 2)


def _detached(tree: Any) -> Any:
    return unflatten([t.detach() for t in leaves(tree)], tree)


class _Workload(NamedTuple):
    """What every transform of a workload is built from (transform_fn, saved_fn)."""

    params: dict
    data: dict
    tangent: dict
    seed: torch.Tensor
    loss: Callable  # params -> sum(forward * cotangent)
    forward: Callable  # params -> the forward output
    one: Callable  # (params, x, y) -> the loss of one example
    jacobian: Callable  # kind 'tall' or 'wide' -> (tanh layer, its point)


def _workload(inputs: Inputs, device: str, on_tape: bool) -> _Workload:
    module = load(inputs.workload)
    formulation = formulation_of(inputs.workload)  # the Python loop where the workload has one
    params, data = (_detached(tree) for tree in prepare(inputs, device, formulation))
    tangent = _detached(prepare(replace(inputs, params=workloads.tangents(inputs)), device, formulation)[0])
    seed = cotangent(inputs, device)
    if on_tape:
        params = _on_tape(params)  # leaves the tape records, made once: not a copy per call

    def loss(p: dict) -> torch.Tensor:
        return (module.forward(p, data, inputs.static, "plain", formulation) * seed).sum()

    def forward(p: dict) -> torch.Tensor:
        return module.forward(p, data, inputs.static, "plain", formulation)

    def one(p: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (module.forward(p, dict(data, x=x[None]), inputs.static, "plain", formulation) * y[None]).sum()

    def jacobian(kind: str) -> tuple[Callable, torch.Tensor]:
        w, t = _first_matrix(params), _first_matrix(tangent)
        # tall: n inputs to m outputs at a column of the tangent; wide: m inputs to n outputs at a row of it
        return ((lambda a: layer(a, w)), t[:, 0]) if kind == "tall" else ((lambda a: layer(a, w.T)), t[0])

    return _Workload(params, data, tangent, seed, loss, forward, one, jacobian)


def transform_fn(inputs: Inputs, transform: str, mode: str = "eager",
                 device: str = "cpu") -> tuple[Callable, tuple]:
    """(fn, args): fn(*args) runs `transform` (TRANSFORMS) of the workload in `mode` ('eager' or 'compiled'),
    differentiating what the module docstring's second table says; inputs detached from any tape, the tangents
    workloads.tangents(inputs)."""
    _choose("transform", transform, TRANSFORMS)
    _choose("mode", mode, STEP_MODES)
    compiled = mode == "compiled"
    w = _workload(inputs, device, on_tape=transform in _TAPE_TRANSFORMS)
    family, _, kind = transform.partition("_")
    if family == "grad":
        return make_grad(w.loss, kind or "func", compiled), (w.params,)
    if family == "jvp":
        return make_jvp(w.forward, compiled, kind or "func"), (w.params, w.tangent)
    if family == "hvp":
        return make_hvp(w.loss, kind, compiled), (w.params, w.tangent)
    if family in ("jacfwd", "jacrev"):
        fn, point = w.jacobian(kind)
        return make_jacobian(fn, family.removeprefix("jac"), compiled), (point,)
    build = make_per_example_grads if transform == "per_example_vmap" else make_per_example_grads_loop
    return build(w.one, compiled), (w.params, w.data["x"], w.seed)


def saved_fn(inputs: Inputs, transform: str, device: str = "cpu") -> tuple[Callable, tuple]:
    """(fn, args) for probe.saved_bytes: the function whose tape the outermost reverse pass of `transform` walks,
    recorded on the autograd tape (the leaves require grad): the loss for the gradients, the create_graph=True
    gradient for double backward (jax: the gradient, for reverse-over-reverse), the JVP for reverse-over-forward,
    the layer for jacrev, the vmapped per-example losses, and one example's loss for the loop (it holds one tape at
    a time). The forward-mode transforms (frameworks.TAPELESS_TRANSFORMS) keep none: a ValueError; reverse-over-
    reverse through torch.func the probe cannot see: NotImplementedError (frameworks' unsaved_transforms)."""
    _choose("transform with a tape", transform, tuple(t for t in TRANSFORMS if t not in frameworks.TAPELESS_TRANSFORMS))
    unseen = frameworks.get("torch").unsaved_transforms.get(transform)
    if unseen:
        raise NotImplementedError(f"{transform}'s saved bytes are not counted in PyTorch: {unseen}")
    w = _workload(inputs, device, on_tape=True)
    family, _, kind = transform.partition("_")
    if family == "grad":
        return w.loss, (w.params,)
    if transform == "hvp_double_backward":
        return (lambda p: torch.autograd.grad(w.loss(p), leaves(p), create_graph=True)), (w.params,)
    if transform == "hvp_rev_fwd":
        return (lambda p: torch.func.jvp(w.loss, (p,), (w.tangent,))[1]), (w.params,)
    if family == "jacrev":
        fn, point = w.jacobian(kind)
        return fn, (point.detach().requires_grad_(True),)
    xs = w.data["x"]
    if transform == "per_example_vmap":
        return (lambda p: torch.func.vmap(w.one, in_dims=(None, 0, 0))(p, xs, w.seed)), (w.params,)
    return (lambda p: w.one(p, xs[0], w.seed[0])), (w.params,)


def transform_step(inputs: Inputs, transform: str, mode: str = "eager", device: str = "cpu") -> Callable[[], Any]:
    """One call of transform_fn's function, synchronised, after its warm-up (the first compiles)."""
    fn, args = transform_fn(inputs, transform, mode, device)

    def step() -> Any:
        return sync(fn(*args), device)

    sampling.warm_up(step, device)
    return step
