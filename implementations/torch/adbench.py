"""The ADBench GMM and LSTM objectives in PyTorch (fixed public API; definitions in tests/data/adbench/README.md).

Arguments are float64 tensors in ADBench's layout; each objective returns a 0-d tensor differentiable with
torch.autograd.grad.
"""

from __future__ import annotations

import torch
import torch.utils._pytree
from torch.utils.checkpoint import checkpoint

from implementations.workloads import gmm_constant, lower_triangle_indices

# torch before 2.13 loses the gradients of tensors a scan body closes over when no initial carry requires grad
# (pytorch/pytorch#184528; seen in 2.11): then _lstm_scan starts from carries that require grad, whose own gradients
# go unused. A plain constant, so that a compiled caller reads it without a graph break; tests/test_adbench.py
# checks it against the installed torch's scan.
SCAN_NEEDS_GRAD_CARRIES = torch.__version__ < "2.13"


class LogSumExp(torch.autograd.Function):
    """logsumexp over the last axis whose backward reuses the saved output: grad * exp(x - out)."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        shift = x.amax(-1, keepdim=True).detach()
        return (x - shift).exp().sum(-1).log() + shift.squeeze(-1)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(inputs[0], output)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        x, out = ctx.saved_tensors
        return grad.unsqueeze(-1) * (x - out.unsqueeze(-1)).exp()


def logsumexp(x: torch.Tensor) -> torch.Tensor:
    return LogSumExp.apply(x)


def _library_logsumexp(x: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(x, -1)


def gmm_objective(alphas, means, icf, x, gamma: float, m: int, *, custom_logsumexp: bool = False) -> torch.Tensor:
    lse = logsumexp if custom_logsumexp else _library_logsumexp
    n, d = x.shape
    k = alphas.shape[0]
    q, l = icf[:, :d], icf[:, d:]
    rows, cols = lower_triangle_indices(d)
    lower = icf.new_zeros(k, d, d)
    lower[:, rows, cols] = l
    qmat = torch.diag_embed(q.exp()) + lower
    diff = x[:, None, :] - means[None, :, :]  # [n, k, d]
    mahal = torch.einsum("kij,nkj->nki", qmat, diff).square().sum(-1)  # [n, k]
    beta = alphas + q.sum(-1) - 0.5 * mahal
    prior = (0.5 * gamma**2 * (q.exp().square().sum() + l.square().sum()) - m * q.sum())
    return gmm_constant(d, k, n, gamma, m) + lse(beta).sum() - n * lse(alphas) + prior


def _lstm_step(hidden, cell, x_in, target, weights, biases, extra_params):
    """One character: returns the new (hidden, cell) lists and sum(target * ynorm)."""
    x = x_in * extra_params[0]
    hidden, cell = list(hidden), list(cell)
    for i, ((wf, wi, wo, wc), (bf, bi, bo, bc)) in enumerate(zip(weights, biases)):
        # concat(x, h, x, h) * W + B, split into its four gates, without materialising the concatenation
        forget, ingate = torch.sigmoid(x * wf + bf), torch.sigmoid(hidden[i] * wi + bi)
        outgate, change = torch.sigmoid(x * wo + bo), torch.tanh(hidden[i] * wc + bc)
        cell[i] = cell[i] * forget + ingate * change
        hidden[i] = outgate * torch.tanh(cell[i])
        x = hidden[i]
    ypred = x * extra_params[1] + extra_params[2]
    ynorm = ypred - torch.log(2 + ypred.exp().sum())  # ADBench's "+ 2" normaliser
    return hidden, cell, (target * ynorm).sum()


def lstm_objective(main_params, extra_params, state, sequence, *, remat_steps: bool = False,
                   unroll: bool = False) -> torch.Tensor:
    layers, chars, bits = main_params.shape[0] // 2, sequence.shape[0], sequence.shape[1]
    hidden = [state[2 * i] for i in range(layers)]
    cell = [state[2 * i + 1] for i in range(layers)]
    if not unroll:
        if remat_steps:
            raise ValueError("remat_full has no scan form here: torch.utils.checkpoint is not traced inside scan")
        return -_lstm_scan(main_params, extra_params, hidden, cell, sequence) / ((chars - 1) * bits)
    weights = [main_params[2 * i].split(bits) for i in range(layers)]
    biases = [main_params[2 * i + 1].split(bits) for i in range(layers)]
    step = _lstm_step
    if remat_steps:
        def step(*args):
            return checkpoint(_lstm_step, *args, use_reentrant=False)
    total = sequence.new_zeros(())
    for t in range(chars - 1):
        hidden, cell, term = step(hidden, cell, sequence[t], sequence[t + 1], weights, biases, extra_params)
        total = total + term
    return -total / ((chars - 1) * bits)


def _lstm_scan(main_params, extra_params, hidden, cell, sequence) -> torch.Tensor:
    """sum over characters of _lstm_step's term, as torch's scan (torch._higher_order_ops.scan, a prototype).

    Its tracer refuses aliasing: the closed-over weights are split inside the body (views of one parameter would
    alias each other), the initial state rows and the two shifted sequences are copies, and every carry leaf is a
    clone (the compiled backward would otherwise save a tensor that is also a carry output)."""
    from torch._higher_order_ops.scan import scan

    layers, bits = len(hidden), sequence.shape[1]

    def body(carry, pair):
        weights = [main_params[2 * i].split(bits) for i in range(layers)]
        biases = [main_params[2 * i + 1].split(bits) for i in range(layers)]
        hidden, cell, total = carry
        hidden, cell, term = _lstm_step(hidden, cell, pair[0], pair[1], weights, biases, extra_params)
        return ([h.clone() for h in hidden], [c.clone() for c in cell], (total + term).clone()), ()

    carry = ([h.clone() for h in hidden], [c.clone() for c in cell], sequence.new_zeros(()))
    if SCAN_NEEDS_GRAD_CARRIES:
        carry = torch.utils._pytree.tree_map(lambda t: t if t.requires_grad else t.detach().requires_grad_(), carry)
    (_, _, total), _ = scan(body, carry, torch.stack((sequence[:-1], sequence[1:]), 1))
    return total
