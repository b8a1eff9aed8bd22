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

Each framework is measured in PROCESSES fresh processes, the two frameworks' taking turns: the file's values are the
median over its processes, and `per_process` keeps every process's, from which the report forms a 95 % interval
(a calibration moves between processes as a step does). This module only runs the processes and writes the file;
the sizes are `implementations.sampling`'s.

    tape-vs-trace calibrate --out .asv/calibration.json
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from implementations import sampling

CHILD_TIMEOUT_S = 300
# Processes per framework: three give a between-process interval, as the runner's steps do; most of a process's time
# is the framework's import (its cost: docs/history.md).
PROCESSES = 3


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


def _gathered(parts: list[Any]) -> Any:
    """The processes' measurements as one tree of the same keys, each value the list of the processes' values."""
    if isinstance(parts[0], dict):
        return {key: _gathered([part[key] for part in parts]) for key in parts[0]}
    return [float(v) for v in parts]


def _medians(tree: Any) -> Any:
    return {k: _medians(v) for k, v in tree.items()} if isinstance(tree, dict) else float(statistics.median(tree))


def combine(torch_parts: list[dict[str, Any]], jax_parts: list[dict[str, Any]], device: str) -> dict[str, Any]:
    """The calibration file's content from each framework's processes' measurements (one dict per process): the
    median over the processes, and under `per_process` every process's value at the same path."""
    torch_all, jax_all = _gathered(torch_parts), _gathered(jax_parts)
    per_process = {"matmul_flops_per_s": torch_all["matmul_flops_per_s"],
                   "matmul_flops_per_s_jax": jax_all["matmul_flops_per_s"],
                   "copy_bytes_per_s": torch_all["copy_bytes_per_s"],
                   "copy_bytes_per_s_jax": jax_all["copy_bytes_per_s"],
                   "dispatch_seconds_per_op": {"torch": torch_all["dispatch_seconds_per_op"],
                                               "jax": jax_all["dispatch_seconds_per_op"]}}
    n, mib = sampling.MATMUL_N[device], sampling.COPY_BYTES[device] // 2**20
    return {
        **_medians(per_process),
        "per_process": per_process,
        "processes": {"torch": len(torch_parts), "jax": len(jax_parts)},
        "device": device,
        "method": (f"{len(torch_parts)} fresh processes per framework, the frameworks taking turns, "
                   "frameworks.load(name, 'highest'), each framework's probe; each value is the median over the "
                   "processes, per_process holds each process's. In a process: "
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


def calibrate(device: str, processes: int = PROCESSES) -> dict[str, Any]:
    """Both frameworks, `processes` fresh processes each, taking turns (load that comes and goes hits both)."""
    if processes < 1:
        raise ValueError(f"processes must be 1 or more, not {processes}")
    turns = [(_child("torch", device), _child("jax", device)) for _ in range(processes)]
    return combine([t for t, _ in turns], [j for _, j in turns], device)


def write(calibration: dict[str, Any], out: Path) -> None:
    """Written whole or not at all: a stale or half-written file must not pass for this run's calibration."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(calibration, indent=2) + "\n")
    os.replace(tmp, out)


def run(out: Path, device: str | None = None, processes: int = PROCESSES) -> Path:
    """Calibrate this host and write `out` (returned); any failure is a CalibrationError and leaves no file."""
    from implementations import frameworks

    try:
        out.unlink(missing_ok=True)
        write(calibrate(device or frameworks.detect_device(), processes), out)
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
