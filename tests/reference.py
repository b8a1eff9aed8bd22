"""Independent numpy float64 references of every workload, written from the definitions (README, DESIGN.md, ADBench),
not from either implementation: no import from implementations/ other than the spec's data layout.

Each ``forward(params, data, static)`` takes the spec's arrays (any dtype; computed in float64) and returns the
float64 output. Gradients come from central finite differences of ``sum(forward * cotangent)`` (:func:`fd_grads`),
so a reference gradient shares no code with either framework's autodiff.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import erf


def _f64(tree: dict) -> dict:
    return {k: np.asarray(v, np.float64) for k, v in tree.items()}


def silu(z: np.ndarray) -> np.ndarray:
    return z / (1.0 + np.exp(-z))


def gelu_erf(z: np.ndarray) -> np.ndarray:
    """The exact GELU, z * Phi(z)."""
    return 0.5 * z * (1.0 + erf(z / math.sqrt(2.0)))


def gelu_tanh(z: np.ndarray) -> np.ndarray:
    """The tanh approximation of GELU (Hendrycks & Gimpel): what the exact-GELU tests must tell apart."""
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


def mlp(params: dict, data: dict, static: dict) -> np.ndarray:
    p, d = _f64(params), _f64(data)
    return silu(d["x"] @ p["w1"]) @ p["w2"]


def linear_gelu(params: dict, data: dict, static: dict) -> np.ndarray:
    p, d = _f64(params), _f64(data)
    return gelu_erf(d["x"] @ p["weight"].T + p["bias"])


def _swiglu(x, w_gate, w_up, w_down):
    return (silu(x @ w_gate) * (x @ w_up)) @ w_down


def swiglu(params: dict, data: dict, static: dict) -> np.ndarray:
    p, d = _f64(params), _f64(data)
    return _swiglu(d["x"], p["w_gate"], p["w_up"], p["w_down"])


def _layer_norm(x, scale, bias, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)  # biased variance, as LayerNorm defines it
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def _causal_attention(h, w_qkv, w_out, heads):
    batch, seq, width = h.shape
    dh = width // heads
    q, k, v = (a.reshape(batch, seq, heads, dh).transpose(0, 2, 1, 3) for a in np.split(h @ w_qkv, 3, axis=-1))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)  # [batch, heads, query t, key s]
    future = np.arange(seq)[None, :] > np.arange(seq)[:, None]  # key s after query t: excluded
    scores = np.where(future, -np.inf, scores)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return (weights @ v).transpose(0, 2, 1, 3).reshape(batch, seq, width) @ w_out


def transformer(params: dict, data: dict, static: dict) -> np.ndarray:
    p, x = _f64(params), np.asarray(data["x"], np.float64)
    for i in range(p["w_qkv"].shape[0]):
        h = x + _causal_attention(_layer_norm(x, p["ln1_scale"][i], p["ln1_bias"][i]), p["w_qkv"][i], p["w_out"][i],
                                  static["heads"])
        x = h + _swiglu(_layer_norm(h, p["ln2_scale"][i], p["ln2_bias"][i]), p["w_gate"][i], p["w_up"][i],
                        p["w_down"][i])
    return x


def chain(params: dict, data: dict, static: dict) -> np.ndarray:
    p, y = _f64(params), np.asarray(data["x"], np.float64)
    for _ in range(static["depth"]):
        y = np.tanh(y * p["scale"] + p["shift"])
    return y


def fanout(params: dict, data: dict, static: dict) -> np.ndarray:
    p, x = _f64(params), np.asarray(data["x"], np.float64)
    base = x * p["scale"] + p["shift"]
    n = static["branches"]
    return sum(np.tanh(base * (1 + i / n)) for i in range(n))


def _logsumexp(v: np.ndarray) -> np.ndarray:
    top = v.max(-1, keepdims=True)
    return np.log(np.exp(v - top).sum(-1)) + top[..., 0]


def gmm_objective(alphas, means, icf, x, gamma: float, m: int) -> float:
    """ADBench's GMM objective (src/python/modules/PyTorch/gmm_objective.py, its sign of the prior-like term),
    one component at a time with Q built entry by entry."""
    alphas, means, icf, x = (np.asarray(a, np.float64) for a in (alphas, means, icf, x))
    n, d = x.shape
    k = alphas.shape[0]
    beta = np.empty((n, k))
    prior = 0.0
    for c in range(k):
        q, l = icf[c, :d], icf[c, d:]
        qmat = np.diag(np.exp(q))
        pos = 0
        for col in range(d):  # strict lower triangle filled column by column
            for row in range(col + 1, d):
                qmat[row, col] = l[pos]
                pos += 1
        for i in range(n):
            beta[i, c] = alphas[c] + q.sum() - 0.5 * np.sum((qmat @ (x[i] - means[c])) ** 2)
        prior += 0.5 * gamma**2 * (np.sum(np.exp(q) ** 2) + np.sum(l**2)) - m * q.sum()
    n_prime = d + m + 1
    log_multigamma = 0.25 * d * (d - 1) * math.log(math.pi) + sum(math.lgamma(0.5 * n_prime + 0.5 * (1 - j))
                                                                  for j in range(1, d + 1))
    constant = -0.5 * n * d * math.log(2 * math.pi) - k * (n_prime * d * math.log(gamma / math.sqrt(2))
                                                            - log_multigamma)
    return float(constant + _logsumexp(beta).sum() - n * _logsumexp(alphas) + prior)


def gmm(params: dict, data: dict, static: dict) -> np.ndarray:
    return np.asarray(gmm_objective(params["alphas"], params["means"], params["icf"], data["x"], static["gamma"],
                                    static["m"]))


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_objective(main_params, extra_params, state, sequence) -> float:
    """ADBench's diagonal LSTM (src/python/modules/PyTorch/lstm_objective.py), with its log(2 + sum exp)."""
    main_params, extra_params, state, sequence = (np.asarray(a, np.float64)
                                                  for a in (main_params, extra_params, state, sequence))
    layers, bits = main_params.shape[0] // 2, sequence.shape[1]
    hidden = [state[2 * i].copy() for i in range(layers)]
    cell = [state[2 * i + 1].copy() for i in range(layers)]
    total, count = 0.0, 0
    for t in range(sequence.shape[0] - 1):
        x = sequence[t] * extra_params[0]
        for i in range(layers):
            gates = np.concatenate([x, hidden[i], x, hidden[i]]) * main_params[2 * i] + main_params[2 * i + 1]
            forget, ingate, outgate = (_sigmoid(gates[j * bits:(j + 1) * bits]) for j in range(3))
            change = np.tanh(gates[3 * bits:])
            cell[i] = cell[i] * forget + ingate * change
            hidden[i] = outgate * np.tanh(cell[i])
            x = hidden[i]
        ypred = x * extra_params[1] + extra_params[2]
        ynorm = ypred - np.log(2 + np.exp(ypred).sum())
        total += np.sum(sequence[t + 1] * ynorm)
        count += bits
    return float(-total / count)


def lstm(params: dict, data: dict, static: dict) -> np.ndarray:
    return np.asarray(lstm_objective(params["main_params"], params["extra_params"], data["state"], data["sequence"]))


FORWARD: dict[str, Callable[[dict, dict, dict], np.ndarray]] = {
    "mlp": mlp, "linear_gelu": linear_gelu, "swiglu": swiglu, "transformer": transformer, "chain": chain,
    "fanout": fanout, "gmm": gmm, "lstm": lstm,
}


def fd_grads(fn: Callable[[dict, dict], float], params: dict, data: dict, step: float = 1e-6) -> tuple[dict, dict]:
    """Central finite differences of the scalar fn(params, data) w.r.t. every entry of params and data, in float64.
    Truncation error ~step^2 and rounding ~1e-16/step: ~1e-10 relative for the smooth workloads here."""
    params, data = _f64(params), _f64(data)
    grads = []
    for tree in (params, data):
        out = {}
        for name, array in tree.items():
            g = np.zeros_like(array)
            flat, gflat = array.reshape(-1), g.reshape(-1)
            for i in range(flat.size):
                orig = flat[i]
                h = step * max(1.0, abs(orig))
                flat[i] = orig + h
                up = fn(params, data)
                flat[i] = orig - h
                down = fn(params, data)
                flat[i] = orig
                gflat[i] = (up - down) / (2 * h)
            out[name] = g
        grads.append(out)
    return grads[0], grads[1]


def loss_and_grads(workload: str, params: dict, data: dict, static: dict, cotangent: np.ndarray):
    """(output, loss, grads of params, grads of data) of loss = sum(forward * cotangent), all float64."""
    forward = FORWARD[workload]
    cot = np.asarray(cotangent, np.float64)

    def loss(p, d):
        return float(np.sum(forward(p, d, static) * cot))

    out = forward(params, data, static)
    gp, gd = fd_grads(loss, params, data)
    return out, float(np.sum(out * cot)), gp, gd
