"""Measurement probe for the PyTorch side: saved bytes, peak memory, graph size, flops, compile time, and the host
calibration (matmul rate, copy bandwidth, dispatch cost).

The mirror of ``implementations.jax.probe``: the same public names and signatures, so a benchmark can pick either
module and call the same functions. Each docstring says what exactly the number counts on this side; the
differences to JAX that a reader must know are spelled out there, not hidden.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from implementations import frameworks, sampling
from implementations.workloads import fused_attention_flops

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
class SavedTensor:
    """One saved storage: the aten op that allocated it ("argument" if it existed before the call), shape, dtype,
    bytes (of the whole storage)."""

    op: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    is_argument: bool


@dataclass(frozen=True)
class PeakBytes:
    """Peak bytes of one step above the memory resident before it, and the method that measured them.

    `workspace_bytes` is the part of `bytes` that is GEMM-library workspace (cuBLAS, cuBLASLt): both probes count
    the workspace a step uses inside its peak, and say how much of it that is; 0 where there is none (CPU)."""

    bytes: int
    method: str
    workspace_bytes: int = 0


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


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


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
    arguments = {_key(t): t for t in _tensors(args)}
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


def _device(args: Any) -> torch.device:
    first = next(_tensors(args), None)
    return torch.device("cpu") if first is None else first.device


def _sync(device: torch.device) -> None:
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
    _sync(device)
    held = torch.cuda.memory_allocated(device)
    _clear_gemm_workspaces()
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    step(*args)
    _sync(device)
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
    device = _device(args)
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
_ATTENTION_FLOPS = {getattr(torch.ops.aten, name): _attention_flops(name.endswith("_backward")) for name in (
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
    counter = FlopCounterMode(display=False, custom_mapping=_ATTENTION_FLOPS)
    with counter:
        step(*args)
    return float(counter.get_total_flops())


def flops(step: Callable[..., Any], *args: Any) -> float:
    """The flops of one call of ``step(*args)`` that both frameworks count alike: ``matmul_flops``."""
    return matmul_flops(step, *args)


@dataclass(frozen=True)
class CompiledCosts:
    saved_bytes: int  # kept for the backward beyond the arguments (parameters, data, the cotangent)
    matmul_flops: float  # forward and backward, recomputation included
    method: str


# Matmul-like ATen ops of a partitioned graph, counted by torch.utils.flop_counter's formulas (2 M N K).
_GRAPH_MATMULS = ("mm", "bmm", "addmm", "baddbmm")


def _graph_matmul_flops(graph_module: torch.fx.GraphModule) -> float:
    total = 0
    for node in graph_module.graph.nodes:
        packet = getattr(node.target, "_overloadpacket", None)
        if node.op != "call_function" or packet is None or (packet.__name__ not in _GRAPH_MATMULS
                                                            and packet not in _ATTENTION_FLOPS):
            continue
        shapes = [a.meta["val"].shape if isinstance(a, torch.fx.Node) else a for a in node.args]
        formula = _ATTENTION_FLOPS.get(packet) or flop_registry[packet]
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
    targets = [t for t in _tensors(args) if t.requires_grad]
    with patch:
        value = torch.compile(fn, backend=backend)(*args)
        torch.autograd.grad(value, targets)
    torch._dynamo.reset()
    # Each graph break gives one forward and one backward graph; forwards are captured first, backwards later.
    backwards = graphs[len(graphs) // 2:]
    return CompiledCosts(sum(_graph_saved_bytes(g) for g in backwards),
                         sum(_graph_matmul_flops(g) for g in graphs),
                         "torch.compile partition (AOTAutograd min-cut graphs, before Inductor)")


def _warm_up_compiler(device: torch.device) -> None:
    """Pays Inductor's one-time set-up in the process (a tiny mlp step: 16 s the first time, 2.3 s the second, on
    2 CPU cores) on an unrelated function compiled forward and backward, as the JAX probe pays XLA's."""
    from torch import _dynamo

    warm = torch.ones(8, device=device, requires_grad=True)
    torch.autograd.grad(torch.compile(lambda t: (t.sin() * 2).sum())(warm), warm)
    _dynamo.reset()


@contextlib.contextmanager
def _compile_caches(cache: str) -> Iterator[None]:
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

    Inductor's one-time set-up is paid first on an unrelated function (``_warm_up_compiler``), as on the JAX side,
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
    device = _device(args)
    _dynamo.reset()
    with _compile_caches("cold"):
        _warm_up_compiler(device)
    with _compile_caches(cache):
        if cache == "warm":
            torch.compile(step, mode=frameworks.torch_compile_mode())(*args)
            _dynamo.reset()
        try:
            yield sampling.once(torch.compile(step, mode=frameworks.torch_compile_mode()), args,
                                lambda out: (_sync(device), out)[1])
        finally:
            _dynamo.reset()


def matmul_rate(dtype: str, device: str = "cpu") -> float:
    """Flop/s of a square matmul on `device`, measured now: the denominator of the roofline, and the calibration's.

    The best of `sampling.CALIBRATION_REPEATS` timed products after a warm-up, under the current matmul precision
    setting.
    """
    dev = torch.device(device)
    n = sampling.MATMUL_N[dev.type]
    a = torch.randn(n, n, device=dev).to(getattr(torch, dtype))
    return 2 * n**3 / min(sampling.repeat_seconds(lambda: (a @ a, _sync(dev))))


def copy_rate(device: str = "cpu") -> float:
    """Bytes read + written per second copying one large float32 array on `device` (`copy_` into a preallocated
    one), measured now: the best repeat after a warm-up."""
    dev = torch.device(device)
    src = torch.ones(sampling.COPY_BYTES[dev.type] // 4, device=dev)
    dst = torch.empty_like(src)
    return 2 * src.nbytes / min(sampling.repeat_seconds(lambda: (dst.copy_(src), _sync(dev))))


def dispatch_cost(device: str = "cpu") -> float:
    """Seconds per op of eager dispatch on `device`: a loop of adds on a 16-element float32 tensor, the median
    repeat after a warm-up (a typical cost, not a lucky one)."""
    dev = torch.device(device)
    x = torch.ones(16, device=dev)
    ops = sampling.DISPATCH_OPS["torch"]

    def adds() -> None:
        y = x
        for _ in range(ops):
            y = y + 1
        _sync(dev)

    return statistics.median(sampling.repeat_seconds(adds)) / ops
