"""mlp: silu(x @ w1) @ w2."""

import jax

from implementations.jax.common import remat


def mlp_block(x: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
    return jax.nn.silu(x @ w1) @ w2


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> jax.Array:
    return remat(mlp_block, variant)(data["x"], params["w1"], params["w2"])
