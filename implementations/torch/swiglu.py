"""swiglu: (silu(x @ w_gate) * (x @ w_up)) @ w_down, with silu(gate) * up plain or fused with its own backward."""

import torch
import torch.nn.functional as F

from implementations.torch.common import silu
from implementations.workloads import style_of


class SiluMul(torch.autograd.Function):
    """silu(gate) * up whose backward saves only its two inputs and recomputes sigmoid(gate)."""

    @staticmethod
    def forward(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return F.silu(gate) * up

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        gate, up = ctx.saved_tensors
        sig = torch.sigmoid(gate)
        d_silu = sig * (1 + gate * (1 - sig))
        return grad * up * d_silu, grad * gate * sig


def silu_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return SiluMul.apply(gate, up)


def silu_mul_autodiff(gate: torch.Tensor, up: torch.Tensor, style: str = "matched") -> torch.Tensor:
    return silu(gate, style) * up


def swiglu_mlp(x, w_gate, w_up, w_down, custom: bool = False, style: str = "matched") -> torch.Tensor:
    # The style is the plain backward's silu (common.silu); the custom one is written out the same on both sides.
    if custom:
        return silu_mul(x @ w_gate, x @ w_up) @ w_down
    return silu_mul_autodiff(x @ w_gate, x @ w_up, style) @ w_down


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    return swiglu_mlp(data["x"], params["w_gate"], params["w_up"], params["w_down"], custom=variant == "custom",
                      style=style_of(static))
