"""Conversion, gradient and remat helpers shared by the PyTorch workloads (mirror of implementations.jax.common).

The remat policies and how each matches its JAX counterpart: the table in implementations.jax.common's docstring.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib
import inspect
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any

import numpy as np
import torch
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from implementations.workloads import Inputs, spec, validate

# The activations that remat_names keeps (tagged with named() in the workload modules).
SAVED_NAMES = ("attention", "mlp_hidden")
# Variants that run on a CUDA device only: host offload needs a device to offload from.
# The name of the named() region running now, read by the remat_names policy. Set only while a remat_names block
# runs (_NAMING): TorchDynamo cannot trace ContextVar.set, and a set in every block split each compiled transformer
# into seven graphs per layer (torch._dynamo.explain: 6 graph breaks at L4; tests/test_remat.py asserts one graph).
_ACTIVE_NAME: contextvars.ContextVar[str | None] = contextvars.ContextVar("active_name", default=None)
_NAMING = {"on": False}  # a plain global: TorchDynamo reads it as a constant (it cannot trace ContextVar.get either)

# The name of a fused attention call's output (named()): the JAX side's remat_dots keeps it by this name.
FUSED_ATTENTION = "fused_attention"
# The fused attention kernels' ops, one per backend (workloads.attention_backend): remat_dots keeps their outputs, as
# it keeps a matmul's, on both sides.
_ATTENTION_OPS = tuple(getattr(torch.ops.aten, name).default for name in (
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention"))
# The ops whose outputs the "save matmul outputs" policy keeps, the counterpart of jax's dots_saveable.
_MATMUL_OPS = (torch.ops.aten.mm.default, torch.ops.aten.bmm.default, torch.ops.aten.addmm.default, *_ATTENTION_OPS)


def load(workload: str) -> ModuleType:
    """The module implementing `workload` (a ValueError lists the valid names)."""
    spec(workload)
    return importlib.import_module(f"{__package__}.{workload}")


def _tensor(array: np.ndarray) -> torch.Tensor:
    array = np.array(array)
    if array.dtype.name == "bfloat16":  # numpy's bfloat16 (ml_dtypes) is unknown to torch: reinterpret the bits
        return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _leaf(array: np.ndarray, device: str) -> torch.Tensor:
    return _tensor(array).to(device).requires_grad_(True)


def prepare(inputs: Inputs, device: str = "cpu", formulation: str | None = None) -> tuple[dict, dict]:
    """Framework copies of the spec's arrays: (params, data), every array a leaf tensor that requires grad.

    Layer-stacked parameters (names in the workload module's LAYER_STACKED) become one leaf per layer, the way a
    PyTorch model holds them for its Python loop: the one formulation PyTorch runs, "unrolled".
    """
    formulation_of(inputs.workload, formulation)
    stacked = getattr(load(inputs.workload), "LAYER_STACKED", ())
    params: dict[str, Any] = {}
    for name, array in inputs.params.items():
        if name in stacked:
            params[name] = [_leaf(layer, device) for layer in array]
        else:
            params[name] = _leaf(array, device)
    data = {name: _leaf(array, device) for name, array in inputs.data.items()}
    return params, data


def cotangent(inputs: Inputs, device: str = "cpu") -> torch.Tensor:
    """The spec's fixed output cotangent on `device`."""
    return _tensor(inputs.cotangent).to(device)


def leaves(tree: Any) -> list[torch.Tensor]:
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def to_numpy(tree: Any) -> Any:
    """Numpy copy of a tensor or a dict of tensors; per-layer lists are stacked back to the spec's layout."""
    if isinstance(tree, dict):
        return {key: to_numpy(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return np.stack([to_numpy(item) for item in tree])
    tree = tree.detach().cpu()
    return tree.float().numpy() if tree.dtype == torch.bfloat16 else tree.numpy()


def unflatten(flat: list[torch.Tensor], like: Any) -> Any:
    it = iter(flat)

    def build(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: build(value) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [build(item) for item in node]
        return next(it)

    return build(like)


def sync(result: Any, device: str = "cpu") -> Any:
    """Wait until the device has finished all queued work (PyTorch on CPU runs synchronously); return `result`."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
    return result


def value_and_grad(inputs: Inputs, variant: str, device: str = "cpu",
                   formulation: str | None = None) -> tuple[np.ndarray, dict, dict]:
    """(forward output, gradients w.r.t. params, gradients w.r.t. data), as numpy, in the spec's layout."""
    validate(inputs.workload, variant=variant)
    formulation = formulation_of(inputs.workload, formulation)
    module = load(inputs.workload)
    params, data = prepare(inputs, device, formulation)
    out = module.forward(params, data, inputs.static, variant, formulation)
    grads = torch.autograd.grad((out * cotangent(inputs, device)).sum(), leaves((params, data)))
    grad_params, grad_data = unflatten(list(grads), (params, data))
    return to_numpy(out), to_numpy(grad_params), to_numpy(grad_data)


def formulation_of(workload: str, formulation: str | None = None) -> str | None:
    """`formulation`, checked against the workload's (a ValueError lists them), or the default where it has a loop:
    'unrolled', the Python loop; None where it has none. 'scan' exists where the workload module has a scan form
    (SCAN_FORM, torch's scan higher-order op); elsewhere it is refused."""
    validate(workload, formulation=formulation)
    if formulation == "scan":
        if not getattr(load(workload), "SCAN_FORM", False):
            raise ValueError(f"PyTorch has no scan form of {workload}: torch.compile traces the Python loop "
                             "(formulation 'unrolled')")
        return "scan"
    return "unrolled" if spec(workload).formulations else None


@contextlib.contextmanager
def _naming(name: str):
    token = _ACTIVE_NAME.set(name)
    try:
        yield
    finally:
        _ACTIVE_NAME.reset(token)


def named(name: str, fn: Callable, *args: Any) -> torch.Tensor:
    """fn(*args), its ops tagged `name` for remat_names; pass a single op, so that only its output is kept. Outside a
    remat_names block this is the plain call (see _NAMING)."""
    if not _NAMING["on"]:
        return fn(*args)
    with _naming(name):
        return fn(*args)


def _names_enabled(fn: Callable) -> Callable:
    """fn with named() regions active, in the forward and in the recompute alike (both call fn)."""
    def run(*args: Any) -> Any:
        before, _NAMING["on"] = _NAMING["on"], True
        try:
            return fn(*args)
        finally:
            _NAMING["on"] = before

    return run


def silu(x: torch.Tensor, style: str = "matched") -> torch.Tensor:
    """silu in either style: F.silu, which keeps its input only (JAX's matched silu keeps one array of that shape)."""
    return torch.nn.functional.silu(x)


def remat_group(variant: str) -> int:
    """k of 'remat_every<k>' (layers per checkpointed group), 1 for every other variant."""
    if variant.startswith("remat_every"):
        k = variant.removeprefix("remat_every")
        if not k.isdigit() or int(k) < 1:
            raise ValueError(f"bad remat group in {variant!r}: expected remat_every<k> with k >= 1")
        return int(k)
    return 1


def _save_matmuls(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    return CheckpointPolicy.MUST_SAVE if op in _MATMUL_OPS else CheckpointPolicy.PREFER_RECOMPUTE


def _save_named(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    # Called in the forward and again in the recompute; the named() region is active in both, so both agree. Views
    # are left out: a cached view of aten.matmul's input would keep that input alive, which JAX does not save.
    if _ACTIVE_NAME.get() in SAVED_NAMES and not op.is_view:
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


def _selective(policy: Callable) -> Callable:
    """Selective-checkpoint contexts of `policy`, with the cache_hash AOTAutograd's cache keys a compiled SAC graph
    by (without one it bypasses the cache, and every process compiled that step again): the policy's source and the
    ops and names it reads."""
    contexts = partial(create_selective_checkpoint_contexts, policy)
    contexts.cache_hash = hashlib.sha256("\n".join(
        (inspect.getsource(policy), repr(_MATMUL_OPS), repr(SAVED_NAMES))).encode()).hexdigest()
    return contexts


# Built once here, not in remat(): remat runs inside the traced forward, where TorchDynamo cannot trace getsource.
_SAVE_MATMULS, _SAVE_NAMED = _selective(_save_matmuls), _selective(_save_named)


def _on_cuda(args: Any) -> bool:
    return any(t.device.type == "cuda" for t in leaves(list(args)) if isinstance(t, torch.Tensor))


def _offloaded(fn: Callable) -> Callable:
    def run(*args: Any) -> Any:
        if not _on_cuda(args):
            raise ValueError("remat_offload needs a CUDA device (host offload); the inputs are on the CPU")
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            return fn(*args)

    return run


def remat(fn: Callable, variant: str) -> Callable:
    """`fn` under the remat policy named `variant` (the table in implementations.jax.common); other variants: as is."""
    if variant == "remat_full" or variant.startswith("remat_every"):
        return lambda *args: checkpoint(fn, *args, use_reentrant=False)
    if variant == "remat_dots":
        return lambda *args: checkpoint(fn, *args, use_reentrant=False, context_fn=_SAVE_MATMULS)
    if variant == "remat_names":
        named_fn = _names_enabled(fn)
        return lambda *args: checkpoint(named_fn, *args, use_reentrant=False, context_fn=_SAVE_NAMED)
    if variant == "remat_offload":
        return _offloaded(fn)
    return fn
