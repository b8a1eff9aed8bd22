"""The harness measures itself: the synchronised step path that every benchmark uses, against a raw call of the
same ~1 ms step. Their ratio is the harness overhead."""

from __future__ import annotations

import time

from benchmarks.common import DEVICE, FRAMEWORKS, Benchmark, import_framework, memo

STEP_SECONDS = 1e-3


def busy_step() -> float:
    """Spin for STEP_SECONDS: a step whose cost is known and does not depend on any framework."""
    end = time.perf_counter() + STEP_SECONDS
    while time.perf_counter() < end:
        pass
    return end


class Overhead(Benchmark):
    """'raw': the 1 ms step called directly; 'synchronized': the same step through the framework's sync() and a
    memoised closure, exactly as the suite's steps run."""

    params = [FRAMEWORKS, ["raw", "synchronized"], [DEVICE]]
    param_names = ["framework", "path", "device"]

    def setup(self, framework, path, device):
        fw = import_framework(framework, "float32", "highest")
        sync = fw["common"].sync
        self.step = busy_step if path == "raw" else memo(("harness", framework),
                                                         lambda: lambda: sync(busy_step(), device))

    def time_step(self, *params):
        self.step()
