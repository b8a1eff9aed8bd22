"""Conversion, gradient and remat helpers shared by the PyTorch workloads (mirror of implementations.jax.common)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import torch
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from implementations.workloads import Inputs, spec, validate

# The ops whose outputs the "save matmul outputs" policy keeps, the counterpart of jax's dots_saveable.
_MATMUL_OPS = (torch.ops.aten.mm.default, torch.ops.aten.bmm.default, torch.ops.aten.addmm.default)


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


def prepare(inputs: Inputs, device: str = "cpu") -> tuple[dict, dict]:
    """Framework copies of the spec's arrays: (params, data), every array a leaf tensor that requires grad.

    Layer-stacked parameters (names in the workload module's LAYER_STACKED) become one leaf per layer, the way a
    PyTorch model holds them; indexing one stacked leaf per layer would add a full-size select_backward per layer.
    """
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


def loss(module: ModuleType, params: dict, data: dict, inputs: Inputs, variant: str, cotangent: torch.Tensor):
    """sum(forward * cotangent): a scalar whose gradient is the VJP of the forward with a fixed cotangent."""
    return (module.forward(params, data, inputs.static, variant) * cotangent).sum()


def value_and_grad(inputs: Inputs, variant: str, device: str = "cpu") -> tuple[np.ndarray, dict, dict]:
    """(forward output, gradients w.r.t. params, gradients w.r.t. data), as numpy, in the spec's layout."""
    validate(inputs.workload, variant=variant)
    module = load(inputs.workload)
    params, data = prepare(inputs, device)
    out = module.forward(params, data, inputs.static, variant)
    grads = torch.autograd.grad((out * cotangent(inputs, device)).sum(), leaves((params, data)))
    grad_params, grad_data = unflatten(list(grads), (params, data))
    return to_numpy(out), to_numpy(grad_params), to_numpy(grad_data)


def _save_matmuls(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    return CheckpointPolicy.MUST_SAVE if op in _MATMUL_OPS else CheckpointPolicy.PREFER_RECOMPUTE


def _selective_contexts():
    return create_selective_checkpoint_contexts(_save_matmuls)


def remat(fn: Callable, variant: str) -> Callable:
    """`fn` as is ('plain'), recomputed in the backward ('remat_full'), or saving only matmul outputs ('remat_dots')."""
    if variant == "remat_full":
        return lambda *args: checkpoint(fn, *args, use_reentrant=False)
    if variant == "remat_dots":
        return lambda *args: checkpoint(fn, *args, use_reentrant=False, context_fn=_selective_contexts)
    return fn
