"""Whether two runs ran on one host, and times in a host's calibrated units: what lets absolute times of two runs
under one machine name be put side by side (the rerun check, the report's host section), or not.

A run's "tape_vs_trace" record (`machine.details` plus the calibration, stored by `tape-vs-trace scrub-results`)
is what is compared; `machine` writes it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

# Calibration rates further apart than this (relative to the smaller) mean another, or a differently loaded, host:
# a shared host's load can move its dispatch costs past it between consecutive runs, and compare names the rate.
HOST_TOLERANCE = 0.30
# The CPU identity two records must share (the series key takes family and model from it as well).
_CPU_IDENTITY = ("vendor", "model_name", "family", "model", "stepping")


def _relative_gap(a: float, b: float) -> float:
    return abs(a - b) / min(a, b) if min(a, b) > 0 else float("inf")


def same_host(details_a: dict[str, Any], details_b: dict[str, Any],
              tolerance: float = HOST_TOLERANCE) -> tuple[bool, str]:
    """Whether two runs' "tape_vs_trace" records (fingerprint + calibration) look like the same host.

    Different when the CPU identity (vendor, model name, family, model, stepping), its instruction-set flags or
    caches, or the GPU name differ, or when a calibration rate (float32 matmul, copy bandwidth, either framework's
    dispatch cost) differs by more than `tolerance` (relative to the smaller). A record without fingerprint counts
    as not comparable: absolute times of two runs are only put side by side when both say where they ran.
    """
    fa, fb = details_a.get("fingerprint"), details_b.get("fingerprint")
    if not fa or not fb:
        return False, "no fingerprint in one of the runs: cannot tell whether they ran on the same host"
    reasons = []
    ca, cb = fa.get("cpu", {}), fb.get("cpu", {})
    for key in (*_CPU_IDENTITY, "flags", "caches"):
        if ca.get(key) != cb.get(key):
            reasons.append(f"CPU {key} differs: {ca.get(key)!r} vs {cb.get(key)!r}")
    ga, gb = fa.get("gpu", {}).get("gpu"), fb.get("gpu", {}).get("gpu")
    if ga != gb:
        reasons.append(f"GPU differs: {ga!r} vs {gb!r}")
    cal_a, cal_b = details_a.get("calibration") or {}, details_b.get("calibration") or {}
    rates = [(f"float32 matmul rate (flop/s, {tool})", (key, "float32"))
             for key, tool in (("matmul_flops_per_s", "torch"), ("matmul_flops_per_s_jax", "jax"))]
    rates += [("copy bandwidth (B/s)", ("copy_bytes_per_s",))]
    rates += [(f"{fw} dispatch cost (s/op)", ("dispatch_seconds_per_op", fw)) for fw in ("torch", "jax")]
    for label, path in rates:
        va, vb = _lookup(cal_a, path), _lookup(cal_b, path)
        if va is None or vb is None:
            continue
        gap = _relative_gap(va, vb)
        if gap > tolerance:
            reasons.append(f"{label} differs by {gap:.0%} (> {tolerance:.0%}): {va:.4g} vs {vb:.4g}")
    if reasons:
        return False, "; ".join(reasons)
    compared = "fingerprint" + (" and calibration" if cal_a and cal_b else " (no calibration in one of the runs)")
    return True, f"same host by {compared}, within {tolerance:.0%}"


def _lookup(data: dict[str, Any], path: tuple[str, ...]) -> float | None:
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
    rate = _lookup(calibration, path)
    if rate is None:
        raise ValueError(f"the calibration has no positive {'.'.join(path)}")
    return Normalised(value_seconds * rate if multiply else value_seconds / rate, unit)
