"""linear_gelu: gelu(x @ W.T + b) with the exact (erf) GELU."""

import jax


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> jax.Array:
    return jax.nn.gelu(data["x"] @ params["weight"].T + params["bias"], approximate=False)
