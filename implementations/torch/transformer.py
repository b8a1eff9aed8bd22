"""transformer: pre-LayerNorm blocks of causal self-attention and a SwiGLU MLP."""

import math
from functools import partial

import torch
import torch.nn.functional as F

from implementations.torch.common import remat
from implementations.torch.swiglu import swiglu_mlp

LAYER_STACKED = ("ln1_scale", "ln1_bias", "w_qkv", "w_out", "ln2_scale", "ln2_bias", "w_gate", "w_up", "w_down")
LN_EPS = 1e-5


def layer_norm(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], scale, bias, LN_EPS)


def attention(h: torch.Tensor, w_qkv: torch.Tensor, w_out: torch.Tensor, heads: int) -> torch.Tensor:
    # Written out (not scaled_dot_product_attention) on both sides so that the remat policies see the same matmuls.
    batch, seq, width = h.shape
    q, k, v = (t.reshape(batch, seq, heads, width // heads).transpose(1, 2) for t in (h @ w_qkv).split(width, -1))
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(width // heads)
    causal = torch.ones(seq, seq, dtype=torch.bool, device=h.device).tril()
    weights = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    return (weights @ v).transpose(1, 2).reshape(batch, seq, width) @ w_out


def block(x: torch.Tensor, layer: dict, heads: int) -> torch.Tensor:
    h = x + attention(layer_norm(x, layer["ln1_scale"], layer["ln1_bias"]), layer["w_qkv"], layer["w_out"], heads)
    return h + swiglu_mlp(layer_norm(h, layer["ln2_scale"], layer["ln2_bias"]), layer["w_gate"], layer["w_up"],
                          layer["w_down"])


def forward(params: dict, data: dict, static: dict, variant: str = "plain") -> torch.Tensor:
    # Eager PyTorch runs the layers as a Python loop in every variant, so "unrolled" is the same program as "plain";
    # the two names differ on the JAX side only (lax.scan against a Python loop).
    step = remat(partial(block, heads=static["heads"]), variant)
    x = data["x"]
    for i in range(len(params["w_qkv"])):
        x = step(x, {name: layers[i] for name, layers in params.items()})
    return x
