"""Shared test helpers: tolerance-checked comparison that names the tensor, and ADBench file readers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ADBENCH = Path(__file__).parent / "data" / "adbench"


def max_rel_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """max |actual - expected| over max |expected|: one number per tensor, robust to entries near zero."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    scale = max(float(np.max(np.abs(expected), initial=0.0)), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(actual - expected), initial=0.0)) / scale


def assert_close(name: str, actual: np.ndarray, expected: np.ndarray, tol: float) -> None:
    err = max_rel_error(actual, expected)
    assert np.all(np.isfinite(actual)), f"{name}: non-finite values"
    assert err <= tol, f"{name}: max relative error {err:.3e} > tolerance {tol:.1e}"


def read_gmm(path: Path) -> dict:
    """ADBench GMM input: d k n; k alphas; k means; k icf rows; n points; gamma m."""
    tokens = path.read_text().split()
    d, k, n = (int(t) for t in tokens[:3])
    values = np.array(tokens[3:], dtype=np.float64)
    icf_len = d + d * (d - 1) // 2
    sizes = [k, k * d, k * icf_len, n * d]
    parts = np.split(values[: sum(sizes)], np.cumsum(sizes)[:-1])
    gamma, m = values[sum(sizes)], int(values[sum(sizes) + 1])
    return {
        "alphas": parts[0], "means": parts[1].reshape(k, d), "icf": parts[2].reshape(k, icf_len),
        "x": parts[3].reshape(n, d), "gamma": float(gamma), "m": m,
    }


def read_lstm(path: Path) -> dict:
    """ADBench LSTM input: l c b, then main_params, extra_params, state, sequence as blank-line separated blocks."""
    blocks = [b for b in path.read_text().strip().split("\n\n")]
    layers, chars, bits = (int(t) for t in blocks[0].split())

    def matrix(text: str, rows: int, cols: int) -> np.ndarray:
        return np.array(text.split(), dtype=np.float64).reshape(rows, cols)

    return {
        "main_params": matrix(blocks[1], 2 * layers, 4 * bits),
        "extra_params": matrix(blocks[2], 3, bits),
        "state": matrix(blocks[3], 2 * layers, bits),
        "sequence": matrix(blocks[4], chars, bits),
    }
