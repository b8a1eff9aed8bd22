"""implementations.native_peak: memray's heap peak of one call sees what a step allocates on either side (a planted
buffer of known size, held or freed before the call returns), and leaves out what was resident before it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from implementations import frameworks, native_peak

pytest.importorskip("memray")
ROOT = Path(__file__).resolve().parents[1]
PLANTED = 8 << 20  # far above the step's own peak at the tiny size
# What the tiny step itself may move between calls: memray's own line tables, thread pools' bookkeeping
SLACK = 64 << 10

# One framework per process, in a fresh one under PYTHONMALLOC=malloc: the tiny mlp's gradient step alone, then with
# a planted buffer held in its result (the framework's own array, and numpy's), then with one freed before it returns.
SCRIPT = """
import json, sys
import numpy as np
from implementations import frameworks, native_peak, workloads
name, planted = sys.argv[1], int(sys.argv[2])
fw = frameworks.load(name, "highest")
step = fw.steps.grad_step(workloads.make_inputs("mlp", "tiny", "float32"), "plain", "eager", "cpu")
if name == "torch":
    import torch
    held = lambda: torch.empty(planted, dtype=torch.uint8)
else:
    import jax, jax.numpy as jnp
    held = lambda: jax.block_until_ready(jnp.zeros(planted, jnp.uint8))
def freed():
    buffer = np.ones(planted, np.uint8)
    return int(buffer[-1])
resident = np.ones(planted, np.uint8)  # before the measured call: the baseline, never in a peak
peaks = {}
for label, run in (("plain", step), ("held", lambda: (step(), held())),
                   ("numpy", lambda: (step(), np.ones(planted, np.uint8))), ("freed", lambda: (freed(), step()))):
    peak = native_peak.native_peak_bytes(run)
    peaks[label] = peak.bytes - peak.workspace_bytes
print(json.dumps(peaks))
"""


@pytest.fixture(scope="module", params=frameworks.NAMES)
def peaks(request) -> tuple[str, dict[str, int]]:
    env = dict(os.environ, PYTHONMALLOC="malloc", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    done = subprocess.run([sys.executable, "-c", SCRIPT, request.param, str(PLANTED)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return request.param, json.loads(done.stdout.strip().splitlines()[-1])


def test_the_resident_buffer_before_the_call_is_not_in_its_peak(peaks) -> None:
    name, found = peaks
    assert 0 < found["plain"] < PLANTED, (name, found)


@pytest.mark.parametrize("planted", ["held", "numpy", "freed"])
def test_a_planted_buffer_raises_the_peak_by_its_size(peaks, planted: str) -> None:
    name, found = peaks
    extra = found[planted] - found["plain"]
    assert PLANTED - SLACK <= extra <= PLANTED + SLACK, (name, planted, found)


def test_pymalloc_is_refused(monkeypatch) -> None:
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    with pytest.raises(native_peak.NativePeakError, match="PYTHONMALLOC=malloc"):
        native_peak.native_peak_bytes(lambda: None)


def test_the_tracker_overhead_is_two_medians() -> None:
    plain, tracked = native_peak.tracking_overhead(lambda: sum(range(1000)), calls=3)
    assert plain > 0 and tracked > 0
