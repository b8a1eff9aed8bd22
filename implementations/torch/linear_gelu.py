"""linear_gelu: gelu(x @ W.T + b) with the exact (erf) GELU."""

import torch
import torch.nn.functional as F


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    return F.gelu(F.linear(data["x"], params["weight"], params["bias"]))
