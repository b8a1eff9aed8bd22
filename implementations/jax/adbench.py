"""The ADBench GMM and LSTM objectives in JAX (fixed public API; definitions in tests/data/adbench/README.md).

Arguments are float64 arrays in ADBench's layout; each objective returns a 0-d array differentiable with jax.grad.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from implementations.workloads import gmm_constant, lower_triangle_indices


@jax.custom_vjp
def logsumexp(x: jax.Array) -> jax.Array:
    """logsumexp over the last axis whose backward reuses the saved output: grad * exp(x - out)."""
    shift = jax.lax.stop_gradient(x.max(-1, keepdims=True))
    return jnp.log(jnp.exp(x - shift).sum(-1)) + shift.squeeze(-1)


def _logsumexp_fwd(x):
    out = logsumexp(x)
    return out, (x, out)


def _logsumexp_bwd(residuals, grad):
    x, out = residuals
    return (grad[..., None] * jnp.exp(x - out[..., None]),)


logsumexp.defvjp(_logsumexp_fwd, _logsumexp_bwd)


def _library_logsumexp(x: jax.Array) -> jax.Array:
    return jax.nn.logsumexp(x, axis=-1)


def gmm_objective(alphas, means, icf, x, gamma: float, m: int, *, custom_logsumexp: bool = False) -> jax.Array:
    lse = logsumexp if custom_logsumexp else _library_logsumexp
    n, d = x.shape
    k = alphas.shape[0]
    q, l = icf[:, :d], icf[:, d:]
    rows, cols = lower_triangle_indices(d)
    lower = jnp.zeros((k, d, d), icf.dtype).at[:, rows, cols].set(l)
    qmat = jax.vmap(jnp.diag)(jnp.exp(q)) + lower
    diff = x[:, None, :] - means[None, :, :]  # [n, k, d]
    mahal = jnp.square(jnp.einsum("kij,nkj->nki", qmat, diff)).sum(-1)  # [n, k]
    beta = alphas + q.sum(-1) - 0.5 * mahal
    prior = 0.5 * gamma**2 * (jnp.square(jnp.exp(q)).sum() + jnp.square(l).sum()) - m * q.sum()
    return gmm_constant(d, k, n, gamma, m) + lse(beta).sum() - n * lse(alphas) + prior


def _lstm_step(hidden, cell, x_in, target, weights, biases, extra_params):
    """One character: returns the new (hidden, cell) lists and sum(target * ynorm)."""
    x = x_in * extra_params[0]
    hidden, cell = list(hidden), list(cell)
    for i, ((wf, wi, wo, wc), (bf, bi, bo, bc)) in enumerate(zip(weights, biases)):
        # concat(x, h, x, h) * W + B, split into its four gates, without materialising the concatenation
        forget, ingate = jax.nn.sigmoid(x * wf + bf), jax.nn.sigmoid(hidden[i] * wi + bi)
        outgate, change = jax.nn.sigmoid(x * wo + bo), jnp.tanh(hidden[i] * wc + bc)
        cell[i] = cell[i] * forget + ingate * change
        hidden[i] = outgate * jnp.tanh(cell[i])
        x = hidden[i]
    ypred = x * extra_params[1] + extra_params[2]
    ynorm = ypred - jnp.log(2 + jnp.exp(ypred).sum())  # ADBench's "+ 2" normaliser
    return hidden, cell, (target * ynorm).sum()


def lstm_objective(main_params, extra_params, state, sequence, *, remat_steps: bool = False,
                   unroll: bool = False) -> jax.Array:
    layers, chars, bits = main_params.shape[0] // 2, sequence.shape[0], sequence.shape[1]
    weights = [jnp.split(main_params[2 * i], 4) for i in range(layers)]
    biases = [jnp.split(main_params[2 * i + 1], 4) for i in range(layers)]
    hidden = [state[2 * i] for i in range(layers)]
    cell = [state[2 * i + 1] for i in range(layers)]
    step = jax.checkpoint(_lstm_step) if remat_steps else _lstm_step

    def body(carry, pair):
        hidden, cell, total = carry
        hidden, cell, term = step(hidden, cell, pair[0], pair[1], weights, biases, extra_params)
        return (hidden, cell, total + term), None

    carry = (hidden, cell, jnp.zeros((), sequence.dtype))
    if unroll:  # a Python loop, as PyTorch runs it: what op-by-op (un-jitted) JAX dispatches without recompiling
        for t in range(chars - 1):
            carry, _ = body(carry, (sequence[t], sequence[t + 1]))
    else:  # lax.scan over characters: one traced step instead of chars - 1 unrolled ones
        carry, _ = jax.lax.scan(body, carry, (sequence[:-1], sequence[1:]))
    return -carry[2] / ((chars - 1) * bits)
