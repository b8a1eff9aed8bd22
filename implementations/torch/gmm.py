"""gmm: the ADBench Gaussian mixture objective, with library or hand-written-backward logsumexp."""

import torch

from implementations.torch.adbench import gmm_objective


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> torch.Tensor:
    return gmm_objective(params["alphas"], params["means"], params["icf"], data["x"], static["gamma"], static["m"],
                         custom_logsumexp=variant == "custom")
