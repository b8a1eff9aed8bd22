"""The report's statistics and THE ratio rule (tape_vs_trace.report.stats): called directly, each expected value
worked out by hand, and read back from a report built from the synthetic results folder (tests/report/helpers.py).

Intervals are Student-t intervals on the logarithms of the per-process medians (n - 1 degrees of freedom), and
Welch's t interval on the difference of mean logarithms for a ratio. Hand arithmetic: per-process medians 1, 2 and 4
have logarithms 0, ln 2, 2 ln 2: mean ln 2, sample standard deviation ln 2, standard error ln 2 / sqrt(3). Student's
t(0.975, 2 degrees of freedom) = 4.302653 (any t table)."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

from implementations import frameworks, metrics
from tape_vs_trace.report import stats
from tape_vs_trace.report.stats import Comparison
from tests.report.helpers import FIXTURE, MS, md_table, report_text, summary_row, table_row, unrendered

GPU_FIXTURE = FIXTURE.parent / "gpu_fixture" / "gpu-nvidia-h200"  # synthetic CUDA results, never cited

# log(0) and log(-1) are the inputs under test in the refusals below.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


T_975_2 = 4.302653

HALF = T_975_2 * math.log(2) / math.sqrt(3)  # half-width on the log scale for medians 1, 2, 4


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5)


def test_median_interval_is_student_t_on_logs() -> None:
    low, high = stats.median_interval([1.0, 2.0, 4.0])
    assert close(low, 2 * math.exp(-HALF)) and close(high, 2 * math.exp(HALF))
    low, high = stats.median_interval([4, 1, 2])  # integers and any order
    assert close(low, 2 * math.exp(-HALF)) and close(high, 2 * math.exp(HALF))


def test_median_interval_of_identical_processes_is_the_value_without_a_warning() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # make bench printed scipy's RuntimeWarning for every baseline's own ratio
        low, high = stats.median_interval([3.0, 3.0, 3.0])
    assert close(low, 3.0) and close(high, 3.0)


@pytest.mark.parametrize("per_process", [[2.0], [], [1.0, 0.0, 2.0], [1.0, -1.0, 2.0], [1.0, math.inf]])
def test_median_interval_needs_two_positive_finite_values(per_process: list) -> None:
    low, high = stats.median_interval(per_process)
    assert math.isnan(low) and math.isnan(high)


def test_ratio_interval_is_welch_t_on_log_differences() -> None:
    # numerator medians 1, 2, 4 (variance of the mean (ln 2)^2 / 3), denominator 2, 2, 2 (variance 0): the mean log
    # difference is ln 2 - ln 2 = 0 and Welch's degrees of freedom are (vx)^2 / (vx^2 / 2) = 2.
    low, high = stats.ratio_interval([1.0, 2.0, 4.0], [2.0, 2.0, 2.0])
    assert close(low, math.exp(-HALF)) and close(high, math.exp(HALF))
    # Swapping the roles inverts the interval.
    low, high = stats.ratio_interval([2, 2, 2], [1, 2, 4])
    assert close(low, math.exp(-HALF)) and close(high, math.exp(HALF))


def test_ratio_interval_of_two_spread_sides() -> None:
    # x = ln[1, e] = [0, 1] and y = ln[e^2, e^3] = [2, 3]: each variance of the mean 0.5 / 2 = 0.25, so Welch's degrees
    # of freedom are 0.5^2 / (0.25^2 + 0.25^2) = 2; the mean difference is 0.5 - 2.5 = -2.
    low, high = stats.ratio_interval([1.0, math.e], [math.e ** 2, math.e ** 3])
    half = T_975_2 * math.sqrt(0.5)
    assert close(low, math.exp(-2 - half)) and close(high, math.exp(-2 + half))


def test_ratio_interval_of_constant_processes_is_exact() -> None:
    low, high = stats.ratio_interval([6.0, 6.0], [2.0, 2.0, 2.0])
    assert close(low, 3.0) and close(high, 3.0)


@pytest.mark.parametrize(("num", "den"), [([1.0], [1.0, 2.0]), ([1.0, 2.0], [3.0]), ([0.0, 1.0], [1.0, 2.0]),
                                          ([1.0, 2.0], [1.0, math.nan])])
def test_ratio_interval_needs_two_positive_values_per_side(num: list, den: list) -> None:
    low, high = stats.ratio_interval(num, den)
    assert math.isnan(low) and math.isnan(high)


def test_summarise_a_failed_result() -> None:
    row = stats.summarise(None, 1.0, 2.0, [1.0, 2.0], True, stats.Split(2, 1))
    assert row["status"] == "failed" and row["processes"] is None and row["samples"] is None
    assert row["basis"] == "" and row["process_medians"] == ""
    for key in ("value", "spread", "q25", "q75", "ci_low", "ci_high"):
        assert math.isnan(row[key])


def test_summarise_an_exact_count() -> None:
    row = stats.summarise(7, None, None, None, False, stats.Split(3, 1))
    assert row == {"value": 7.0, "spread": 0.0, "q25": 7.0, "q75": 7.0, "ci_low": 7.0, "ci_high": 7.0,
                   "processes": None, "samples": None, "basis": "exact", "process_medians": "", "status": "ok"}
    assert isinstance(row["value"], float)


def test_summarise_per_process_medians() -> None:
    # Three processes of three samples: medians 2, 5 and 20; their quartiles (linear interpolation) 3.5 and 12.5;
    # the value is their geometric mean, the centre of the interval (200 ** (1/3) = 5.848), not their median 5.
    samples = [3.0, 1.0, 2.0, 5.0, 4.0, 6.0, 10.0, 30.0, 20.0]
    row = stats.summarise(99.0, 0.0, 0.0, samples, True, stats.Split(3, 3))
    low, high = stats.median_interval([2.0, 5.0, 20.0])
    assert close(row.pop("value"), 200.0 ** (1 / 3)) and close(math.sqrt(low * high), 200.0 ** (1 / 3))
    assert row == {"spread": 9.0, "q25": 3.5, "q75": 12.5, "ci_low": low, "ci_high": high,
                   "processes": 3, "samples": 9, "basis": "processes", "process_medians": "[2.0, 5.0, 20.0]",
                   "status": "ok"}
    assert json.loads(row["process_medians"]) == [2.0, 5.0, 20.0]


def test_summarise_one_process() -> None:
    row = stats.summarise(2.0, 1.0, 3.0, [1.0, 2.0, 30.0], True, stats.Split(1, (1, 10, 5.0)))
    assert row["value"] == 2.0 and row["spread"] == 0.0 and row["q25"] == row["q75"] == 2.0
    assert row["processes"] == 1 and row["samples"] == 3 and row["basis"] == "one process"
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"]) and row["process_medians"] == "[2.0]"


@pytest.mark.parametrize(("samples", "split", "count", "basis"), [
    ([1.0] * 6, stats.Split(2, 4), 6, "asv: 6 samples do not split into processes of 4"),
    ([1.0, 2.0], stats.Split(2, 0), 2, "asv: repeat is not a fixed count, so samples cannot be assigned to processes"),
    (None, stats.Split(2, 2), None, "asv: no samples recorded (run without --record-samples)"),
    ([], stats.Split(1, 2), None, "asv: no samples recorded (run without --record-samples)"),
    ([1.0, "x"], stats.Split(1, 2), None, "asv: no samples recorded (run without --record-samples)"),
])
def test_summarise_falls_back_to_asv_quartiles(samples, split: stats.Split, count, basis: str) -> None:
    row = stats.summarise(2.0, 1.5, 4.0, samples, True, split)
    assert row == {"value": 2.0, "spread": 2.5, "q25": 1.5, "q75": 4.0, "ci_low": row["ci_low"],
                   "ci_high": row["ci_high"], "processes": None, "samples": count, "basis": basis,
                   "process_medians": "", "status": "ok"}
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])


def test_summarise_without_quartiles() -> None:
    row = stats.summarise(2.0, None, None, None, True, stats.Split(1, 1))
    assert math.isnan(row["q25"]) and math.isnan(row["q75"]) and math.isnan(row["spread"])


def ratio_row(**change) -> dict:
    base = {"machine": "m", "commit": "c", "benchmark": "b", "benchmark_version": "1", "metric": "time_step",
            "status": "ok", "comparable": True, "sampled": True, "memory_method": "", "basis": "processes",
            "framework": "torch", "value": 2.0, "params": '{"framework":"torch","variant":"plain"}',
            "process_medians": "[2.0, 2.0, 2.0]"}
    return base | change


def test_change_within_one_framework() -> None:
    a = ratio_row()
    b = ratio_row(value=6.0, params='{"framework":"torch","variant":"remat"}', process_medians="[6.0, 6.0]")
    c = stats.change(a, b)
    assert c.ratio == 3.0 and close(c.low, 3.0) and close(c.high, 3.0) and c.formed and c.note == ""


@pytest.mark.parametrize("key", ["machine", "commit", "framework", "metric", "memory_method"])
def test_change_refuses_rows_that_differ_in(key: str) -> None:
    c = stats.change(ratio_row(), ratio_row(**{key: "other"}))
    assert c.reason == "not like rows" and math.isnan(c.ratio)


def test_change_refusals() -> None:
    assert stats.change(None, ratio_row()).reason == "only one framework ran"
    assert stats.change(ratio_row(), None).reason == "only one framework ran"
    assert stats.change(ratio_row(status="failed"), ratio_row()).reason == "failed"
    assert stats.change(ratio_row(), ratio_row(status="failed")).reason == "failed"
    assert stats.change(ratio_row(value=0.0), ratio_row()).reason == "divisor is zero"
    assert stats.change(ratio_row(), ratio_row(value=0.0)).ratio == 0.0  # a zero numerator is a ratio


def test_compare_refuses_a_zero_divisor_and_reads_params_without_a_framework() -> None:
    a, b = ratio_row(), ratio_row(framework="jax", value=4.0)
    assert stats.compare(a, b).ratio == 2.0
    assert stats.compare(ratio_row(value=0.0), b).reason == "divisor is zero"
    # Rows whose parameters do not name the framework are still like rows.
    c = stats.compare(ratio_row(params='{"mode":"eager"}'),
                      ratio_row(framework="jax", value=4.0, params='{"mode":"eager"}'))
    assert c.formed and c.ratio == 2.0


def test_interval_of_two_exact_rows_is_the_ratio() -> None:
    c = stats.change(ratio_row(sampled=False, process_medians=""),
                     ratio_row(sampled=False, value=5.0, process_medians=""))
    assert (c.ratio, c.low, c.high) == (2.5, 2.5, 2.5)


@pytest.mark.parametrize(("a", "b", "note"), [
    (ratio_row(basis="one process", process_medians="[2.0]"), ratio_row(value=4.0), "one process"),
    (ratio_row(value=4.0), ratio_row(basis="one process", process_medians="[2.0]"), "one process"),
    (ratio_row(basis="asv: x", process_medians=""), ratio_row(value=4.0), "no samples recorded"),
    (ratio_row(value=4.0), ratio_row(basis="asv: x", process_medians=""), "no samples recorded"),
    # One side exact, the other sampled: no interval, named by the side that lacks processes.
    (ratio_row(sampled=False, basis="exact", process_medians=""), ratio_row(value=4.0), "no samples recorded"),
    (ratio_row(basis="one process", process_medians="[2.0]"), ratio_row(value=4.0, basis="asv: x", process_medians=""),
     "one process"),
])
def test_interval_missing_processes_is_named(a: dict, b: dict, note: str) -> None:
    c = stats.change(a, b)
    assert c.ratio == b["value"] / a["value"] and c.note == note and c.differs is None
    assert math.isnan(c.low) and math.isnan(c.high)


def test_two_processes_are_enough_for_an_interval() -> None:
    # medians 1 and 4: logs 0 and 2 ln 2, mean ln 2, standard error ln 2; t(0.975, 1) = 12.7062 (any t table).
    low, high = stats.median_interval([1.0, 4.0])
    assert close(low, 2 * math.exp(-12.7062 * math.log(2))) and close(high, 2 * math.exp(12.7062 * math.log(2)))
    row2 = stats.summarise(1.0, None, None, [1.0, 1.0, 4.0, 4.0], True, stats.Split(2, 2))
    assert row2["basis"] == "processes" and row2["processes"] == 2 and close(row2["value"], 2.0)  # sqrt(1 x 4)
    c = stats.change(ratio_row(process_medians="[2.0, 2.0]"), ratio_row(value=4.0, process_medians="[4.0, 4.0]"))
    assert close(c.low, 2.0) and close(c.high, 2.0) and c.note == ""
    # Two processes against one: the one-process side is named.
    c = stats.change(ratio_row(process_medians="[2.0, 2.0]"),
                     ratio_row(value=4.0, basis="one process", process_medians="[4.0]"))
    assert c.note == "one process"


def test_one_sample_per_process_splits_into_processes() -> None:
    assert stats.Split(3, 1).chunks([1.0, 2.0, 3.0]) == ([[1.0], [2.0], [3.0]], "")


def test_value_iqr_and_interval_come_from_per_process_medians(synthetic_report) -> None:
    table, text, _ = synthetic_report
    r = table_row(table, "torch", "eager", "GradStep_mlp.time_step")
    # per-process medians 1.15, 2.15, 1.55 ms: their geometric mean exp(0.44783) = 1.5649 ms (the interval's centre),
    # not their median 1.55 nor asv's pooled median of the 12 samples (1.84 ms)
    assert math.isclose(float(r.value), 1.5649 * MS, rel_tol=1e-4) and int(r.processes) == 3 and int(r.samples) == 12
    assert math.isclose(float(r.q25), 1.35 * MS) and math.isclose(float(r.q75), 1.85 * MS)
    assert math.isclose(float(r.spread), 0.5 * MS)
    # t interval on the logs: mean(ln) 0.44783, sd 0.31296, sem 0.18069, t(0.975, 2) = 4.3027, half-width 0.77744:
    # exp(0.44783 -+ 0.77744) = [0.7192, 3.405] ms
    assert math.isclose(float(r.ci_low), 0.7192 * MS, rel_tol=1e-4) and math.isclose(float(r.ci_high), 3.405 * MS,
                                                                                          rel_tol=1e-4)
    assert r.benchmark_version == 3 or r.benchmark_version == "3"
    assert r.run_date.startswith("2023-11-14")
    cells = md_table(text, "time_step")["mlp s eager"]
    assert cells[1] == "1.565 [0.7192–3.405]" and cells[2] == "0.5"


def test_the_reports_ratio_interval_is_welch_t_on_logs(synthetic_report) -> None:
    _, text, _ = synthetic_report
    rows = md_table(text, "time_step")
    # exp(1.16215 - 0.44783) = 2.043; logs: JAX mean 1.16215, var/n 0.0013, PyTorch mean 0.44783, var/n 0.032648;
    # Welch dof 2.160, t = 4.0116, half-width 0.73684: exp(0.71432 -+ 0.73684) = [0.975, 4.28]: the noisy PyTorch
    # processes leave 1 inside
    assert rows["mlp s eager"][-1] == "2.04× [0.975–4.28] (no difference measurable)"
    # geometric means 1.1 / 1.2: 0.915; Welch dof 3.969, t = 2.7851: [0.613, 1.37]: holds 1
    assert rows["mlp s compiled"][-1] == "0.915× [0.613–1.37] (no difference measurable)"


def test_exact_metrics_are_their_own_interval(synthetic_report) -> None:
    table, text, _ = synthetic_report
    r = table_row(table, "jax", "", "track_saved_bytes")
    assert float(r.ci_low) == float(r.ci_high) == float(r.value) == 3 * 2 ** 19 and r.basis == "exact"
    assert md_table(text, "track_saved_bytes")["mlp s"][1:] == ["1", "1.5", "1.5× (exact)"]


def test_one_process_and_failed_and_skipped(synthetic_report) -> None:
    table, text, _ = synthetic_report
    r = table_row(table, "jax", "no_grad", "time_forward")
    assert int(r.processes) == 1 and r.ci_low == "" and r.basis == "one process"
    rows = md_table(text, "time_forward")
    assert rows["mlp s no_grad"][-1] == "2× (no interval: one process)"
    assert rows["mlp s record"][1] == "failed" and rows["mlp s record"][3] == "not run"
    assert rows["mlp s record"][-1] == "— (JAX not run: s is not a size of mlp)"  # the skip rule, not a bare gap
    # the reason is the suite's skip rule for these parameters (the synthetic size is none of the mlp's)
    line = next(t for t in text.splitlines() if t.startswith("- JAX ") and "s is not a size of mlp: " in t)
    assert "`Forward_mlp.time_forward` mlp s record" in line
    assert any(t.startswith("| JAX ") and ": s is not a size of mlp | " in t for t in text.splitlines())


def test_refusals_in_the_tables(synthetic_report) -> None:
    _, text, warnings = synthetic_report
    assert {r[-1] for r in md_table(text, "track_peak_bytes").values()} == {"— (different memory methods)"}
    assert md_table(text, "track_graph_size")["mlp s"][-1] == "— (counts different things)"
    assert md_table(text, "track_mystery")["mlp s"][-1] == "— (counts different things)"
    assert [w for w in warnings if "track_mystery" in w] == [
        "metric track_mystery is not in implementations.metrics: read as exact (asv type track), no ratio"]


def like(**change) -> tuple[dict, dict]:
    base = {"machine": "m", "commit": "c", "benchmark": "b", "benchmark_version": "1", "metric": "time_step",
            "status": "ok", "comparable": True, "sampled": True, "memory_method": "", "basis": "processes"}
    t = base | {"framework": "torch", "value": 2.0, "params": '{"framework":"torch","mode":"eager"}',
                "process_medians": "[1.9, 2.0, 2.1]"}
    j = base | {"framework": "jax", "value": 4.0, "params": '{"framework":"jax","mode":"eager"}',
                "process_medians": "[4.0, 4.0, 4.0]"}
    return t, j | change


@pytest.mark.parametrize(("change", "reason"), [
    ({"params": '{"framework":"jax","mode":"compiled"}'}, "not like rows"),
    ({"benchmark_version": "2"}, "not like rows"),
    ({"status": "failed"}, "failed"),
    ({"comparable": False}, "counts different things"),
    ({"memory_method": "jax compiled.memory_analysis"}, "different memory methods"),
])
def test_ratio_rule_refuses_unlike_rows(change: dict, reason: str) -> None:
    assert stats.compare(*like()).formed
    t, j = like(**change)
    c = stats.compare(t, j)
    assert c.reason == reason and math.isnan(c.ratio)
    assert stats.compare(t, None).reason == "only one framework ran"


def test_cuda_allocator_peaks_are_one_method_and_cpu_methods_are_not() -> None:
    """On CUDA both frameworks read their allocator's high-water mark (one kind of method, two counter names); on a
    CPU live-storage tracking and XLA's buffer plan are not divided, nor JAX's memory_analysis standing in on CUDA."""
    cuda = {fw: frameworks.memory_method(fw, "cuda") for fw in frameworks.NAMES}
    cpu = {fw: frameworks.memory_method(fw, "cpu") for fw in frameworks.NAMES}
    assert frameworks.same_memory_method(cuda["torch"], cuda["jax"])
    t, j = like()
    for a, b in ((cpu["torch"], cpu["jax"]), (cuda["torch"], cpu["jax"]),
                 (cuda["torch"], "jax compiled.memory_analysis (output+temp-alias; arguments are the baseline)"),
                 (cuda["torch"], "")):
        c = stats.compare(t | {"memory_method": a}, j | {"memory_method": b})
        assert c.reason == "different memory methods", (a, b)


def test_cuda_peaks_of_unlike_modes_get_no_ratio() -> None:
    """PyTorch's probe measures the eager tape, JAX's a jitted program: one method on CUDA, two modes, no ratio."""
    cuda = {fw: frameworks.memory_method(fw, "cuda") for fw in frameworks.NAMES}
    t, j = like(metric="track_peak_bytes", sampled=False)
    t["metric"] = "track_peak_bytes"
    c = stats.compare(t | {"memory_method": cuda["torch"]}, j | {"memory_method": cuda["jax"]})
    assert c.reason == "unlike modes: PyTorch eager, JAX compiled" and math.isnan(c.ratio)
    # within one framework the mode is the same: a remat policy's peak against plain is still divided
    assert stats.change(t | {"memory_method": cuda["torch"]}, t | {"memory_method": cuda["torch"], "value": 3.0}
                        ).ratio == 1.5


def test_gpu_fixture_peaks_get_no_ratio_in_the_report(results: Path, tmp_path: Path) -> None:
    """A CUDA results folder (tests/data/gpu_fixture: synthetic) with PyTorch's eager and JAX's jitted peaks of the
    remat policies: summary.md prints each peak and no JAX/PyTorch ratio, with the reason."""
    from tape_vs_trace import report

    shutil.copytree(GPU_FIXTURE, results / "gpu-nvidia-h200")
    with unrendered():  # the test reads the text
        report.write_report(results, tmp_path / "report", lambda line: None)
    gpu_section, cpu_section = (report_text(tmp_path / "report" / m)
                                for m in ("gpu-nvidia-h200", "cpu-amd-epyc-2c"))  # each machine's page
    rows = md_table(gpu_section, "track_peak_bytes")
    assert len(rows) == 3 and all(r[-1] == "— (unlike modes: PyTorch eager, JAX compiled)" for r in rows.values())
    # the library workspace inside a CUDA peak is named apart from it; a CPU's peaks have none
    assert "GEMM-library workspace" in gpu_section and "GEMM-library workspace" not in cpu_section


def test_no_ratio_between_unlike_formulations() -> None:
    """JAX's LSTM runs in lax.scan, PyTorch's in a Python loop over steps: no ratio, and the reason."""
    t, j = like(benchmark="remat.RematCost_lstm.track_peak_bytes")
    t["benchmark"] = j["benchmark"]
    assert stats.compare(t, j).reason == "scan against unrolled"
    t["benchmark"] = j["benchmark"] = "remat.RematCost_mlp.track_peak_bytes"
    assert stats.compare(t, j).formed


def test_ratio_rule_on_like_rows() -> None:
    c = stats.compare(*like())
    # logs: PyTorch mean 0.69231, var/n 0.000835; JAX ln 4 exactly (var 0); Welch dof 2, t = 4.3027, half-width
    # 0.12434: exp(0.69398 -+ 0.12434) = [1.768, 2.267]
    assert c.ratio == 2.0 and c.differs is True
    assert math.isclose(c.low, 1.768, rel_tol=1e-3) and math.isclose(c.high, 2.267, rel_tol=1e-3)
    assert stats.compare(*like(process_medians="", basis="asv: no samples")).note == "no samples recorded"


def test_split_refuses_what_it_cannot_assign() -> None:
    assert stats.Split(2, 3).chunks([1, 2, 3, 4, 5, 6])[0] == [[1, 2, 3], [4, 5, 6]]
    assert stats.Split(2, 4).chunks([1, 2, 3, 4, 5, 6])[0] is None
    assert stats.Split(2, [1, 10, 5.0]).chunks([1, 2, 3])[0] is None
    assert re.search("not a fixed count", stats.Split(2, 0).chunks([1.0])[1])


@pytest.mark.parametrize(("comparison", "differs", "reaches"), [
    # between processes (the default resolution, 10 %): the interval must exclude every change up to 10 %
    (stats.Comparison(1.05, 1.02, 1.08), False, True),
    (stats.Comparison(0.95, 0.93, 0.97), False, True),
    (stats.Comparison(1.25, 1.05, 1.4), False, True),  # a large ratio whose interval reaches 1.05: not stated
    (stats.Comparison(1.2, 1.11, 1.3), True, False),
    (stats.Comparison(0.8, 0.7, 0.9), True, False),  # 0.9 < 1 / 1.1 = 0.90909
    (stats.Comparison(0.85, 0.7, 0.91), False, True),  # 0.91 > 0.90909
    (stats.Comparison(1.2, 1.1, 1.3), False, True),  # an interval ending at exactly 1.1 reaches the band
    (stats.Comparison(1.5, 0.9, 2.5), False, True),  # the interval holds 1
    # paired, within one process (3 %)
    (stats.Comparison(1.05, 1.04, 1.06, resolution=stats.WITHIN_PROCESS), True, False),
    (stats.Comparison(1.07, 1.01, 1.13, resolution=stats.WITHIN_PROCESS), False, True),
    (stats.Comparison(0.96, 0.95, 0.97, resolution=stats.WITHIN_PROCESS), True, False),  # 0.97 < 1 / 1.03 = 0.9709
    # exact values: any difference is one
    (stats.Comparison(1.01, 1.01, 1.01), True, None),
    (stats.Comparison(1.0, 1.0, 1.0), False, None),
    (stats.Comparison(1.05, note="one process"), None, None),
])
def test_a_sampled_ratio_differs_only_when_its_interval_clears_the_resolution(comparison, differs, reaches) -> None:
    assert comparison.differs is differs
    assert comparison.reaches_resolution is reaches


@pytest.mark.parametrize(("low", "high", "differs"), [
    (0.9, 1.0, False),  # an interval that ends at 1 holds 1
    (1.0, 1.2, False),
    (1.01, 1.2, True),
    (0.5, 0.99, True),
    (math.nan, 1.2, None),
    (0.9, math.inf, None),
])
def test_differs_is_whether_the_interval_excludes_one(low: float, high: float, differs) -> None:
    assert Comparison(1.1, low, high, resolution=0.0).differs is differs  # no resolution: 1 alone
    assert Comparison(reason="failed", low=low, high=high).differs is None


def test_split_by_fixed_count_and_single_round() -> None:
    assert stats.Split(3, 2).chunks([1, 2, 3, 4, 5, 6]) == ([[1, 2], [3, 4], [5, 6]], "")
    assert stats.Split(2, 4).chunks([1, 2, 3, 4, 5, 6]) == (None, "6 samples do not split into processes of 4")
    # One process: all samples are its own whatever asv's repeat says (True is a bool, not a count).
    assert stats.Split(1, True).chunks([1, 2, 3]) == ([[1, 2, 3]], "")
    assert stats.Split(1, (1, 10, 5.0)).chunks([1, 2]) == ([[1, 2]], "")
    assert stats.Split(2, -3).chunks([1, 2, 3])[0] is None


def test_exact_bytes_within_the_resolution_are_equal_and_never_a_direction() -> None:
    """JAX's scalar literals (16 B of the transformer's 13,516,800 saved bytes) are no finding; a small tensor is one,
    at a small size (100 B of 2 MiB) and at a large one (a 64 KiB bias of 400 MiB)."""
    assert metrics.resolution("track_saved_bytes") == metrics.resolution("track_peak_bytes") == (64.0, 1e-4)
    t, j = like(metric="track_saved_bytes", sampled=False)
    t |= {"metric": "track_saved_bytes", "sampled": False, "unit": "bytes", "value": 13_516_800}
    c = stats.compare(t, j | {"value": 13_516_816, "unit": "bytes"})
    assert (c.ratio, c.differs, c.negligible, c.delta) == (13_516_816 / 13_516_800, False, True, 16)
    for a, b in ((2 * 2 ** 20, 2 * 2 ** 20 + 100), (400 * 2 ** 20, 400 * 2 ** 20 + 2 ** 16), (1000, 1016)):
        c = stats.compare(t | {"value": a}, j | {"value": b, "unit": "bytes"})
        assert c.differs and not c.negligible, (a, b)
    assert stats.exact(10, 11, "track_flops", "flops").differs  # counts have no resolution


def _step(framework: str, mode: str, size: str = "small", value: float = 2e-3) -> dict:
    params = {"framework": framework, "workload": "mlp", "size": size, "mode": mode, "style": "default"}
    return summary_row(framework, value) | {"params": json.dumps(params), "benchmark": "recording.GradStep_mlp"}


def test_fastest_divides_across_modes_but_only_the_same_step() -> None:
    across = stats.fastest(_step("torch", "eager"), _step("jax", "compiled", value=3e-3))
    assert across.formed and across.ratio == pytest.approx(1.5)
    assert stats.compare(_step("torch", "eager"), _step("jax", "compiled")).reason == "not like rows"
    assert stats.fastest(_step("torch", "eager"), _step("jax", "eager", size="large")).reason == "not the same step"
    assert stats.fastest(_step("torch", "eager"), _step("torch", "compiled")).reason == "not the same step"
