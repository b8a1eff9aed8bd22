"""Calibration of the host, run at the start of every `make bench`: how fast this machine is right now.

Three measurements, each in a fresh process per framework with the benchmarks' settings
(`implementations.frameworks.load(name, "highest")`: same threads, same matmul precision):

- matmul rate per dtype (float32; bfloat16 too on CUDA): square products, flop/s. The report's roofline
  (tape_vs_trace/report/roofline.py) uses ONE rate for both frameworks, PyTorch's (`matmul_flops_per_s`, read by
  `matmul_rate`), so that a JAX/PyTorch ratio of roofline fractions is the ratio of their times; JAX's own rate is
  recorded beside it for information (`matmul_flops_per_s_jax`).
- copy bandwidth: one large array copied with PyTorch, bytes read + bytes written per second.
- dispatch cost: a loop of tiny adds, seconds per op: PyTorch eager on a 16-element tensor, JAX op-by-op (no jit).

Rates are the best of the repeats (the attainable rate a roofline divides by); the dispatch cost is the median (a
typical cost, not a lucky one). Every entry's median and best are kept under "samples".

    tape-vs-trace calibrate --out .asv/calibration.json
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPEATS = 7
# Sizes: long enough to time reliably, short enough that the whole calibration stays under 40 s on 2 CPU cores.
MATMUL_N = {"cpu": 1024, "cuda": 8192}
COPY_BYTES = {"cpu": 64 * 2**20, "cuda": 2 * 2**30}
DISPATCH_OPS = {"torch": 2000, "jax": 400}
CHILD_TIMEOUT_S = 300


def _repeat(run: Callable[[], None]) -> list[float]:
    """Seconds of REPEATS calls after one warm-up call."""
    run()
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    return seconds


def _summary(seconds: list[float], work: float, unit: str) -> dict[str, Any]:
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "repeats": len(seconds),
            "work": work, "work_unit": unit}


def _measure_torch(device: str) -> dict[str, Any]:
    import torch

    dev = torch.device(device)

    def synced(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            fn()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
        return run

    out: dict[str, Any] = {"matmul": {}}
    n = MATMUL_N[device]
    for dtype in _dtypes(device):
        a = torch.randn(n, n, device=dev).to(getattr(torch, dtype))
        out["matmul"][dtype] = _summary(_repeat(synced(lambda a=a: a @ a)), 2.0 * n**3, "flop")
    src = torch.ones(COPY_BYTES[device] // 4, device=dev)
    dst = torch.empty_like(src)
    out["copy"] = _summary(_repeat(synced(lambda: dst.copy_(src))), 2.0 * src.nbytes, "byte (read + write)")
    x = torch.ones(16, device=dev)

    def adds() -> None:
        y = x
        for _ in range(DISPATCH_OPS["torch"]):
            y = y + 1

    out["dispatch"] = _summary(_repeat(synced(adds)), DISPATCH_OPS["torch"], "op")
    return out


def _measure_jax(device: str) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    out: dict[str, Any] = {"matmul": {}}
    n = MATMUL_N[device]
    product = jax.jit(lambda a: a @ a)
    for dtype in _dtypes(device):
        a = jnp.ones((n, n), dtype=getattr(jnp, dtype)) * 0.5
        out["matmul"][dtype] = _summary(_repeat(lambda a=a: product(a).block_until_ready()), 2.0 * n**3, "flop")
    x = jnp.ones(16, dtype=jnp.float32)

    def adds() -> None:
        y = x
        for _ in range(DISPATCH_OPS["jax"]):
            y = y + 1  # op-by-op: each add is dispatched on its own, as in an un-jitted gradient step
        y.block_until_ready()

    out["dispatch"] = _summary(_repeat(adds), DISPATCH_OPS["jax"], "op")
    return out


def _dtypes(device: str) -> tuple[str, ...]:
    # bfloat16 matmuls on CPU are emulated on most hosts: no rate worth a roofline.
    return ("float32", "bfloat16") if device == "cuda" else ("float32",)


def measure(framework: str, device: str) -> dict[str, Any]:
    """This process's measurements for `framework` (call once per process: one framework per process)."""
    from implementations import frameworks

    frameworks.load(framework, "highest")
    return {"torch": _measure_torch, "jax": _measure_jax}[framework](device)


def combine(torch_part: dict[str, Any], jax_part: dict[str, Any], device: str) -> dict[str, Any]:
    """The calibration file's content from the two processes' measurements."""
    def rate(entry: dict[str, Any]) -> float:
        return entry["work"] / entry["min_s"]

    def per_op(entry: dict[str, Any]) -> float:
        return entry["median_s"] / entry["work"]

    return {
        "matmul_flops_per_s": {dtype: rate(e) for dtype, e in torch_part["matmul"].items()},
        "matmul_flops_per_s_jax": {dtype: rate(e) for dtype, e in jax_part["matmul"].items()},
        "copy_bytes_per_s": rate(torch_part["copy"]),
        "dispatch_seconds_per_op": {"torch": per_op(torch_part["dispatch"]), "jax": per_op(jax_part["dispatch"])},
        "device": device,
        "method": (f"fresh process per framework, frameworks.load(name, 'highest'); {REPEATS} repeats after a "
                   f"warm-up. matmul: {MATMUL_N[device]}x{MATMUL_N[device]} square product, 2n^3 flops over the "
                   "best repeat; matmul_flops_per_s is PyTorch's and is the one rate the roofline uses for both "
                   "frameworks, matmul_flops_per_s_jax (jax.jit) is for information. copy: PyTorch copy_ of "
                   f"{COPY_BYTES[device] // 2**20} MiB of float32, bytes read + written over the best repeat. "
                   f"dispatch: median seconds of {DISPATCH_OPS['torch']} torch eager adds / {DISPATCH_OPS['jax']} "
                   "jax op-by-op adds on a 16-element float32 array, per op."),
        "samples": {"torch": torch_part, "jax": jax_part},
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def matmul_rate(calibration: dict[str, Any], dtype: str, precision: str) -> float | None:
    """The one matmul rate (flop/s) the roofline divides by for (dtype, precision), from a calibration as `combine`
    writes it: the entry "<dtype>/<precision>" where there is one, else the dtype's; None where it has neither."""
    rates = calibration.get("matmul_flops_per_s") if isinstance(calibration, dict) else None
    for key in (f"{dtype}/{precision}", dtype):
        rate = rates.get(key) if isinstance(rates, dict) else None
        if isinstance(rate, int | float) and rate > 0:
            return float(rate)
    return None


class CalibrationError(Exception):
    """A framework process that failed or printed no calibration, or a file that cannot be written: one line."""


def _child(framework: str, device: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.calibrate", "--child", framework, "--device", device],
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise CalibrationError(f"{framework} calibration failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def calibrate(device: str) -> dict[str, Any]:
    """Both frameworks, one fresh process each."""
    return combine(_child("torch", device), _child("jax", device), device)


def write(calibration: dict[str, Any], out: Path) -> None:
    """Written whole or not at all: a stale or half-written file must not pass for this run's calibration."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(calibration, indent=2) + "\n")
    os.replace(tmp, out)


def run(out: Path, device: str | None = None) -> Path:
    """Calibrate this host and write `out` (returned); any failure is a CalibrationError and leaves no file."""
    from implementations import frameworks

    try:
        out.unlink(missing_ok=True)
        write(calibrate(device or frameworks.detect_device()), out)
    except (ValueError, subprocess.TimeoutExpired, OSError) as exc:  # a bad TVT_DEVICE, a hung child, a bad --out
        raise CalibrationError(str(exc)) from None
    return out


def main(argv: list[str] | None = None) -> int:
    """`--child FRAMEWORK`: measure one framework in this process and print JSON (what `calibrate` spawns)."""
    import argparse

    from implementations import frameworks

    parser = argparse.ArgumentParser(prog="tape_vs_trace.calibrate")
    parser.add_argument("--child", choices=frameworks.NAMES, required=True)
    parser.add_argument("--device", choices=frameworks.DEVICES, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.child, args.device)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
