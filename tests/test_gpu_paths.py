"""The GPU paths, as far as a CPU allows: the peak check and the GPU script run here on the CPU; what needs CUDA
is skipped without it, never faked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import common
from tape_vs_trace import gpucheck

ROOT = Path(__file__).resolve().parents[1]
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_peak_check_measures_on_cpu(framework: str) -> None:
    row = gpucheck.measure(framework, "mlp", "64x256x1024", "cpu")
    assert row["method"].startswith(common.MEMORY_METHODS[(framework, "cpu")])
    # 64x256 input and two 256x1024 weights in float32: the resident bytes, and as many bytes of gradients.
    assert row["resident_bytes"] == row["gradient_bytes"] == 4 * (64 * 256 + 2 * 256 * 1024)
    assert row["expected_bytes"] == 2 * row["resident_bytes"] + row["saved_bytes"]
    assert row["peak_bytes"] > row["resident_bytes"] + row["gradient_bytes"] // 2
    assert row["gap"] == pytest.approx((row["peak_bytes"] - row["expected_bytes"]) / row["expected_bytes"])


def test_gpu_script_parses_and_refuses_a_machine_without_gpu(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "gpu_bench.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the refusal path does not apply")
    run = subprocess.run(["bash", str(script), str(tmp_path / "out")], capture_output=True, text=True,
                         env={"PATH": "/nonexistent:/usr/bin:/bin"}, timeout=60)
    assert run.returncode == 1
    assert "no NVIDIA GPU found" in run.stdout
    assert (tmp_path / "out" / "log.txt").read_text().count("no NVIDIA GPU found") == 1


@requires_cuda
@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_cuda_peak_uses_the_allocator(framework: str) -> None:
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.gpucheck", "--measure", framework, "mlp",
                           "64x256x1024", "--device", "cuda"], capture_output=True, text=True, check=True)
    assert common.MEMORY_METHODS[(framework, "cuda")] in done.stdout
