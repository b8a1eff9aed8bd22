"""fanout: one broadcast subexpression shared by many branches, summed (cotangent accumulation in the transpose)."""

import jax.numpy as jnp


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None):
    base = data["x"] * params["scale"] + params["shift"]
    branches = static["branches"]
    out = jnp.tanh(base)
    for i in range(1, branches):
        out = out + jnp.tanh(base * (1 + i / branches))
    return out
