"""The paired section's sentences and tables (tape_vs_trace.report.paired), each on a few hand-built points with the
expected text written out by hand: found by mutation testing (`make mutate`), where the end-to-end report test
checked only parts of these sentences, so a changed word, comparison or row filter stayed green."""

from __future__ import annotations

import math

import pandas as pd

from tape_vs_trace.report import paired
from tape_vs_trace.report.stats import Comparison

MIB = 2.0 ** 20
NAN = math.nan
KEY = ("torch", "eager", "unrolled", "S")


def row(point: str, ratio: float, low: float = NAN, high: float = NAN, saved: float = NAN, peak: float = NAN,
        baseline: str = "plain", budget: str = "") -> dict:
    """One curve point; memory in MiB."""
    return {"point": point, "baseline": baseline, "ratio": ratio, "ratio_ci_low": low, "ratio_ci_high": high,
            "saved_bytes": saved * MIB, "peak_bytes": peak * MIB, "budget": budget}


def test_a_baseline_reads_1_and_other_points_their_ratio_to_plain() -> None:
    base = row("plain", 1.0, 1.0, 1.0)
    other = row("remat_full", 1.2, 1.1, 1.3)
    assert paired._ratio(base) == "1 (baseline)"
    assert paired._of_plain(base) == ""
    assert paired._ratio(other) == "1.2× [1.1–1.3]"
    assert paired._of_plain(other) == " plain"


def test_memory_of_a_curve_is_peak_only_where_every_point_has_one() -> None:
    assert paired.memory_of(pd.DataFrame([row("plain", 1.0, peak=2), row("a", 1.0, peak=1)])) == \
        ("peak_bytes", "peak memory")
    assert paired.memory_of(pd.DataFrame([row("plain", 1.0, peak=2), row("a", 1.0)])) == \
        ("saved_bytes", "saved for backward")


def test_costs_reads_the_interval_as_percent_from_1() -> None:
    assert paired.costs(Comparison(0.8, 0.7, 0.9), "x", "y") == \
        "x costs 20.0 % less time than y (95 % interval 10.0–30.0 %)"
    assert paired.costs(Comparison(1.5, 1.2, 1.6), "x", "y") == \
        "x costs 50.0 % more time than y (95 % interval 20.0–60.0 %)"
    assert paired.costs(Comparison(1.05, 0.9, 1.2), "x", "y") == \
        "x against y: no difference measurable on this machine (ratio 1.05, 95 % interval 0.9–1.2)"
    assert paired.costs(Comparison(1.05, note="one process"), "x", "y") == \
        "x against y: 1.05× (no interval: one process)"
    assert paired.costs(Comparison(reason="no ratio"), "x", "y") == "x against y: no ratio (no ratio)"


def test_choices_by_peak_memory() -> None:
    curve = pd.DataFrame([row("plain", 1.0, 1.0, 1.0, saved=8, peak=10),
                          row("remat_dots", 1.05, 1.02, 1.08, saved=5, peak=6),
                          row("remat_full", 1.2, 1.15, 1.24, saved=2, peak=4),
                          row("remat_every2", 1.3, 1.2, 1.4, saved=1, peak=3)])
    # Near the fastest (ratio <= 1.1): plain and remat_dots, the smaller is remat_dots. At most 25 % slower by the
    # upper bound: plain, remat_dots and remat_full (1.24), not remat_every2 (1.4); the smallest is remat_full.
    assert paired.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: peak memory): within 10.0 % of the fastest point (plain), the least memory "
        "is **remat_dots**: 6 MiB, 1.05× [1.02–1.08] plain; the least memory at most 25.0 % slower than plain "
        "(upper 95 % bound) is **remat_full**: 4 MiB, 1.2× [1.15–1.24] plain")


def test_choices_skip_points_without_memory_or_ratio() -> None:
    curve = pd.DataFrame([row("b", NAN, saved=1),  # no ratio: first, so a filter that lets it in breaks min()
                          row("plain", 1.0, 1.0, 1.0, saved=8),
                          row("a", 0.5, 0.4, 0.6, saved=NAN),  # fastest, but no saved bytes
                          row("c", 1.3, 1.2, 1.4, saved=2),
                          row("d", 1.2, saved=3)])  # one process: its ratio stands for the upper bound
    assert paired.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: saved for backward): within 10.0 % of the fastest point (plain), the least "
        "memory is **plain**: 8 MiB, 1 (baseline); the least memory at most 25.0 % slower than plain (upper 95 % "
        "bound) is **d**: 3 MiB, 1.2× (no interval: one process) plain")


def test_choices_when_nothing_is_affordable_or_measured() -> None:
    curve = pd.DataFrame([row("remat_full", 1.3, 1.28, 1.4, saved=2)])
    assert paired.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: saved for backward): within 10.0 % of the fastest point (remat_full, "
        "1.3× [1.28–1.4] plain), the least memory is **remat_full**: 2 MiB, 1.3× [1.28–1.4] plain; no point is at "
        "most 25.0 % slower than plain by its upper 95 % bound")
    assert paired.choices(KEY, pd.DataFrame([row("plain", NAN, saved=1), row("a", 1.0, saved=NAN)])) is None
