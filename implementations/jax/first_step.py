"""The parts of a fresh process's first gradient step that are JAX's own (mirror of
implementations.torch.first_step): the backend's and the compiler's one-time start, the step, and a recorder of the
compile phases and cache reads its first call makes. implementations.first_step runs them in order and times them.

XLA has no call that starts its compiler apart from a compile (MLIR's and LLVM's set-up happen in the first one):
``compiler_start`` starts nothing, and that set-up is in the step's compile phases.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from implementations.jax import compile_phases, steps
from implementations.jax.common import sync
from implementations.workloads import Inputs

MODES: tuple[str, ...] = ("eager", "compiled")
# jax.monitoring's events of the persistent compilation cache (jax._src.compilation_cache's callers).
CACHE_EVENTS: dict[str, str] = {"hits": "/jax/compilation_cache/cache_hits",
                                "misses": "/jax/compilation_cache/cache_misses"}


def check_mode(mode: str) -> None:
    """A ValueError that lists MODES where `mode` is not one of them."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid choices: {', '.join(MODES)}")


def backend_start(device: str = "cpu") -> dict[str, str]:
    """The device's one-time start (XLA's client for the platform, the first array on it); what started."""
    first = jax.devices(device)[0]
    sync(jax.device_put(np.zeros(1, np.float32), first), device)
    return {"device": str(first)}


def compiler_start(device: str = "cpu") -> dict[str, str]:
    """Nothing to start apart from a compile (the module's docstring); returns what it found, nothing."""
    return {}


def grad_step(inputs: Inputs, mode: str = "compiled", device: str = "cpu") -> Callable[[], Any]:
    """The gradient step (loss and every input's gradient) as a zero-argument, synchronised call: op by op, each
    primitive dispatched on its own ("eager"), or jax.jit of it, compiled at the first call ("compiled",
    compile_phases.grad_step)."""
    check_mode(mode)
    if mode == "compiled":
        return compile_phases.grad_step(inputs, "unrolled", device)
    fn, args = steps.grad_fn(inputs, "plain", device)
    return lambda: sync(fn(*args), device)


@contextlib.contextmanager
def recorder() -> Iterator[Callable[[], dict[str, dict[str, float]]]]:
    """Yields `read`: the compile phases (compile_phases.PHASES but the execution, from jax.monitoring's duration
    events, their spans merged) and the persistent cache's reads ("hits", "misses") since the recorder started."""
    reads = dict.fromkeys(CACHE_EVENTS, 0.0)
    names = {event: kind for kind, event in CACHE_EVENTS.items()}

    def listen(event: str, **_: Any) -> None:
        if event in names:
            reads[names[event]] += 1

    jax.monitoring.register_event_listener(listen)
    try:
        with compile_phases._event_spans() as spans:
            yield lambda: {"phases": {phase: compile_phases._covered(spans[event])
                                      for phase, event in compile_phases.EVENTS.items()},
                           "cache": dict(reads)}
    finally:
        jax.monitoring.unregister_event_listener(listen)


def cache_settings() -> dict[str, str]:
    """Where JAX's persistent compilation cache is and what it stores, as JAX reads it."""
    return {"dir": str(jax.config.jax_compilation_cache_dir), "enabled": str(jax.config.jax_enable_compilation_cache),
            "min_compile_time_secs": str(jax.config.jax_persistent_cache_min_compile_time_secs),
            "min_entry_size_bytes": str(jax.config.jax_persistent_cache_min_entry_size_bytes)}
