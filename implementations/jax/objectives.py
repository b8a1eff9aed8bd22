"""Closed-form objectives for the transforms pillar (mirror of implementations.torch.objectives, whose docstring
has the table of their exact derivatives)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def least_squares(x: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    r = a @ x - b
    return 0.5 * (r * r).sum()


def log_sum_exp(x: jax.Array) -> jax.Array:
    return jax.scipy.special.logsumexp(x, axis=0)


def layer(u: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.tanh(u @ w)
