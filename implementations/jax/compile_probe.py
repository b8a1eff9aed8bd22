"""Compile probes for the JAX side: what jax.jit of a gradient is asked to keep and recompute (compiled_costs), and
the first compiled call of a step with everything before it paid (first_compiled_call), which the compile-time
benchmarks time.

The mirror of ``implementations.torch.compile_probe``: the same public names and signatures.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from implementations import sampling
from implementations.jax.probe import device_of, matmul_flops, saved_bytes
from implementations.probe_results import CompiledCosts


def compiled_costs(fn: Callable[..., Any], *args: Any, budget: float | None = None) -> CompiledCosts:
    """What ``jax.jit`` of the gradient of the scalar loss ``fn(*args)`` is asked to keep and recompute: the
    residuals of ``jax.vjp`` (``saved_bytes``) and the matmul flops of the differentiated jaxpr (``matmul_flops``),
    the program jit hands to XLA. The counterpart of PyTorch's compiled_costs; `budget` must be None (JAX has no
    activation memory budget)."""
    if budget is not None:
        raise ValueError("JAX has no activation memory budget (its counterpart is the choice of checkpoint policy)")
    grads = jax.value_and_grad(fn, argnums=tuple(range(len(args))))
    return CompiledCosts(saved_bytes(fn, *args).extra_bytes, matmul_flops(grads, *args),
                         "jax.vjp residuals and matmuls of the differentiated jaxpr (before XLA)")


def warm_up_compiler(device: jax.Device) -> None:
    """Pays the process's one-time compile set-up (backend, MLIR and LLVM initialisation) on an unrelated function,
    as the PyTorch probe pays Inductor's."""
    x = jax.device_put(np.ones(8, np.float32), device)
    jax.jit(jax.value_and_grad(lambda t: (jnp.sin(t) * 2).sum())).lower(x).compile()


CACHE_FLAGS = ("jax_enable_compilation_cache", "jax_compilation_cache_dir",
                "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes")


@contextlib.contextmanager
def persistent_cache(directory: str | None) -> Iterator[None]:
    """The persistent compilation cache in `directory` (every entry written), or off if None; restored after."""
    from jax._src import compilation_cache  # the cache is set up once per process: reset() re-reads the flags

    saved = {flag: getattr(jax.config, flag) for flag in CACHE_FLAGS}
    wanted = (True, directory, 0.0, -1) if directory else (False, None, *list(saved.values())[2:])
    try:
        for flag, value in zip(CACHE_FLAGS, wanted):
            jax.config.update(flag, value)
        compilation_cache.reset_cache()
        yield
    finally:
        for flag, value in saved.items():
            jax.config.update(flag, value)
        compilation_cache.reset_cache()


@contextlib.contextmanager
def first_compiled_call(step: Callable[..., Any], *args: Any, cache: str = "cold") -> Iterator[Callable[[], Any]]:
    """Everything a timed compile needs before the clock starts, then the call to time: yields `first_call`, the
    first call of ``jax.jit(step)`` built here (trace, lower, compile and one execution, synchronised). A second
    call would be a steady one and raises.

    The process's one-time set-up is paid first on an unrelated function (``warm_up_compiler``), as on the PyTorch
    side, so neither framework's time carries it. `cache`: "cold" clears the in-memory caches and turns the
    persistent cache off, so the process's configured cache (TVT_COMPILE_CACHE) is never read; "warm" compiles
    `step` once into a persistent cache in a fresh temporary directory and clears the in-memory caches, so the timed
    compile is the one the cache serves (PyTorch: Inductor's FX-graph and AOTAutograd caches, likewise). The
    caller's cache settings are back on exit.
    """
    if cache not in ("cold", "warm"):
        raise ValueError(f"unknown cache {cache!r}; valid choices: cold, warm")
    jax.clear_caches()
    with persistent_cache(None):  # a cache configured by the caller must not serve the warm-up
        warm_up_compiler(device_of(args))
    with contextlib.ExitStack() as stack:
        directory = stack.enter_context(tempfile.TemporaryDirectory()) if cache == "warm" else None
        stack.enter_context(persistent_cache(directory))
        if directory is not None:
            jax.jit(step).lower(*args).compile()
        jax.clear_caches()
        yield sampling.once(jax.jit(step), args, jax.block_until_ready)
