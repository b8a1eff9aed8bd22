"""gmm: the ADBench Gaussian mixture objective, with library or hand-written-backward logsumexp."""

import jax

from implementations.jax.adbench import gmm_objective


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> jax.Array:
    return gmm_objective(params["alphas"], params["means"], params["icf"], data["x"], static["gamma"], static["m"],
                         custom_logsumexp=variant == "custom")
