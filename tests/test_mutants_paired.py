"""The paired section's sentences and tables (tape_vs_trace.report.paired), each on a few hand-built points with the
expected text written out by hand: found by mutation testing (`make mutate`), where the end-to-end report test
checked only parts of these sentences, so a changed word, comparison or row filter stayed green."""

from __future__ import annotations

import math

import pandas as pd
import pytest

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
                          row("remat_dots", 1.05, 1.04, 1.08, saved=5, peak=6),
                          row("remat_full", 1.2, 1.15, 1.24, saved=2, peak=4),
                          row("remat_every2", 1.3, 1.2, 1.4, saved=1, peak=3)])
    # Near the fastest (ratio <= 1.1): plain and remat_dots, the smaller is remat_dots. At most 25 % slower by the
    # upper bound: plain, remat_dots and remat_full (1.24), not remat_every2 (1.4); the smallest is remat_full.
    assert paired.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: peak memory): within 10.0 % of the fastest point (plain), the least memory "
        "is **remat_dots**: 6 MiB, 1.05× [1.04–1.08] plain; the least memory at most 25.0 % slower than plain "
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


KEY_C = ("torch", "compiled", "unrolled", "S")


def test_budgets_falling_with_a_tie_and_one_budget_against_plain() -> None:
    curve = pd.DataFrame([row("plain", 1.0, saved=8, peak=5),
                          row("budget 0.5", 1.0, saved=8, peak=5, budget="0.5"),
                          row("remat_full", 1.2, saved=1, peak=1),  # neither a budget nor plain: not on this line
                          row("budget 0", 1.3, saved=3, peak=5, budget="0")])
    assert paired.budgets(KEY_C, curve) == [
        "PyTorch compiled unrolled S: saved for backward falls monotonically with the budget, from 8 MiB (budget 1) "
        "to 3 MiB (budget 0) (MiB by budget: 1: 8, 0.5: 8, 0: 3)",
        "PyTorch compiled unrolled S: peak memory does not change with the budget (5 MiB at budgets 1, 0.5, 0)"]
    one = pd.DataFrame([row("budget 0.5", 1.0, saved=6, budget="0.5"), row("plain", 1.0, saved=8)])
    assert paired.budgets(KEY_C, one) == [  # sorted by budget, plain first as 1.0; no peak anywhere: no peak line
        "PyTorch compiled unrolled S: saved for backward falls monotonically with the budget, from 8 MiB (budget 1) "
        "to 6 MiB (budget 0.5) (MiB by budget: 1: 8, 0.5: 6)"]


def test_budgets_that_rise_are_named_pair_by_pair() -> None:
    curve = pd.DataFrame([row("plain", 1.0, saved=8), row("budget 0.5", 1.0, saved=6, budget="0.5"),
                          row("budget 0.25", 1.0, saved=7, budget="0.25"),
                          row("budget 0.1", 1.0, saved=7, budget="0.1"), row("budget 0", 1.0, saved=3, budget="0")])
    assert paired.budgets(KEY_C, curve) == [
        "PyTorch compiled unrolled S: saved for backward does **not** fall monotonically with the budget (MiB by "
        "budget: 1: 8, 0.5: 6, 0.25: 7, 0.1: 7, 0: 3; rises 0.5 → 0.25)"]
    assert paired.budgets(KEY_C, pd.DataFrame([row("plain", 1.0, saved=8), row("remat_full", 1.2, saved=2)])) == []


def test_granularity_in_layers_per_checkpoint_order() -> None:
    curve = pd.DataFrame([row("remat_full", 1.2, 1.1, 1.3, saved=2), row("remat_dots", 1.1, 1.0, 1.2, saved=5),
                          row("remat_every2", 1.1, 1.05, 1.2, saved=4), row("plain", 1.0, 1.0, 1.0, saved=8),
                          row("remat_every4", 1.05, 1.04, 1.1, saved=6)])
    assert paired.granularity(KEY, curve) == (
        "PyTorch eager unrolled S: plain 8 MiB, 1 (baseline); remat_every4 6 MiB, 1.05× [1.04–1.1]; remat_every2 "
        "4 MiB, 1.1× [1.05–1.2]; remat_full 2 MiB, 1.2× [1.1–1.3]")
    every4 = pd.DataFrame([row("plain", 1.0, 1.0, 1.0, saved=8), row("remat_every4", 1.05, 1.04, 1.1, saved=6)])
    assert paired.granularity(KEY, every4) == "PyTorch eager unrolled S: plain 8 MiB, 1 (baseline); remat_every4 " \
        "6 MiB, 1.05× [1.04–1.1]"
    assert paired.granularity(KEY, pd.DataFrame([row("plain", 1.0, saved=8), row("remat_full", 1.2, saved=2)])) \
        is None


def curve_point(framework: str, mode: str, formulation: str, point: str, time: tuple, ratio: tuple, saved: float,
                peak: float, peak_method: str, gflop: float, group: str = "remat") -> dict:
    """A row of the paired table; time (s, low, high), ratio (ratio, low, high), memory in MiB."""
    return {"group": group, "framework": framework, "mode": mode, "formulation": formulation, "size": "S",
            "point": point, "baseline": "plain", "time_s": time[0], "time_ci_low": time[1], "time_ci_high": time[2],
            "ratio": ratio[0], "ratio_ci_low": ratio[1], "ratio_ci_high": ratio[2], "saved_bytes": saved * MIB,
            "peak_bytes": peak * MIB, "peak_method": peak_method, "flops": gflop * 1e9}


def test_curve_table_every_cell_of_every_point() -> None:
    table = pd.DataFrame([
        curve_point("torch", "eager", "unrolled", "plain", (0.012, 0.010, 0.014), (1.0, 1.0, 1.0), 8, 10,
                    "torch method", 2),
        curve_point("jax", "compiled", "scan", "plain", (0.020, 0.018, 0.022), (1.0, 1.0, 1.0), 4, NAN, "", 1.5),
        curve_point("torch", "eager", "unrolled", "remat_full", (0.015, NAN, NAN), (1.2, 1.1, 1.3), 2, NAN,
                    "not measured: inside kernels", 3),
        curve_point("torch", "eager", "plain", "hooks", (0.001, NAN, NAN), (1.0, 1.0, 1.0), 1, 1, "m", 1,
                    group="paired"),  # a two-point experiment: not a curve point
    ])
    assert paired.curve_table(table) == [
        "| framework | mode | formulation | size | point | time (ms) [95 % interval] | ratio to plain [95 % interval] "
        "| saved (MiB) | peak (MiB) | matmul GFLOP |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
        "| PyTorch | eager | unrolled | S | plain | 12 [10–14] | 1 (baseline) | 8 | 10 | 2 |",
        "| PyTorch | eager | unrolled | S | remat_full | 15 | 1.2× [1.1–1.3] | 2 | n/a (inside kernels) | 3 |",
        "| JAX | compiled | scan | S | plain | 20 [18–22] | 1 (baseline) | 4 | n/a (not measured) | 1.5 |",
    ]


def across_point(framework: str, formulation: str, point: str, time: float, saved: float, mode: str = "compiled",
                 group: str = "remat") -> dict:
    """A curve point of one process (no between-process interval); memory in MiB."""
    return {"group": group, "framework": framework, "workload": "transformer", "size": "S", "mode": mode,
            "formulation": formulation, "point": point, "device": "cpu", "time_s": time,
            "process_medians": str(time), "saved_bytes": saved * MIB, "cost_method": "compiled"}


def test_across_table_pairs_each_jax_point_with_its_pytorch_counterpart() -> None:
    table = pd.DataFrame([
        across_point("torch", "unrolled", "plain", 0.010, 8),
        across_point("jax", "unrolled", "plain", 0.020, 4),
        across_point("torch", "unrolled", "remat_full", 0.012, 2),
        across_point("jax", "scan", "remat_full", 0.030, 1),
        across_point("jax", "unrolled", "plain", 0.020, 4, mode="eager"),  # no PyTorch eager point: no line
        across_point("torch", "unrolled", "remat_dots", 0.011, 5),  # no JAX point: no line
        across_point("jax", "unrolled", "remat_dots", 0.011, 5, group="paired"),  # not a curve point
    ])
    assert paired.across_table(table) == [
        "| size | mode | formulation (PyTorch / JAX) | point | PyTorch (ms) | JAX (ms) | JAX/PyTorch step time "
        "| JAX/PyTorch saved for backward |",
        "|---|---|---|---|---:|---:|---:|---:|",
        "| S | compiled | unrolled / unrolled | plain | 10 | 20 | 2× (no interval: one process) | 0.5× (exact) |",
        "| S | compiled | unrolled / scan | remat_full | 12 | 30 | — (scan against loop) | — (scan against loop) |",
    ]
    assert paired.across_table(table[table.framework == "torch"]) == []


def experiment_point(experiment: str, framework: str, workload: str, size: str, point: str, baseline: str,
                     time: float, ratio: tuple = (1.0, 1.0, 1.0), group: str = "paired") -> dict:
    return {"group": group, "experiment": experiment, "framework": framework, "workload": workload, "size": size,
            "mode": "eager", "point": point, "baseline": baseline, "time_s": time, "ratio": ratio[0],
            "ratio_ci_low": ratio[1], "ratio_ci_high": ratio[2]}


def test_paired_findings_one_sentence_per_point_in_file_order() -> None:
    table = pd.DataFrame([
        experiment_point("z hooks", "torch", "mlp", "64", "no hooks", "no hooks", 0.001),
        experiment_point("z hooks", "torch", "mlp", "64", "hooks", "no hooks", 0.0012, (1.2, 1.1, 1.3)),
        experiment_point("m orphan", "torch", "mlp", "64", "x", "y", 0.001, (1.5, 1.4, 1.6)),  # no baseline row
        experiment_point("a custom", "jax", "swiglu", "", "custom", "autodiff", 0.0019, (0.95, 0.9, 1.02)),
        experiment_point("a custom", "jax", "swiglu", "", "autodiff", "autodiff", 0.002),
        experiment_point("remat", "jax", "transformer", "S", "remat_full", "plain", 0.01, (1.2, 1.1, 1.3),
                         group="remat"),  # a curve point: not a two-point experiment
    ])
    assert paired.paired_findings(table) == [
        "PyTorch mlp 64 eager: hooks costs 20.0 % more time than no hooks (95 % interval 10.0–30.0 %) (1.2 ms "
        "against 1 ms)",
        "JAX swiglu eager: custom against autodiff: no difference measurable on this machine (ratio 0.95, 95 % "
        "interval 0.9–1.02) (1.9 ms against 2 ms)",
    ]


def tidy_point(**values) -> dict:
    return {"experiment": "remat torch", "group": "remat", "framework": "torch", "workload": "transformer",
            "size": "S", "mode": "compiled", "formulation": "scan", "point": "budget 0.5", "budget": "0.5",
            "commit": "abcdef0123456789", "machine": "m1", "device": "cpu", "time_s": 0.01, "time_ci_low": 0.009,
            "time_ci_high": 0.011, "ratio": 1.1, "ratio_ci_low": 1.05, "ratio_ci_high": 1.15, "processes": 3,
            "process_medians": "0.008;0.01;0.012", "saved_bytes": 2048.0, "flops": 1e9, "peak_bytes": 4096.0,
            "peak_method": "torch allocator"} | values


def same(row: dict, expected: dict) -> None:
    for k, v in expected.items():
        if isinstance(v, float) and math.isnan(v):
            assert isinstance(row[k], float) and math.isnan(row[k]), k
        else:
            assert row[k] == (pytest.approx(v) if isinstance(v, float) else v), k


def test_tidy_writes_a_time_row_and_one_exact_row_per_measured_cost() -> None:
    table = pd.DataFrame([tidy_point(),
                          tidy_point(experiment="hooks", group="paired", workload="mlp", size="64", mode="eager",
                                     formulation="plain", point="hooks", budget="", time_s=0.001, time_ci_low=NAN,
                                     time_ci_high=NAN, processes=1, process_medians="", saved_bytes=NAN, flops=NAN,
                                     peak_bytes=NAN)])
    rows = paired.tidy(table).to_dict("records")
    assert [r["metric"] for r in rows] == ["time_step", "track_saved_bytes", "track_flops", "track_peak_bytes",
                                           "time_step"]
    where = {"workload": "transformer", "size": "S", "framework": "torch", "commit": "abcdef0123456789",
             "machine": "m1", "device": "cpu", "status": "ok", "type": "paired", "file": "paired/m1-abcdef01.csv",
             "group": "remat", "experiment": "remat torch", "point": "budget 0.5", "pillar": "remat",
             "variant": "budget 0.5/compiled/scan", "benchmark": "paired.remat", "env": "", "dtype": "",
             "params": '{"framework":"torch","workload":"transformer","size":"S","mode":"compiled",'
                       '"formulation":"scan","point":"budget 0.5","budget":"0.5"}'}
    # q25 and q75 of the three medians by linear interpolation: 0.009 and 0.011.
    same(rows[0], where | {"unit": "seconds", "value": 0.01, "spread": 0.002, "q25": 0.009, "q75": 0.011,
                           "ci_low": 0.009, "ci_high": 0.011, "processes": 3, "basis": "paired processes",
                           "process_medians": "[0.008, 0.01, 0.012]", "sampled": True, "comparable": True,
                           "ratio": 1.1, "ratio_ci_low": 1.05, "ratio_ci_high": 1.15, "memory_method": ""})
    exact = {"spread": 0.0, "basis": "exact", "sampled": False, "comparable": True, "ratio": NAN,
             "ratio_ci_low": NAN, "ratio_ci_high": NAN, "processes": ""}
    for row, unit, value, method in ((rows[1], "bytes", 2048.0, ""), (rows[2], "flops", 1e9, ""),
                                     (rows[3], "bytes", 4096.0, "torch allocator")):
        same(row, where | exact | {"unit": unit, "value": value, "q25": value, "q75": value, "ci_low": value,
                                   "ci_high": value, "memory_method": method})
    same(rows[4], {"pillar": "paired", "variant": "hooks/eager", "benchmark": "paired.paired", "group": "paired",
                   "experiment": "hooks", "point": "hooks", "workload": "mlp", "size": "64", "value": 0.001,
                   "spread": NAN, "q25": NAN, "q75": NAN, "ci_low": NAN, "process_medians": "[]", "processes": 1,
                   "ratio": 1.1})


def test_choices_bounds_are_inclusive_and_use_the_upper_bound() -> None:
    curve = pd.DataFrame([row("plain", 1.0, 1.0, 1.0, saved=8),
                          row("x", 1.1, 1.05, 1.2, saved=5),  # exactly 10 % slower than the fastest: near it
                          row("y", 1.2, 1.1, 1.25, saved=3),  # upper bound exactly 1.25: affordable
                          row("z", 1.2, 1.1, 1.3, saved=1)])  # ratio 1.2 but upper bound 1.3: not affordable
    assert paired.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: saved for backward): within 10.0 % of the fastest point (plain), the least "
        "memory is **x**: 5 MiB, 1.1× [1.05–1.2] plain; the least memory at most 25.0 % slower than plain (upper "
        "95 % bound) is **y**: 3 MiB, 1.2× [1.1–1.25] plain")


def test_granularity_with_every_second_layer_only() -> None:
    curve = pd.DataFrame([row("plain", 1.0, 1.0, 1.0, saved=8), row("remat_every2", 1.1, 1.05, 1.2, saved=4)])
    assert paired.granularity(KEY, curve) == "PyTorch eager unrolled S: plain 8 MiB, 1 (baseline); remat_every2 " \
        "4 MiB, 1.1× [1.05–1.2]"


def test_curve_table_shows_an_interval_only_with_both_bounds() -> None:
    table = pd.DataFrame([
        curve_point("torch", "eager", "unrolled", "plain", (0.012, NAN, 0.014), (1.0, 1.0, 1.0), 8, 10, "m", 2),
        curve_point("torch", "eager", "unrolled", "remat_full", (0.015, 0.013, NAN), (1.2, 1.1, 1.3), 2, 4, "m", 3),
    ])
    assert [line.split(" | ")[5] for line in paired.curve_table(table)[2:]] == ["12", "15"]
