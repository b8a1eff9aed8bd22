"""Where the first call of a torch.compile'd gradient step spends its time (mirror of
implementations.jax.compile_phases).

The call measured is the one a user makes, the compiled loss and ``torch.autograd.grad`` of it with every cache as
`cache` asks, and its phases are TorchDynamo's own timers (``torch._dynamo.utils.compilation_time_metrics``, what
``torch._dynamo.utils.compile_times()`` prints; each entry is a ``dynamo_timed`` region): Dynamo's bytecode trace,
AOTAutograd (joint graph, partition, the lazy backward's set-up), Inductor (code generation and the C++/Triton
compile of each graph) plus the execution, timed as a second call in the same process. What the timers leave out of
the first call (guard evaluation, Python around the graphs) is `unattributed`, bounded by
implementations.first_call.TOLERANCE.

Formulations of the layer loop: "unrolled" (the whole model in one graph: Dynamo traces the Python loop) and
"regional" (torch.compile of the repeated block, called in an eager Python loop: compiled once, reused by every
layer). JAX's counterpart of "regional" is "scan".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch

from implementations import frameworks
from implementations.first_call import check_formulation, measured_once
from implementations.torch import compile_probe, steps
from implementations.torch.common import cotangent, leaves, load, prepare, sync
from implementations.workloads import Inputs, attention_of, spec, style_of

# The phases of a first call, in the order they run; "first_call" is the whole call.
PHASES: tuple[str, ...] = ("dynamo", "aot_autograd", "inductor", "execution")
FORMULATIONS: tuple[str, ...] = ("unrolled", "regional")
# TorchDynamo's dynamo_timed keys (torch._dynamo.utils.compilation_time_metrics) the phases are computed from:
# a frame's whole compile, its backend (AOTAutograd with Inductor inside), the lazy backward compile and each
# graph's Inductor compile.
TIMERS: dict[str, str] = {
    "frame": "_compile.compile_inner",
    "backend": "OutputGraph.call_user_compiler",
    "backward": "backward._backward_impl",
    "graph": "compile_fx_inner",
}


def _block(workload: str, static: dict) -> Callable:
    """The repeated block of `workload` as a function of (carry, parameters of one layer)."""
    if workload == "chain":
        return lambda y, params: torch.tanh(y * params["scale"] + params["shift"])
    module = load(workload)
    return partial(module.block, heads=static["heads"], style=style_of(static), form=attention_of(static))


def _regional_loss(inputs: Inputs, device: str) -> tuple[Callable, tuple]:
    """The loss with its block compiled once (torch.compile of the block) and an eager loop over the layers."""
    block = torch.compile(_block(inputs.workload, inputs.static), mode=frameworks.torch_compile_mode())
    seed = cotangent(inputs, device)
    chain = inputs.workload == "chain"
    params, data = prepare(inputs, device, None if chain else "unrolled")

    def fn(params: dict, data: dict) -> torch.Tensor:
        y = data["x"]
        if chain:
            for _ in range(inputs.static["depth"]):
                y = block(y, params)
        else:
            for i in range(len(params["w_qkv"])):
                y = block(y, {name: value[i] for name, value in params.items()})
        return (y * seed).sum()

    return fn, (params, data)


def grad_step(inputs: Inputs, formulation: str = "unrolled", device: str = "cpu") -> Callable[[], Any]:
    """The gradient step (loss and every input's gradient) as a zero-argument call that compiles on its first
    call: ``torch.compile`` of the loss ("unrolled") or of its block ("regional"), then autograd.grad, synced."""
    check_formulation(inputs.workload, formulation, FORMULATIONS)
    if formulation == "regional":
        loss, (params, data) = _regional_loss(inputs, device)
    else:
        loss, (params, data) = steps.loss_fn(inputs, "plain", device, "unrolled" if spec(inputs.workload).formulations
                                             else None)
        loss = torch.compile(loss, mode=frameworks.torch_compile_mode())
    targets = leaves((params, data))

    def step() -> Any:
        value = loss(params, data)
        return sync((value.detach(), torch.autograd.grad(value, targets)), device)

    return step


def _phases(timers: dict[str, list[float]]) -> dict[str, float]:
    """Dynamo, AOTAutograd and Inductor seconds from the dynamo_timed regions (each nested in the one before)."""
    total = {name: sum(timers.get(key, ())) for name, key in TIMERS.items()}
    return {"dynamo": total["frame"] - total["backend"],
            "aot_autograd": total["backend"] + total["backward"] - total["graph"],
            "inductor": total["graph"]}


@contextlib.contextmanager
def first_call(inputs: Inputs, formulation: str = "unrolled", device: str = "cpu",
               cache: str = "cold") -> Iterator[Callable[[], dict[str, float]]]:
    """Everything before the clock starts (Inductor's one-time start-up on another function, the caches as
    `cache` asks: compile_probe.first_compiled_call's rule), then `measure`: the first call of the step and a
    second one, returning seconds per PHASES entry, "first_call" (the whole first call) and "unattributed" (what
    the phases leave out of it). One compile per process: a second `measure` raises."""
    from torch import _dynamo
    from torch._dynamo.utils import compilation_time_metrics

    if cache not in ("cold", "warm"):
        raise ValueError(f"unknown cache {cache!r}; valid choices: cold, warm")
    _dynamo.reset()
    with compile_probe.compile_caches("cold"):
        compile_probe.warm_up_compiler(torch.device(device))
    with compile_probe.compile_caches(cache):
        if cache == "warm":
            grad_step(inputs, formulation, device)()
            _dynamo.reset()
        step = grad_step(inputs, formulation, device)
        compilation_time_metrics.clear()
        try:
            yield measured_once(step, lambda: _phases(compilation_time_metrics))
        finally:
            _dynamo.reset()
