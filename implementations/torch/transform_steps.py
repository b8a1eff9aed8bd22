"""The benchmarks' steps of the transforms pillar with torch (mirror of implementations.jax.transform_steps): one
transform (frameworks.TRANSFORMS) of one workload, built from implementations.torch.transforms; what each
differentiates is in docs/transforms.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import torch

from implementations import frameworks, sampling, workloads
from implementations.torch.common import cotangent, formulation_of, leaves, load, prepare, sync, unflatten
from implementations.torch.objectives import layer
from implementations.torch.transforms import (
    TRANSFORMS,
    _choose,
    _on_tape,
    make_grad,
    make_hvp,
    make_jacobian,
    make_jvp,
    make_per_example_grads,
    make_per_example_grads_loop,
)
from implementations.workloads import Inputs

STEP_MODES = ("eager", "compiled")
# The transforms that run on the tape, whose inputs are leaves that require grad (torch.func's need not be).
_TAPE_TRANSFORMS = ("grad_autograd", "grad_backward", "hvp_double_backward", "per_example_loop")


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
    differentiating what docs/transforms.md says; inputs detached from any tape, the tangents
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
