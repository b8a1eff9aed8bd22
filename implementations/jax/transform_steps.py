"""The benchmarks' steps of the transforms pillar with jax (mirror of implementations.torch.transform_steps): one
transform (frameworks.TRANSFORMS) of one workload, built from implementations.jax.transforms; what each
differentiates is in docs/transforms.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import jax

from implementations import frameworks, sampling, workloads
from implementations.jax.common import cotangent, load, prepare, sync
from implementations.jax.objectives import layer
from implementations.jax.transforms import (
    _TAPE,
    TRANSFORMS,
    _choose,
    make_grad,
    make_hvp,
    make_jacobian,
    make_jvp,
    make_per_example_grads,
    make_per_example_grads_loop,
)
from implementations.workloads import Inputs

STEP_MODES = ("eager", "compiled")


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
    jitted), differentiating what docs/transforms.md says; the tangents
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
    keeps (jax.vjp of it), as implementations.torch.transform_steps.saved_fn says per transform. The forward-mode
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
