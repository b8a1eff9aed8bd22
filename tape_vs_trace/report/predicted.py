"""What a host's calibration predicts of a JAX/PyTorch step-time ratio, and whether that accounts for the change of
a ratio between two hosts (the hosts page, report.hosts; each framework at its best, report.best).

A run whose calibration kept each process's values (`per_process`, written by `tape-vs-trace calibrate`) has a 95 %
interval for its prediction, and two such runs one for the change they predict (`intervals.product_interval`).
Older runs recorded one value per run: for them the range over the machine's runs on the same host stands in, and
the words say which of the two a verdict rests on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tape_vs_trace.results import host_check, intervals

# kind -> (label, path into the calibration of PyTorch's value, JAX's, whether a larger value is a faster host)
CALIBRATIONS = {
    "matmul rate": ("float32 matmul rate (flop/s)", ("matmul_flops_per_s", "float32"),
                    ("matmul_flops_per_s_jax", "float32"), True),
    "dispatch cost": ("dispatch cost (s/op)", ("dispatch_seconds_per_op", "torch"), ("dispatch_seconds_per_op", "jax"),
                      False),
    "copy bandwidth": ("copy bandwidth (B/s)", ("copy_bytes_per_s",), ("copy_bytes_per_s_jax",), True),
}
# the calibration of the kind that bounds a mode's step: an eager step dispatches many small ops, a compiled step of
# these sizes is a few fused matmul-bound programs
RELEVANT = {"eager": "dispatch cost", "compiled": "matmul rate"}


def calibrated_ratio(calibration: dict, kind: str) -> float | None:
    """The JAX/PyTorch time ratio the calibration of `kind` predicts (JAX's cost over PyTorch's: a rate's
    reciprocal), or None where either value is missing."""
    _, torch_path, jax_path, rate = CALIBRATIONS[kind]
    t, j = (host_check.calibrated_value(calibration, p) for p in (torch_path, jax_path))
    if t is None or j is None:
        return None
    return t / j if rate else j / t


def _per_process(calibration: dict, path: tuple[str, ...]) -> tuple[float, ...] | None:
    """The processes' values at `path` under the calibration's `per_process`, where there are two or more, all
    positive and finite; None otherwise (an older calibration, or one process)."""
    data: Any = calibration.get("per_process")
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    if not isinstance(data, list) or len(data) < 2:
        return None
    ok = all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in data)
    return tuple(float(v) for v in data) if ok else None


@dataclass(frozen=True)
class Calibrated:
    """The JAX/PyTorch ratio a calibration kind predicts on one host, `value`, with `low`-`high`: its 95 % interval
    over the calibration's processes where the run kept them (`over` and `under`, the per-process values whose
    quotient it is), otherwise the range over the machine's `runs` on the same host."""

    value: float
    low: float
    high: float
    runs: int
    over: tuple[tuple[float, ...], ...] = ()
    under: tuple[tuple[float, ...], ...] = ()

    @property
    def has_interval(self) -> bool:
        return bool(self.over)


def interval(calibration: dict, kind: str) -> Calibrated | None:
    """The run's predicted ratio of `kind` with its 95 % interval over the calibration's processes (PyTorch's and
    JAX's processes are independent sets: Welch's t on the logarithms); None where the run kept no processes' values."""
    value = calibrated_ratio(calibration, kind)
    _, torch_path, jax_path, rate = CALIBRATIONS[kind]
    t, j = (_per_process(calibration, p) for p in (torch_path, jax_path))
    if value is None or t is None or j is None:
        return None
    over, under = ((t,), (j,)) if rate else ((j,), (t,))
    low, high = intervals.product_interval(list(over), list(under))
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return Calibrated(value, low, high, 1, over, under)


def calibrated(details: dict[tuple[str, str], dict], machine: str, commit: str, kind: str) -> Calibrated | None:
    """The run's predicted ratio of `kind`: with its interval (`interval`) where the run has one, otherwise with its
    range over the machine's runs on the same host (host_check.same_host); None where the run has no such
    calibration."""
    mine = details.get((machine, commit)) or {}
    calibration = mine.get("calibration") or {}
    own = calibrated_ratio(calibration, kind)
    if own is None:
        return None
    found = interval(calibration, kind)
    if found is not None:
        return found
    values = [own]
    for (m, c), record in details.items():
        if m == machine and c != commit and host_check.same_host(mine, record or {})[0]:
            v = calibrated_ratio((record or {}).get("calibration") or {}, kind)
            values += [] if v is None else [v]
    return Calibrated(own, min(values), max(values), len(values))


def predicted_change(a: Calibrated, b: Calibrated) -> tuple[float, float, str]:
    """The change of the ratio from host a to host b that their calibrations predict, as low, high and what it
    rests on: the 95 % interval where both runs kept their processes' values; otherwise every pair of a's and b's
    bounds (interval or range), which is wider."""
    if a.has_interval and b.has_interval:
        low, high = intervals.product_interval([*b.over, *a.under], [*b.under, *a.over])
        return low, high, "the 95 % interval of their calibrations"
    basis = "one run's 95 % interval and the other's range over its runs" if a.has_interval or b.has_interval \
        else "the range of their runs' calibrations"
    return b.low / a.high, b.high / a.low, basis


ACCOUNTS, NOT_EXPLAINED = "accounts for it", "not explained by the calibration"
NO_MATMULS = "no matmuls: the matmul rate does not concern it"
NO_CALIBRATION = "no calibration of this kind in both runs"


def accounts(change: float, a: Calibrated | None, b: Calibrated | None, concerns: bool = True) -> str:
    """Whether the calibrations account for a ratio's change between two hosts: only where the calibration concerns
    the workload (`concerns`: no matmul rate for a step without matmuls), the change lies within what the two
    hosts' calibrations predict (`predicted_change`), and that prediction excludes 1 (one that holds 1 predicts no
    change at all); otherwise NOT_EXPLAINED. Either with why: what the calibrations predict, and from what."""
    if not concerns:
        return f"{NOT_EXPLAINED} ({NO_MATMULS})"
    if a is None or b is None:
        return NO_CALIBRATION
    low, high, basis = predicted_change(a, b)
    said = f"{basis} predicts {low:.3g}–{high:.3g}×"
    if low <= change <= high and not low <= 1.0 <= high:
        return f"{ACCOUNTS} ({said})"
    return f"{NOT_EXPLAINED} ({said}{', either way' if low <= 1.0 <= high else ''})"


def shown(c: Calibrated | None) -> str:
    """'3.11 [2.9–3.3], 95 % over 3 + 3 processes' or '3.11 (1.98–5.54, range over 5 runs)': a prediction as a
    cell."""
    if c is None:
        return "n/a"
    if c.has_interval:
        return f"{c.value:.3g} [{c.low:.3g}–{c.high:.3g}], 95 % over {len(c.over[0])} + {len(c.under[0])} processes"
    return f"{c.value:.3g} ({c.low:.3g}–{c.high:.3g}, range over {c.runs} run{'s' if c.runs > 1 else ''})"
