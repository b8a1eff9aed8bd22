"""Calibration of the host, run at the start of every `make bench`: how fast this machine is right now.

Each framework's probe measures, in a fresh process per framework with the benchmarks' settings
(`implementations.frameworks.load(name, "highest")`: same threads, same matmul precision):

- matmul rate per dtype (float32; bfloat16 and float32 at TF32 too on CUDA): square products, flop/s
  (`rates.matmul_rate`). The report's roofline (tape_vs_trace/report/roofline.py) uses ONE rate for both
  frameworks, PyTorch's (`matmul_flops_per_s`, read by `schema.roofline_rate`), so that a JAX/PyTorch ratio of roofline
  fractions is the ratio of their times; JAX's own rate is recorded beside it for information
  (`matmul_flops_per_s_jax`).
- copy bandwidth: one large array copied, bytes read + bytes written per second (`rates.copy_rate`); PyTorch's is
  `copy_bytes_per_s`, JAX's is for information.
- dispatch cost: a loop of tiny adds, seconds per op (`rates.dispatch_cost`): PyTorch eager, JAX op-by-op (no jit).

This module only runs the two processes and writes the file; the sizes are `implementations.sampling`'s.

    tape-vs-trace calibrate --out .asv/calibration.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from implementations import sampling

CHILD_TIMEOUT_S = 300


def _dtypes(device: str) -> tuple[str, ...]:
    # bfloat16 matmuls on CPU are emulated on most hosts: no rate worth a roofline.
    return ("float32", "bfloat16") if device == "cuda" else ("float32",)


def measure(framework: str, device: str) -> dict[str, Any]:
    """This process's measurements by `framework`'s probe (call once per process: one framework per process). On
    CUDA, float32 is measured at TF32 too ("float32/tf32"), the precision the benchmarks' tf32 rows run at."""
    from implementations import frameworks

    rates = frameworks.load(framework, "highest").rates
    found = {"matmul_flops_per_s": {dtype: rates.matmul_rate(dtype, device) for dtype in _dtypes(device)},
             "copy_bytes_per_s": rates.copy_rate(device), "dispatch_seconds_per_op": rates.dispatch_cost(device)}
    if device == "cuda":
        rates = frameworks.load(framework, "tf32").rates
        found["matmul_flops_per_s"]["float32/tf32"] = rates.matmul_rate("float32", device)
    return found


def combine(torch_part: dict[str, Any], jax_part: dict[str, Any], device: str) -> dict[str, Any]:
    """The calibration file's content from the two processes' measurements."""
    n, mib = sampling.MATMUL_N[device], sampling.COPY_BYTES[device] // 2**20
    return {
        "matmul_flops_per_s": torch_part["matmul_flops_per_s"],
        "matmul_flops_per_s_jax": jax_part["matmul_flops_per_s"],
        "copy_bytes_per_s": torch_part["copy_bytes_per_s"],
        "copy_bytes_per_s_jax": jax_part["copy_bytes_per_s"],
        "dispatch_seconds_per_op": {"torch": torch_part["dispatch_seconds_per_op"],
                                    "jax": jax_part["dispatch_seconds_per_op"]},
        "device": device,
        "method": (f"fresh process per framework, frameworks.load(name, 'highest'), each framework's probe; "
                   f"{sampling.CALIBRATION_REPEATS} repeats after a warm-up. matmul: {n}x{n} square product, 2n^3 "
                   "flops over the best repeat (on CUDA float32 at TF32 too, 'float32/tf32', under the tf32 setting); "
                   "matmul_flops_per_s is PyTorch's and is the one rate the roofline "
                   "uses for both frameworks, matmul_flops_per_s_jax (jax.jit) is for information. copy: "
                   f"{mib} MiB of float32 (PyTorch copy_, jitted jnp.copy), bytes read + written over the best "
                   "repeat; copy_bytes_per_s is PyTorch's, copy_bytes_per_s_jax is for information. dispatch: median "
                   f"seconds of {sampling.DISPATCH_OPS['torch']} torch eager adds / {sampling.DISPATCH_OPS['jax']} "
                   "jax op-by-op adds on a 16-element float32 array, per op."),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


class CalibrationError(Exception):
    """A framework process that failed or printed no calibration, or a file that cannot be written: one line."""


def _child(framework: str, device: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.running.calibrate", "--child", framework, "--device",
                           device], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
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

    parser = argparse.ArgumentParser(prog="tape_vs_trace.running.calibrate")
    parser.add_argument("--child", choices=frameworks.NAMES, required=True)
    parser.add_argument("--device", choices=frameworks.DEVICES, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.child, args.device)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
