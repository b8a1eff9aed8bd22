"""Conversion, gradient and remat helpers shared by the JAX workloads (mirror of implementations.torch.common).

Remat policies, matched by variant name with implementations.torch.common (where the two differ, it is said):

| variant | JAX | PyTorch | where they differ |
|---|---|---|---|
| plain | no checkpoint | no checkpoint | - |
| remat_full | jax.checkpoint (nothing saveable) | checkpoint(use_reentrant=False) | - |
| remat_dots | dots_saveable, a fused attention's output | checkpoint saving aten mm/addmm/bmm, fused attention | (2) |
| remat_names | save_only_these_names(*SAVED_NAMES), named() | selective checkpoint of the ops inside named() | - |
| remat_offload | offload_dot_with_no_batch_dims to pinned_host | save_on_cpu(pin_memory=True), no recompute | (1) |
| remat_every<k> | jax.checkpoint around each group of k layers | checkpoint around each group of k layers | - |

(1) JAX moves the unbatched matmul outputs to host memory and recomputes everything else; PyTorch moves every
saved tensor to host memory and recomputes nothing. Neither library offers the other's policy. CUDA only.
dots_with_no_batch_dims_saveable would keep only the projections and recompute q @ k^T and weights @ v, which
PyTorch's policy saves (its bmm), so remat_dots uses dots_saveable.
(2) Both keep batched matmuls and a fused attention's output. Where JAX's fused attention is XLA's composite (on a
CPU, and in float32 on CUDA), its two matmuls are dots as well, and dots_saveable keeps them too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from implementations.workloads import Inputs, spec, validate

# The activations that remat_names keeps (tagged with named() in the workload modules).
SAVED_NAMES = ("attention", "mlp_hidden")
# The name of a fused attention call's output (named()): remat_dots keeps it, as PyTorch's keeps its kernel's output.
FUSED_ATTENTION = "fused_attention"


def load(workload: str) -> ModuleType:
    """The module implementing `workload` (a ValueError lists the valid names)."""
    spec(workload)
    return importlib.import_module(f"{__package__}.{workload}")


def prepare(inputs: Inputs, device: str = "cpu", formulation: str | None = None) -> tuple[dict, dict]:
    """Framework copies of the spec's arrays: (params, data), placed on `device`.

    formulation "scan" (the default where the workload has one) keeps layer-stacked parameters (the workload module's
    LAYER_STACKED) as one [layers, ...] array, what lax.scan consumes; "unrolled" gives a list of per-layer arrays,
    what a Python loop over layers consumes (as PyTorch's prepare does): indexing the stack per layer in op-by-op JAX
    was a fifth of the eager step.
    """
    formulation = formulation_of(inputs.workload, formulation)
    if inputs.dtype == "float64" and not jax.config.jax_enable_x64:
        # Without x64, device_put turns float64 into float32 without a word: refuse instead.
        raise RuntimeError("float64 inputs need implementations.jax.configure(..., float64=True) first")
    target = jax.devices(device)[0]
    stacked = getattr(load(inputs.workload), "LAYER_STACKED", ()) if formulation == "unrolled" else ()
    params = {name: [jax.device_put(layer, target) for layer in array] if name in stacked
              else jax.device_put(array, target) for name, array in inputs.params.items()}
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


def value_and_grad(inputs: Inputs, variant: str, device: str = "cpu",
                   formulation: str | None = None) -> tuple[np.ndarray, dict, dict]:
    """(forward output, gradients w.r.t. params, gradients w.r.t. data), as numpy, in the spec's layout."""
    validate(inputs.workload, variant=variant)
    formulation = formulation_of(inputs.workload, formulation)
    module = load(inputs.workload)
    # 'unrolled' gets per-layer arrays, as op-by-op JAX runs it; their gradients come back as per-layer lists.
    params, data = prepare(inputs, device, formulation)
    seed = cotangent(inputs, device)

    def run(params, data):
        out, vjp = jax.vjp(lambda p, d: module.forward(p, d, inputs.static, variant, formulation), params, data)
        return out, *vjp(seed.astype(out.dtype))

    # "unrolled" is what op-by-op JAX runs, so it is checked op by op; jitting it would also cost XLA a compile that
    # grows faster than linearly with the loop length (minutes for the 127-step LSTM).
    out, grad_params, grad_data = sync((run if formulation == "unrolled" else jax.jit(run))(params, data))
    return to_numpy(out), to_numpy(grad_params), to_numpy(grad_data)


def formulation_of(workload: str, formulation: str | None = None) -> str | None:
    """`formulation`, checked against the workload's (a ValueError lists them), or the default where it has a loop:
    'scan', lax.scan over the stacked layers; None where it has none."""
    validate(workload, formulation=formulation)
    return formulation or ("scan" if spec(workload).formulations else None)


def named(name: str, fn: Callable, *args: Any) -> jax.Array:
    """fn(*args), tagged `name` for remat_names (a single op on the PyTorch side, so the same tensor is kept)."""
    return checkpoint_name(fn(*args), name)


@jax.custom_jvp
def _silu_one_residual(x: jax.Array) -> jax.Array:
    return jax.nn.silu(x)


@_silu_one_residual.defjvp
def _silu_jvp(primals, tangents):
    # A custom JVP, not a VJP, so that forward mode (jvp, jacfwd, forward-over-reverse) still runs: linearised, its
    # one residual is the derivative, one array of the input's shape, as aten's silu keeps its input.
    (x,), (t,) = primals, tangents
    sig = jax.nn.sigmoid(x)
    return x * sig, sig * (1 + x * (1 - sig)) * t


# Jitted as jax.nn.silu itself is: op by op, one dispatch of a cached program instead of the custom rule traced on
# every call, which made the matched op-by-op step slower than the default one (docs/history.md).
_matched_silu = jax.jit(_silu_one_residual)


def silu(x: jax.Array, style: str = "matched") -> jax.Array:
    """silu in a style: jax.nn.silu (default, whose autodiff keeps its input and two more arrays of its shape), or
    a custom JVP keeping one array of its input's shape (matched: as many bytes as F.silu keeps)."""
    return jax.nn.silu(x) if style == "default" else _matched_silu(x)


def remat_group(variant: str) -> int:
    """k of 'remat_every<k>' (layers per checkpointed group), 1 for every other variant."""
    if variant.startswith("remat_every"):
        k = variant.removeprefix("remat_every")
        if not k.isdigit() or int(k) < 1:
            raise ValueError(f"bad remat group in {variant!r}: expected remat_every<k> with k >= 1")
        return int(k)
    return 1


def remat(fn: Callable, variant: str) -> Callable:
    """`fn` under the remat policy named `variant` (the table in this module's docstring); other variants: as is."""
    if variant == "remat_full" or variant.startswith("remat_every"):
        return jax.checkpoint(fn)
    if variant == "remat_dots":
        policy = jax.checkpoint_policies.save_from_both_policies(
            jax.checkpoint_policies.dots_saveable, jax.checkpoint_policies.save_only_these_names(FUSED_ATTENTION))
        return jax.checkpoint(fn, policy=policy)
    if variant == "remat_names":
        return jax.checkpoint(fn, policy=jax.checkpoint_policies.save_only_these_names(*SAVED_NAMES))
    if variant == "remat_offload":
        if jax.default_backend() != "gpu":
            raise ValueError(f"remat_offload needs a CUDA device (host offload); this JAX runs on "
                             f"{jax.default_backend()}")
        policy = jax.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host")
        return jax.checkpoint(fn, policy=policy)
    return fn
