"""Runnable steps for the benchmarks (mirror of implementations.torch.steps).

Each builder does its set-up (conversion, compilation, warm-up) once and returns a zero-argument callable that runs
one step and waits for the device before returning, so a timer around the call measures the work itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from implementations import frameworks, sampling
from implementations.jax.common import cotangent, formulation_of, load, prepare, sync
from implementations.workloads import Inputs, require_even_split

GRAD_MODES = ("eager", "compiled")
# JAX saves nothing unless a transformation asks for it, so it has no inference_mode counterpart: a plain call is it.
FORWARD_MODES = ("record", "no_grad", "compiled")
ENGINE_FEATURES = frameworks.get("jax").engine_features
MICRO_BATCHES = 4


def loss_fn(inputs: Inputs, variant: str, device: str = "cpu",
            formulation: str | None = None) -> tuple[Callable, tuple]:
    """(fn, args): fn(params, data) is the scalar loss sum(forward * cotangent) of one step. `formulation`
    ('scan' runs the layer stacks as lax.scan, 'unrolled' as a Python loop) defaults to common.formulation_of's."""
    module = load(inputs.workload)
    formulation = formulation_of(inputs.workload, formulation)
    seed = cotangent(inputs, device)

    def fn(params: dict, data: dict) -> jax.Array:
        return (module.forward(params, data, inputs.static, variant, formulation) * seed).sum()

    return fn, prepare(inputs, device, formulation)


def grad_fn(inputs: Inputs, variant: str, device: str = "cpu",
            formulation: str | None = None) -> tuple[Callable, tuple]:
    """(fn, args): fn(params, data) runs forward and backward and returns the loss and the gradients of every input.

    The loss is returned as PyTorch's step has it: with jax.grad alone, XLA drops the forward's work that only the
    loss value needs (the mlp's last matmul), and the two steps would not do the same work.
    """
    loss, args = loss_fn(inputs, variant, device, formulation)
    return jax.value_and_grad(loss, argnums=(0, 1)), args


def forward_fn(inputs: Inputs, variant: str, mode: str, device: str = "cpu",
               formulation: str | None = None) -> tuple[Callable, tuple]:
    """(fn, args): fn(params, data) is the forward, keeping the residuals ('record', jax.vjp) or not ('no_grad')."""
    require_mode(mode, ("record", "no_grad"))
    module = load(inputs.workload)
    formulation = formulation_of(inputs.workload, formulation)

    def forward(params: dict, data: dict) -> jax.Array:
        return module.forward(params, data, inputs.static, variant, formulation)

    def record(params: dict, data: dict) -> tuple:
        out, vjp = jax.vjp(forward, params, data)
        # Residuals that are the arguments themselves stay out: a jitted function would return them as copies, while
        # PyTorch's tape only references its inputs (the probe's extra_bytes makes the same cut).
        arguments = jax.tree.leaves((params, data))
        kept = [r for r in jax.tree.leaves(vjp) if not any(r is a for a in arguments)]
        return out, kept

    return (record if mode == "record" else forward), prepare(inputs, device, formulation)


def require_mode(mode: str, valid: tuple[str, ...]) -> None:
    if mode not in valid:
        raise ValueError(f"unknown mode {mode!r}; valid choices: {', '.join(valid)}")


def _micro_batch_losses(inputs: Inputs, variant: str, params: dict, data: dict, device: str) -> list[Callable]:
    """One loss per micro-batch: data["x"] and the output cotangent split along the batch axis."""
    module = load(inputs.workload)
    require_even_split(data["x"].shape[0], MICRO_BATCHES)
    xs = jnp.split(data["x"], MICRO_BATCHES)
    cotangents = jnp.split(cotangent(inputs, device), MICRO_BATCHES)

    def chunk_loss(x: jax.Array, seed: jax.Array) -> Callable:
        return lambda params: (module.forward(params, dict(data, x=x), inputs.static, variant) * seed).sum()

    return [chunk_loss(x, c) for x, c in zip(xs, cotangents)]


def _warm(step: Callable[[], Any], device: str) -> Callable[[], Any]:
    sampling.warm_up(step, device)
    return step


def check_budget(mode: str, budget: float | None) -> None:
    """A memory budget is torch.compile's (torch._functorch.config.activation_memory_budget); JAX has none."""
    if budget is not None:
        raise ValueError("JAX has no activation memory budget (its counterpart is the choice of checkpoint policy)")


def grad_step(inputs: Inputs, variant: str, mode: str, device: str = "cpu", formulation: str | None = None,
              budget: float | None = None) -> Callable[[], Any]:
    """Forward + backward: 'eager' is op-by-op jax.value_and_grad (traced on every call; with an un-jitted lax.scan
    that includes an XLA compile of the loop per call, which is why the benchmarks run formulation 'unrolled'
    eagerly); 'compiled' is jax.jit of it. `budget` must be None (see check_budget)."""
    check_budget(mode, budget)
    grads, (params, data) = grad_fn(inputs, variant, device, formulation)
    if mode == "compiled":
        grads = jax.jit(grads)
    elif mode != "eager":
        raise ValueError(f"unknown grad mode {mode!r}; valid choices: {', '.join(GRAD_MODES)}")
    return _warm(lambda: sync(grads(params, data)), device)


def forward_step(inputs: Inputs, variant: str, mode: str, device: str = "cpu",
                 formulation: str | None = None) -> Callable[[], Any]:
    """Forward only: 'record' is jax.vjp's forward (keeps the residuals), 'no_grad' an op-by-op call, 'compiled'
    jax.jit of the forward."""
    module = load(inputs.workload)
    formulation = formulation_of(inputs.workload, formulation)
    params, data = prepare(inputs, device, formulation)

    def forward(params: dict, data: dict) -> jax.Array:
        return module.forward(params, data, inputs.static, variant, formulation)

    if mode == "record":
        return _warm(lambda: sync(jax.vjp(forward, params, data)), device)
    if mode in ("no_grad", "compiled"):
        run = jax.jit(forward) if mode == "compiled" else forward
        return _warm(lambda: sync(run(params, data)), device)
    raise ValueError(f"unknown forward mode {mode!r}; valid choices: {', '.join(FORWARD_MODES)}")


def engine_step(inputs: Inputs, variant: str, feature: str, mode: str = "eager",
                device: str = "cpu") -> Callable[[], Any]:
    """The functional counterparts of the autograd engine's bookkeeping (see ENGINE_FEATURES), op by op ('eager') or
    jitted per micro-step ('compiled')."""
    require_mode(mode, GRAD_MODES)
    compile_ = jax.jit if mode == "compiled" else (lambda f: f)
    loss, (params, data) = loss_fn(inputs, variant, device)
    if feature == "accumulate_tree_add":
        micro_loss = _micro_batch_losses(inputs, variant, params, data, device)
        # value_and_grad, as everywhere: PyTorch computes each micro-batch's loss too.
        grads_of = [compile_(jax.value_and_grad(chunk_loss)) for chunk_loss in micro_loss]

        def accumulate():
            total = None
            for grad in grads_of:
                _, grads = grad(params)
                total = grads if total is None else jax.tree.map(jnp.add, total, grads)
            return sync(total)

        return _warm(accumulate, device)
    if feature == "no_hooks":
        grad = compile_(jax.value_and_grad(loss))
        return _warm(lambda: sync(grad(params, data)), device)
    if feature == "retain_graph_twice":
        # jax.vjp's residuals stay alive as long as the returned function: calling it twice is the retained graph.
        # Two different cotangents: XLA would merge two identical backward passes into one.
        def twice(params, data):
            value, vjp = jax.vjp(lambda p: loss(p, data), params)
            return vjp(jnp.ones_like(value)), vjp(jnp.full_like(value, 2))

        run = compile_(twice)
        return _warm(lambda: sync(run(params, data)), device)
    raise ValueError(f"unknown engine feature {feature!r}; valid choices: {', '.join(ENGINE_FEATURES)}")
