"""The harness measures itself: the synchronised step path that every benchmark uses, against a raw call of the
same ~1 ms step. Their ratio is the harness overhead."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks.common import _LOOP, DEVICE, FRAMEWORKS, Benchmark, memo
from implementations import frameworks

STEP_SECONDS = 1e-3


def busy_step() -> float:
    """Spin for STEP_SECONDS: a step whose cost is known and does not depend on any framework."""
    end = time.perf_counter() + STEP_SECONDS
    while time.perf_counter() < end:
        pass
    return end


def _device_array(framework: str, device: str) -> Any:
    ones = np.ones(256, np.float32)
    if framework == "torch":
        import torch

        return torch.from_numpy(ones).to(device)
    import jax

    return jax.device_put(ones, jax.devices(device)[0])


class Overhead(Benchmark):
    """'raw': the 1 ms step (a spin, then one small op on a device array) called directly; 'synchronized': the same
    step through the framework's sync() on its result and a memoised closure, exactly as the suite's steps run."""


    params = [FRAMEWORKS, ["raw", "synchronized"], [DEVICE]]
    param_names = ["framework", "path", "device"]

    def setup(self, framework, path, device):
        # One call per timed body: the per-call timer's count is process state, and a worker process set it for the
        # combination before this one.
        _LOOP["calls"] = 1
        fw = memo(("fw", framework), lambda: frameworks.load(framework))
        array = memo(("harness", framework, device), lambda: _device_array(framework, device))

        def step():
            busy_step()
            return array + 1

        sync = fw.common.sync
        self.step = step if path == "raw" else memo(("harness-sync", framework, device),
                                                    lambda: lambda: sync(step(), device))

    def time_step(self, *params):
        self.step()
