"""mlp: silu(x @ w1) @ w2, the silu in the static style (common.silu)."""

from functools import partial

import torch

from implementations.torch.common import remat, silu
from implementations.workloads import style_of


def mlp_block(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, style: str = "matched") -> torch.Tensor:
    return silu(x @ w1, style) @ w2


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    return remat(partial(mlp_block, style=style_of(static)), variant)(data["x"], params["w1"], params["w2"])
