"""The remat trade-off figure (tape_vs_trace.report.curve) drawn from hand-built curve points and read back from its
Figure: the legend, the rings on the points nothing beats, the panels' titles and the empty one's note, one shared
log time axis, the footer. Colours, line styles, markers and exact positions are the figure's style, not pinned."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure

from tape_vs_trace.report import curve, paired_results
from tests.report.helpers import (
    SIZE,
    captured_figures,
    curve_point,
    curve_rows,
    off_the_page,
    overlapping,
    unnamed_axes,
)

NAN = math.nan

ONE = (1.0, 1.0, 1.0)

FOOTER = "commit 93acfd55 · machine m1 (EPYC, 2 cores) · device cpu · 3, 5 processes per framework · " \
         "tape-vs-trace paired"

SHORT = "commit 93acfd55 · 3 processes per framework"  # fits one line of the figure's note


def table() -> pd.DataFrame:
    """Two eager curves with peaks (PyTorch unrolled, and a JAX formulation STYLES has no entry for) and one
    compiled JAX scan curve without a peak: its row's peak panel has no curve. Times in s, memory in MiB."""
    return pd.DataFrame([
        curve_point("torch", "eager", "unrolled", "plain", (0.010, 0.009, 0.0115), ONE, 8, 12, "m", 1),
        curve_point("torch", "eager", "unrolled", "remat_full", (0.012, NAN, NAN), ONE, 2, 6, "m", 1),
        curve_point("jax", "eager", "custom", "plain", (0.011, 0.010, 0.012), ONE, 9, 10, "m", 1),
        curve_point("jax", "compiled", "scan", "plain", (0.014, 0.013, 0.015), ONE, 9, NAN, "", 1),
        curve_point("jax", "compiled", "scan", "plain", (0.012, 0.011, 0.013), ONE, 7, NAN, "", 1, attention="fused"),
    ])


@pytest.fixture(scope="module")
def fig(tmp_path_factory) -> Figure:
    """The figure as figure() leaves it before writing (savefig records it instead of encoding a PNG)."""
    seen: list[Figure] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", lambda self, path, *args, **kwargs: seen.append(self))
        curve.figure(table(), "S", SHORT, tmp_path_factory.mktemp("curve") / "x.png")
    [figure] = seen
    return figure


def data_lines(ax) -> dict[str, object]:
    """The errorbar data line of each curve, by legend label."""
    return {c.get_label(): c.lines[0] for c in ax.containers}


def test_legend_names_each_curve_once_in_panel_order(fig: Figure) -> None:
    [legend] = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["PyTorch eager unrolled", "JAX eager custom",
                                                          "JAX compiled scan", "JAX compiled scan fused attention"]


def test_a_fused_attention_curve_is_a_line_of_its_own_drawn_unlike_the_written_one(fig: Figure) -> None:
    saved = data_lines(fig.axes[3])  # compiled, saved bytes
    written, fused = saved["JAX compiled scan"], saved["JAX compiled scan fused attention"]
    assert list(fused.get_xdata()) == [7.0] and list(written.get_xdata()) == [9.0]
    assert (fused.get_linestyle(), fused.get_marker()) != (written.get_linestyle(), written.get_marker())


def test_rings_mark_the_points_no_other_point_of_their_curve_beats(fig: Figure) -> None:
    # eager, by peak: PyTorch's remat_full (6 MiB, 12 ms) and plain (12 MiB, 10 ms), neither both faster and smaller
    # than the other, and JAX's one point (10 MiB, 11 ms)
    rings = [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    assert sorted(tuple(p) for ring in rings for p in ring.get_offsets()) == [
        (6.0, pytest.approx(12.0)), (10.0, pytest.approx(11.0)), (12.0, pytest.approx(10.0))]


def test_panels_titled_by_mode_and_memory_and_the_empty_one_says_so(fig: Figure) -> None:
    eager, compiled = "eager (tape, op-by-op JAX)", "compiled (torch.compile, jax.jit)"
    assert [ax.get_title() for ax in fig.axes] == [f"{eager}: peak, where measured", f"{eager}: saved, every line",
                                                   f"{compiled}: peak, where measured",
                                                   f"{compiled}: saved, every line"]
    # compiled JAX has no peak: nothing drawn on the compiled peak panel, a note in its middle instead
    [note] = fig.axes[2].texts
    assert note.get_text() == "no curve has this memory\non this device"
    assert note.get_position() == (0.5, 0.5) and note.get_transform() == fig.axes[2].transAxes
    assert not fig.axes[2].containers and not fig.axes[0].texts[0].get_text().startswith("no curve")


def test_one_log_time_axis_shared_by_every_panel_spanning_the_points(fig: Figure) -> None:
    first = fig.axes[0]
    assert all(first.get_shared_y_axes().joined(first, ax) for ax in fig.axes[1:])
    assert [ax.get_yscale() for ax in fig.axes] == ["log"] * 4
    # times 10, 11, 12, 14 ms: the middle one (12 ms) picks ms; every point lies inside the axis
    assert all(ax.get_ylim()[0] < 10 and ax.get_ylim()[1] > 14 for ax in fig.axes)
    assert first.get_ylabel() == "step time (ms, log)"


def test_footer_ends_the_note_inside_the_figure_below_the_legend(fig: Figure) -> None:
    [text] = [t for t in fig.texts if t.get_text().startswith("bars: ")]
    assert text.get_text().endswith("\n" + SHORT)
    renderer = FigureCanvasAgg(fig).get_renderer()
    box = text.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    # the panels' tick labels and axis labels stay above the legend, the legend above the note
    legend = fig.legends[0].get_window_extent(renderer)
    assert min(ax.get_tightbbox(renderer).y0 for ax in fig.axes) >= legend.y1 and legend.y0 >= box.y1
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.width, "every legend label whole inside the figure"


def test_footer_sentence() -> None:
    rows = table().assign(commit="93acfd557dc6d3533c8d26b62e737c3b1f3b0e8b", machine="m1", device="cpu",
                          processes=[5, 3, 5, 3, 3])
    assert curve.footer(rows, {"cpu": "EPYC", "num_cpu": 2}) == FOOTER
    assert curve.footer(rows.assign(processes=[3] * 5), {}) == (
        "commit 93acfd55 · machine m1 (?, ? cores) · device cpu · 3 processes per framework · tape-vs-trace paired")


def test_curve_figure_rings_the_pareto_points_and_labels_every_point(tmp_path: Path, monkeypatch) -> None:
    table = pd.DataFrame(curve_rows())
    for c in paired_results.NUMBERS:
        table[c] = pd.to_numeric(table[c].replace("", math.nan))
    seen = {}
    save = __import__("matplotlib.figure", fromlist=["Figure"]).Figure.savefig

    def check(fig, path, *args, **kwargs):
        saved = save(fig, path, *args, **kwargs)
        # panels row by row (eager, compiled), peak on the left, saved bytes on the right
        left, right = fig.axes[0::2], fig.axes[1::2]
        seen["labels"] = (sorted(t.get_text() for ax in left for t in ax.texts),
                          sorted(t.get_text() for ax in right for t in ax.texts))
        # rings: the scatter collections; offsets in (MiB, ms)
        seen["rings"] = sorted(tuple(p) for c in left[0].collections if hasattr(c, "get_sizes")
                               and len(c.get_sizes()) and c.get_sizes()[0] > 100 for p in c.get_offsets())
        seen["fonts"] = min(t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize")
                                                                  and hasattr(a, "get_text") and a.get_text()))
        seen["width"] = fig.get_figwidth()
        return saved

    monkeypatch.setattr("matplotlib.figure.Figure.savefig", check)
    assert curve.draw(table, {}, tmp_path) == [f"remat_curve_{SIZE}.png"]
    left, right = seen["labels"]
    # left: the curves with peaks (PyTorch eager, both JAX); right: every curve, budgets included
    assert left == sorted(["plain", "dots", "full", "every2", "plain", "plain"])
    assert right == sorted(left + ["plain", "b=0.5", "b=0.25", "b=0.1", "b=0"])
    # PyTorch eager peaks: plain (12 MiB, 10 ms), dots (9, 11), full (6, 12) ringed; every2 (7, 14) not
    assert (6.0, pytest.approx(12.0)) in seen["rings"] and all(r[0] != 7.0 for r in seen["rings"])
    assert seen["fonts"] >= 9 and seen["width"] <= 7.5


def crowded() -> pd.DataFrame:
    """Three compiled lines whose remat points nearly coincide (saved bytes near zero, times within a few %), as a
    real CPU run's compiled panels have them, each with its plain point far off."""
    points = ("plain", "remat_full", "remat_every2", "remat_names", "remat_dots", "budget 0")
    return pd.DataFrame([
        curve_point(fw, "compiled", form, p, (t * (1 + 0.02 * i), NAN, NAN), ONE, 13 if p == "plain" else 0.1 * i,
                    20 + 0.2 * i, "m", 1)
        for fw, form, t in (("torch", "unrolled", 0.019), ("jax", "unrolled", 0.027), ("jax", "scan", 0.030))
        for i, p in enumerate(points)])


def paired_table() -> pd.DataFrame:
    table = pd.DataFrame(curve_rows())
    for c in paired_results.NUMBERS:
        table[c] = pd.to_numeric(table[c].replace("", math.nan))
    return table


@pytest.mark.parametrize(("name", "make", "size"), [("two modes", table, "S"), ("paired rows", paired_table, SIZE),
                                                    ("crowded", crowded, "S")])
def test_no_two_labels_overlap_every_point_is_named_and_the_axes_name_their_metric(name, make, size, tmp_path,
                                                                                   monkeypatch) -> None:
    captured_figures(monkeypatch)  # not written: the figure is read back
    data = make()
    fig = curve.figure(data, size, SHORT, tmp_path / "x.png")
    assert not overlapping(fig), name
    assert not off_the_page(fig), name
    assert not unnamed_axes(fig), name
    for ax, (column, _) in zip(fig.axes, curve.PANELS * 2):
        mode = ax.get_title().split(" ")[0]
        # each point of each line drawn here named once, in one label of its own or one it shares
        shown = sorted(part for t in ax.texts if t.get_text() != "no curve has this memory\non this device"
                       for part in t.get_text().split(", "))
        lines = [c for _, c in paired_results.curves(data) if (c["mode"] == mode).all()
                 and c[column].map(lambda v: math.isfinite(v)).all()]
        assert shown == sorted(curve.short(p) for c in lines for p in c.point), (name, ax.get_title())


def test_long_curve_names_keep_the_whole_legend_inside_the_figure(tmp_path: Path, monkeypatch) -> None:
    # the CPU curve's seven lines as they come, two named with their fused attention, the longest labels the suite
    # draws, in two columns of the legend; the compiled JAX lines have a peak, so they come before PyTorch's
    rows = [curve_point(fw, mode, form, "plain", (0.01, 0.009, 0.011), ONE, 8, 8 if peak else NAN, "", 1,
                        attention=att)
            for fw, mode, form, att, peak in (
                ("torch", "eager", "unrolled", "", True), ("jax", "eager", "unrolled", "", False),
                ("torch", "compiled", "unrolled", "", False), ("jax", "compiled", "unrolled", "", True),
                ("jax", "compiled", "scan", "", True), ("torch", "compiled", "unrolled", "fused", False),
                ("jax", "compiled", "unrolled", "fused", True))]
    seen: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda self, path, *args, **kwargs: seen.append(self))
    curve.figure(pd.DataFrame(rows), "S", SHORT, tmp_path / "x.png")
    [fig] = seen
    renderer = FigureCanvasAgg(fig).get_renderer()
    [legend] = fig.legends
    assert "PyTorch compiled unrolled fused attention" in [t.get_text() for t in legend.get_texts()]
    box = legend.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert min(ax.get_tightbbox(renderer).y0 for ax in fig.axes) >= box.y1


TRACKER = "not measured: the live-storage tracker cannot see inside Inductor's kernels"


def compiled_only() -> pd.DataFrame:
    """The cited CPU run's compiled curve in small: PyTorch's policies and memory budgets without a peak (its CPU
    tracker cannot see inside Inductor's kernels), JAX's policies with XLA's buffer-plan peak."""
    return pd.DataFrame([
        *(curve_point("torch", "compiled", "unrolled", p, (t, t * 0.95, t * 1.05), ONE, saved, NAN, TRACKER, 1)
          for p, t, saved in (("plain", 0.015, 13), ("remat_full", 0.020, 0.4), ("budget 0.5", 0.016, 9),
                              ("budget 0", 0.019, 0))),
        *(curve_point("jax", "compiled", "unrolled", p, (t, t * 0.95, t * 1.05), ONE, saved, peak,
                      "jax compiled.memory_analysis", 1)
          for p, t, saved, peak in (("plain", 0.026, 13, 21), ("remat_dots", 0.026, 8, 21.5),
                                    ("remat_full", 0.025, 0.4, 20))),
    ])


def draw_figure(table: pd.DataFrame, tmp_path: Path, monkeypatch) -> Figure:
    seen: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda self, path, *args, **kwargs: seen.append(self))
    curve.figure(table, "S", SHORT, tmp_path / "x.png")
    [figure] = seen
    return figure


def test_the_title_names_the_modes_it_draws(fig: Figure, tmp_path: Path, monkeypatch) -> None:
    assert fig.get_suptitle() == "remat trade-off, S, eager and compiled: step time against memory"
    eager = draw_figure(table()[lambda t: t["mode"] == "eager"], tmp_path, monkeypatch)
    assert eager.get_suptitle() == "remat trade-off, S, eager only: step time against memory"
    compiled = draw_figure(compiled_only(), tmp_path, monkeypatch)
    assert compiled.get_suptitle() == "remat trade-off, S, compiled only: step time against memory"


def test_a_compiled_curve_draws_both_frameworks_lines_and_its_peak_panel_names_the_line_without_a_peak(
        tmp_path: Path, monkeypatch) -> None:
    fig = draw_figure(compiled_only(), tmp_path, monkeypatch)
    peak, saved = fig.axes
    assert peak.get_title().startswith("compiled (torch.compile, jax.jit)")
    assert sorted(data_lines(saved)) == ["JAX compiled unrolled", "PyTorch compiled unrolled"]
    assert list(data_lines(peak)) == ["JAX compiled unrolled"]  # PyTorch's compiled points have no CPU peak
    assert sorted(t.get_text() for t in saved.texts) == sorted(["plain", "full", "b=0.5", "b=0", "plain", "dots",
                                                               "full"])
    [note] = [" ".join(t.get_text().split()) for t in fig.texts if t.get_text().startswith("bars: ")]
    assert ("no peak on this device: PyTorch compiled unrolled (the live-storage tracker cannot see inside "
            "Inductor's kernels)") in note
    assert "JAX compiled unrolled (" not in note
    assert not overlapping(fig) and not off_the_page(fig)
