"""fanout: one broadcast subexpression shared by many branches, summed (gradient accumulation in the engine)."""

import torch


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    base = data["x"] * params["scale"] + params["shift"]
    branches = static["branches"]
    out = torch.tanh(base)
    for i in range(1, branches):
        out = out + torch.tanh(base * (1 + i / branches))
    return out
