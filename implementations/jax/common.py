"""Conversion, gradient and remat helpers shared by the JAX workloads (mirror of implementations.torch.common)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from implementations.workloads import Inputs, spec, validate


def load(workload: str) -> ModuleType:
    """The module implementing `workload` (a ValueError lists the valid names)."""
    spec(workload)
    return importlib.import_module(f"{__package__}.{workload}")


def prepare(inputs: Inputs, device: str = "cpu") -> tuple[dict, dict]:
    """Framework copies of the spec's arrays: (params, data), placed on `device`."""
    if inputs.dtype == "float64" and not jax.config.jax_enable_x64:
        # Without x64, device_put turns float64 into float32 without a word: refuse instead.
        raise RuntimeError("float64 inputs need implementations.jax.configure(..., float64=True) first")
    target = jax.devices(device)[0]
    params = {name: jax.device_put(array, target) for name, array in inputs.params.items()}
    data = {name: jax.device_put(array, target) for name, array in inputs.data.items()}
    return params, data


def cotangent(inputs: Inputs, device: str = "cpu") -> jax.Array:
    """The spec's fixed output cotangent on `device`."""
    return jax.device_put(inputs.cotangent, jax.devices(device)[0])


def to_numpy(tree: Any) -> Any:
    """Numpy copy of an array or a pytree of arrays; bfloat16 becomes float32, as on the PyTorch side."""
    return jax.tree.map(lambda a: np.asarray(a, np.float32) if a.dtype == jnp.bfloat16 else np.asarray(a), tree)


def sync(result: Any, device: str = "cpu") -> Any:
    """Wait until `result` is computed (JAX dispatches asynchronously, on CPU too); return it.

    Blocking on the result waits for the work that produces it, whatever the device: `device` is for the mirror.
    """
    return jax.block_until_ready(result)


def loss(module: ModuleType, params: dict, data: dict, inputs: Inputs, variant: str, cotangent: jax.Array):
    """sum(forward * cotangent): a scalar whose gradient is the VJP of the forward with a fixed cotangent."""
    return (module.forward(params, data, inputs.static, variant) * cotangent).sum()


def value_and_grad(inputs: Inputs, variant: str, device: str = "cpu") -> tuple[np.ndarray, dict, dict]:
    """(forward output, gradients w.r.t. params, gradients w.r.t. data), as numpy, in the spec's layout."""
    validate(inputs.workload, variant=variant)
    module = load(inputs.workload)
    params, data = prepare(inputs, device)
    seed = cotangent(inputs, device)

    def run(params, data):
        out, vjp = jax.vjp(lambda p, d: module.forward(p, d, inputs.static, variant), params, data)
        return out, *vjp(seed.astype(out.dtype))

    # "unrolled" is what op-by-op JAX runs, so it is checked op by op; jitting it would also cost XLA a compile that
    # grows faster than linearly with the loop length (minutes for the 127-step LSTM).
    out, grad_params, grad_data = sync((run if variant == "unrolled" else jax.jit(run))(params, data))
    return to_numpy(out), to_numpy(grad_params), to_numpy(grad_data)


def remat(fn: Callable, variant: str) -> Callable:
    """`fn` as is ('plain'), recomputed in the backward ('remat_full'), or saving only matmul outputs ('remat_dots')."""
    if variant == "remat_full":
        return jax.checkpoint(fn)
    if variant == "remat_dots":
        return jax.checkpoint(fn, policy=jax.checkpoint_policies.dots_saveable)
    return fn
