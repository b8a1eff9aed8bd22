"""Where the first call of a jitted gradient step spends its time (mirror of implementations.torch.compile_phases).

The call measured is the one a user makes, ``jax.jit(step)(*args)`` with every cache cleared, and its phases are
JAX's own duration events (``jax.monitoring``: the jaxpr trace, the lowering to StableHLO, XLA's compile) plus the
execution, timed as a second call of the compiled step in the same process. What the events leave out of the first
call (dispatch, argument handling) is `unattributed`, bounded by implementations.first_call.TOLERANCE.

Formulations of the layer loop: "unrolled" (a Python loop, every layer in the program) and "scan" (lax.scan: the
layer is traced and compiled once). PyTorch's counterpart of "scan" is "regional".
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp

from implementations.first_call import check_formulation, measured_once
from implementations.jax import compile_probe, steps
from implementations.jax.common import cotangent, prepare
from implementations.workloads import Inputs, spec

# The phases of a first call, in the order they run; "first_call" is the whole call.
PHASES: tuple[str, ...] = ("trace", "lower", "xla_compile", "execution")
FORMULATIONS: tuple[str, ...] = ("unrolled", "scan")
# jax.monitoring's duration events of a jit compile (jax._src.dispatch's JAXPR_TRACE_EVENT, ...): phase -> event.
EVENTS: dict[str, str] = {
    "trace": "/jax/core/compile/jaxpr_trace_duration",
    "lower": "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "xla_compile": "/jax/core/compile/backend_compile_duration",
}


def _chain_scan_loss(inputs: Inputs, device: str) -> tuple[Callable, tuple]:
    """The chain as lax.scan over its depth (the links share their parameters, so the scan carries y alone)."""
    seed = cotangent(inputs, device)

    def fn(params: dict, data: dict) -> jax.Array:
        def link(y: jax.Array, _: None) -> tuple[jax.Array, None]:
            return jnp.tanh(y * params["scale"] + params["shift"]), None

        y, _ = jax.lax.scan(link, data["x"], None, length=inputs.static["depth"])
        return (y * seed).sum()

    return fn, prepare(inputs, device)


def grad_step(inputs: Inputs, formulation: str = "unrolled", device: str = "cpu") -> Callable[[], Any]:
    """The gradient step (loss and every input's gradient) as a zero-argument call that compiles on its first
    call: ``jax.jit(jax.value_and_grad(loss))`` of the workload in `formulation`, synchronised."""
    check_formulation(inputs.workload, formulation, FORMULATIONS)
    if inputs.workload == "chain" and formulation == "scan":
        loss, args = _chain_scan_loss(inputs, device)
    else:
        loss, args = steps.loss_fn(inputs, "plain", device, formulation if spec(inputs.workload).formulations
                                   else None)
    compiled = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    return lambda: jax.block_until_ready(compiled(*args))


@contextlib.contextmanager
def _event_spans() -> Iterator[dict[str, list[tuple[float, float]]]]:
    """The (start, end) spans of EVENTS recorded while inside, per event."""
    spans: dict[str, list[tuple[float, float]]] = {event: [] for event in EVENTS.values()}

    def listen(event: str, start: float, end: float, **_: Any) -> None:
        if event in spans:
            spans[event].append((start, end))

    jax.monitoring.register_event_time_span_listener(listen)
    try:
        yield spans
    finally:
        jax.monitoring.unregister_event_time_span_listener(listen)


def _covered(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of `spans`: a nested event (a jit inside the step) is not counted twice."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(spans):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


@contextlib.contextmanager
def first_call(inputs: Inputs, formulation: str = "unrolled", device: str = "cpu",
               cache: str = "cold") -> Iterator[Callable[[], dict[str, float]]]:
    """Everything before the clock starts (the compiler's one-time start-up on another function, the caches as
    `cache` asks: compile_probe.first_compiled_call's rule), then `measure`: the first call of the step and a
    second one, returning seconds per PHASES entry, "first_call" (the whole first call) and "unattributed" (what
    the phases leave out of it). One compile per process: a second `measure` raises."""
    step = grad_step(inputs, formulation, device)
    with _caches(cache, step), _event_spans() as spans:
        yield measured_once(step, lambda: {phase: _covered(spans[event]) for phase, event in EVENTS.items()})


@contextlib.contextmanager
def _caches(cache: str, step: Callable[[], Any]) -> Iterator[None]:
    """compile_probe.first_compiled_call's set-up for a step that takes no arguments: warmed compiler, `cache` state."""
    if cache not in ("cold", "warm"):
        raise ValueError(f"unknown cache {cache!r}; valid choices: cold, warm")
    jax.clear_caches()
    with compile_probe.persistent_cache(None):  # a cache configured by the caller must not serve the warm-up
        compile_probe.warm_up_compiler(jax.devices()[0])
    with contextlib.ExitStack() as stack:
        directory = stack.enter_context(tempfile.TemporaryDirectory()) if cache == "warm" else None
        stack.enter_context(compile_probe.persistent_cache(directory))
        if directory is not None:
            step()
        jax.clear_caches()
        yield
