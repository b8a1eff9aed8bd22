"""Closed-form objectives for the transforms pillar (mirror of implementations.jax.objectives): functions whose
derivatives are known exactly, so a transform can be checked against a formula rather than another autodiff.

| function | derivative known in closed form |
|---|---|
| least_squares(x, a, b) = 0.5 ||a x - b||^2 | gradient a^T (a x - b), Hessian a^T a |
| log_sum_exp(x) = log sum exp(x) | gradient p = softmax(x), Hessian diag(p) - p p^T |
| layer(u, w) = tanh(u @ w) | Jacobian diag(1 - tanh^2(u @ w)) w^T: [m, n] for w of [n, m] |
"""

from __future__ import annotations

import torch


def least_squares(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r = a @ x - b
    return 0.5 * (r * r).sum()


def log_sum_exp(x: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(x, dim=0)


def layer(u: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.tanh(u @ w)
