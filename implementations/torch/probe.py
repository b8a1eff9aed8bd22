"""Measurement probe for the PyTorch side: saved bytes, peak memory, graph size, flops, compile time.

The mirror of ``implementations.jax.probe``: the same public names and signatures, so a benchmark can pick either
module and call the same functions. Each docstring says what exactly the number counts on this side; the
differences to JAX that a reader must know are spelled out there, not hidden.
"""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

# (device, data pointer) names one allocation; device is part of the key because pointers of different devices
# live in different address spaces.
_StorageKey = tuple[str, int]


@dataclass(frozen=True)
class SavedBytes:
    """What the backward pass keeps: distinct storages, their bytes, and the bytes beyond arguments and parameters."""

    count: int
    total_bytes: int
    extra_bytes: int


@dataclass(frozen=True)
class PeakBytes:
    """Peak bytes of one step above the memory resident before it, and the method that measured them."""

    bytes: int
    method: str


def _tensors(tree: Any) -> Iterator[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, dict):
        for value in tree.values():
            yield from _tensors(value)
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _tensors(item)


def _key(tensor: torch.Tensor) -> _StorageKey:
    return str(tensor.device), tensor.untyped_storage().data_ptr()


def _nbytes(tensor: torch.Tensor) -> int:
    # The whole storage, not the view: a saved slice keeps its entire base allocation alive.
    return tensor.untyped_storage().nbytes()


def _graph_nodes(outputs: Any) -> list[Any]:
    """Every autograd node reachable from the grad_fn of the tensors in `outputs`, each once."""
    stack = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
    seen: dict[int, Any] = {}
    while stack:
        node = stack.pop()
        # Holding the node in `seen` keeps its id from being reused by another wrapper during the walk.
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(next_node for next_node, _ in node.next_functions)
    return list(seen.values())


class _StorageTracker(TorchDispatchMode):
    """Tracks the storages that ops allocate inside the mode: which are still alive, and the peak of their bytes.

    An op's output storage counts as new unless one of its inputs has it (views, in-place and out= ops), so memory
    that existed before the mode (parameters, inputs) is never counted. Liveness comes from weakref finalizers on
    the storage objects (PyTorch keeps one Python object per storage), so the tracker holds no reference that would
    keep memory alive. Allocations an aten kernel makes internally and frees before returning are not visible.
    """

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[_StorageKey, tuple[weakref.ref, int]] = {}
        self.live_bytes = 0
        self.peak_bytes = 0

    def _release(self, key: _StorageKey, nbytes: int) -> None:
        self.live.pop(key, None)
        self.live_bytes -= nbytes

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = {_key(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for tensor in tree_leaves(out):
            if not isinstance(tensor, torch.Tensor) or tensor.is_meta:
                continue
            key, storage = _key(tensor), tensor.untyped_storage()
            nbytes = storage.nbytes()
            # Zero-byte storages share pointer 0 and hold no memory (checkpoint's dummy tensors are such).
            if nbytes == 0 or key in inputs or key in self.live:
                continue
            self.live[key] = (weakref.ref(storage), nbytes)
            weakref.finalize(storage, self._release, key, nbytes)
            self.live_bytes += nbytes
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        return out


def saved_bytes(fn: Callable[..., Any], *args: Any) -> SavedBytes:
    """What the autograd graph of ``fn(*args)`` keeps for the backward pass, deduplicated by storage.

    Two sources, because neither sees everything:

    * ``saved_tensors_hooks`` sees every tensor an op saves on the tape (``x * x`` packs one storage twice: it is
      counted once). Non-reentrant checkpoint saves only its inputs here; its inner saves go to its own hooks.
    * Selective checkpointing (``context_fn``) keeps the outputs of the ops its policy saves in a cache outside the
      tape, which the hooks never see. They are found as the storages allocated during the forward that are still
      alive once the caller's output is dropped and only the graph holds on to memory.

    Bytes are whole storages. ``extra_bytes`` leaves out storages of tensors in `args` (nested dicts and lists
    searched) and of the leaves the graph accumulates gradients into (parameters, also when captured by a closure).
    The graph is freed before returning: nothing is kept alive by the measurement.
    """
    arguments = {_key(t) for t in _tensors(args)}
    packed: dict[_StorageKey, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        if _nbytes(tensor):
            packed[_key(tensor)] = _nbytes(tensor)
        # Sizes go to a side dict and a detached alias is returned: a saved graph output would otherwise hold its
        # own grad_fn, a reference cycle that keeps the graph alive if backward is never run.
        return tensor.detach()

    tracker = _StorageTracker()
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), tracker:
        out = fn(*args)
    nodes = _graph_nodes(out)
    leaves = {_key(node.variable) for node in nodes if hasattr(node, "variable")}
    del out
    gc.collect()
    # What survives now is held by the graph (the tape or a selective-checkpoint cache), `nodes` being its only root.
    survivors = {key: nbytes for key, (ref, nbytes) in tracker.live.items() if ref() is not None}
    del nodes
    gc.collect()
    kept = {**packed, **survivors}
    total = sum(kept.values())
    extra = sum(nbytes for key, nbytes in kept.items() if key not in arguments and key not in leaves)
    return SavedBytes(count=len(kept), total_bytes=total, extra_bytes=extra)


def _device(args: Any) -> torch.device:
    first = next(_tensors(args), None)
    return torch.device("cpu") if first is None else first.device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_bytes(step: Callable[..., Any], *args: Any) -> PeakBytes:
    """Peak bytes allocated during one call of ``step(*args)`` above what was resident before it.

    The returned outputs (and gradients) are live at the end, so they are part of the peak. CUDA: the caching
    allocator's counters, after one warm-up call so that one-time allocations (cuBLAS workspaces) belong to the
    baseline. CPU has no allocator statistics: storages allocated by aten ops during the step are tracked with a
    TorchDispatchMode (see ``_StorageTracker``), counted exactly and deterministically, whole storages.
    """
    device = _device(args)
    if device.type == "cuda":
        step(*args)
        gc.collect()
        _sync(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step(*args)
        _sync(device)
        return PeakBytes(torch.cuda.max_memory_allocated(device) - base, "torch.cuda.max_memory_allocated")
    tracker = _StorageTracker()
    with tracker:
        step(*args)
    return PeakBytes(tracker.peak_bytes, "torch live-storage tracking (TorchDispatchMode)")


def graph_size(fn: Callable[..., Any], *args: Any) -> int:
    """Autograd nodes that the forward ``fn(*args)`` records: distinct nodes reachable from the outputs' grad_fn.

    AccumulateGrad nodes (one per leaf that receives a gradient) are counted: the engine runs them like any other
    node. This is the size of the tape, i.e. of the backward pass; JAX's count covers forward and backward.
    """
    with torch.enable_grad():
        out = fn(*args)
    return len(_graph_nodes(out))


def flops(step: Callable[..., Any], *args: Any) -> float:
    """Flops of one call of ``step(*args)`` as ``FlopCounterMode`` counts them.

    It counts only ops with a registered formula (matmuls, convolutions, attention); elementwise ops count zero,
    while XLA's ``cost_analysis`` on the JAX side counts them. Recomputation in a checkpointed backward is counted.
    """
    counter = FlopCounterMode(display=False)
    with counter:
        step(*args)
    return float(counter.get_total_flops())


def compile_seconds(step: Callable[..., Any], *args: Any) -> dict[str, float]:
    """Seconds ``torch.compile`` adds: the first call of the compiled step minus a steady call.

    Dynamo's in-memory state is reset and Inductor's on-disk caches are off, so the number is a cold compile,
    as JAX's is after ``jax.clear_caches()``. "steady_call" is the fastest of three calls after the first.
    The first compile in a process also pays Inductor's one-time set-up (a tiny mlp step: 16 s the first time,
    2.3 s the second, on 2 CPU cores). That set-up is paid first, on a tiny function compiled forward and backward,
    and returned apart as "startup" (that warm-up's own seconds): "compile" is the step's own compile, as JAX's
    is (its backend is initialised when the arguments are placed on the device). Graph breaks are allowed (a step
    that calls ``torch.autograd.grad`` has one); their graphs compile within the first call.
    """
    # Imported here: loading Inductor takes seconds and only this function needs it.
    from torch import _dynamo
    from torch._inductor import config as inductor_config

    device = _device(args)
    _dynamo.reset()
    with inductor_config.patch(force_disable_caches=True):
        start = time.perf_counter()
        warm = torch.ones(8, device=device, requires_grad=True)
        torch.autograd.grad(torch.compile(lambda t: (t.sin() * 2).sum())(warm), warm)
        startup = time.perf_counter() - start
        _dynamo.reset()
        compiled = torch.compile(step)
        start = time.perf_counter()
        compiled(*args)
        _sync(device)
        first = time.perf_counter() - start
        steady = []
        for _ in range(3):
            start = time.perf_counter()
            compiled(*args)
            _sync(device)
            steady.append(time.perf_counter() - start)
    _dynamo.reset()
    return {"compile": first - min(steady), "first_call": first, "steady_call": min(steady), "startup": startup}


def matmul_flops(step: Callable[..., Any], *args: Any) -> float:
    """Matmul flops of one call of ``step(*args)`` (2 M N K per product): the numerator of the roofline.

    ``FlopCounterMode`` counts only matmul-like ops already, so this is ``flops``; the JAX side counts the same
    products from its jaxpr, loop trip counts included.
    """
    return flops(step, *args)


def matmul_rate(dtype: str, device: str = "cpu") -> float:
    """Flop/s of a square matmul on `device`, measured now: the denominator of the roofline.

    The best of five timed products after a warm-up, under the current matmul precision setting.
    """
    n = 8192 if torch.device(device).type == "cuda" else 1024
    a = torch.randn(n, n, device=device).to(getattr(torch, dtype))
    seconds = []
    for _ in range(6):
        _sync(torch.device(device))
        start = time.perf_counter()
        a @ a
        _sync(torch.device(device))
        seconds.append(time.perf_counter() - start)
    return 2 * n**3 / min(seconds[1:])
