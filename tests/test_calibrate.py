"""The host calibration: its schema and arithmetic, a real run on this CPU within its time budget, and a failed
framework process reported in one line with no stale file left behind."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tape_vs_trace import calibrate

ROOT = Path(__file__).resolve().parents[1]


def _entry(seconds: list[float], work: float) -> dict:
    return calibrate._summary(seconds, work, "unit")


def test_rates_use_the_best_repeat_and_dispatch_the_median() -> None:
    torch_part = {"matmul": {"float32": _entry([2.0, 1.0, 4.0], 8.0), "bfloat16": _entry([1.0, 0.5, 0.5], 8.0)},
                  "copy": _entry([3.0, 2.0, 2.5], 10.0), "dispatch": _entry([1.0, 3.0, 2.0], 1000.0)}
    jax_part = {"matmul": {"float32": _entry([4.0, 4.0, 2.0], 8.0)}, "dispatch": _entry([5.0, 9.0, 7.0], 100.0)}
    cal = calibrate.combine(torch_part, jax_part, "cuda")
    assert cal["matmul_flops_per_s"] == {"float32": 8.0, "bfloat16": 16.0}  # work / best seconds
    assert cal["matmul_flops_per_s_jax"] == {"float32": 4.0}
    assert cal["copy_bytes_per_s"] == 5.0
    assert cal["dispatch_seconds_per_op"] == {"torch": pytest.approx(2e-3), "jax": pytest.approx(7e-2)}
    assert "roofline" in cal["method"] and "PyTorch" in cal["method"] and cal["date"].endswith("UTC")
    assert cal["samples"]["torch"]["copy"]["median_s"] == 2.5


@pytest.mark.slow
def test_calibrate_on_this_cpu(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.cli", "calibrate", "--out", str(out),
                           "--device", "cpu"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert seconds < 40, f"calibration took {seconds:.0f} s; it runs before every make bench"
    cal = json.loads(out.read_text())
    values = [cal["matmul_flops_per_s"]["float32"], cal["matmul_flops_per_s_jax"]["float32"],
              cal["copy_bytes_per_s"], *cal["dispatch_seconds_per_op"].values()]
    assert all(math.isfinite(v) and v > 0 for v in values)
    assert set(cal["dispatch_seconds_per_op"]) == {"torch", "jax"}
    assert "bfloat16" not in cal["matmul_flops_per_s"]  # CPU: float32 only
    # A dispatched add costs microseconds, not seconds or nanoseconds: catches a per-loop instead of per-op value.
    assert all(1e-8 < v < 1e-3 for v in cal["dispatch_seconds_per_op"].values())


@pytest.mark.slow
def test_a_failed_framework_leaves_no_calibration(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    out.write_text('{"stale": true}')
    env = {**os.environ, "TVT_INJECT_FAILURE": "jax", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.cli", "calibrate", "--out", str(out),
                           "--device", "cpu"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["error: jax calibration failed: MemoryError: injected failure for "
                                                "jax (TVT_INJECT_FAILURE)"]
    assert not out.exists(), "a stale calibration must not pass for this run's"


def test_bad_device_is_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.cli", "calibrate", "--device", "tpu"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "invalid choice: 'tpu'" in done.stderr and "Traceback" not in done.stderr
