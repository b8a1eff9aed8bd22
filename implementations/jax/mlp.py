"""mlp: silu(x @ w1) @ w2, the silu in the static style (common.silu)."""

from functools import partial

import jax

from implementations.jax.common import remat, silu
from implementations.workloads import style_of


def mlp_block(x: jax.Array, w1: jax.Array, w2: jax.Array, style: str = "matched") -> jax.Array:
    return silu(x @ w1, style) @ w2


def forward(params: dict, data: dict, static: dict, variant: str = "plain",
            formulation: str | None = None) -> jax.Array:
    return remat(partial(mlp_block, style=style_of(static)), variant)(data["x"], params["w1"], params["w2"])
