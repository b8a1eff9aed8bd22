"""The per-pillar figures (tape_vs_trace.report.figures) read back from the matplotlib artists: what is drawn (which
rows, the dots and bars and their values, the differences in percent), the labels, titles and notes a reader reads.
Colours, font sizes, dpi and legend placement are left to the figure's style and not pinned here."""

from __future__ import annotations

import matplotlib
import matplotlib.colors
import pandas as pd
import pytest
from matplotlib.figure import Figure

from implementations import frameworks, pillars
from tape_vs_trace import report
from tape_vs_trace.report import figures, stats
from tape_vs_trace.report.select import Cells
from tests.report.helpers import (
    FIXTURE,
    captured_figures,
    off_the_page,
    overlapping,
    summary_row,
    unnamed_axes,
    write_results,
)

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


def peak(framework: str, method: str, value: float = 2 ** 20, workload: str = "mlp") -> dict:
    return summary_row(framework, value=value, workload=workload, metric="track_peak_bytes", unit="bytes") | {
        "memory_method": method, "sampled": False}


def colours(ax) -> set[str]:
    """The frameworks whose colour a panel's bars have."""
    by_colour = {matplotlib.colors.to_hex(f.color): f.name for f in frameworks.FRAMEWORKS.values()}
    return {by_colour[matplotlib.colors.to_hex(p.get_facecolor())] for p in ax.patches}


def test_peaks_measured_by_different_methods_get_a_panel_per_framework_named_by_its_method(monkeypatch) -> None:
    figs = capture(monkeypatch)
    first, second = frameworks.NAMES
    rows = frame(peak(first, "tracker"), peak(second, "buffer plan"), peak(first, "tracker", workload="cnn"),
                 summary_row(first, 2 ** 20, metric="track_saved_bytes", unit="bytes") | {"sampled": False},
                 summary_row(second, 2 ** 21, metric="track_saved_bytes", unit="bytes") | {"sampled": False})
    figures.pillar_figure(rows, "recording", "t", "f", "x.png")
    peaks_a, peaks_b, saved = figs["x.png"].axes
    # a panel of one framework's bars each, its axis naming the framework, its note the method; no "not run" for the
    # other framework, which has a panel of its own
    assert colours(peaks_a) == {first} and colours(peaks_b) == {second}
    assert peaks_a.get_xlabel().startswith(f"{frameworks.label(first)} peak memory (MiB")
    assert peaks_b.get_xlabel().startswith(f"{frameworks.label(second)} peak memory (MiB")
    assert peaks_a.get_title(loc="right").startswith("measured by tracker; ")
    assert peaks_b.get_title(loc="right").startswith("measured by buffer plan; ")
    assert not peaks_a.texts and not peaks_b.texts
    # saved bytes are counted the same way on both sides: one panel, the frameworks side by side
    assert colours(saved) == {first, second} and saved.get_xlabel().startswith("saved for backward (MiB")


def test_peaks_measured_by_one_method_stand_side_by_side() -> None:
    first, second = frameworks.NAMES
    [panel] = figures.value_panels(frame(peak(first, "allocator"), peak(second, "allocator")))
    assert panel.alone == "" and panel.method == "allocator" and len(panel.rows) == 2


def test_a_scan_row_is_never_beside_a_loop_row(monkeypatch) -> None:
    figs = capture(monkeypatch)
    first, second = frameworks.NAMES
    saved = {"metric": "track_saved_bytes", "unit": "bytes", "sampled": False}
    rows = frame(*(summary_row(fw, value * 2 ** 20, workload="transformer", variant=loop) | saved
                   for fw, loop, value in ((first, "unrolled", 1), (second, "unrolled", 2), (second, "scan", 3))))
    figures.pillar_figure(rows, "recording", "t", "f", "x.png")
    [ax] = figs["x.png"].axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    widths = {}
    for bar in ax.patches:
        widths.setdefault(labels[round(bar.get_y() + bar.get_height() / 2)], []).append(bar.get_width())
    assert widths == {"transformer small unrolled": [1.0, 2.0], "transformer small scan": [3.0]}
    assert [t.get_text() for t in ax.texts] == [f"{frameworks.label(first)}: not run"]


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
    assert ax.get_title(loc="right") == "dot: asv's median (no interval: no between-process samples)"
    # with between-process samples the dot is the value the tables print: the geometric mean of per-process medians
    sampled = pd.DataFrame([summary_row(fw) | {"basis": "processes", "ci_low": 1e-3, "ci_high": 3e-3}
                            for fw in frameworks.NAMES])
    ax = Figure().subplots()
    figures._rows_panel(ax, sampled, "time", True)
    assert ax.get_title(loc="right") == "dot: geometric mean of per-process medians; bar: 95 % interval across " \
                                        "processes"


def test_a_difference_bar_spans_its_interval_in_percent_beside_one_zero_line() -> None:
    ax = Figure().add_subplot()
    figures._differences(ax, [("mlp", "torch", stats.Comparison(ratio=1.1, low=1.05, high=1.2))], "change")
    (bars,) = ax.collections  # the errorbar's horizontal segment
    (segment,) = bars.get_segments()
    assert sorted(round(x, 6) for x in segment[:, 0]) == [5.0, 20.0]  # (1.05 - 1) and (1.2 - 1) in %
    zero = [line for line in ax.lines if list(line.get_xdata()) == [0, 0]]
    assert len(zero) == 1


def test_a_change_axis_says_which_way_its_sign_points_and_explains_only_the_markers_drawn() -> None:
    ax = Figure().add_subplot()
    figures._differences(ax, [("mlp", "torch", stats.Comparison(1.1, 1.1, 1.1))], "peak memory, change against plain",
                         "track_peak_bytes", "plain")
    assert ax.get_xlabel() == "peak memory, change against plain (%)\nabove 0: more memory than plain"
    assert not [line for line in ax.lines if line.get_markerfacecolor() == "none"]
    ax = Figure().add_subplot()
    figures._differences(ax, [("mlp", "torch", stats.Comparison(0.9))], "step time, change", "time_step", "raw")
    assert ax.get_xlabel() == "step time, change (%)\nabove 0: slower than raw; hollow: no interval"
    assert [line.get_markerfacecolor() for line in ax.lines if line.get_marker() == "o"] == ["none"]


def test_the_remat_figure_title_says_a_negative_change_saves_memory() -> None:
    title = pillars.PILLARS["remat"].figure.title
    assert "memory saved" not in title and "below 0: the policy saves memory" in title


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


def test_cuda_allocator_peaks_share_one_panel_naming_both_methods(monkeypatch) -> None:
    figs = capture(monkeypatch)
    first, second = frameworks.NAMES
    rows = frame(*(peak(fw, frameworks.memory_method(fw, "cuda")) for fw in (first, second)))
    figures.pillar_figure(rows, "recording", "t", "f", "x.png")
    [panel] = figs["x.png"].axes
    assert colours(panel) == {first, second} and panel.get_xlabel().startswith("peak memory (MiB")
    note = panel.get_title(loc="right")
    assert all(frameworks.memory_method(fw, "cuda") in note for fw in (first, second))


def test_pillar_figure_draws_only_the_pillars_rows_in_a_time_and_a_memory_panel(monkeypatch) -> None:
    figs = capture(monkeypatch)
    rows = frame(summary_row("torch", 2e-3, workload="mlp"),
                 summary_row("torch", 4e6, workload="mlp", metric="track_peak_bytes", unit="bytes")
                 | {"sampled": False},
                 summary_row("torch", 3e-3, workload="lstm") | {"pillar": "engine"})
    figures.pillar_figure(rows, "recording", "t", "f", None)
    (fig,) = figs.values()
    assert [ax.get_xlabel().split(" (")[0] for ax in fig.axes] == ["step time", "peak memory"]
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert labels and all("mlp" in t for t in labels) and not any("lstm" in t for t in labels)


def test_draw_labels_the_saved_bytes_panel_and_forms_the_harness_change_against_raw(monkeypatch, tmp_path) -> None:
    figs = capture(monkeypatch)
    harness = [summary_row("torch", t, variant=v) | {"pillar": "harness"}
               for v, t in (("raw", 1e-3), ("synchronized", 2e-3))]
    figures.draw(frame(*harness), {}, tmp_path)
    remat, harness_fig = figs["remat.png"], figs["harness.png"]
    assert [t.get_text() for t in remat.axes[1].texts] == ["no results for saved for backward, change against plain"]
    (bars,) = harness_fig.axes[0].collections or [None]  # no interval: a hollow dot
    dots = [line for line in harness_fig.axes[0].lines if list(line.get_xdata()) == [100.0]]
    assert len(dots) == 1 and bars is None  # 2 ms against 1 ms raw: +100 %


FIGURE_SOURCES = {  # results folders the report draws every pillar figure from
    "asv fixture": lambda tmp: FIXTURE,
    "transforms fixture": lambda tmp: FIXTURE.parent / "transforms_fixture",
    "synthetic": lambda tmp: write_results(tmp / "results"),
}


@pytest.fixture(scope="module", params=list(FIGURE_SOURCES))
def pillar_figures(request, tmp_path_factory) -> dict[str, Figure]:
    """Every pillar figure of the report built from one results folder, by file name, as it would be saved."""
    tmp = tmp_path_factory.mktemp("figures")
    with pytest.MonkeyPatch.context() as mp:
        figs = captured_figures(mp)
        report.write_report(FIGURE_SOURCES[request.param](tmp), tmp / "report", lambda _: None)
    drawn = {name: fig for name, fig in figs.items() if name in figures.FIGURES}
    assert sorted(drawn) == sorted(figures.FIGURES)
    return drawn


def test_no_two_texts_of_a_pillar_figure_overlap_and_none_runs_off_the_page(pillar_figures) -> None:
    for name, fig in pillar_figures.items():
        assert not overlapping(fig), name
        assert not off_the_page(fig), name


def test_every_axis_with_data_names_its_metric_and_unit(pillar_figures) -> None:
    for name, fig in pillar_figures.items():
        assert not unnamed_axes(fig), name
