"""The toy workload (tests/toy): tanh(x @ w) * x, one layer, no loop."""

import jax
import jax.numpy as jnp

from implementations.jax.common import remat


def toy_block(x: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.tanh(x @ w) * x


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> jax.Array:
    return remat(toy_block, variant)(data["x"], params["w"])
