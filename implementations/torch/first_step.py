"""The parts of a fresh process's first gradient step that are PyTorch's own (mirror of
implementations.jax.first_step): the backend's and the compiler's one-time start, the step, and a recorder of the
compile phases and cache reads its first call makes. implementations.first_step runs them in order and times them.

Inductor does its one-time work lazily inside the first compile; ``compiler_start`` does the same work first, by the
calls the first compile makes (the ``inductor`` backend's imports and compile-worker pool, the C++ toolchain's first
use in picking the vector ISA), so that it can be timed apart from the step's own compile.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

from implementations.torch import compile_phases, steps
from implementations.torch.common import sync
from implementations.workloads import Inputs

MODES: tuple[str, ...] = ("eager", "compiled")


def check_mode(mode: str) -> None:
    """A ValueError that lists MODES where `mode` is not one of them."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid choices: {', '.join(MODES)}")


def backend_start(device: str = "cpu") -> dict[str, str]:
    """The device's one-time start (the first tensor on it, CUDA's context where it is a GPU); what started."""
    sync(torch.zeros(1, device=device), device)
    return {"device": str(torch.device(device))}


def compiler_start(device: str = "cpu") -> dict[str, str]:
    """Inductor's one-time start, as its first compile would do it: the backend's imports (TorchDynamo, Inductor),
    its compile-worker pool, and on a CPU the C++ toolchain's first use (the vector-ISA probes it builds and runs);
    returns what it found."""
    import torch._dynamo  # noqa: F401  # loaded by torch.compile's first call otherwise
    from torch._inductor.async_compile import get_compile_threads, maybe_warm_pool
    from torch._inductor.compile_fx import compile_fx  # noqa: F401  # the inductor backend's own import

    maybe_warm_pool()
    found = {"compile_threads": str(get_compile_threads())}
    if torch.device(device).type == "cpu":
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        found["vec_isa"] = str(pick_vec_isa())
    return found


def grad_step(inputs: Inputs, mode: str = "compiled", device: str = "cpu") -> Callable[[], Any]:
    """The gradient step (loss and every input's gradient) as a zero-argument, synchronised call: the tape
    ("eager") or torch.compile of the loss, compiled at the first call ("compiled", compile_phases.grad_step)."""
    check_mode(mode)
    if mode == "compiled":
        return compile_phases.grad_step(inputs, "unrolled", device)
    fn, args = steps.grad_fn(inputs, "plain", device)
    return lambda: sync(fn(*args), device)


@contextlib.contextmanager
def recorder() -> Iterator[Callable[[], dict[str, dict[str, float]]]]:
    """Yields `read`: the compile phases (compile_phases.PHASES but the execution, from TorchDynamo's timers) and
    the on-disk cache reads ("hits", "misses": FX-graph and AOTAutograd caches) since the recorder started."""
    # An eager step never loads TorchDynamo: importing it here would add a second of the recorder's own to the wait.
    if "torch._dynamo" in sys.modules:
        from torch._dynamo.utils import compilation_time_metrics, counters

        compilation_time_metrics.clear()
        counters.clear()

    def read() -> dict[str, dict[str, float]]:
        if "torch._dynamo" not in sys.modules:
            return {"phases": dict.fromkeys(compile_phases.PHASES[:-1], 0.0), "cache": {"hits": 0.0, "misses": 0.0}}
        from torch._dynamo.utils import compilation_time_metrics, counters

        lookups = {kind: float(counters["inductor"][f"fxgraph_cache_{kind}"]
                               + counters["aot_autograd"][f"autograd_cache_{kind}"]) for kind in ("hit", "miss")}
        return {"phases": compile_phases._phases(compilation_time_metrics),
                "cache": {"hits": lookups["hit"], "misses": lookups["miss"]}}

    yield read


def cache_settings() -> dict[str, str]:
    """Where Inductor's on-disk caches are and which are on, as Inductor reads them."""
    from torch._functorch import config as functorch_config
    from torch._inductor import config as inductor_config
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return {"dir": cache_dir(), "fx_graph_cache": str(inductor_config.fx_graph_cache),
            "autograd_cache": str(functorch_config.enable_autograd_cache),
            "force_disable_caches": str(inductor_config.force_disable_caches)}
