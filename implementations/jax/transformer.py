"""transformer: pre-LayerNorm blocks of causal self-attention and a SwiGLU MLP.

Two formulations of the layer loop, the same math: lax.scan over stacked parameters ("scan", the default), or a
Python loop over per-layer arrays ("unrolled"; prepare holds the parameters either way). Both are jittable.
"""

import math
from functools import partial

import jax
import jax.numpy as jnp

from implementations.jax.common import named, remat, remat_group

LAYER_STACKED = ("ln1_scale", "ln1_bias", "w_qkv", "w_out", "ln2_scale", "ln2_bias", "w_gate", "w_up", "w_down")
LN_EPS = 1e-5


# Layer norm with the residuals of PyTorch's fused kernel: F.layer_norm (aten native_layer_norm) saves its input,
# mean and rstd, and native_layer_norm_backward recomputes x_hat from them (aten/src/ATen/native/layer_norm.cpp;
# tools/autograd/derivatives.yaml). Plain autodiff of the composite keeps x - mean, the broadcast rstd and x_hat,
# three [batch, seq, width] arrays per norm; a custom_vjp saving (x, mean, rstd) is what a careful JAX user writes
# (jax.nn.standardize is the same composite, with no backward of its own).
@jax.custom_vjp
def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
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


layer_norm.defvjp(_layer_norm_fwd, _layer_norm_bwd)


def attention(h: jax.Array, w_qkv: jax.Array, w_out: jax.Array, heads: int) -> jax.Array:
    # Written out (not dot_product_attention) on both sides so that the remat policies see the same matmuls.
    batch, seq, width = h.shape
    q, k, v = (t.reshape(batch, seq, heads, width // heads).swapaxes(1, 2) for t in jnp.split(h @ w_qkv, 3, -1))
    scores = (q @ k.swapaxes(-2, -1)) / math.sqrt(width // heads)
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1)
    return named("attention", jnp.matmul, (weights @ v).swapaxes(1, 2).reshape(batch, seq, width), w_out)


def swiglu(h: jax.Array, w_gate: jax.Array, w_up: jax.Array, w_down: jax.Array) -> jax.Array:
    # swiglu.swiglu_mlp's math, with the hidden activation tagged for remat_names.
    return named("mlp_hidden", jnp.multiply, jax.nn.silu(h @ w_gate), h @ w_up) @ w_down


def block(x: jax.Array, layer: dict, heads: int) -> jax.Array:
    h = x + attention(layer_norm(x, layer["ln1_scale"], layer["ln1_bias"]), layer["w_qkv"], layer["w_out"], heads)
    return h + swiglu(layer_norm(h, layer["ln2_scale"], layer["ln2_bias"]), layer["w_gate"], layer["w_up"],
                      layer["w_down"])


def blocks(x: jax.Array, layers: list[dict], heads: int) -> jax.Array:
    for layer in layers:
        x = block(x, layer, heads)
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
    step = remat(partial(blocks, heads=heads), variant)
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
