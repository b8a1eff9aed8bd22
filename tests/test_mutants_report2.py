"""Small rules of the report's paired, roofline, breakdown and number-formatting code, one hand-built case each with
the expected value worked out by hand: found by mutation testing (`make mutate`), where changing a bound, a reason
or a factor stayed green."""

from __future__ import annotations

import math

import pandas as pd

from tape_vs_trace.report import breakdown, fmt, paired, roofline
from tape_vs_trace.report.stats import Comparison


def test_an_interval_that_starts_at_1_includes_1_so_no_small_interval_note() -> None:
    # [1.0, 1.05] touches 1: it does not exclude 1, so there is nothing to add; [1.01, 1.05] excludes it
    assert fmt.small(Comparison(1.02, 1.0, 1.05)) == ""
    assert fmt.small(Comparison(1.02, 1.01, 1.05)) == "; the interval reaches within the 10 % a rerun moves such a " \
                                                      "ratio"


def test_a_point_without_a_ratio_is_not_formed_and_says_why() -> None:
    c = paired.paired_ratio({"ratio": math.nan, "ratio_ci_low": 0.9, "ratio_ci_high": 1.1})
    assert c.reason == "no ratio" and not c.formed


def test_flops_counted_by_different_methods_are_not_divided() -> None:
    t = {"framework": "torch", "formulation": "unrolled", "size": "S", "mode": "compiled", "point": "plain",
         "device": "cpu", "workload": "transformer", "cost_method": "torch compiled", "flops": 2e9}
    j = t | {"framework": "jax", "cost_method": "jax compiled", "flops": 1e9}
    assert paired.across(t, j, "flops").reason == "different methods"
    assert paired.across(t, j, "saved_bytes").reason == "different memory methods"


def test_a_point_with_equal_memory_and_more_time_is_not_beaten() -> None:
    # the second point is slower at the same memory: no point is both faster and smaller, so both stay optimal
    assert paired.pareto([1.0, 2.0], [5.0, 5.0]) == [True, True]


def test_roofline_without_process_medians_scales_asv_statistics() -> None:
    row = {"process_medians": "", "value": 0.5, "q25": 0.25, "q75": 0.75, "samples": 3}
    got = roofline._values(row, 4.0)
    assert (got["value"], got["q25"], got["q75"], got["spread"]) == (2.0, 1.0, 3.0, 2.0)
    assert math.isnan(got["ci_low"]) and got["status"] == "ok"


def test_figure_rows_merge_the_same_op_under_its_short_name() -> None:
    # PyTorch's aten.mul and JAX's mul are one op: one bar name for both; aten.addmm (PyTorch only) keeps its name
    sel = pd.DataFrame([
        {"workload": "mlp", "variant": "plain", "framework": "torch", "op": "aten.mul", "nbytes": 100,
         "is_argument": False},
        {"workload": "mlp", "variant": "plain", "framework": "torch", "op": "aten.addmm", "nbytes": 40,
         "is_argument": False},
        {"workload": "mlp", "variant": "plain", "framework": "jax", "op": "mul", "nbytes": 60, "is_argument": False},
        {"workload": "mlp", "variant": "plain", "framework": "jax", "op": "x", "nbytes": 8, "is_argument": True},
    ])
    assert breakdown._figure_rows(sel, "mlp") == [
        {"case": "plain", "framework": "torch", "op": "mul", "bytes": 100, "is_argument": False},
        {"case": "plain", "framework": "torch", "op": "aten.addmm", "bytes": 40, "is_argument": False},
        {"case": "plain", "framework": "jax", "op": "mul", "bytes": 60, "is_argument": False},
    ]
