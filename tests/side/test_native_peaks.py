"""tape_vs_trace.side.native_peaks: a peak outside its analytic bounds is flagged, the selections name real cases of
both frameworks, bad input is one line, and one measuring process of each framework gives a peak within its bounds
that agrees with the suite's own CPU method where that method sees the same step."""

from __future__ import annotations

from dataclasses import fields

import pytest

from implementations import frameworks
from implementations.native_peak import METHOD, NativePeak
from tape_vs_trace import cli
from tape_vs_trace.results import native_peak_rows
from tape_vs_trace.side import native_peaks

ACCOUNTING = {"resident_bytes": 1000, "saved_bytes": 300, "returned_bytes": 500}


@pytest.mark.parametrize(("peak", "verdict"), [(499, "FLAG: below"), (500, "ok"), (800 + 40 + 8, "ok"),
                                               (849, "FLAG: above")])
def test_a_peak_outside_its_bounds_is_flagged(peak: int, verdict: str) -> None:
    # upper = resident + saved + returned + the GEMM scratch (40) and small allocations (8) seen at the peak
    row = native_peaks.checked(ACCOUNTING, NativePeak(peak, METHOD, workspace_bytes=40, small_bytes=8))
    assert (row["lower_bytes"], row["upper_bytes"]) == (1500, 1848)
    assert row["verdict"].startswith(verdict)


def test_a_step_without_an_accounting_has_no_bounds() -> None:
    assert native_peaks.checked({}, NativePeak(1, METHOD)) == {"verdict": native_peaks.NO_BOUNDS}


def test_a_case_names_the_columns_the_ratio_rule_reads() -> None:
    assert tuple(f.name for f in fields(native_peaks.Case)) == native_peak_rows.PARAMS


@pytest.mark.parametrize("name", native_peaks.SELECTIONS)
def test_every_selection_measures_both_frameworks_in_like_cases(name: str) -> None:
    chosen = native_peaks.selection(name)
    by_framework = {fw: {case for f, case in chosen if f == fw} for fw in frameworks.NAMES}
    assert all(by_framework.values())
    if name != "curve":  # the curve's points differ by framework (torch.compile's budgets, JAX's scan)
        assert by_framework["torch"] == by_framework["jax"]
    assert {case.mode for _, case in chosen} >= ({"compiled"} if name == "bench" else {"eager", "compiled"})


def test_the_curve_has_torch_compiles_budgets_and_jax_scan() -> None:
    chosen = native_peaks.selection("curve")
    assert {case.budget for fw, case in chosen if fw == "torch"} >= {"0.5", "0"}
    assert any(case.formulation == "scan" for fw, case in chosen if fw == "jax")


@pytest.mark.parametrize("argv", [["--select", "bogus"], ["--processes", "0"]])
def test_bad_input_is_one_line_and_a_failure(argv: list[str], capsys, tmp_path) -> None:
    assert cli.main(["native-peak", "--out", str(tmp_path), *argv]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1


@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_the_checked_step_lies_within_its_bounds_and_agrees_with_the_suites_method(framework: str) -> None:
    pytest.importorskip("memray")
    # the GPU check's size (at 16x64x256 XLA's plan itself holds a 4 KiB cotangent above the upper bound)
    mode = {"torch": "eager", "jax": "compiled"}[framework]  # where the suite's CPU method sees the step
    row = native_peaks.measure_in_process(framework, native_peaks.Case("mlp", "64x256x1024", mode=mode))
    assert row["verdict"] == "ok", row
    # the allocator sees the arrays the other method counts, plus GEMM scratch and small bookkeeping objects
    arrays = row["peak_bytes"] - row["workspace_bytes"] - row["small_bytes"]
    assert arrays == pytest.approx(row["other_peak_bytes"], rel=0.02), row


def test_a_failed_measurement_is_left_out_and_named_after_the_others_are_written(monkeypatch, tmp_path) -> None:
    def measured(framework, case, device="cpu"):
        if framework == "jax":
            raise native_peak_rows.NativePeakError("JAX mlp eager failed: boom")
        return {**case.__dict__, "framework": framework, "peak_bytes": 1, "method": METHOD, "verdict": "ok"}

    monkeypatch.setattr(native_peaks, "measure_in_process", measured)
    with pytest.raises(native_peak_rows.NativePeakError, match="2 measurement.*boom"):
        native_peaks.run_all(tmp_path, ["bench"], 2, machine_name="m", commit="c" * 40)
    written = native_peak_rows.read(tmp_path / "m-cccccccc.csv")
    assert {r["framework"] for r in written} == {"torch"} and len(written) == 2
