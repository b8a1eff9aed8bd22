"""The report's figures, metric tables and paired-file choice on hand-built rows: found by mutation testing
(`make mutate`), where a changed selection, label, interval bound, line width or lookup stayed green."""

from __future__ import annotations

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from tape_vs_trace.report import figures, markdown, paired, stats
from tape_vs_trace.report.select import Cells
from tests.test_mutants_figures2 import row
from tests.test_report_paired import paired_rows, write_csv

matplotlib.use("Agg")


def table(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def test_a_difference_bar_spans_its_interval_and_the_zero_line_is_one_point_wide() -> None:
    ax = Figure().add_subplot()
    with matplotlib.rc_context({"lines.linewidth": 3.0}):
        figures._differences(ax, [("mlp", "torch", stats.Comparison(ratio=1.1, low=1.05, high=1.2))], "change")
    (bars,) = ax.collections  # the errorbar's horizontal segment
    (segment,) = bars.get_segments()
    assert sorted(round(x, 6) for x in segment[:, 0]) == [5.0, 20.0]  # (1.05 - 1) and (1.2 - 1) in %
    zero = [line for line in ax.lines if list(line.get_xdata()) == [0, 0]]
    assert len(zero) == 1 and zero[0].get_linewidth() == 1


def test_changes_pair_each_variant_with_its_base_of_the_same_pillar() -> None:
    rows = table(row("torch", 2e-3, variant="plain", metric="track_peak_bytes", unit="bytes") | {"pillar": "remat"},
                 row("torch", 1e-3, variant="remat_full", metric="track_peak_bytes", unit="bytes")
                 | {"pillar": "remat"})
    items = figures._changes(Cells(rows), "remat", "track_peak_bytes", "plain", ("remat_full",))
    assert [(label, fw, c.ratio) for label, fw, c in items] == [("mlp small remat_full", "torch", 0.5)]


def capture(monkeypatch) -> list[Figure]:
    figs: list[Figure] = []
    monkeypatch.setattr(figures, "_finish", lambda fig, rect, path: figs.append(fig))
    return figs


def test_pillar_figure_shows_the_pillars_rows_with_a_memory_panel_and_heights_by_row_count(monkeypatch) -> None:
    figs = capture(monkeypatch)
    heights: list[list[float]] = []
    original = figures._figure
    monkeypatch.setattr(figures, "_figure", lambda h, *a: heights.append(h) or original(h, *a))
    rows = table(row("torch", 2e-3, workload="mlp"), row("torch", 4e6, workload="mlp", metric="track_peak_bytes",
                                                       unit="bytes") | {"sampled": False},
                 row("torch", 3e-3, workload="lstm") | {"pillar": "engine"})
    figures.pillar_figure(rows, "recording", "t", "f", None)
    (fig,) = figs
    assert [ax.get_ylabel() or ax.get_xlabel() for ax in fig.axes] and len(fig.axes) == 2  # time and memory
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert labels and all("mlp" in t for t in labels) and not any("lstm" in t for t in labels)
    assert heights == [[1.6, 1.6]]  # one row each: max(1.6, 0.32 + 0.9)


def test_draw_labels_the_saved_bytes_panel_and_forms_the_harness_change_against_raw(monkeypatch, tmp_path) -> None:
    figs = capture(monkeypatch)
    harness = [row("torch", t, variant=v) | {"pillar": "harness"} for v, t in (("raw", 1e-3), ("synchronized", 2e-3))]
    figures.draw(table(*harness), {}, tmp_path)
    remat, harness_fig = figs[-2], figs[-1]
    assert [t.get_text() for t in remat.axes[1].texts] == ["no results for saved bytes change against plain"]
    (bars,) = harness_fig.axes[0].collections or [None]  # no interval: a hollow dot
    dots = [line for line in harness_fig.axes[0].lines if list(line.get_xdata()) == [100.0]]
    assert len(dots) == 1 and bars is None  # 2 ms against 1 ms raw: +100 %


def methods_rows(torch_methods: tuple[str, ...]) -> pd.DataFrame:
    rows = [row("torch", 4e6, size=f"s{i}", metric="track_peak_bytes", unit="bytes")
            | {"memory_method": m, "sampled": False, "basis": "exact",
               "params": f'{{"framework": "torch", "size": "s{i}"}}'} for i, m in enumerate(torch_methods)]
    return table(*rows)


def test_a_method_that_changes_between_rows_is_named_on_every_row_and_not_above_the_table() -> None:
    lines = markdown.metric_table(methods_rows(("tracker", "allocator")), False)
    assert not any(line.startswith("Peak memory measured by") for line in lines)
    assert lines[2].endswith("| memory method (PyTorch; JAX) |")
    assert lines[4].endswith("| tracker; — |") and lines[5].endswith("| allocator; — |")


def test_without_memory_methods_there_is_no_measured_by_line() -> None:
    lines = markdown.metric_table(methods_rows(("",)), False)
    assert not any("measured by" in line for line in lines)


def test_pairs_match_parameters_whatever_their_order() -> None:
    rows = table(row("torch") | {"params": '{"a": 1, "b": 2, "framework": "torch"}'},
                 row("jax") | {"params": '{"b": 2, "framework": "jax", "a": 1}'})
    assert [sorted(p) for p in markdown._pairs(rows)] == [["jax", "torch"]]


def test_a_one_row_paired_file_of_another_commit_is_named_in_the_warning(tmp_path) -> None:
    write_csv(tmp_path / "paired", [paired_rows()[0] | {"commit": "f" * 40}], "box-ffffffff.csv")
    shown = table(row("torch") | {"commit": "a" * 40})
    warnings: list[str] = []
    assert len(paired.load(tmp_path, shown, warnings.append)["box"]) == 1
    assert warnings == ["box-ffffffff.csv: the paired results are of commit ffffffff, the asv results of aaaaaaaa"]


def test_an_out_folder_holding_the_results_is_refused(tmp_path) -> None:
    import pytest

    from tape_vs_trace.report import build
    (tmp_path / "results").mkdir()
    with pytest.raises(build.ReportError, match="contains the results folder"):
        build.check_out(tmp_path / "results", tmp_path)
