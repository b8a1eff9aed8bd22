"""Compile probes for the PyTorch side: what torch.compile keeps and recomputes (compiled_costs), and the first
compiled call of a step with everything before it paid (first_compiled_call), which the compile-time benchmarks time.

The mirror of ``implementations.jax.compile_probe``: the same public names and signatures.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch
from torch.utils.flop_counter import flop_registry

from implementations import frameworks, sampling
from implementations.probe_results import CompiledCosts
from implementations.torch.probe import ATTENTION_FLOPS, device_of, sync, tensors

# Matmul-like ATen ops of a partitioned graph, counted by torch.utils.flop_counter's formulas (2 M N K).
_GRAPH_MATMULS = ("mm", "bmm", "addmm", "baddbmm")


def _graph_matmul_flops(graph_module: torch.fx.GraphModule) -> float:
    total = 0
    for node in graph_module.graph.nodes:
        packet = getattr(node.target, "_overloadpacket", None)
        if node.op != "call_function" or packet is None or (packet.__name__ not in _GRAPH_MATMULS
                                                            and packet not in ATTENTION_FLOPS):
            continue
        shapes = [a.meta["val"].shape if isinstance(a, torch.fx.Node) else a for a in node.args]
        formula = ATTENTION_FLOPS.get(packet) or flop_registry[packet]
        total += formula(*shapes, out_val=node.meta["val"])
    return float(total)


def _graph_saved_bytes(backward: torch.fx.GraphModule) -> int:
    # The backward graph's inputs are the forward's saved tensors, then the cotangents ("tangents_*"); a saved input
    # of the forward is a "primals_*" placeholder (an argument, kept by reference, as the eager probes leave out).
    total = 0
    for node in backward.graph.nodes:
        value = node.meta.get("val")
        if node.op == "placeholder" and isinstance(value, torch.Tensor) and not node.name.startswith(
                ("tangents", "primals")):
            total += _example_size(value.numel()) * value.element_size()
    return total


def _example_size(n: int | torch.SymInt) -> int:
    # a size the graph leaves symbolic (the RNG state a checkpointed random op saves to replay) at its example value
    if isinstance(n, int):
        return n
    hint = n.node.hint
    if hint is None:
        raise ValueError(f"a saved tensor of {n} elements has no example size")
    return int(hint)


def compiled_costs(fn: Callable[..., Any], *args: Any, budget: float | None = None) -> CompiledCosts:
    """What torch.compile keeps and recomputes for the scalar loss ``fn(*args)``: the forward and backward graphs
    that AOTAutograd's min-cut partitioner hands to Inductor (``compiler="inductor"``, under the activation memory
    `budget`, None for the default), captured instead of compiled. Saved bytes are the backward graph's inputs that
    are neither arguments nor cotangents; flops are 2 M N K over the matmuls of both graphs, so a recompute counts.

    The eager probes cannot see this: a dispatch mode or saved-tensor hook makes TorchDynamo fall back to eager.
    Inductor's own passes after the partition (fusion, buffer reuse) are not seen. Resets TorchDynamo's caches:
    call it after the compiled steps of a process have been timed.
    """
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    graphs: list[torch.fx.GraphModule] = []

    def capture(graph_module: torch.fx.GraphModule, example_inputs: Any) -> Callable:
        graphs.append(graph_module)
        return make_boxed_func(graph_module.forward)

    backend = aot_autograd(fw_compiler=capture, bw_compiler=capture,
                           partition_fn=partial(min_cut_rematerialization_partition, compiler="inductor"))
    torch._dynamo.reset()
    patch = contextlib.nullcontext() if budget is None else torch._functorch.config.patch(
        activation_memory_budget=budget)
    targets = [t for t in tensors(args) if t.requires_grad]
    with patch:
        value = torch.compile(fn, backend=backend)(*args)
        torch.autograd.grad(value, targets)
    torch._dynamo.reset()
    # Each graph break gives one forward and one backward graph; forwards are captured first, backwards later.
    backwards = graphs[len(graphs) // 2:]
    return CompiledCosts(sum(_graph_saved_bytes(g) for g in backwards),
                         sum(_graph_matmul_flops(g) for g in graphs),
                         "torch.compile partition (AOTAutograd min-cut graphs, before Inductor)")


def warm_up_compiler(device: torch.device) -> None:
    """Pays Inductor's one-time set-up in the process (a tiny mlp step: 16 s the first time, 2.3 s the second, on
    2 CPU cores) on an unrelated function compiled forward and backward, as the JAX probe pays XLA's."""
    from torch import _dynamo

    warm = torch.ones(8, device=device, requires_grad=True)
    torch.autograd.grad(torch.compile(lambda t: (t.sin() * 2).sum())(warm), warm)
    _dynamo.reset()


@contextlib.contextmanager
def compile_caches(cache: str) -> Iterator[None]:
    """Inductor's on-disk caches in a fresh, empty folder (Triton's kernel cache too), so no folder configured for
    the process (TVT_COMPILE_CACHE, Inductor's default) is read; "warm" turns the FX-graph and AOTAutograd caches
    on there, "cold" turns every compile cache off."""
    from torch._functorch import config as functorch_config
    from torch._inductor import config as inductor_config
    from torch._inductor.utils import fresh_cache

    # force_disable_caches leaves the C++ and Triton kernel binaries of a configured folder readable: a fresh folder
    # is what keeps a cold compile cold.
    with fresh_cache(), inductor_config.patch(force_disable_caches=cache == "cold", fx_graph_cache=True), \
            functorch_config.patch(enable_autograd_cache=True):
        yield


@contextlib.contextmanager
def first_compiled_call(step: Callable[..., Any], *args: Any, cache: str = "cold") -> Iterator[Callable[[], Any]]:
    """Everything a timed compile needs before the clock starts, then the call to time: yields `first_call`, the
    first call of ``torch.compile(step)`` built here (Dynamo's trace, AOTAutograd, Inductor's compile and one
    execution, synchronised). A second call would be a steady one and raises. torch.compile has no phases that can
    be timed apart. Graph breaks are allowed (a step that calls ``torch.autograd.grad`` has one); their graphs
    compile within the first call.

    Inductor's one-time set-up is paid first on an unrelated function (``warm_up_compiler``), as on the JAX side,
    so neither framework's time carries it. `cache`: "cold" turns Inductor's on-disk caches off, in a fresh empty
    folder, so the process's configured cache (TVT_COMPILE_CACHE) is never read, and resets Dynamo's in-memory state;
    "warm" compiles `step` once with the FX-graph and AOTAutograd caches on in a fresh temporary folder and resets
    the in-memory state (``torch._dynamo.reset()``), so the timed compile is the one the caches serve (JAX: its
    persistent compilation cache, likewise). Dynamo is reset again on exit, and the configured folder is back.
    """
    # Imported here: loading Inductor takes seconds and only the compile probes need it.
    from torch import _dynamo

    if cache not in ("cold", "warm"):
        raise ValueError(f"unknown cache {cache!r}; valid choices: cold, warm")
    device = device_of(args)
    _dynamo.reset()
    with compile_caches("cold"):
        warm_up_compiler(device)
    with compile_caches(cache):
        if cache == "warm":
            torch.compile(step, mode=frameworks.torch_compile_mode())(*args)
            _dynamo.reset()
        try:
            yield sampling.once(torch.compile(step, mode=frameworks.torch_compile_mode()), args,
                                lambda out: (sync(device), out)[1])
        finally:
            _dynamo.reset()
