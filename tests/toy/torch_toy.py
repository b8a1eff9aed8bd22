"""The toy workload (tests/toy): tanh(x @ w) * x, one layer, no loop."""

import torch

from implementations.torch.common import remat


def toy_block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ w) * x


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    return remat(toy_block, variant)(data["x"], params["w"])
