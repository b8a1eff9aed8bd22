"""One case of a finding (tape_vs_trace.report.findings.describe), each branch with its sentence written out by hand:
found by mutation testing (`make mutate`)."""

from __future__ import annotations

import pytest

from tape_vs_trace.report import findings
from tape_vs_trace.report.stats import Comparison

MIB = 2 ** 20


def secs(value: float) -> dict:
    return {"value": value, "unit": "seconds"}


def mib(value: float) -> dict:
    return {"value": value * MIB, "unit": "bytes"}


@pytest.mark.parametrize(("c", "a", "b", "text"), [
    (Comparison(1.0, 1.0, 1.0), mib(1), mib(1), "unchanged (1 MiB)"),
    (Comparison(1.5, 1.5, 1.5), mib(2), mib(3), "+50.0 % (2 MiB → 3 MiB)"),
    (Comparison(0.5, 0.5, 0.5), mib(2), mib(1), "−50.0 % (2 MiB → 1 MiB)"),
    (Comparison(1.2, note="one process"), secs(0.01), secs(0.012), "10 ms → 12 ms (1.2×, no interval)"),
    (Comparison(1.05, 0.95, 1.1), secs(0.01), secs(0.0105),
     "no difference measurable on this machine (10 ms → 10.5 ms; ratio 95 % interval 0.95–1.1×)"),
    (Comparison(1.2, 1.12, 1.3), secs(0.01), secs(0.012), "+20.0 % (10 ms → 12 ms; ratio 95 % interval 1.12–1.3×)"),
    (Comparison(0.8, 0.7, 0.9), secs(0.01), secs(0.008), "−20.0 % (10 ms → 8 ms; ratio 95 % interval 0.7–0.9×)"),
])
def test_describe(c: Comparison, a: dict, b: dict, text: str) -> None:
    assert findings.describe(c, a, b) == text
