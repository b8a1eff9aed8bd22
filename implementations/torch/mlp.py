"""mlp: silu(x @ w1) @ w2."""

import torch
import torch.nn.functional as F

from implementations.torch.common import remat


def mlp_block(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return F.silu(x @ w1) @ w2


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    return remat(mlp_block, variant)(data["x"], params["w1"], params["w2"])
