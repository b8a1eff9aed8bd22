"""transformer: pre-LayerNorm blocks of causal self-attention and a SwiGLU MLP."""

import math
from functools import partial

import jax
import jax.numpy as jnp

from implementations.jax.common import remat
from implementations.jax.swiglu import swiglu_mlp

LN_EPS = 1e-5


def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = jnp.square(x - mean).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + LN_EPS) * scale + bias


def attention(h: jax.Array, w_qkv: jax.Array, w_out: jax.Array, heads: int) -> jax.Array:
    # Written out (not dot_product_attention) on both sides so that the remat policies see the same matmuls.
    batch, seq, width = h.shape
    q, k, v = (t.reshape(batch, seq, heads, width // heads).swapaxes(1, 2) for t in jnp.split(h @ w_qkv, 3, -1))
    scores = (q @ k.swapaxes(-2, -1)) / math.sqrt(width // heads)
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    weights = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1)
    return (weights @ v).swapaxes(1, 2).reshape(batch, seq, width) @ w_out


def block(x: jax.Array, layer: dict, heads: int) -> jax.Array:
    h = x + attention(layer_norm(x, layer["ln1_scale"], layer["ln1_bias"]), layer["w_qkv"], layer["w_out"], heads)
    return h + swiglu_mlp(layer_norm(h, layer["ln2_scale"], layer["ln2_bias"]), layer["w_gate"], layer["w_up"],
                          layer["w_down"])


def forward(params: dict, data: dict, static: dict, variant: str = "plain") -> jax.Array:
    # lax.scan over the stacked layers, except "unrolled" (a Python loop). Remat goes inside the scan body: XLA on
    # CPU removes jax.checkpoint's recompute from straight-line code (shared/research/jax.md, finding 5).
    step = remat(partial(block, heads=static["heads"]), variant)
    if variant == "unrolled":
        x = data["x"]
        for i in range(params["w_qkv"].shape[0]):
            x = step(x, {name: stacked[i] for name, stacked in params.items()})
        return x
    x, _ = jax.lax.scan(lambda x, layer: (step(x, layer), None), data["x"], params)
    return x
