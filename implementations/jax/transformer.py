"""transformer: pre-LayerNorm blocks of causal self-attention and a SwiGLU MLP.

Two formulations of the layer loop, the same math: lax.scan over stacked parameters ("scan", the default), or a
Python loop over per-layer arrays ("unrolled"; prepare holds the parameters either way). Both are jittable. The
style (workloads.STYLES) picks the layer norm, softmax, causal mask and silu; the attention is written out or
jax.nn.dot_product_attention (workloads.ATTENTIONS).
"""

import contextlib
import math
from functools import partial

import jax
import jax.numpy as jnp
from jax._src import config as _config

from implementations.jax.common import FUSED_ATTENTION, named, remat, remat_group, silu
from implementations.workloads import attention_backend, attention_of, style_of

LAYER_STACKED = ("ln1_scale", "ln1_bias", "w_qkv", "w_out", "ln2_scale", "ln2_bias", "w_gate", "w_up", "w_down")
LN_EPS = 1e-5


# The matched style's softmax flag: jax.nn.softmax with its custom JVP keeps its output only, as PyTorch's softmax
# does; at the default (False in jax 0.10) its autodiff keeps the exp as well. A JAX without the flag has the custom
# JVP always on. The flag is JAX's public config option; its context manager lives in jax._src.config.
_SOFTMAX_FLAG = getattr(_config, "softmax_custom_jvp", None)


# Layer norm with the residuals of PyTorch's fused kernel: F.layer_norm (aten native_layer_norm) saves its input,
# mean and rstd, and native_layer_norm_backward recomputes x_hat from them (aten/src/ATen/native/layer_norm.cpp;
# tools/autograd/derivatives.yaml). Plain autodiff of the composite keeps x - mean, the broadcast rstd and x_hat,
# three [batch, seq, width] arrays per norm; a custom_vjp saving (x, mean, rstd) is what a careful JAX user writes
# (jax.nn.standardize is the same composite, with no backward of its own).
def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array, style: str = "matched") -> jax.Array:
    """default: jax.nn.standardize, as flax's LayerNorm computes it (E[x^2] - E[x]^2); matched: _layer_norm, whose
    custom_vjp keeps what F.layer_norm keeps."""
    if style == "default":
        return jax.nn.standardize(x, axis=-1, epsilon=LN_EPS) * scale + bias
    return _matched_layer_norm(x, scale, bias)


@jax.custom_vjp
def _layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    return _layer_norm_fwd(x, scale, bias)[0]


def _layer_norm_fwd(x, scale, bias):
    mean = x.mean(-1, keepdims=True)
    rstd = jax.lax.rsqrt(jnp.square(x - mean).mean(-1, keepdims=True) + LN_EPS)
    return (x - mean) * rstd * scale + bias, (x, mean, rstd, scale)


def _layer_norm_bwd(residuals, grad):
    x, mean, rstd, scale = residuals
    x_hat = (x - mean) * rstd
    g_hat = grad * scale
    dx = rstd * (g_hat - g_hat.mean(-1, keepdims=True) - x_hat * (g_hat * x_hat).mean(-1, keepdims=True))
    batch_axes = tuple(range(x.ndim - 1))
    return dx, (grad * x_hat).sum(batch_axes), grad.sum(batch_axes)


_layer_norm.defvjp(_layer_norm_fwd, _layer_norm_bwd)
# Jitted as jax.nn.standardize is: op by op, one dispatch instead of the custom rule traced on every call.
_matched_layer_norm = jax.jit(_layer_norm)


def causal(scores: jax.Array, style: str = "matched") -> jax.Array:
    """The scores with the future masked out: jnp.where with a boolean mask (default, whose autodiff keeps the mask
    broadcast to the scores' shape and a float array of that shape) or an additive bias of 0 and -inf (matched: an
    add keeps nothing, on both sides)."""
    seq = scores.shape[-1]
    keep = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    if style == "default":
        return jnp.where(keep, scores, -jnp.inf)
    return scores + jnp.where(keep, 0, -jnp.inf).astype(scores.dtype)


def softmax(scores: jax.Array, style: str = "matched") -> jax.Array:
    """jax.nn.softmax over the last axis, at JAX's default flags (default) or with its custom JVP (matched)."""
    if style == "default" or _SOFTMAX_FLAG is None:
        return jax.nn.softmax(scores, axis=-1)
    with _SOFTMAX_FLAG(True):
        return jax.nn.softmax(scores, axis=-1)


def fused_attention(q: jax.Array, k: jax.Array, v: jax.Array, style: str = "matched") -> jax.Array:
    """Causal jax.nn.dot_product_attention of [batch, heads, seq, head_dim] arrays (PyTorch's layout; JAX's is
    [batch, seq, heads, head_dim]), with the implementation workloads.attention_backend names for this device and
    dtype: an explicit one raises where it cannot run, instead of falling back. XLA's composite takes its softmax
    in float32 whatever the dtype, and its softmax flag from the style, as the written form does."""
    # The suite places every array on JAX's default backend (common.prepare), so that is where this call runs.
    backend = attention_backend("jax", "cuda" if jax.default_backend() == "gpu" else "cpu", str(q.dtype))
    flag = contextlib.nullcontext() if style == "default" or _SOFTMAX_FLAG is None else _SOFTMAX_FLAG(True)
    with flag:
        out = jax.nn.dot_product_attention(q.swapaxes(1, 2), k.swapaxes(1, 2), v.swapaxes(1, 2), is_causal=True,
                                           implementation=backend)
    return out.swapaxes(1, 2)


def attention(h: jax.Array, w_qkv: jax.Array, w_out: jax.Array, heads: int, style: str = "matched",
              form: str = "written") -> jax.Array:
    # The output projection is tagged in both forms, so that remat_names saves the same tensor on both sides.
    batch, seq, width = h.shape
    q, k, v = (t.reshape(batch, seq, heads, width // heads).swapaxes(1, 2) for t in jnp.split(h @ w_qkv, 3, -1))
    if form == "fused":
        mixed = named(FUSED_ATTENTION, fused_attention, q, k, v, style)
    else:
        scores = (q @ k.swapaxes(-2, -1)) / math.sqrt(width // heads)
        mixed = softmax(causal(scores, style), style) @ v
    return named("attention", jnp.matmul, mixed.swapaxes(1, 2).reshape(batch, seq, width), w_out)


def swiglu(h: jax.Array, w_gate: jax.Array, w_up: jax.Array, w_down: jax.Array, style: str = "matched") -> jax.Array:
    # swiglu.swiglu_mlp's math, with the hidden activation tagged for remat_names.
    return named("mlp_hidden", jnp.multiply, silu(h @ w_gate, style), h @ w_up) @ w_down


def block(x: jax.Array, layer: dict, heads: int, style: str = "matched", form: str = "written") -> jax.Array:
    h = x + attention(layer_norm(x, layer["ln1_scale"], layer["ln1_bias"], style), layer["w_qkv"], layer["w_out"],
                      heads, style, form)
    return h + swiglu(layer_norm(h, layer["ln2_scale"], layer["ln2_bias"], style), layer["w_gate"], layer["w_up"],
                      layer["w_down"], style)


def blocks(x: jax.Array, layers: list[dict], heads: int, style: str = "matched", form: str = "written") -> jax.Array:
    for layer in layers:
        x = block(x, layer, heads, style, form)
    return x


def _split(stacked: dict, k: int) -> list[dict]:
    return [{name: array[i] for name, array in stacked.items()} for i in range(k)]


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> jax.Array:
    # Remat wraps groups of remat_group(variant) layers (1 but for remat_every<k>). In the scan form it goes inside
    # the scan body: there XLA keeps the recompute on every backend (tests/test_remat.py).
    heads, k = static["heads"], remat_group(variant)
    n = len(params["w_qkv"])
    if n % k:
        raise ValueError(f"{variant} needs a layer count divisible by {k}; this size has {n} layers")
    step = remat(partial(blocks, heads=heads, style=style_of(static), form=attention_of(static)), variant)
    x = data["x"]
    if formulation == "unrolled":
        # A Python loop: per-layer arrays (prepare's "unrolled" holding) are used as they are.
        layers = [{name: value[i] for name, value in params.items()} for i in range(n)]
        for start in range(0, n, k):
            x = step(x, layers[start:start + k])
        return x
    if k == 1:  # scan over the stack as it is: a reshaped copy would be one more residual of the scan
        x, _ = jax.lax.scan(lambda x, layer: (step(x, [layer]), None), x, params)
        return x
    # Op by op, this reshape is a copy that the scan keeps as a residual: probe.saved_bytes of the scan form counts
    # the parameters once more (tests/test_remat.py); under jit it is free. The loop form has no such copy.
    groups = {name: array.reshape(n // k, k, *array.shape[1:]) for name, array in params.items()}
    x, _ = jax.lax.scan(lambda x, group: (step(x, _split(group, k)), None), x, groups)
    return x
