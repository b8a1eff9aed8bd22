"""The machine's calibration, measured once before a run by `tape-vs-trace calibrate` (make bench does it) and
read by the benchmarks that need one rate for both frameworks (the roofline). Numpy and json only."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.common import Skip


def load() -> dict:
    """The calibration of this run: the JSON file named by TVT_CALIBRATION (default .asv/calibration.json)."""
    path = Path(os.environ.get("TVT_CALIBRATION") or ".asv/calibration.json")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        raise Skip(f"no calibration at {path}: run `tape-vs-trace calibrate` first (make bench does)") from None


def matmul_rate(dtype: str, precision: str) -> float:
    """Matmul flops per second for (dtype, precision), the same number for both frameworks."""
    rates = load().get("matmul_flops_per_s") or {}
    for key in (f"{dtype}/{precision}", dtype):
        if rates.get(key):
            return float(rates[key])
    raise Skip(f"the calibration has no matmul rate for {dtype}/{precision}")
