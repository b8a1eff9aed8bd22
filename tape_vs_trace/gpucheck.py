"""Peak-memory sanity check: the measured peak of one forward + backward against its analytic expectation.

A training step's memory is, to first order, its parameters (and inputs), what the forward saves for the backward,
and the gradients: expected = resident bytes + saved extra bytes + gradient bytes. The measured peak is the
resident bytes plus the probe's peak above them. A gap over 10 % is flagged: the step holds something the
accounting misses (workspaces, backward temporaries, fragmentation), frees saved tensors before the gradients are
all live, or the measurement is off. Each measurement runs in a fresh process: JAX's allocator peak cannot be reset.

    python -m tape_vs_trace.gpucheck            # the cases for this machine's device (TVT_DEVICE or nvidia-smi)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASES = {
    "cuda": [("mlp", "512x1024x4096"), ("transformer", "L12-B8-S1024-D1024")],
    "cpu": [("mlp", "64x256x1024"), ("transformer", "L4-B4-S64-D128")],
}
FRAMEWORKS = ("torch", "jax")
THRESHOLD = 0.10


def measure(framework: str, workload: str, size: str, device: str) -> dict:
    """Peak first (nothing else has run in this process), then the saved bytes."""
    import importlib

    import numpy as np

    from implementations import workloads

    steps = importlib.import_module(f"implementations.{framework}.steps")
    probe = importlib.import_module(f"implementations.{framework}.probe")
    inputs = workloads.make_inputs(workload, size, "float32")
    fn, args = steps.grad_fn(inputs, "plain", device)
    peak = probe.peak_bytes(fn, *args)
    loss, args = steps.loss_fn(inputs, "plain", device)
    saved = probe.saved_bytes(loss, *args).extra_bytes
    # Gradients are taken with respect to every input, so they are as large as the resident arrays.
    resident = sum(int(np.asarray(a).nbytes) for a in (*inputs.params.values(), *inputs.data.values()))
    expected = resident + saved + resident
    measured = resident + peak.bytes
    return {"framework": framework, "workload": workload, "size": size, "peak_bytes": measured,
            "method": peak.method, "resident_bytes": resident, "saved_bytes": saved, "gradient_bytes": resident,
            "expected_bytes": expected, "gap": (measured - expected) / expected}


def run_all(device: str) -> list[dict]:
    rows = []
    for workload, size in CASES[device]:
        for framework in FRAMEWORKS:
            done = subprocess.run([sys.executable, "-m", "tape_vs_trace.gpucheck", "--measure", framework, workload,
                                   size, "--device", device], capture_output=True, text=True)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                rows.append({"framework": framework, "workload": workload, "size": size, "error": last})
            else:
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def main(argv: list[str] | None = None) -> int:
    import os
    import shutil

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", nargs=3, metavar=("FRAMEWORK", "WORKLOAD", "SIZE"))
    parser.add_argument("--device", default=os.environ.get("TVT_DEVICE")
                        or ("cuda" if shutil.which("nvidia-smi") else "cpu"), choices=sorted(CASES))
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(*args.measure, args.device)))
        return 0
    rows = run_all(args.device)
    print(f"{'framework':9} {'workload':11} {'size':20} {'peak':>12} {'expected':>12} {'gap':>7}  verdict")
    for row in rows:
        if "error" in row:
            print(f"{row['framework']:9} {row['workload']:11} {row['size']:20} failed: {row['error']}")
            continue
        verdict = "FLAG: gap over 10 %" if abs(row["gap"]) > THRESHOLD else "ok"
        print(f"{row['framework']:9} {row['workload']:11} {row['size']:20} {row['peak_bytes']:>12,} "
              f"{row['expected_bytes']:>12,} {row['gap']:>+7.1%}  {verdict}  ({row['method']})")
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
