"""Measurement probe for the PyTorch side: saved bytes, peak memory, graph size and flops (compile costs
and compile time in compile_probe.py, the host calibration in rates.py).

The mirror of ``implementations.jax.probe``: the same public names and signatures, so a benchmark can pick either
module and call the same functions. Each docstring says what exactly the number counts on this side; the
differences to JAX that a reader must know are spelled out there, not hidden.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from implementations.probe_results import PeakBytes, SavedBytes, SavedTensor
from implementations.workloads import fused_attention_flops

# (device, data pointer) names one allocation; device is part of the key because pointers of different devices
# live in different address spaces.
_StorageKey = tuple[str, int]


def tensors(tree: Any) -> Iterator[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, dict):
        for value in tree.values():
            yield from tensors(value)
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from tensors(item)


def _key(tensor: torch.Tensor) -> _StorageKey:
    return str(tensor.device), tensor.untyped_storage().data_ptr()


def _nbytes(tensor: torch.Tensor) -> int:
    # The whole storage, not the view: a saved slice keeps its entire base allocation alive.
    return tensor.untyped_storage().nbytes()


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _graph_nodes(outputs: Any) -> list[Any]:
    """Every autograd node reachable from the grad_fn of the tensors in `outputs`, each once."""
    stack = [t.grad_fn for t in tensors(outputs) if t.grad_fn is not None]
    seen: dict[int, Any] = {}
    while stack:
        node = stack.pop()
        # Holding the node in `seen` keeps its id from being reused by another wrapper during the walk.
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(next_node for next_node, _ in node.next_functions)
    return list(seen.values())


def _has_storage(value: Any) -> bool:
    # Forward AD's zero tangents are efficient zero tensors: no storage behind them, no memory held.
    return isinstance(value, torch.Tensor) and not value.is_meta and not value._is_zerotensor()


def _unwrapped(tensor: torch.Tensor) -> torch.Tensor:
    # torch.func.jvp saves its functorch wrappers on an outer tape; the memory is the tensor they wrap.
    while torch._C._functorch.is_functorch_wrapped_tensor(tensor):
        tensor = torch._C._functorch.get_unwrapped(tensor)
    return tensor


class _StorageTracker(TorchDispatchMode):
    """Tracks the storages that ops allocate inside the mode: which are still alive, which op and output made each,
    and the peak of their bytes.

    An op's output storage counts as new unless one of its inputs has it (views, in-place and out= ops), so memory
    that existed before the mode (parameters, inputs) is never counted. Liveness comes from weakref finalizers on
    the storage objects (PyTorch keeps one Python object per storage), so the tracker holds no reference that would
    keep memory alive. Allocations an aten kernel makes internally and frees before returning are not visible.
    """

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[_StorageKey, tuple[weakref.ref, int]] = {}
        # Storages can be freed while the mode runs, and their address reused: the latest allocation wins, which is
        # the one a tensor still alive refers to.
        self.made: dict[_StorageKey, tuple[str, tuple[int, ...], str]] = {}
        self.live_bytes = 0
        self.peak_bytes = 0

    def _release(self, key: _StorageKey, nbytes: int) -> None:
        self.live.pop(key, None)
        self.live_bytes -= nbytes

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = {_key(t) for t in tree_leaves((args, kwargs)) if _has_storage(t)}
        for tensor in tree_leaves(out):
            if not _has_storage(tensor):
                continue
            key, storage = _key(tensor), tensor.untyped_storage()
            nbytes = storage.nbytes()
            # Zero-byte storages share pointer 0 and hold no memory (checkpoint's dummy tensors are such).
            if nbytes == 0 or key in inputs or key in self.live:
                continue
            self.live[key] = (weakref.ref(storage), nbytes)
            self.made[key] = (str(func.overloadpacket), tuple(tensor.shape), _dtype(tensor))
            weakref.finalize(storage, self._release, key, nbytes)
            self.live_bytes += nbytes
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        return out


def saved_breakdown(fn: Callable[..., Any], *args: Any) -> list[SavedTensor]:
    """One record per distinct storage that the autograd graph of ``fn(*args)`` keeps for the backward pass.

    Two sources, because neither sees everything:

    * ``saved_tensors_hooks`` sees every tensor an op saves on the tape (``x * x`` packs one storage twice: it is
      one record). Non-reentrant checkpoint saves only its inputs here; its inner saves go to its own hooks.
    * Selective checkpointing (``context_fn``) keeps the outputs of the ops its policy saves in a cache outside the
      tape, which the hooks never see. They are found as the storages allocated during the forward that are still
      alive once the caller's output is dropped and only the graph holds on to memory.

    Bytes are whole storages. A storage that no op allocated during the call existed before it: an argument, a
    parameter, or a tensor `fn` closes over (a loss's output cotangent); its op is "argument" (a tensor made inside
    `fn` without an aten op, by ``torch.from_numpy`` say, would be taken for one). The others name the
    aten op that allocated them (``aten.mm``); shape and dtype are those of that op's output, or of the argument.
    The graph is freed before returning: nothing is kept alive by the measurement.
    """
    arguments = {_key(t): t for t in tensors(args)}
    # Sizes, shapes and dtypes go to a side dict: holding the tensors would keep their memory alive.
    packed: dict[_StorageKey, tuple[int, tuple[int, ...], str]] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        memory = _unwrapped(tensor)
        if _has_storage(memory) and _nbytes(memory):
            packed.setdefault(_key(memory), (_nbytes(memory), tuple(memory.shape), _dtype(memory)))
        # A detached alias is returned: a saved graph output would otherwise hold its own grad_fn, a reference
        # cycle that keeps the graph alive if backward is never run.
        return tensor.detach()

    tracker = _StorageTracker()
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), tracker:
        out = fn(*args)
    nodes = _graph_nodes(out)
    del out
    gc.collect()
    # What survives now is held by the graph (the tape or a selective-checkpoint cache), `nodes` being its only root.
    kept = {key: nbytes for key, (ref, nbytes) in tracker.live.items() if ref() is not None}
    kept.update({key: nbytes for key, (nbytes, _, _) in packed.items()})
    records = []
    for key, nbytes in kept.items():
        if key in tracker.made:
            op, shape, dtype = tracker.made[key]
        else:
            tensor = arguments.get(key)
            shape, dtype = (tuple(tensor.shape), _dtype(tensor)) if tensor is not None else packed[key][1:]
            op = "argument"
        records.append(SavedTensor(op, shape, dtype, nbytes, op == "argument"))
    del nodes
    gc.collect()
    return records


def saved_bytes(fn: Callable[..., Any], *args: Any) -> SavedBytes:
    """What the autograd graph of ``fn(*args)`` keeps for the backward pass, deduplicated by storage (see
    ``saved_breakdown``).

    ``extra_bytes`` leaves out the storages that existed before the call: the arguments, the parameters (also when
    captured by a closure) and any other tensor `fn` closes over, such as a loss's output cotangent.
    """
    records = saved_breakdown(fn, *args)
    return SavedBytes(count=len(records), total_bytes=sum(r.nbytes for r in records),
                      extra_bytes=sum(r.nbytes for r in records if not r.is_argument))


def device_of(args: Any) -> torch.device:
    first = next(tensors(args), None)
    return torch.device("cpu") if first is None else first.device


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _clear_gemm_workspaces() -> None:
    # cuBLAS and cuBLASLt workspaces are allocated from the caching allocator at a handle's first GEMM and kept for
    # the process; Inductor clears them the same way before it captures a CUDA graph.
    torch._C._cuda_clearCublasWorkspaces()


def _allocator_peak(step: Callable[..., Any], args: tuple, device: torch.device) -> PeakBytes:
    """The caching allocator's peak of one call after a warm-up call, with the GEMM workspaces freed in between
    (see ``peak_bytes``)."""
    step(*args)
    gc.collect()
    sync(device)
    held = torch.cuda.memory_allocated(device)
    _clear_gemm_workspaces()
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    step(*args)
    sync(device)
    return PeakBytes(torch.cuda.max_memory_allocated(device) - base, "torch.cuda.max_memory_allocated", held - base)


def peak_bytes(step: Callable[..., Any], *args: Any) -> PeakBytes:
    """Peak bytes allocated during one call of ``step(*args)`` above what was resident before it.

    The returned outputs (and gradients) are live at the end, so they are part of the peak. CUDA: the caching
    allocator's counters over a second call; the first pays one-time set-up (cuBLAS handles, kernel loading).
    Workspaces count inside the peak, as on the JAX side, where XLA keeps its GEMM workspace in the step's temp
    buffer: the cuBLAS workspaces the warm-up cached are freed before the baseline is read, so the measured call
    allocates them again, and their bytes are returned as ``workspace_bytes``. CPU has no allocator statistics:
    storages allocated by aten ops during the step are tracked with a TorchDispatchMode (see ``_StorageTracker``),
    counted exactly and deterministically, whole storages; CPU GEMMs take no workspace from it.
    """
    device = device_of(args)
    if device.type == "cuda":
        return _allocator_peak(step, args, device)
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


def _attention_flops(backward: bool) -> Callable[..., int]:
    """A FlopCounterMode formula (it passes shapes) of a fused attention op: workloads.fused_attention_flops, the
    formula the JAX probe counts too. The forward ops take (query, key, value, ...), the backward ops (grad_out,
    query, key, value, ...), each [batch, heads, seq, head_dim]."""
    def formula(*shapes: Any, **_: Any) -> int:
        q, k, v = shapes[1:4] if backward else shapes[:3]
        return fused_attention_flops(q[0] * q[1], q[2], k[2], q[3], v[3], backward)

    return formula


# Every backend's fused attention ops: the CPU flash kernel has no formula in torch.utils.flop_counter, and its
# formulas for the CUDA kernels count the backward's recompute of the scores, which the JAX side would not.
ATTENTION_FLOPS = {getattr(torch.ops.aten, name): _attention_flops(name.endswith("_backward")) for name in (
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_cudnn_attention_backward")}


def matmul_flops(step: Callable[..., Any], *args: Any) -> float:
    """Matmul-like flops of one call of ``step(*args)`` as ``FlopCounterMode`` counts them: 2 M N K per mm, bmm,
    addmm (einsum runs as these) and convolutions, a fused attention by workloads.fused_attention_flops;
    elementwise ops count zero. Every loop iteration runs eagerly, so each is counted, and so is the forward that a
    checkpointed block recomputes in the backward.

    The JAX probe counts the same quantity from the jaxpr (XLA's ``cost_analysis`` would not: it counts a scan body
    once and elementwise ops too).
    """
    counter = FlopCounterMode(display=False, custom_mapping=ATTENTION_FLOPS)
    with counter:
        step(*args)
    return float(counter.get_total_flops())


def flops(step: Callable[..., Any], *args: Any) -> float:
    """The flops of one call of ``step(*args)`` that both frameworks count alike: ``matmul_flops``."""
    return matmul_flops(step, *args)


