"""The host calibration: its schema and arithmetic, each framework's processes taking turns and kept one by one, a
real run on this CPU, and a failed framework process reported in one line with no stale file left behind."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tape_vs_trace.results import schema
from tape_vs_trace.running import calibrate

ROOT = Path(__file__).resolve().parents[2]


def test_the_file_takes_pytorchs_rates_for_the_roofline_and_both_dispatch_costs() -> None:
    torch_part = {"matmul_flops_per_s": {"float32": 8.0, "bfloat16": 16.0}, "copy_bytes_per_s": 5.0,
                  "dispatch_seconds_per_op": 2e-3}
    jax_part = {"matmul_flops_per_s": {"float32": 4.0}, "copy_bytes_per_s": 6.0, "dispatch_seconds_per_op": 7e-2}
    cal = calibrate.combine([torch_part], [jax_part], "cuda")
    assert cal["matmul_flops_per_s"] == {"float32": 8.0, "bfloat16": 16.0}
    assert cal["matmul_flops_per_s_jax"] == {"float32": 4.0}
    assert cal["copy_bytes_per_s"] == 5.0 and cal["copy_bytes_per_s_jax"] == 6.0
    assert cal["dispatch_seconds_per_op"] == {"torch": 2e-3, "jax": 7e-2}
    assert "roofline" in cal["method"] and "8192x8192" in cal["method"] and cal["date"].endswith("UTC")
    assert schema.roofline_rate(cal, "bfloat16", "highest") == 16.0
    assert schema.roofline_rate(cal, "float64", "highest") is None


def test_several_processes_give_the_median_and_keep_each_processs_value() -> None:
    torch_parts = [{"matmul_flops_per_s": {"float32": r}, "copy_bytes_per_s": 5.0, "dispatch_seconds_per_op": d}
                   for r, d in ((8.0, 1e-6), (2.0, 3e-6), (6.0, 2e-6))]
    jax_parts = [{"matmul_flops_per_s": {"float32": r}, "copy_bytes_per_s": 1.0, "dispatch_seconds_per_op": 9e-6}
                 for r in (4.0, 5.0, 3.0)]
    cal = calibrate.combine(torch_parts, jax_parts, "cpu")
    assert cal["matmul_flops_per_s"] == {"float32": 6.0} and cal["matmul_flops_per_s_jax"] == {"float32": 4.0}
    assert cal["dispatch_seconds_per_op"] == {"torch": 2e-6, "jax": 9e-6}
    assert cal["per_process"]["matmul_flops_per_s"] == {"float32": [8.0, 2.0, 6.0]}
    assert cal["per_process"]["dispatch_seconds_per_op"] == {"torch": [1e-6, 3e-6, 2e-6], "jax": [9e-6] * 3}
    assert cal["per_process"]["copy_bytes_per_s_jax"] == [1.0] * 3
    assert cal["processes"] == {"torch": 3, "jax": 3} and cal["method"].startswith("3 fresh processes per framework")
    assert schema.roofline_rate(cal, "float32", "highest") == 6.0  # the roofline reads the median


def test_the_frameworks_processes_take_turns(monkeypatch) -> None:
    started: list[str] = []

    def child(framework: str, device: str) -> dict:
        started.append(framework)
        return {"matmul_flops_per_s": {"float32": float(len(started))}, "copy_bytes_per_s": 1.0,
                "dispatch_seconds_per_op": 1e-6}

    monkeypatch.setattr(calibrate, "_child", child)
    cal = calibrate.calibrate("cpu", processes=2)
    assert started == ["torch", "jax", "torch", "jax"]
    assert cal["per_process"]["matmul_flops_per_s"]["float32"] == [1.0, 3.0]
    with pytest.raises(ValueError, match="1 or more"):
        calibrate.calibrate("cpu", processes=0)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_cuda_calibration_times_float32_at_tf32_under_the_tf32_setting(monkeypatch, device: str) -> None:
    from implementations import frameworks

    loaded: list[str] = []

    class Rates:
        @staticmethod
        def matmul_rate(dtype: str, dev: str) -> float:
            return {"highest": 1.0, "tf32": 8.0}[loaded[-1]] * (2.0 if dtype == "bfloat16" else 1.0)

        copy_rate = staticmethod(lambda dev: 3.0)
        dispatch_cost = staticmethod(lambda dev: 1e-5)

    def load(name: str, precision: str = "highest", float64: bool = False):
        loaded.append(precision)
        return type("Loaded", (), {"rates": Rates})()

    monkeypatch.setattr(frameworks, "load", load)
    rates = calibrate.measure("torch", device)["matmul_flops_per_s"]
    if device == "cuda":
        assert rates == {"float32": 1.0, "bfloat16": 2.0, "float32/tf32": 8.0} and loaded == ["highest", "tf32"]
    else:
        assert rates == {"float32": 1.0} and loaded == ["highest"]


@pytest.mark.slow
def test_calibrate_on_this_cpu(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.cli", "calibrate", "--out", str(out),
                           "--device", "cpu"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    cal = json.loads(out.read_text())
    values = [cal["matmul_flops_per_s"]["float32"], cal["matmul_flops_per_s_jax"]["float32"],
              cal["copy_bytes_per_s"], *cal["dispatch_seconds_per_op"].values()]
    assert all(math.isfinite(v) and v > 0 for v in values)
    assert cal["processes"] == {"torch": calibrate.PROCESSES, "jax": calibrate.PROCESSES}
    assert all(len(v) == calibrate.PROCESSES for v in cal["per_process"]["dispatch_seconds_per_op"].values())
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
