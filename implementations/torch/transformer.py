"""transformer: pre-LayerNorm blocks of causal self-attention and a SwiGLU MLP.

PyTorch runs the layers as a Python loop, the formulation "unrolled", in every variant; JAX also has "scan". The
style (workloads.STYLES) changes only the causal mask here: F.layer_norm, softmax and F.silu already keep what the
matched program keeps. The attention is written out or F.scaled_dot_product_attention (workloads.ATTENTIONS).
"""

import math
from functools import partial

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from implementations.torch.common import FUSED_ATTENTION, named, remat, remat_group, silu
from implementations.workloads import attention_backend, attention_of, style_of

LAYER_STACKED = ("ln1_scale", "ln1_bias", "w_qkv", "w_out", "ln2_scale", "ln2_bias", "w_gate", "w_up", "w_down")
LN_EPS = 1e-5


# workloads.attention_backend's names: the one backend a fused call may use, so a fallback raises.
_BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}


def layer_norm(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor, style: str = "matched") -> torch.Tensor:
    # Both styles: the fused kernel saves x, mean and rstd, what JAX's matched layer_norm (a custom_vjp) saves.
    return F.layer_norm(x, x.shape[-1:], scale, bias, LN_EPS)


def causal(scores: torch.Tensor, style: str = "matched") -> torch.Tensor:
    """The scores with the future masked out: masked_fill with a boolean mask (default, which keeps the [seq, seq]
    mask for its backward) or an additive bias of 0 and -inf (matched: an add keeps nothing, on both sides)."""
    seq = scores.shape[-1]
    keep = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).tril()
    if style == "default":
        return scores.masked_fill(~keep, float("-inf"))
    return scores + torch.zeros(seq, seq, dtype=scores.dtype, device=scores.device).masked_fill(~keep, float("-inf"))


def softmax(scores: torch.Tensor, style: str = "matched") -> torch.Tensor:
    """Softmax over the last axis in both styles: its backward keeps its output, what JAX's matched softmax keeps."""
    return scores.softmax(-1)


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, style: str = "matched") -> torch.Tensor:
    """Causal F.scaled_dot_product_attention of [batch, heads, seq, head_dim] arrays, on the one backend that
    workloads.attention_backend names for this device and dtype (sdpa_kernel: no silent fallback). The kernel
    masks and normalises inside, so the style changes nothing here."""
    backend = attention_backend("torch", q.device.type, str(q.dtype).removeprefix("torch."))
    with sdpa_kernel([_BACKENDS[backend]]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def attention(h: torch.Tensor, w_qkv: torch.Tensor, w_out: torch.Tensor, heads: int, style: str = "matched",
              form: str = "written") -> torch.Tensor:
    # The output projection is tagged in both forms, so that remat_names saves the same tensor on both sides.
    batch, seq, width = h.shape
    q, k, v = (t.reshape(batch, seq, heads, width // heads).transpose(1, 2) for t in (h @ w_qkv).split(width, -1))
    if form == "fused":
        mixed = named(FUSED_ATTENTION, fused_attention, q, k, v, style)
    else:
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(width // heads)
        mixed = softmax(causal(scores, style), style) @ v
    return named("attention", torch.matmul, mixed.transpose(1, 2).reshape(batch, seq, width), w_out)


def swiglu(h: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor,
           style: str = "matched") -> torch.Tensor:
    # swiglu.swiglu_mlp's math, with the hidden activation tagged for remat_names.
    return named("mlp_hidden", torch.mul, silu(h @ w_gate, style), h @ w_up) @ w_down


def block(x: torch.Tensor, layer: dict, heads: int, style: str = "matched", form: str = "written") -> torch.Tensor:
    h = x + attention(layer_norm(x, layer["ln1_scale"], layer["ln1_bias"], style), layer["w_qkv"], layer["w_out"],
                      heads, style, form)
    return h + swiglu(layer_norm(h, layer["ln2_scale"], layer["ln2_bias"], style), layer["w_gate"], layer["w_up"],
                      layer["w_down"], style)


def blocks(x: torch.Tensor, layers: list[dict], heads: int, style: str = "matched",
           form: str = "written") -> torch.Tensor:
    for layer in layers:
        x = block(x, layer, heads, style, form)
    return x


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    # Remat wraps groups of remat_group(variant) layers (1 but for remat_every<k>), as on the JAX side.
    heads, k = static["heads"], remat_group(variant)
    n = len(params["w_qkv"])
    if n % k:
        raise ValueError(f"{variant} needs a layer count divisible by {k}; this size has {n} layers")
    step = remat(partial(blocks, heads=heads, style=style_of(static), form=attention_of(static)), variant)
    # Per-layer leaves are used as they are, a stacked leaf (the spec's own arrays, say) is indexed.
    layers = [{name: value[i] for name, value in params.items()} for i in range(n)]
    x = data["x"]
    for start in range(0, n, k):
        x = step(x, layers[start:start + k])
    return x
