"""Runnable steps for the benchmarks (mirror of implementations.jax.steps).

Each builder does its set-up (conversion, compilation, warm-up) once and returns a zero-argument callable that runs
one step and waits for the device before returning, so a timer around the call measures the work itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

from implementations import frameworks, sampling
from implementations.torch.common import cotangent, formulation_of, leaves, load, prepare, sync
from implementations.workloads import Inputs, require_even_split

GRAD_MODES = ("eager", "compiled")
FORWARD_MODES = ("record", "no_grad", "inference_mode", "compiled")
ENGINE_FEATURES = frameworks.get("torch").engine_features
MICRO_BATCHES = 4


def loss_fn(inputs: Inputs, variant: str, device: str = "cpu",
            formulation: str | None = None) -> tuple[Callable, tuple]:
    """(fn, args): fn(params, data) is the scalar loss sum(forward * cotangent) of one step. `formulation` defaults
    to common.formulation_of's (the Python loop, 'unrolled', where the workload has one)."""
    module = load(inputs.workload)
    formulation = formulation_of(inputs.workload, formulation)
    seed = cotangent(inputs, device)

    def fn(params: dict, data: dict) -> torch.Tensor:
        return (module.forward(params, data, inputs.static, variant, formulation) * seed).sum()

    return fn, prepare(inputs, device, formulation)


def grad_fn(inputs: Inputs, variant: str, device: str = "cpu",
            formulation: str | None = None) -> tuple[Callable, tuple]:
    """(fn, args): fn(params, data) runs forward and backward and returns the loss and the gradients of every input."""
    loss, args = loss_fn(inputs, variant, device, formulation)

    def fn(params: dict, data: dict) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        value = loss(params, data)
        return value.detach(), torch.autograd.grad(value, leaves((params, data)))

    return fn, args


def forward_fn(inputs: Inputs, variant: str, mode: str, device: str = "cpu",
               formulation: str | None = None) -> tuple[Callable, tuple]:
    """(fn, args): fn(params, data) is the forward, recording for the backward ('record') or not ('no_grad')."""
    require_mode(mode, ("record", "no_grad"))
    module = load(inputs.workload)
    formulation = formulation_of(inputs.workload, formulation)

    def fn(params: dict, data: dict) -> torch.Tensor:
        with torch.set_grad_enabled(mode == "record"):
            return module.forward(params, data, inputs.static, variant, formulation)

    return fn, prepare(inputs, device, formulation)


def require_mode(mode: str, valid: tuple[str, ...]) -> None:
    if mode not in valid:
        raise ValueError(f"unknown mode {mode!r}; valid choices: {', '.join(valid)}")


def _micro_batch_losses(inputs: Inputs, variant: str, params: dict, data: dict, device: str) -> list[Callable]:
    """One loss per micro-batch: data["x"] and the output cotangent split along the batch axis."""
    module = load(inputs.workload)
    require_even_split(data["x"].shape[0], MICRO_BATCHES)
    xs = data["x"].detach().chunk(MICRO_BATCHES)
    cotangents = cotangent(inputs, device).chunk(MICRO_BATCHES)

    def chunk_loss(x: torch.Tensor, seed: torch.Tensor) -> Callable:
        return lambda: (module.forward(params, dict(data, x=x), inputs.static, variant) * seed).sum()

    return [chunk_loss(x, c) for x, c in zip(xs, cotangents)]


def _warm(step: Callable[[], Any], device: str) -> Callable[[], Any]:
    sampling.warm_up(step, device)
    return step


def check_budget(mode: str, budget: float | None) -> None:
    """`budget` is torch._functorch.config.activation_memory_budget: a fraction in [0, 1], for compiled steps only."""
    if budget is None:
        return
    if mode != "compiled":
        raise ValueError(f"a memory budget applies to torch.compile's partitioner; mode {mode!r} does not compile")
    if not 0.0 <= budget <= 1.0:
        raise ValueError(f"memory budget {budget!r} is outside [0, 1]")


def _memory_budget(budget: float | None) -> contextlib.AbstractContextManager:
    """The partitioner's activation memory budget while torch.compile compiles (None: the default, 1.0: save what
    the min-cut partitioner chooses; 0: recompute everything it can)."""
    if budget is None:
        return contextlib.nullcontext()
    return torch._functorch.config.patch(activation_memory_budget=budget)


def _scan_lowering(formulation: str | None) -> contextlib.AbstractContextManager:
    """The Dynamo setting under which torch.compile compiles the scan formulation: Inductor lowers torch's scan to
    a while_loop that indexes the sequence with the loop counter's .item(), which Dynamo refuses to trace without
    capture_scalar_outputs (DataDependentOutputException). Other formulations compile as before."""
    if formulation != "scan":
        return contextlib.nullcontext()
    return torch._dynamo.config.patch(capture_scalar_outputs=True)


def _guarded(loss: Callable, budget: float | None) -> Callable:
    """`loss` with the budget as a constant that TorchDynamo guards on. Every grad_step compiles the same code
    object, and TorchDynamo reuses a compiled entry whose guards pass without looking at the partitioner's
    config: without this, a budget's step silently ran the graph partitioned for the budget compiled first."""
    def guarded(params: dict, data: dict) -> torch.Tensor:
        if budget is not None and budget < 0:  # never true (check_budget); comparing makes the budget a guard
            raise ValueError(f"memory budget {budget!r} is outside [0, 1]")
        return loss(params, data)

    return guarded


def grad_step(inputs: Inputs, variant: str, mode: str, device: str = "cpu", formulation: str | None = None,
              budget: float | None = None) -> Callable[[], Any]:
    """Forward + backward: 'eager' records the tape on every call; 'compiled' runs torch.compile's graphs, compiled
    (on the warm-up call) under the activation memory `budget` where one is given."""
    check_budget(mode, budget)
    loss, (params, data) = loss_fn(inputs, variant, device, formulation)
    if mode == "compiled":
        if variant == "remat_names":
            # The named() regions live in Python: under torch.compile the selective-checkpoint policy is consulted
            # while AOTAutograd retraces the captured graph, where named() no longer runs, so nothing named would be
            # saved (compiled_costs: 0 bytes). PyTorch's compiled counterpart of remat_names is therefore not run.
            raise ValueError("remat_names has no torch.compile form here: the policy cannot see named() regions")
        # dynamic=False: after a second budget TorchDynamo would make the budget a symbolic input guarded by
        # "budget >= 0" only, and a third budget's step would run the second one's graph.
        loss = torch.compile(_guarded(loss, budget), mode=frameworks.torch_compile_mode(), dynamic=False)
    elif mode != "eager":
        raise ValueError(f"unknown grad mode {mode!r}; valid choices: {', '.join(GRAD_MODES)}")
    targets = leaves((params, data))

    def step():
        value = loss(params, data)
        return sync((value.detach(), torch.autograd.grad(value, targets)), device)

    with _memory_budget(budget), _scan_lowering(formulation):
        return _warm(step, device)


def forward_step(inputs: Inputs, variant: str, mode: str, device: str = "cpu",
                 formulation: str | None = None) -> Callable[[], Any]:
    """Forward only: 'record' builds the tape (grad enabled), 'no_grad' / 'inference_mode' do not, 'compiled' is
    torch.compile under inference_mode."""
    module = load(inputs.workload)
    formulation = formulation_of(inputs.workload, formulation)
    params, data = prepare(inputs, device, formulation)

    def forward() -> torch.Tensor:
        return module.forward(params, data, inputs.static, variant, formulation)

    if mode == "record":
        return _warm(lambda: sync(forward(), device), device)
    if mode == "no_grad":
        return _warm(torch.no_grad()(lambda: sync(forward(), device)), device)
    if mode in ("inference_mode", "compiled"):
        run = torch.compile(forward, mode=frameworks.torch_compile_mode()) if mode == "compiled" else forward
        return _warm(torch.inference_mode()(lambda: sync(run(), device)), device)
    raise ValueError(f"unknown forward mode {mode!r}; valid choices: {', '.join(FORWARD_MODES)}")


def engine_step(inputs: Inputs, variant: str, feature: str, mode: str = "eager",
                device: str = "cpu") -> Callable[[], Any]:
    """The autograd engine's bookkeeping around one step (see ENGINE_FEATURES); data["x"] is split on its first axis.
    `mode` is 'eager' only: the engine's bookkeeping is what eager PyTorch runs."""
    require_mode(mode, ("eager",))
    loss, (params, data) = loss_fn(inputs, variant, device)
    weights = leaves(params)
    if feature in ("accumulate_grad_attr", "accumulate_tree_add"):
        micro_loss = _micro_batch_losses(inputs, variant, params, data, device)

        def accumulate_grad_attr():
            for w in weights:
                w.grad = None
            for chunk_loss in micro_loss:
                chunk_loss().backward()  # AccumulateGrad adds into .grad in place
            return sync([w.grad for w in weights], device)

        def accumulate_tree_add():
            total = None
            for chunk_loss in micro_loss:
                grads = torch.autograd.grad(chunk_loss(), weights)
                total = grads if total is None else [t + g for t, g in zip(total, grads)]
            return sync(total, device)

        return _warm(accumulate_grad_attr if feature == "accumulate_grad_attr" else accumulate_tree_add, device)
    if feature in ("hooks", "no_hooks"):
        if feature == "hooks":
            for w in weights:
                w.register_hook(lambda g: g)  # a no-op tensor hook on every parameter: the engine's call cost
        return _warm(lambda: sync(torch.autograd.grad(loss(params, data), weights), device), device)
    if feature == "retain_graph_twice":
        def twice():  # two different cotangents, as on the JAX side
            value = loss(params, data)
            first = torch.autograd.grad(value, weights, torch.ones_like(value), retain_graph=True)
            return sync((first, torch.autograd.grad(value, weights, torch.full_like(value, 2))), device)

        return _warm(twice, device)
    if feature in ("zero_grad_none", "zero_grad_zeros"):
        def zero_grad():
            for w in weights:
                if feature == "zero_grad_none":
                    w.grad = None
                elif w.grad is not None:
                    w.grad.zero_()
            loss(params, data).backward()
            return sync([w.grad for w in weights], device)

        return _warm(zero_grad, device)
    raise ValueError(f"unknown engine feature {feature!r}; valid choices: {', '.join(ENGINE_FEATURES)}")
