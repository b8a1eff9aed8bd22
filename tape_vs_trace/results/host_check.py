"""Whether two runs ran on one host, and times in a host's calibrated units: what lets absolute times of two runs
under one machine name be put side by side (the rerun check, the report's host section), or not.

A run's "tape_vs_trace" record (`machine.details` plus the calibration, stored by `tape-vs-trace scrub-results`)
is what is compared; `machine` writes it. The host is decided by its fingerprint alone; the calibration measures how
fast the host ran while it was calibrated, which load moves, so a calibration that moved is an annotation, not
another host.
"""

from __future__ import annotations

from typing import Any, NamedTuple

# Calibration rates further apart than this (relative to the smaller) are named as moved: two consecutive runs on
# one quiet host calibrated up to 19 % apart; one under load moved by two thirds.
CALIBRATION_TOLERANCE = 0.30
# The CPU identity two records must share (the series key takes family and model from it as well), and the rest of
# the fingerprint that tells a host's hardware apart.
_CPU_IDENTITY = ("vendor", "model_name", "family", "model", "stepping")
_CPU_HARDWARE = ("flags", "caches")
# Recorded and named when they differ, never deciding: a VM's memory grows and its kernel is updated between runs.
_HOST_NOTES = (("ram_bytes", "memory (bytes)"), ("kernel", "kernel"))
SAME = "same host by fingerprint"  # same_host's reason when nothing else is worth saying
# The likely cause a moved calibration is named with: load, unless the kernel changed too, when the machine was
# started again and may have landed on other hardware of the same CPU model (a VM's name does not pin its host).
UNDER_LOAD = "run under load?"
RESTARTED = "the kernel differs too: started again, on other hardware under this name?"


def _relative_gap(a: float, b: float) -> float:
    return abs(a - b) / min(a, b) if min(a, b) > 0 else float("inf")


def same_host(details_a: dict[str, Any], details_b: dict[str, Any]) -> tuple[bool, str]:
    """Whether two runs' "tape_vs_trace" records come from the same host, decided by their fingerprints.

    Different when the CPU identity (vendor, model name, family, model, stepping), its instruction-set flags or
    caches, the number of cores the run saw, or the GPU (name, memory) differ. A key one record lacks (an older
    fingerprint) is not compared. Memory size and kernel are named when they differ, and so is a calibration rate
    that moved by more than CALIBRATION_TOLERANCE (`calibration_moves`), asked about as load, or as other hardware
    where the kernel changed too: either moves a calibration, neither the fingerprint. A
    record without fingerprint counts as not comparable: absolute times of two runs are only put side by side when
    both say where they ran.
    """
    fa, fb = details_a.get("fingerprint"), details_b.get("fingerprint")
    if not fa or not fb:
        return False, "no fingerprint in one of the runs: cannot tell whether they ran on the same host"
    reasons = []
    ca, cb = fa.get("cpu", {}), fb.get("cpu", {})
    for key in (*_CPU_IDENTITY, *_CPU_HARDWARE):
        if ca.get(key) != cb.get(key):
            reasons.append(f"CPU {key} differs: {ca.get(key)!r} vs {cb.get(key)!r}")
    if "threads" in fa and "threads" in fb and str(fa["threads"]) != str(fb["threads"]):
        reasons.append(f"cores differ: {fa['threads']} vs {fb['threads']}")
    for key, label in (("gpu", "GPU"), ("memory_total", "GPU memory")):
        ga, gb = fa.get("gpu", {}).get(key), fb.get("gpu", {}).get(key)
        if ga != gb:
            reasons.append(f"{label} differs: {ga!r} vs {gb!r}")
    if reasons:
        return False, "; ".join(reasons)
    notes = [f"{label} differs: {fa[key]} vs {fb[key]}" for key, label in _HOST_NOTES
             if key in fa and key in fb and fa[key] != fb[key]]
    restarted = fa.get("kernel") is not None and fb.get("kernel") is not None and fa["kernel"] != fb["kernel"]
    notes += calibration_moves(details_a.get("calibration") or {}, details_b.get("calibration") or {},
                               cause=RESTARTED if restarted else UNDER_LOAD)
    return True, SAME + (f" ({'; '.join(notes)})" if notes else "")


# (label, path into the calibration) of every rate a run records for both frameworks
_RATES = (("float32 matmul rate (flop/s, torch)", ("matmul_flops_per_s", "float32")),
          ("float32 matmul rate (flop/s, jax)", ("matmul_flops_per_s_jax", "float32")),
          ("copy bandwidth (B/s, torch)", ("copy_bytes_per_s",)),
          ("copy bandwidth (B/s, jax)", ("copy_bytes_per_s_jax",)),
          ("torch dispatch cost (s/op)", ("dispatch_seconds_per_op", "torch")),
          ("jax dispatch cost (s/op)", ("dispatch_seconds_per_op", "jax")))


def calibration_moves(cal_a: dict[str, Any], cal_b: dict[str, Any], tolerance: float = CALIBRATION_TOLERANCE,
                      cause: str = UNDER_LOAD) -> list[str]:
    """One phrase per calibration rate of two runs that moved by more than `tolerance` (relative to the smaller),
    ending with the likely `cause`; empty when none did (or a run has no calibration)."""
    moved = []
    for label, path in _RATES:
        va, vb = calibrated_value(cal_a, path), calibrated_value(cal_b, path)
        if va is not None and vb is not None and _relative_gap(va, vb) > tolerance:
            moved.append(f"{label} {va:.4g} vs {vb:.4g}, {_relative_gap(va, vb):.0%} apart")
    if not moved:
        return []
    return [f"calibration moved by more than {tolerance:.0%}: {', '.join(moved)}; {cause}"]


def calibrated_value(data: dict[str, Any], path: tuple[str, ...]) -> float | None:
    """The positive number at `path` in a calibration (or any nested record), None where there is none."""
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return float(data) if isinstance(data, (int, float)) and data > 0 else None


class Normalised(NamedTuple):
    """A calibration-normalised time: `value` in `unit`, never to be printed as seconds."""

    value: float
    unit: str


# kind -> (path into the calibration, multiply by the rate (True) or divide by the per-op seconds, unit label)
_NORMALISATIONS: dict[str, tuple[tuple[str, ...], bool, str]] = {
    "matmul_float32": (("matmul_flops_per_s", "float32"), True,
                       "float32 matmul flops of this host's torch (calibrated)"),
    "matmul_bfloat16": (("matmul_flops_per_s", "bfloat16"), True,
                        "bfloat16 matmul flops of this host's torch (calibrated)"),
    "copy": (("copy_bytes_per_s",), True, "bytes of large-array copy traffic on this host (calibrated)"),
    "dispatch_torch": (("dispatch_seconds_per_op", "torch"), False, "torch eager dispatches on this host (calibrated)"),
    "dispatch_jax": (("dispatch_seconds_per_op", "jax"), False, "jax op-by-op dispatches on this host (calibrated)"),
}
NORMALISATION_KINDS: tuple[str, ...] = tuple(_NORMALISATIONS)


def normalised(value_seconds: float, calibration: dict[str, Any], kind: str) -> Normalised:
    """`value_seconds` in units of this host's calibrated speed: how many float32 matmul flops (kind
    "matmul_float32"), copy bytes ("copy") or tiny-op dispatches ("dispatch_torch", "dispatch_jax") the host does
    in that time. A compute-bound step's count moves less between hosts than its seconds; a ValueError names the
    valid kinds, or the missing calibration entry."""
    if kind not in _NORMALISATIONS:
        raise ValueError(f"unknown normalisation {kind!r}; valid choices: {', '.join(NORMALISATION_KINDS)}")
    path, multiply, unit = _NORMALISATIONS[kind]
    rate = calibrated_value(calibration, path)
    if rate is None:
        raise ValueError(f"the calibration has no positive {'.'.join(path)}")
    return Normalised(value_seconds * rate if multiply else value_seconds / rate, unit)
