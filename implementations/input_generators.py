"""The generators of every workload's inputs (implementations.workloads' specs name them): parameters, data and static
values from a numpy generator and a size's dimensions, in float64. A generator must not change for an existing
(workload, size): tests/test_inputs.py pins their digests."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


def numpy_dtype(name: str) -> Any:
    """The numpy type of a dtype name; ml_dtypes (bfloat16) is imported only when asked for, as importing it
    lengthens a PyTorch process's start-up (JAX imports it anyway; docs/history.md)."""
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return {"float32": np.float32, "float64": np.float64}[name]


@dataclass(frozen=True)
class Inputs:
    """Numpy inputs of one (workload, size, dtype): the same arrays go to both frameworks."""

    workload: str
    size: str
    dtype: str
    params: dict[str, np.ndarray]
    data: dict[str, np.ndarray]
    static: dict[str, Any]
    cotangent: np.ndarray  # fixed random output cotangent: loss = sum(forward(...) * cotangent)


def normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return rng.standard_normal(shape) * scale


def mlp(rng, s):
    b, d, h = s["batch"], s["width"], s["hidden"]
    params = {"w1": normal(rng, (d, h), 1 / math.sqrt(d)), "w2": normal(rng, (h, d), 1 / math.sqrt(h))}
    return params, {"x": normal(rng, (b, d))}, {}


def linear_gelu(rng, s):
    b, d = s["batch"], s["width"]
    params = {"weight": normal(rng, (d, d), 1 / math.sqrt(d)), "bias": normal(rng, (d,), 0.1)}
    return params, {"x": normal(rng, (b, d))}, {}


def swiglu(rng, s):
    b, d, h = s["batch"], s["width"], s["hidden"]
    params = {
        "w_gate": normal(rng, (d, h), 1 / math.sqrt(d)),
        "w_up": normal(rng, (d, h), 1 / math.sqrt(d)),
        "w_down": normal(rng, (h, d), 1 / math.sqrt(h)),
    }
    return params, {"x": normal(rng, (b, d))}, {}


def transformer(rng, s):
    n, d, f = s["layers"], s["width"], s["ffn"]
    # Layer parameters are stacked on a leading [layers] axis (what lax.scan consumes); PyTorch indexes the stack.
    params = {
        "ln1_scale": 1 + normal(rng, (n, d), 0.1),
        "ln1_bias": normal(rng, (n, d), 0.1),
        "w_qkv": normal(rng, (n, d, 3 * d), 1 / math.sqrt(d)),
        "w_out": normal(rng, (n, d, d), 1 / math.sqrt(d)),
        "ln2_scale": 1 + normal(rng, (n, d), 0.1),
        "ln2_bias": normal(rng, (n, d), 0.1),
        "w_gate": normal(rng, (n, d, f), 1 / math.sqrt(d)),
        "w_up": normal(rng, (n, d, f), 1 / math.sqrt(d)),
        "w_down": normal(rng, (n, f, d), 1 / math.sqrt(f)),
    }
    return params, {"x": normal(rng, (s["batch"], s["seq"], d))}, {"heads": s["heads"]}


def chain(rng, s):
    d = s["width"]
    params = {"scale": 1 + normal(rng, (d,), 0.1), "shift": normal(rng, (d,), 0.1)}
    return params, {"x": normal(rng, (s["batch"], d))}, {"depth": s["depth"]}


def fanout(rng, s):
    d = s["width"]
    params = {"scale": 1 + normal(rng, (d,), 0.1), "shift": normal(rng, (d,), 0.1)}
    return params, {"x": normal(rng, (s["batch"], d))}, {"branches": s["branches"]}


def gmm(rng, s):
    # Random instance in ADBench's layout (its own generator is a C++ program; this one mirrors its shapes).
    d, k, n = s["d"], s["k"], s["n"]
    params = {
        "alphas": normal(rng, (k,)),
        "means": rng.uniform(0.0, 1.0, (k, d)),
        "icf": normal(rng, (k, d + d * (d - 1) // 2), 0.1),
    }
    return params, {"x": rng.uniform(0.0, 1.0, (n, d))}, {"gamma": 1.0, "m": 0}


def lstm(rng, s):
    l, c, b = s["layers"], s["chars"], s["bits"]
    params = {"main_params": normal(rng, (2 * l, 4 * b), 0.5), "extra_params": normal(rng, (3, b), 0.5)}
    state = normal(rng, (2 * l, b), 0.5)
    sequence = (rng.uniform(0.0, 1.0, (c, b)) < 0.5).astype(np.float64)
    return params, {"state": state, "sequence": sequence}, {}


def scalar_output(_: dict[str, int]) -> tuple[int, ...]:
    return ()


def name_seed(workload: str) -> int:
    """The workload's own seed, from its name alone: adding a workload changes no other workload's inputs (a sorted
    index would). sha256, not hash(), which Python salts per process for strings."""
    import hashlib

    return int.from_bytes(hashlib.sha256(workload.encode()).digest()[:8], "little")
