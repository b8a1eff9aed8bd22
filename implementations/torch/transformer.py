"""transformer: pre-LayerNorm blocks of causal self-attention and a SwiGLU MLP.

PyTorch runs the layers as a Python loop, the formulation "unrolled", in every variant; JAX also has "scan".
"""

import math
from functools import partial

import torch
import torch.nn.functional as F

from implementations.torch.common import named, remat, remat_group

LAYER_STACKED = ("ln1_scale", "ln1_bias", "w_qkv", "w_out", "ln2_scale", "ln2_bias", "w_gate", "w_up", "w_down")
LN_EPS = 1e-5


def layer_norm(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    # The fused kernel saves x, mean and rstd; JAX's layer_norm is a custom_vjp saving the same.
    return F.layer_norm(x, x.shape[-1:], scale, bias, LN_EPS)


def attention(h: torch.Tensor, w_qkv: torch.Tensor, w_out: torch.Tensor, heads: int) -> torch.Tensor:
    # Written out (not scaled_dot_product_attention) on both sides so that the remat policies see the same matmuls.
    batch, seq, width = h.shape
    q, k, v = (t.reshape(batch, seq, heads, width // heads).transpose(1, 2) for t in (h @ w_qkv).split(width, -1))
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(width // heads)
    causal = torch.ones(seq, seq, dtype=torch.bool, device=h.device).tril()
    weights = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    return named("attention", torch.matmul, (weights @ v).transpose(1, 2).reshape(batch, seq, width), w_out)


def swiglu(h: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    # swiglu.swiglu_mlp's math, with the hidden activation tagged for remat_names.
    return named("mlp_hidden", torch.mul, F.silu(h @ w_gate), h @ w_up) @ w_down


def block(x: torch.Tensor, layer: dict, heads: int) -> torch.Tensor:
    h = x + attention(layer_norm(x, layer["ln1_scale"], layer["ln1_bias"]), layer["w_qkv"], layer["w_out"], heads)
    return h + swiglu(layer_norm(h, layer["ln2_scale"], layer["ln2_bias"]), layer["w_gate"], layer["w_up"],
                      layer["w_down"])


def blocks(x: torch.Tensor, layers: list[dict], heads: int) -> torch.Tensor:
    for layer in layers:
        x = block(x, layer, heads)
    return x


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    # Remat wraps groups of remat_group(variant) layers (1 but for remat_every<k>), as on the JAX side.
    heads, k = static["heads"], remat_group(variant)
    n = len(params["w_qkv"])
    if n % k:
        raise ValueError(f"{variant} needs a layer count divisible by {k}; this size has {n} layers")
    step = remat(partial(blocks, heads=heads), variant)
    # Per-layer leaves are used as they are, a stacked leaf (the spec's own arrays, say) is indexed.
    layers = [{name: value[i] for name, value in params.items()} for i in range(n)]
    x = data["x"]
    for start in range(0, n, k):
        x = step(x, layers[start:start + k])
    return x
