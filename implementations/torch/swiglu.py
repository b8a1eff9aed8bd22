"""swiglu: (silu(x @ w_gate) * (x @ w_up)) @ w_down, with silu(gate) * up plain or fused with its own backward."""

import torch
import torch.nn.functional as F


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


def silu_mul_autodiff(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return F.silu(gate) * up


def swiglu_mlp(x, w_gate, w_up, w_down, custom: bool = False) -> torch.Tensor:
    act = silu_mul if custom else silu_mul_autodiff
    return act(x @ w_gate, x @ w_up) @ w_down


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    return swiglu_mlp(data["x"], params["w_gate"], params["w_up"], params["w_down"], custom=variant == "custom")
