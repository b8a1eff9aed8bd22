"""The cost worker of `tape-vs-trace paired`: one framework, one process. It takes each point's costs of the named
remat experiments (saved bytes, matmul flops, peak bytes) and writes them as JSON for tape_vs_trace.side.paired; the
points' times come from tape-vs-trace run.

A point is counted as the asv suite counts: its RematCurve combination (experiments.asv_combination) prepared as a
benchmark process prepares it and counted by the count mixins (benchmarks.remat.curve_counts), so "the saved
bytes, flops and peak of a step" has one implementation.

    python -m tape_vs_trace.side.paired_worker FRAMEWORK OUT EXPERIMENT...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from implementations import frameworks
from implementations.experiments import Experiment, Point, asv_combination, experiments


def costs(experiment: Experiment, point: Point, device: str) -> dict[str, Any]:
    """Saved bytes, matmul flops and peak bytes of one remat point, with the methods that took them: its curve
    combination counted by the count class of its workload (benchmarks.remat._CurveCounts.costs)."""
    from benchmarks import common, remat

    cls = remat.curve_counts(experiment.workload)
    _, params = asv_combination(experiment, point, device)
    bench = cls()
    state = bench._prepare({name: params[name] for name in cls.param_names})
    if isinstance(state, common.Skip):
        raise RuntimeError(f"{experiment.name}: point {point.label!r} is not counted: {state}")
    bench.__dict__.update(state)
    return bench.costs()


def worker(framework: str, names: list[str], out: Path) -> None:
    """The costs of `framework`'s remat experiments `names`, taken in this process, written to `out`."""
    frameworks.isolate_allocators()
    device = frameworks.detect_device()
    chosen = [e for e in experiments(device) if e.name in names and e.framework == framework and e.group == "remat"]
    found: dict[str, Any] = {}
    for experiment in chosen:
        found[experiment.name] = {"costs": [costs(experiment, p, device) for p in experiment.points]}
        print(f"  {experiment.name}: costs of {len(experiment.points)} points", file=sys.stderr, flush=True)
    out.write_text(json.dumps(found, default=lambda value: value.item()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tape_vs_trace.side.paired_worker")
    parser.add_argument("framework", choices=frameworks.NAMES)
    parser.add_argument("out", type=Path)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args(argv)
    worker(args.framework, args.names, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
