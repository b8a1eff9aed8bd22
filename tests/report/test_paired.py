"""The paired section of the report (tape_vs_trace.report.paired_results and paired_section): the remat trade-off
curve and the two-point experiments of `tape-vs-trace paired`, read from hand-built CSVs into summary.md,
summary.csv and the README block, and its sentences and tables on a few hand-built points, the expected text
written out by hand."""

from __future__ import annotations

import json
import math
import shutil
import struct
from pathlib import Path

import pandas as pd
import pytest

from tape_vs_trace import cli, report
from tape_vs_trace.report import paired_results, paired_section, stats
from tape_vs_trace.report.stats import Comparison
from tests.report.helpers import (
    COMMIT,
    FIXTURE,
    MACHINE,
    MIB,
    SIZE,
    curve_point,
    curve_rows,
    messages,
    paired_rows,
    point,
    report_text,
    summary_row,
    unrendered,
    write_csv,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list[str]]:
    results = tmp_path_factory.mktemp("paired") / "results"
    shutil.copytree(FIXTURE, results)
    write_csv(results / "paired", curve_rows() + paired_rows())
    warnings: list[str] = []
    readme = results.parent / "README.md"  # the README block is written by the same build
    readme.write_text("# x\n\n<!-- report:start -->\n<!-- report:end -->\n")
    report.write_report(results, results.parent / "report", warnings.append, readme)
    return results.parent / "report", warnings


def test_paired_experiments_read_as_differences_only_outside_the_interval(built) -> None:
    # paired_rows() name their experiments and points as before they were derived: the report names them as today
    out, warnings = built
    text = report_text(out)
    assert not [w for w in warnings if "paired" in w]
    assert "- PyTorch mlp 64x256x1024 eager: hooks/eager costs 20.0 % more time than no_hooks/eager (95 % interval " \
           "10.0–30.0 %) (1.2 ms against 1 ms)." in text
    assert "- JAX swiglu 64x256x1024 eager: custom/eager costs 20.0 % less time than plain/eager (95 % interval " \
           "10.0–30.0 %)" in text
    assert "- PyTorch mlp 64x256x1024 forward: inference_mode against no_grad: no difference measurable on this " \
           "machine (ratio 1.02, 95 % interval 0.95–1.1)" in text


def test_remat_choices_by_hand(built) -> None:
    text = report_text(built[0])
    # fastest: plain (1); within 10 %: plain and remat_dots (1.05), least peak remat_dots (9 MiB). At most 25 %
    # slower by the upper bound: plain (1), remat_dots (1.08), remat_full (1.24), not remat_every2 (1.4): remat_full.
    [line] = [x for x in text.splitlines() if x.startswith(f"- PyTorch eager unrolled {SIZE} (memory: peak memory)")]
    assert "the least memory is **remat_dots**: 9 MiB, 1.05× [1.04–1.08] plain" in line
    assert "slower than plain (upper 95 % bound) is **remat_full**: 6 MiB, 1.2× [1.15–1.24] plain" in line
    # compiled PyTorch has no CPU peak: judged by saved bytes. Within 10 % of 1.0: plain, 0.5, 0.25 and 0.1 (1.1);
    # least saved: budget 0.1 (4 MiB). Upper bound at most 1.25: budget 0.1 (1.15), not budget 0 (1.35).
    [line] = [x for x in text.splitlines()
              if x.startswith(f"- PyTorch compiled unrolled {SIZE} (memory: saved for backward)")]
    assert "the least memory is **budget 0.1**: 4 MiB" in line and "plain (upper 95 % bound) is **budget 0.1**" in line


def test_budgets_that_do_not_fall_monotonically_are_named(built) -> None:
    text = report_text(built[0])
    assert f"- PyTorch compiled unrolled {SIZE}: saved for backward does **not** fall monotonically with the budget " \
           "(MiB by budget: 1: 8, 0.5: 6, 0.25: 7, 0.1: 4, 0: 3; rises 0.5 → 0.25)." in text
    assert "peak memory does" not in text, "compiled PyTorch has no CPU peak: no sentence about one"
    rows = pd.DataFrame(curve_rows())
    for c in paired_results.NUMBERS:
        rows[c] = pd.to_numeric(rows[c].replace("", math.nan))
    falling = rows[rows.experiment == "remat torch compiled"].copy()
    falling.loc[falling.point == "budget 0.25", "saved_bytes"] = 5 * MIB
    [line] = paired_section.budgets(("torch", "compiled", "unrolled", "", SIZE), falling)
    assert "falls monotonically with the budget, from 8 MiB (budget 1) to 3 MiB (budget 0)" in line
    flat = falling.assign(saved_bytes=8 * MIB)
    flat_key = ("torch", "compiled", "unrolled", "", SIZE)
    assert "does not change with the budget (8 MiB" in paired_section.budgets(flat_key, flat)[0]


def test_pareto_marks_the_points_nothing_beats() -> None:
    # plain (10, 12), dots (11, 9), full (12, 6), every2 (14, 7): full is faster and smaller than every2
    assert paired_results.pareto([10, 11, 12, 14], [12, 9, 6, 7]) == [True, True, True, False]
    # a tie is not beaten: neither point is both faster and smaller than the other
    assert paired_results.pareto([10, 10], [5, 5]) == [True, True]
    assert paired_results.pareto([10, 9], [5, 4]) == [False, True]


def test_jax_against_pytorch_only_between_like_rows(built) -> None:
    rows = {(r["framework"], r["formulation"], r["point"], r["mode"]): r for r in curve_rows()}
    torch = rows[("torch", "unrolled", "plain", "compiled")]
    for r in (torch, rows[("jax", "unrolled", "plain", "compiled")], rows[("jax", "scan", "plain", "compiled")]):
        r.update(time_s=float(r["time_s"]), saved_bytes=float(r["saved_bytes"]))
    scan = paired_section.across(torch, rows[("jax", "scan", "plain", "compiled")])
    assert not scan.formed and scan.reason == "scan against unrolled"
    # logs of 17, 18, 19 ms against 9 ms thrice: mean difference 0.69212, JAX's var/n 0.0010312 (PyTorch's 0),
    # Welch dof 2, t = 4.3027, half-width 0.13817: exp(0.69212 -+ 0.13817) = [1.740, 2.294]
    c = paired_section.across(torch, rows[("jax", "unrolled", "plain", "compiled")])
    assert math.isclose(c.ratio, 1.998, rel_tol=1e-3)
    assert math.isclose(c.low, 1.740, rel_tol=1e-3) and math.isclose(c.high, 2.294, rel_tol=1e-3)
    assert paired_section.across(torch, rows[("jax", "unrolled", "plain", "compiled")], "saved_bytes").reason == \
        "different memory methods", "compiled costs are taken by each framework's own method"
    assert paired_section.across(torch, rows[("torch", "unrolled", "plain", "eager")]).reason == "not like rows"
    text = report_text(built[0])
    assert f"| {SIZE} | compiled | unrolled / scan | written | plain | 9 | 17.98 | — (scan against unrolled) |" in text
    assert f"| {SIZE} | compiled | unrolled / unrolled | written | plain | 9 | 17.98 | 2× [1.74–2.29] |" in text


def test_curve_table_lists_every_point(built) -> None:
    text = report_text(built[0])
    table = [x for x in text.splitlines() if x.startswith("| PyTorch |") or x.startswith("| JAX |")]
    assert len(table) == len(curve_rows())
    assert f"| PyTorch | eager | unrolled | written | {SIZE} | remat_full | 12 [10.8–13.2] | 1.2× [1.15–1.24] | 2 " \
           "| 6 | 1 |" in table
    assert f"| PyTorch | compiled | unrolled | written | {SIZE} | budget 0.5 | 9 [8.1–9.9] | 1× [0.98–1.02] " \
           "(no difference measurable) | 6 | n/a (the live-storage tracker cannot see inside Inductor's kernels) " \
           "| 1 |" \
        in table


def test_summary_csv_has_the_paired_rows(built) -> None:
    table = pd.read_csv(built[0] / "summary.csv", keep_default_na=False)
    rows = table[table.group != ""]
    assert set(report.COLUMNS) <= set(table.columns)
    # a time row per point, a saved and a flops row per remat point, a peak row where measured
    peaks = sum(r["peak_bytes"] != "" for r in curve_rows())
    assert len(rows) == len(curve_rows()) * 3 + len(paired_rows()) + peaks
    [hooks] = rows[(rows.point == "hooks/eager") & (rows.metric == "time_step")].itertuples()
    assert hooks.experiment == "tensor hooks mlp torch eager"  # paired_rows()' old name, as named today
    assert tuple(map(float, (hooks.ratio, hooks.ratio_ci_low, hooks.ratio_ci_high))) == (1.2, 1.1, 1.3)
    assert float(hooks.value) == pytest.approx(1.2e-3) and json.loads(hooks.process_medians) == [1.2e-3] * 3
    [full] = rows[(rows.point == "remat_full") & (rows.metric == "track_peak_bytes")].itertuples()
    assert float(full.value) == 6 * MIB and full.memory_method == "torch method"
    assert full.variant == "remat_full/eager/unrolled"
    assert (table[table.group == ""].benchmark.str.startswith(("recording.", "remat.", "custom_backward.",
                                                               "inference.", "engine.", "harness."))).all()


def test_curve_figure_written(built) -> None:
    data = (built[0] / f"remat_curve_{SIZE}.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 900 and height >= 700
    assert f"](../remat_curve_{SIZE}.png)" in report_text(built[0])


def test_corrupt_csv_is_one_warning_and_the_report_is_built(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    rows = [{k: v for k, v in r.items() if k != "ratio_ci_high"} for r in paired_rows()]
    write_csv(results / "paired", rows)
    with unrendered():  # the test reads the warnings and the text
        assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "out")]) == 0
    err = messages(capsys.readouterr().err.splitlines())
    assert len(err) == 1 and err[0].startswith("warning: skipped the paired results") and "ratio_ci_high" in err[0]
    text = report_text(tmp_path / "out")
    assert "## recording" in text and "tape-vs-trace paired" not in text
    (results / "paired" / f"{MACHINE}-{COMMIT[:8]}.csv").write_bytes(b"\xff\xfe\x00garbage")
    with unrendered():
        assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "out")]) == 0
    err = messages(capsys.readouterr().err.splitlines())
    assert len(err) == 1 and err[0].startswith("warning: skipped the paired results") and "Traceback" not in err[0]


def test_the_file_of_the_shown_commit_is_chosen(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    other = [r | {"commit": "f" * 40} for r in paired_rows()]
    write_csv(results / "paired", paired_rows())
    newer = write_csv(results / "paired", other, f"{MACHINE}-ffffffff.csv")
    newer.touch()
    warnings: list[str] = []
    table = report.load_results(results, warnings.append).table
    assert paired_results.load(results, table, warnings.append)[MACHINE].commit.iloc[0] == COMMIT and not warnings
    (results / "paired" / f"{MACHINE}-{COMMIT[:8]}.csv").unlink()
    assert paired_results.load(results, table, warnings.append)[MACHINE].commit.iloc[0] == "f" * 40
    assert len(warnings) == 1 and "of commit ffffffff, the asv results of 93acfd55" in warnings[0]
    shutil.rmtree(results / "paired")
    assert paired_results.load(results, table, warnings.append) == {}


def test_paired_findings_stay_in_summary_md_and_out_of_the_readme_block(built) -> None:
    # The README's block is the headline; a within-framework comparison is a finding of summary.md, stated once.
    out, _ = built
    readme = out.parent / "README.md"
    line = ("- PyTorch mlp 64x256x1024 eager: hooks/eager costs 20.0 % more time than no_hooks/eager (95 % "
            "interval 10.0–30.0 %) (1.2 ms against 1 ms).")
    summary = report_text(out)
    assert readme.read_text() != "# x\n\n<!-- report:start -->\n<!-- report:end -->\n"  # the block was written
    assert summary.count(line) == 1 and line not in readme.read_text()


def test_a_point_with_equal_memory_and_more_time_is_not_beaten() -> None:
    # the second point is slower at the same memory: no point is both faster and smaller, so both stay optimal
    assert paired_results.pareto([1.0, 2.0], [5.0, 5.0]) == [True, True]


def test_paired_ratios_have_the_within_process_resolution() -> None:
    row = {"ratio": 1.05, "ratio_ci_low": 1.035, "ratio_ci_high": 1.06}
    ratio = paired_section.paired_ratio(row)
    assert ratio.resolution == stats.WITHIN_PROCESS and ratio.differs
    tight = paired_section.paired_ratio({"ratio": 1.02, "ratio_ci_low": 1.01, "ratio_ci_high": 1.03})
    assert paired_section.costs(tight, "remat", "plain") == (
        "remat costs 2.0 % more time than plain, not beyond a rerun's ±3 % (95 % interval 1.0–3.0 %)")
    loose = paired_section.paired_ratio({"ratio": 1.01, "ratio_ci_low": 0.99, "ratio_ci_high": 1.03})
    assert paired_section.costs(loose, "remat", "plain") == (
        "remat against plain: no difference measurable on this machine (ratio 1.01, 95 % interval 0.99–1.03)")


def test_a_point_without_a_ratio_is_not_formed_and_says_why() -> None:
    c = paired_section.paired_ratio({"ratio": math.nan, "ratio_ci_low": 0.9, "ratio_ci_high": 1.1})
    assert c.reason == "no ratio" and not c.formed


def test_flops_counted_by_different_methods_are_not_divided() -> None:
    t = {"framework": "torch", "formulation": "unrolled", "size": "S", "mode": "compiled", "point": "plain",
         "device": "cpu", "workload": "transformer", "cost_method": "torch compiled", "flops": 2e9}
    j = t | {"framework": "jax", "cost_method": "jax compiled", "flops": 1e9}
    assert paired_section.across(t, j, "flops").reason == "different methods"
    assert paired_section.across(t, j, "saved_bytes").reason == "different memory methods"


def test_a_one_row_paired_file_of_another_commit_is_named_in_the_warning(tmp_path) -> None:
    write_csv(tmp_path / "paired", [paired_rows()[0] | {"commit": "f" * 40}], "box-ffffffff.csv")
    shown = pd.DataFrame([summary_row("torch") | {"commit": "a" * 40}])
    warnings: list[str] = []
    assert len(paired_results.load(tmp_path, shown, warnings.append)["box"]) == 1
    assert warnings == ["box-ffffffff.csv: the paired results are of commit ffffffff, the asv results of aaaaaaaa"]


NAN = math.nan

KEY = ("torch", "eager", "unrolled", "", "S")


def curve_row(point: str, ratio: float, low: float = NAN, high: float = NAN, saved: float = NAN, peak: float = NAN,
        baseline: str = "plain", budget: str = "") -> dict:
    """One point of a curve as paired's sentences read it; memory in MiB."""
    return {"point": point, "baseline": baseline, "ratio": ratio, "ratio_ci_low": low, "ratio_ci_high": high,
            "saved_bytes": saved * MIB, "peak_bytes": peak * MIB, "budget": budget}


def test_a_baseline_reads_1_and_other_points_their_ratio_to_plain() -> None:
    base = curve_row("plain", 1.0, 1.0, 1.0)
    other = curve_row("remat_full", 1.2, 1.1, 1.3)
    assert paired_section._ratio(base) == "1 (baseline)"
    assert paired_section._of_plain(base) == ""
    assert paired_section._ratio(other) == "1.2× [1.1–1.3]"
    assert paired_section._of_plain(other) == " plain"


def test_memory_of_a_curve_is_peak_only_where_every_point_has_one() -> None:
    assert paired_section.memory_of(pd.DataFrame([curve_row("plain", 1.0, peak=2), curve_row("a", 1.0, peak=1)])) == \
        ("peak_bytes", "peak memory")
    assert paired_section.memory_of(pd.DataFrame([curve_row("plain", 1.0, peak=2), curve_row("a", 1.0)])) == \
        ("saved_bytes", "saved for backward")


def test_costs_reads_the_interval_as_percent_from_1() -> None:
    assert paired_section.costs(Comparison(0.8, 0.7, 0.9), "x", "y") == \
        "x costs 20.0 % less time than y (95 % interval 10.0–30.0 %)"
    assert paired_section.costs(Comparison(1.5, 1.2, 1.6), "x", "y") == \
        "x costs 50.0 % more time than y (95 % interval 20.0–60.0 %)"
    assert paired_section.costs(Comparison(1.05, 0.9, 1.2), "x", "y") == \
        "x against y: no difference measurable on this machine (ratio 1.05, 95 % interval 0.9–1.2)"
    assert paired_section.costs(Comparison(1.05, note="one process"), "x", "y") == \
        "x against y: 1.05× (no interval: one process)"
    assert paired_section.costs(Comparison(reason="no ratio"), "x", "y") == "x against y: no ratio (no ratio)"
    # from twice the time a factor reads better than "+250.0 % (95 % interval 200.0–300.0 %)"
    assert paired_section.costs(Comparison(3.5, 3.0, 4.0), "x", "y") == \
        "x takes 3.5× the time of y (95 % interval 3–4×)"


def test_choices_by_peak_memory() -> None:
    curve = pd.DataFrame([curve_row("plain", 1.0, 1.0, 1.0, saved=8, peak=10),
                          curve_row("remat_dots", 1.05, 1.04, 1.08, saved=5, peak=6),
                          curve_row("remat_full", 1.2, 1.15, 1.24, saved=2, peak=4),
                          curve_row("remat_every2", 1.3, 1.2, 1.4, saved=1, peak=3)])
    # Near the fastest (ratio <= 1.1): plain and remat_dots, the smaller is remat_dots. At most 25 % slower by the
    # upper bound: plain, remat_dots and remat_full (1.24), not remat_every2 (1.4); the smallest is remat_full.
    assert paired_section.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: peak memory): within 10.0 % of the fastest point (plain), the least memory "
        "is **remat_dots**: 6 MiB, 1.05× [1.04–1.08] plain; the least memory at most 25.0 % slower than plain "
        "(upper 95 % bound) is **remat_full**: 4 MiB, 1.2× [1.15–1.24] plain")


def test_choices_skip_points_without_memory_or_ratio() -> None:
    curve = pd.DataFrame([curve_row("b", NAN, saved=1),  # no ratio: first, so a filter that lets it in breaks min()
                          curve_row("plain", 1.0, 1.0, 1.0, saved=8),
                          curve_row("a", 0.5, 0.4, 0.6, saved=NAN),  # fastest, but no saved bytes
                          curve_row("c", 1.3, 1.2, 1.4, saved=2),
                          curve_row("d", 1.2, saved=3)])  # one process: its ratio stands for the upper bound
    assert paired_section.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: saved for backward): within 10.0 % of the fastest point (plain), the least "
        "memory is **plain**: 8 MiB, 1 (baseline); the least memory at most 25.0 % slower than plain (upper 95 % "
        "bound) is **d**: 3 MiB, 1.2× (no interval: one process) plain")


def test_choices_when_nothing_is_affordable_or_measured() -> None:
    curve = pd.DataFrame([curve_row("remat_full", 1.3, 1.28, 1.4, saved=2)])
    assert paired_section.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: saved for backward): within 10.0 % of the fastest point (remat_full, "
        "1.3× [1.28–1.4] plain), the least memory is **remat_full**: 2 MiB, 1.3× [1.28–1.4] plain; no point is at "
        "most 25.0 % slower than plain by its upper 95 % bound")
    unmeasured = pd.DataFrame([curve_row("plain", NAN, saved=1), curve_row("a", 1.0, saved=NAN)])
    assert paired_section.choices(KEY, unmeasured) is None


KEY_C = ("torch", "compiled", "unrolled", "", "S")


def test_budgets_falling_with_a_tie_and_one_budget_against_plain() -> None:
    curve = pd.DataFrame([curve_row("plain", 1.0, saved=8, peak=5),
                          curve_row("budget 0.5", 1.0, saved=8, peak=5, budget="0.5"),
                          curve_row("remat_full", 1.2, saved=1, peak=1),  # neither a budget nor plain: not on this line
                          curve_row("budget 0", 1.3, saved=3, peak=5, budget="0")])
    assert paired_section.budgets(KEY_C, curve) == [
        "PyTorch compiled unrolled S: saved for backward falls monotonically with the budget, from 8 MiB (budget 1) "
        "to 3 MiB (budget 0) (MiB by budget: 1: 8, 0.5: 8, 0: 3)",
        "PyTorch compiled unrolled S: peak memory does not change with the budget (5 MiB at budgets 1, 0.5, 0)"]
    one = pd.DataFrame([curve_row("budget 0.5", 1.0, saved=6, budget="0.5"), curve_row("plain", 1.0, saved=8)])
    # sorted by budget, plain first as 1.0; no peak anywhere: no peak line
    assert paired_section.budgets(KEY_C, one) == [
        "PyTorch compiled unrolled S: saved for backward falls monotonically with the budget, from 8 MiB (budget 1) "
        "to 6 MiB (budget 0.5) (MiB by budget: 1: 8, 0.5: 6)"]


def test_budgets_that_rise_are_named_pair_by_pair() -> None:
    curve = pd.DataFrame([curve_row("plain", 1.0, saved=8), curve_row("budget 0.5", 1.0, saved=6, budget="0.5"),
                          curve_row("budget 0.25", 1.0, saved=7, budget="0.25"),
                          curve_row("budget 0.1", 1.0, saved=7, budget="0.1"),
                          curve_row("budget 0", 1.0, saved=3, budget="0")])
    assert paired_section.budgets(KEY_C, curve) == [
        "PyTorch compiled unrolled S: saved for backward does **not** fall monotonically with the budget (MiB by "
        "budget: 1: 8, 0.5: 6, 0.25: 7, 0.1: 7, 0: 3; rises 0.5 → 0.25)"]
    two = pd.DataFrame([curve_row("plain", 1.0, saved=8), curve_row("remat_full", 1.2, saved=2)])
    assert paired_section.budgets(KEY_C, two) == []


def test_granularity_in_layers_per_checkpoint_order() -> None:
    curve = pd.DataFrame([curve_row("remat_full", 1.2, 1.1, 1.3, saved=2),
                          curve_row("remat_dots", 1.1, 1.0, 1.2, saved=5),
                          curve_row("remat_every2", 1.1, 1.05, 1.2, saved=4),
                          curve_row("plain", 1.0, 1.0, 1.0, saved=8),
                          curve_row("remat_every4", 1.05, 1.04, 1.1, saved=6)])
    assert paired_section.granularity(KEY, curve) == (
        "PyTorch eager unrolled S: plain 8 MiB, 1 (baseline); remat_every4 6 MiB, 1.05× [1.04–1.1]; remat_every2 "
        "4 MiB, 1.1× [1.05–1.2]; remat_full 2 MiB, 1.2× [1.1–1.3]")
    every4 = pd.DataFrame([curve_row("plain", 1.0, 1.0, 1.0, saved=8),
                           curve_row("remat_every4", 1.05, 1.04, 1.1, saved=6)])
    assert paired_section.granularity(KEY, every4) == "PyTorch eager unrolled S: plain 8 MiB, 1 (baseline); " \
        "remat_every4 6 MiB, 1.05× [1.04–1.1]"
    two = pd.DataFrame([curve_row("plain", 1.0, saved=8), curve_row("remat_full", 1.2, saved=2)])
    assert paired_section.granularity(KEY, two) is None


def test_curve_table_every_cell_of_every_point() -> None:
    table = pd.DataFrame([
        curve_point("torch", "eager", "unrolled", "plain", (0.012, 0.010, 0.014), (1.0, 1.0, 1.0), 8, 10,
                    "torch method", 2),
        curve_point("jax", "compiled", "scan", "plain", (0.020, 0.018, 0.022), (1.0, 1.0, 1.0), 4, NAN, "", 1.5),
        curve_point("torch", "eager", "unrolled", "remat_full", (0.015, NAN, NAN), (1.2, 1.1, 1.3), 2, NAN,
                    "not measured: inside kernels", 3),
        curve_point("torch", "eager", "plain", "hooks", (0.001, NAN, NAN), (1.0, 1.0, 1.0), 1, 1, "m", 1,
                    group="paired"),  # a two-point experiment: not a curve point
        curve_point("jax", "compiled", "scan", "plain", (0.010, NAN, NAN), (1.0, 1.0, 1.0), 3, NAN, "", 1.5,
                    attention="fused"),  # a curve of its own, after the written one
    ])
    assert paired_section.curve_table(table) == [
        "| framework | mode | formulation | attention | size | point | time (ms) [95 % interval] | ratio to plain "
        "[95 % interval] | saved (MiB) | peak (MiB) | matmul GFLOP |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---:|",
        "| PyTorch | eager | unrolled | written | S | plain | 12 [10–14] | 1 (baseline) | 8 | 10 | 2 |",
        "| PyTorch | eager | unrolled | written | S | remat_full | 15 | 1.2× [1.1–1.3] | 2 | n/a (inside kernels) "
        "| 3 |",
        "| JAX | compiled | scan | written | S | plain | 20 [18–22] | 1 (baseline) | 4 | n/a (not measured) | 1.5 |",
        "| JAX | compiled | scan | fused | S | plain | 10 | 1 (baseline) | 3 | n/a (not measured) | 1.5 |",
    ]


def across_point(framework: str, formulation: str, point: str, time: float, saved: float, mode: str = "compiled",
                 group: str = "remat", attention: str = "") -> dict:
    """A curve point of one process (no between-process interval); memory in MiB."""
    return {"group": group, "framework": framework, "workload": "transformer", "size": "S", "mode": mode,
            "formulation": formulation, "attention": attention, "point": point, "device": "cpu", "time_s": time,
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
        across_point("torch", "unrolled", "plain", 0.004, 6, attention="fused"),
        across_point("jax", "unrolled", "plain", 0.012, 3, attention="fused"),  # against the fused PyTorch point
        across_point("jax", "unrolled", "remat_full", 0.030, 1, attention="fused"),  # PyTorch's is written: no line
    ])
    assert paired_section.across_table(table) == [
        "| size | mode | formulation (PyTorch / JAX) | attention | point | PyTorch (ms) | JAX (ms) | JAX/PyTorch "
        "step time | JAX/PyTorch saved for backward |",
        "|---|---|---|---|---|---:|---:|---:|---:|",
        "| S | compiled | unrolled / unrolled | written | plain | 10 | 20 | 2× (no interval: one process) | "
        "0.5× (exact) |",
        "| S | compiled | unrolled / scan | written | remat_full | 12 | 30 | — (scan against unrolled) | "
        "— (scan against unrolled) |",
        "| S | compiled | unrolled / unrolled | fused | plain | 4 | 12 | 3× (no interval: one process) | "
        "0.5× (exact) |",
    ]
    assert paired_section.across_table(table[table.framework == "torch"]) == []


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
    assert paired_section.paired_findings(table) == [
        "PyTorch mlp 64 eager: hooks costs 20.0 % more time than no hooks (95 % interval 10.0–30.0 %) (1.2 ms "
        "against 1 ms)",
        "JAX swiglu eager: custom against autodiff: no difference measurable on this machine (ratio 0.95, 95 % "
        "interval 0.9–1.02) (1.9 ms against 2 ms)",
    ]


def tidy_point(**values) -> dict:
    return {"experiment": "remat torch", "group": "remat", "framework": "torch", "workload": "transformer",
            "size": "S", "mode": "compiled", "formulation": "scan", "attention": "", "point": "budget 0.5",
            "budget": "0.5", "commit": "abcdef0123456789", "machine": "m1", "device": "cpu", "time_s": 0.01,
            "time_ci_low": 0.009, "time_ci_high": 0.011, "ratio": 1.1, "ratio_ci_low": 1.05, "ratio_ci_high": 1.15,
            "processes": 3,
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
    rows = paired_results.tidy(table).to_dict("records")
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
    curve = pd.DataFrame([curve_row("plain", 1.0, 1.0, 1.0, saved=8),
                          curve_row("x", 1.1, 1.05, 1.2, saved=5),  # exactly 10 % slower than the fastest: near it
                          curve_row("y", 1.2, 1.1, 1.25, saved=3),  # upper bound exactly 1.25: affordable
                          curve_row("z", 1.2, 1.1, 1.3, saved=1)])  # ratio 1.2 but upper bound 1.3: not affordable
    assert paired_section.choices(KEY, curve) == (
        "PyTorch eager unrolled S (memory: saved for backward): within 10.0 % of the fastest point (plain), the least "
        "memory is **x**: 5 MiB, 1.1× [1.05–1.2] plain; the least memory at most 25.0 % slower than plain (upper "
        "95 % bound) is **y**: 3 MiB, 1.2× [1.1–1.25] plain")


def test_granularity_with_every_second_layer_only() -> None:
    curve = pd.DataFrame([curve_row("plain", 1.0, 1.0, 1.0, saved=8),
                          curve_row("remat_every2", 1.1, 1.05, 1.2, saved=4)])
    assert paired_section.granularity(KEY, curve) == "PyTorch eager unrolled S: plain 8 MiB, 1 (baseline); " \
        "remat_every2 4 MiB, 1.1× [1.05–1.2]"


def test_a_fused_attention_point_names_its_attention_in_summary_csv_and_a_written_one_does_not() -> None:
    written, fused = paired_results.tidy(pd.DataFrame([tidy_point(), tidy_point(attention="fused")])).query(
        "metric == 'time_step'").params
    assert "attention" not in json.loads(written) and json.loads(fused)["attention"] == "fused"
    assert written != fused, "two curves' points must not read as one row"


def test_curve_table_shows_an_interval_only_with_both_bounds() -> None:
    table = pd.DataFrame([
        curve_point("torch", "eager", "unrolled", "plain", (0.012, NAN, 0.014), (1.0, 1.0, 1.0), 8, 10, "m", 2),
        curve_point("torch", "eager", "unrolled", "remat_full", (0.015, 0.013, NAN), (1.2, 1.1, 1.3), 2, 4, "m", 3),
    ])
    assert [line.split(" | ")[6] for line in paired_section.curve_table(table)[2:]] == ["12", "15"]


def test_paired_section_of_the_shown_commit_with_its_curve_and_jax_against_pytorch(tmp_path: Path) -> None:
    one = (1.0, 1.0, 1.0)
    table = paired_results.read(write_csv(tmp_path, [
        point("remat torch", "remat", "torch", "compiled", "unrolled", "plain", [10, 10, 10], one, saved=8),
        point("remat jax", "remat", "jax", "compiled", "unrolled", "plain", [20, 20], one, saved=4),
    ])).assign(machine=MACHINE)
    lines = paired_section.section(table, [], COMMIT, "##")
    assert lines[:4] == [
        "## remat trade-off curve and paired comparisons (`tape-vs-trace paired`)", "",
        f"From `results/paired/{MACHINE}-{COMMIT[:8]}.csv`: commit `{COMMIT}` (the same commit as the asv "
        "results), device cpu, 2, 3 processes per framework. Each experiment's points are built in one process and "
        "timed call by call, alternating; a time is the geometric mean of the per-process medians with its 95 % "
        "Student-t interval across processes; a ratio to the baseline is formed pass by pass in one process (median "
        "per process, geometric mean and 95 % interval across processes). A difference is stated only where the "
        "ratio's interval excludes every change up to 3 % (10 % for JAX/PyTorch, between processes): how far such "
        "ratios moved between two runs of one commit; else 'no difference measurable on this machine'.", ""]
    pairs = paired_section.across_table(table)
    assert len(pairs) == 3  # the header, its rule and the one like pair
    start = lines.index("Remat trade-off curve (every point; peak n/a where the framework's memory method cannot "
                        "see the step, with the reason; matmul GFLOP counts recomputation):")
    assert lines[start + 1:] == [
        "", *paired_section.curve_table(table), "",
        "JAX/PyTorch on the curve, only between like rows (same size, mode, formulation and point; memory measured "
        "by the same method): a JAX lax.scan is not divided by a PyTorch loop.", "", *pairs, ""]
