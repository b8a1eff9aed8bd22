"""The per-pillar figures (tape_vs_trace.report.figures) read back from the matplotlib artists: what is drawn (which
rows, the dots and bars and their values, the differences in percent), the labels, titles and notes a reader reads.
Colours, font sizes, dpi and legend placement are left to the figure's style and not pinned here."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest
from matplotlib.figure import Figure

from implementations import frameworks
from tape_vs_trace.report import figures, stats
from tape_vs_trace.report.select import Cells
from tests.report.helpers import summary_row

matplotlib.use("Agg")


def test_an_empty_panel_says_so_in_its_middle_without_ticks() -> None:
    ax = Figure().subplots()
    figures._no_data(ax, "the engine pillar")
    (text,) = ax.texts
    assert text.get_text() == "no results for the engine pillar"
    assert text.get_position() == (0.5, 0.5)
    assert text.get_transform() is ax.transAxes  # the middle of the panel, not data coordinates
    assert list(ax.get_xticks()) == [] and list(ax.get_yticks()) == []


def test_a_pillar_figure_has_its_title_and_a_legend_naming_each_framework() -> None:
    fig, axes, _ = figures._figure([1.6, 2.0], "recording: PyTorch and JAX", "commit abc")
    assert len(axes) == 2
    assert fig.get_suptitle() == "recording: PyTorch and JAX"
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [f.label for f in frameworks.FRAMEWORKS.values()]


def test_labels_collapse_the_gap_an_empty_part_leaves() -> None:
    rows = pd.DataFrame([summary_row("torch", size="", variant="checkpointed"),
                         summary_row("torch", size="", variant="")])
    assert list(figures._labels(rows, False)) == ["mlp checkpointed", "mlp"]


def test_log_axis_ticks_at_1_2_5_per_decade_on_a_narrow_range() -> None:
    ax = Figure().subplots()
    ax.plot([1.5, 90], [0, 1])
    figures._log(ax)
    low, high = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if low <= t <= high]
    expected = sorted(m * 10.0**e for e in range(-1, 4) for m in (1, 2, 5) if low <= m * 10.0**e <= high)
    assert 5 in expected and 50 in expected  # the range covers the fives that a wrong tick set would miss
    assert ticks == pytest.approx(expected)


def test_rows_panel_places_each_framework_a_fifth_of_a_row_either_side_and_names_a_missing_one() -> None:
    first, second = frameworks.NAMES
    rows = pd.DataFrame([summary_row(first, workload="mlp"), summary_row(second, workload="mlp"),
                         summary_row(first, workload="cnn")])
    ax = Figure().subplots()
    figures._rows_panel(ax, rows, "time", True)
    # mlp is row 0: the first framework 0.2 above its middle, the second 0.2 below
    ys = sorted(float(line.get_ydata()[0]) for line in ax.lines if len(line.get_ydata()) == 1)
    assert ys == pytest.approx([-0.2, 0.2, 0.8])
    (text,) = ax.texts  # cnn has no result of the second framework
    assert text.get_text() == f"{frameworks.label(second)}: not run"
    assert text.get_position()[1] == pytest.approx(1.2)
    # the rows fill the axis from half a row above the first to half a row below the last, first on top
    assert ax.get_ylim() == pytest.approx((1.5, -0.5))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["mlp small", "cnn small"]


def test_rows_panel_draws_a_dot_per_ok_row_names_a_failed_one_and_draws_bars_as_long_as_the_values() -> None:
    first, second = frameworks.NAMES
    rows = pd.DataFrame([summary_row(first), summary_row(second) | {"status": "failed"}])
    ax = Figure().subplots()
    figures._rows_panel(ax, rows, "time", True)
    [dot] = [line for line in ax.lines if len(line.get_xdata()) == 1]  # the ok row: a dot, not "failed"
    assert list(dot.get_xdata()) == [2.0]  # 2 ms
    assert [t.get_text() for t in ax.texts] == [f"{frameworks.label(second)}: failed"]
    mib = [summary_row(fw, value=2 ** 21, metric="track_peak_bytes", unit="bytes") for fw in (first, second)]
    ax = Figure().subplots()
    figures._rows_panel(ax, pd.DataFrame(mib), "peak", False)
    assert [p.get_width() for p in ax.patches] == [2.0, 2.0]  # MiB


def test_rows_panel_says_when_the_frameworks_peaks_were_measured_differently() -> None:
    first, second = frameworks.NAMES
    peaks = [summary_row(fw, value=2 ** 20, metric="track_peak_bytes", unit="bytes") | {"memory_method": m}
             for fw, m in ((first, "tracker"), (second, "buffer plan"))]
    ax = Figure().subplots()
    figures._rows_panel(ax, pd.DataFrame(peaks), "peak", False)
    assert ax.get_title() == "peaks measured differently per framework: compare within one"
    same = [p | {"memory_method": "allocator"} for p in peaks]
    ax = Figure().subplots()
    figures._rows_panel(ax, pd.DataFrame(same), "peak", False)
    assert ax.get_title() == ""


def test_differences_place_each_framework_a_fifth_of_a_row_either_side_of_its_case() -> None:
    first, second = frameworks.NAMES
    ax = Figure().subplots()
    figures._differences(ax, [("a", first, stats.Comparison(1.2, 1.1, 1.3)), ("a", second, stats.Comparison(0.9)),
                              ("b", second, stats.Comparison(1.5, 1.4, 1.6))], "step time")
    dots = sorted((round(float(line.get_ydata()[0]), 6), round(float(line.get_xdata()[0]), 6)) for line in ax.lines
                  if line.get_marker() == "o")  # the dots, not the interval's caps
    assert dots == [(-0.2, 20.0), (0.2, -10.0), (1.2, 50.0)]  # +/- 0.2 around row 0 and row 1; x in % change


def test_the_rows_panel_says_when_no_row_has_an_interval() -> None:
    ax = Figure().subplots()
    figures._rows_panel(ax, pd.DataFrame([summary_row(fw) for fw in frameworks.NAMES]), "time", True)
    assert ax.get_title() == "dot: median (no interval: no between-process samples)"


def test_a_difference_bar_spans_its_interval_in_percent_beside_one_zero_line() -> None:
    ax = Figure().add_subplot()
    figures._differences(ax, [("mlp", "torch", stats.Comparison(ratio=1.1, low=1.05, high=1.2))], "change")
    (bars,) = ax.collections  # the errorbar's horizontal segment
    (segment,) = bars.get_segments()
    assert sorted(round(x, 6) for x in segment[:, 0]) == [5.0, 20.0]  # (1.05 - 1) and (1.2 - 1) in %
    zero = [line for line in ax.lines if list(line.get_xdata()) == [0, 0]]
    assert len(zero) == 1


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def test_changes_pair_each_variant_with_its_base_of_the_same_pillar() -> None:
    rows = frame(summary_row("torch", 2e-3, variant="plain", metric="track_peak_bytes", unit="bytes")
                 | {"pillar": "remat"},
                 summary_row("torch", 1e-3, variant="remat_full", metric="track_peak_bytes", unit="bytes")
                 | {"pillar": "remat"})
    items = figures._changes(Cells(rows), "remat", "track_peak_bytes", "plain", ("remat_full",))
    assert [(label, fw, c.ratio) for label, fw, c in items] == [("mlp small remat_full", "torch", 0.5)]


def capture(monkeypatch) -> dict[str, Figure]:
    """Each figure as _finish gets it, by the name of the file it would write."""
    figs: dict[str, Figure] = {}
    monkeypatch.setattr(figures, "_finish", lambda fig, rect, path: figs.update({getattr(path, "name", path): fig}))
    return figs


def test_pillar_figure_draws_only_the_pillars_rows_in_a_time_and_a_memory_panel(monkeypatch) -> None:
    figs = capture(monkeypatch)
    rows = frame(summary_row("torch", 2e-3, workload="mlp"),
                 summary_row("torch", 4e6, workload="mlp", metric="track_peak_bytes", unit="bytes")
                 | {"sampled": False},
                 summary_row("torch", 3e-3, workload="lstm") | {"pillar": "engine"})
    figures.pillar_figure(rows, "recording", "t", "f", None)
    (fig,) = figs.values()
    assert [ax.get_ylabel() or ax.get_xlabel() for ax in fig.axes] and len(fig.axes) == 2  # time and memory
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert labels and all("mlp" in t for t in labels) and not any("lstm" in t for t in labels)


def test_draw_labels_the_saved_bytes_panel_and_forms_the_harness_change_against_raw(monkeypatch, tmp_path) -> None:
    figs = capture(monkeypatch)
    harness = [summary_row("torch", t, variant=v) | {"pillar": "harness"}
               for v, t in (("raw", 1e-3), ("synchronized", 2e-3))]
    figures.draw(frame(*harness), {}, tmp_path)
    remat, harness_fig = figs["remat.png"], figs["harness.png"]
    assert [t.get_text() for t in remat.axes[1].texts] == ["no results for saved bytes change against plain"]
    (bars,) = harness_fig.axes[0].collections or [None]  # no interval: a hollow dot
    dots = [line for line in harness_fig.axes[0].lines if list(line.get_xdata()) == [100.0]]
    assert len(dots) == 1 and bars is None  # 2 ms against 1 ms raw: +100 %
