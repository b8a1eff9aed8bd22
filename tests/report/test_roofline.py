"""The roofline derived in the report (tape_vs_trace.report.roofline: per process, GradStep median x calibrated matmul
rate / matmul flops) and the compile time sampled across processes, against numbers worked out by hand from the
synthetic results folder of tests/report/helpers.py (t(0.975, 2) = 4.3027), and which rows the roofline covers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tape_vs_trace.report import roofline, stats
from tape_vs_trace.report.load import load_results
from tape_vs_trace.results.rowkey import RowKey
from tests.report.helpers import FW, TAIL, bench, entry, md_table, report_text, table_row, unrendered, write_results

RATE = 1e11  # flop/s, the calibration's float32 matmul rate

FLOPS = {"torch": 2e6, "jax": 4e6}  # GraphCost_mlp.track_flops per framework

COST_NAMES = ["framework", "workload", "size", "dtype", "precision", "device"]

COMPILE_NAMES = ["framework", "workload", "size", "cache", "dtype", "precision", "device"]

# Seconds of the first compiled call, one per process: three processes per framework.
COMPILE = {"torch": [10.0, 12.0, 11.0], "jax": [2.0, 2.2, 2.1]}


def _edit(root: Path, calibration: dict | None) -> Path:
    """The synthetic folder plus GraphCost_mlp.track_flops and CompileSeconds_mlp.time_compile_seconds, with
    `calibration` (None: none recorded)."""
    benchmarks = json.loads((root / "benchmarks.json").read_text())
    cost = [FW, ["'mlp'"], ["'s'"], *TAIL]
    compile_ = [FW, ["'mlp'"], ["'s'"], ["'cold'"], *TAIL]
    benchmarks["recording.GraphCost_mlp.track_flops"] = bench("recording.GraphCost_mlp.track_flops", "track",
                                                              "flops", COST_NAMES, cost)
    benchmarks["recording.CompileSeconds_mlp.time_compile_seconds"] = bench(
        "recording.CompileSeconds_mlp.time_compile_seconds", "time", "seconds", COMPILE_NAMES, compile_,
        rounds=3, repeat=1)
    (root / "benchmarks.json").write_text(json.dumps(benchmarks))
    path = root / "box" / "abc12300-existing-venv.json"
    data = json.loads(path.read_text())
    data["results"]["recording.GraphCost_mlp.track_flops"] = entry(cost, [FLOPS["torch"], FLOPS["jax"]])
    data["results"]["recording.CompileSeconds_mlp.time_compile_seconds"] = entry(
        compile_, [11.0, 2.1], [COMPILE["torch"], COMPILE["jax"]])
    if calibration is None:
        data["tape_vs_trace"].pop("calibration")
    else:
        data["tape_vs_trace"]["calibration"] = calibration
    path.write_text(json.dumps(data, allow_nan=True))
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[pd.DataFrame, str, list[str]]:
    from tape_vs_trace import report

    root = _edit(write_results(tmp_path_factory.mktemp("roofline") / "results"),
                 {"matmul_flops_per_s": {"float32": RATE}})
    warnings: list[str] = []
    with unrendered():  # the tests read the table and the text
        report.write_report(root, root.parent / "report", warnings.append)
    table = pd.read_csv(root.parent / "report" / "summary.csv", keep_default_na=False)
    return table, report_text(root.parent / "report"), warnings


def test_roofline_is_scaled_per_process_and_gets_an_interval(built) -> None:
    table, _, warnings = built
    r = table_row(table, "torch", "eager", metric="time_over_matmul_peak")
    # PyTorch eager per-process medians 1.15, 2.15, 1.55 ms x 1e11 flop/s / 2e6 flops = 57.5, 107.5, 77.5
    assert json.loads(r.process_medians) == pytest.approx([57.5, 107.5, 77.5])
    # the value: their geometric mean, exp(4.35985) = 78.245 (logs below)
    assert float(r.value) == pytest.approx(78.245, rel=1e-4) and int(r.processes) == 3 and int(r.samples) == 12
    # logs 4.05178, 4.67750, 4.35028: mean 4.35985, sd 0.31296, sem 0.18069, half-width 4.3027 x 0.18069 = 0.77744:
    # exp(4.35985 -+ 0.77744) = [35.96, 170.3]
    assert float(r.ci_low) == pytest.approx(35.96, rel=1e-3) and float(r.ci_high) == pytest.approx(170.3, rel=1e-3)
    assert r.basis == "processes" and r.benchmark == "recording.GradStep_mlp.time_over_matmul_peak"
    assert r.method.startswith(roofline.METHOD) and "1e+11 flop/s" in r.method and "2e+06 flops" in r.method
    # JAX compiled: 1.1, 1.3, 0.9 ms x 1e11 / 4e6 = 27.5, 32.5, 22.5, geometric mean 27.194
    assert float(table_row(table, "jax", "compiled", metric="time_over_matmul_peak").value) == pytest.approx(27.194,
                                                                                                             rel=1e-4)
    assert not [w for w in warnings if roofline.METRIC in w]


def test_roofline_ratio_comes_from_the_same_rule(built, tmp_path: Path) -> None:
    _, text, _ = built
    table = load_results(_edit(write_results(tmp_path / "results"), {"matmul_flops_per_s": {"float32": RATE}}),
                         lambda _: None).table
    rows = [table_row(table, fw, "eager", metric="time_over_matmul_peak").to_dict() for fw in ("torch", "jax")]
    ratio = stats.compare(*rows)
    # the ratio of the two geometric means of the process medians: the centre of Welch's interval
    logs = [np.log(json.loads(r["process_medians"])).mean() for r in rows]
    assert ratio.ratio == pytest.approx(np.exp(logs[1] - logs[0])) and math.isclose(ratio.ratio, np.sqrt(
        ratio.low * ratio.high), rel_tol=1e-9) and math.isfinite(ratio.low) and math.isfinite(ratio.high)
    # the per-process logs are the step's shifted by constants: Welch's interval is the time ratio's, scaled by
    # (1e11 / 4e6) / (1e11 / 2e6) = 0.5 (time ratio 2.065, interval 0.975-4.28)
    assert ratio.low == pytest.approx(0.975 * 0.5, rel=2e-3) and ratio.high == pytest.approx(4.28 * 0.5, rel=2e-3)
    cells = md_table(text, "time_over_matmul_peak")["mlp s eager"]
    assert cells[-1] == "1.02× [0.488–2.14] (no difference measurable)"


def test_compile_seconds_ratio_has_an_interval(built) -> None:
    table, text, _ = built
    r = table_row(table, "torch", "cold", metric="time_compile_seconds")
    # the geometric mean of the processes, exp(2.39513) = 10.97
    assert float(r.value) == pytest.approx(10.9696, rel=1e-4) and int(r.processes) == 3 and r.basis == "processes"
    assert r.ci_low != ""
    # 2.1 / 11 = 0.191; logs: JAX mean 0.74118, var/n 0.000757, PyTorch mean 2.39513, var/n 0.002772; Welch dof
    # 3.02, t = 3.18, half-width 0.189 around -1.65395: [0.158, 0.231], which excludes 1 (no "no difference")
    cells = md_table(text, "time_compile_seconds")["mlp s cold"]
    assert cells[-1] == "0.191× [0.158–0.231]"


def test_without_a_calibration_nothing_is_derived_and_one_warning_says_so(tmp_path: Path) -> None:
    root = _edit(write_results(tmp_path / "results"), None)
    warnings: list[str] = []
    table = load_results(root, warnings.append).table
    assert not (table.metric == roofline.METRIC).any()
    assert [w for w in warnings if roofline.METRIC in w] == [
        f"1 result file(s) in {root} give no time_over_matmul_peak (no calibration or matmul flops count recorded); "
        "--verbose lists them by file"]
    warnings.clear()
    load_results(root, warnings.append, verbose=True)
    assert [w for w in warnings if roofline.METRIC in w] == [
        f"{root.as_posix()}/box/abc12300-existing-venv.json: no calibration recorded (tape-vs-trace scrub-results "
        "stores it): no time_over_matmul_peak derived"]


def test_without_a_flops_count_nothing_is_derived_for_that_framework(tmp_path: Path) -> None:
    root = _edit(write_results(tmp_path / "results"), {"matmul_flops_per_s": {"float32": RATE}})
    path = root / "box" / "abc12300-existing-venv.json"
    data = json.loads(path.read_text())
    data["results"]["recording.GraphCost_mlp.track_flops"][0] = [None, FLOPS["jax"]]  # PyTorch's count failed
    path.write_text(json.dumps(data))
    warnings: list[str] = []
    table = load_results(root, warnings.append, verbose=True).table
    assert set(table[table.metric == roofline.METRIC].framework) == {"jax"}
    assert [w for w in warnings if roofline.METRIC in w] == [
        f"{root.as_posix()}/box/abc12300-existing-venv.json: no time_over_matmul_peak derived where the result file "
        "has no recording.GraphCost_mlp.track_flops of torch"]


def test_roofline_without_process_medians_scales_asv_statistics() -> None:
    row = {"process_medians": "", "value": 0.5, "q25": 0.25, "q75": 0.75, "samples": 3}
    got = roofline._values(row, 4.0)
    assert (got["value"], got["q25"], got["q75"], got["spread"]) == (2.0, 1.0, 3.0, 2.0)
    assert math.isnan(got["ci_low"]) and got["status"] == "ok"


def roofline_input(benchmark: str, value: float, formulation: str, **extra) -> dict:
    """A summary row as roofline.derive reads it: one case of mlp on machine m, file f.json."""
    return {"machine": "m", "file": "f.json", "commit": "c", "benchmark": benchmark, "status": "ok",
            "framework": "torch", "workload": "mlp", "size": "s", "dtype": "float32", "precision": "highest",
            "params": json.dumps({"framework": "torch", "formulation": formulation}), "value": value,
            "q25": value, "q75": value, "process_medians": "", "samples": None} | extra


def test_a_zero_flops_count_is_no_count() -> None:
    flops = "recording.GraphCost_mlp.track_flops"
    table = pd.DataFrame([roofline_input(flops, 0.0, "unrolled"),
                          roofline_input(flops, FLOPS["torch"], "plain", framework="jax")])
    # 'plain': how results before the formulation vocabulary named a workload without a loop (None)
    case = RowKey("recording", "", "jax", "mlp", "s", axes=(("formulation", None),))
    assert roofline._flops(table) == {("m", "f.json", case): FLOPS["torch"]}


def test_a_step_and_its_flops_count_share_a_case() -> None:
    count = roofline_input("recording.GraphCost_mlp.track_flops", FLOPS["torch"], "unrolled")
    step = roofline_input(roofline.source("mlp"), 0.001, "unrolled", dtype="bfloat16")
    step["params"] = json.dumps({"framework": "torch", "mode": "compiled", "style": "matched",
                                 "formulation": "unrolled"})
    # the step's mode, style, dtype and its benchmark are not the count's
    assert roofline._case(step) == roofline._case(count)
    for other in ({"framework": "jax"}, {"size": "l"}, {"params": json.dumps({"formulation": "scan"})}):
        assert roofline._case(step | other) != roofline._case(count), other
    # no formulation, '' and 'plain' name one case: a workload without a loop
    plain = {roofline._case(count | {"params": json.dumps(p)}) for p in ({}, {"formulation": ""},
                                                                         {"formulation": "plain"})}
    assert len(plain) == 1


def test_a_row_outside_the_covered_formulations_does_not_stop_the_next() -> None:
    step = roofline.source("mlp")
    table = pd.DataFrame([roofline_input(step, 0.001, "scan"), roofline_input(step, 0.002, "unrolled"),
                          roofline_input("recording.GraphCost_mlp.track_flops", FLOPS["torch"], "unrolled")])
    details = {("m", "c"): {"calibration": {"matmul_flops_per_s": {"float32": RATE}}}}
    warnings: list[str] = []
    [row] = roofline.derive(table, details, warnings.append)
    # 2 ms x 1e11 flop/s / 2e6 flops = 100 times the matmul-peak time
    assert row["value"] == pytest.approx(100.0) and json.loads(row["params"])["formulation"] == "unrolled"
    assert warnings == []
