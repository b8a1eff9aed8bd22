"""The per-pillar figures' layout (tape_vs_trace.report.figures) read back from the matplotlib artists, and the blank
lines that separate summary.md's blocks: found by mutation testing (`make mutate`), where a changed dpi, font size,
legend frame, tick set, row offset or separator stayed green because no test read these values."""

from __future__ import annotations

import math

import matplotlib
import pandas as pd
import pytest

from implementations import frameworks
from tape_vs_trace.report import figures, markdown
from tape_vs_trace.report.load import COLUMNS, Results

matplotlib.use("Agg")


def row(framework: str, value: float = 2e-3, workload: str = "mlp", size: str = "small", variant: str = "",
        metric: str = "time_step", unit: str = "seconds", machine: str = "box") -> dict:
    """One ok, sampled row of summary.csv without an interval (asv's median only)."""
    return {c: "" for c in COLUMNS} | {
        "pillar": "recording", "workload": workload, "size": size, "variant": variant, "framework": framework,
        "metric": metric, "unit": unit, "value": value, "spread": math.nan, "ci_low": math.nan,
        "ci_high": math.nan, "processes": math.nan, "samples": math.nan, "basis": "asv median", "sampled": True,
        "comparable": True, "params": f'{{"framework": "{framework}"}}', "benchmark": f"recording.{metric}",
        "commit": "abc123" + "0" * 34, "date": "2023-11-14", "run_date": "2023-11-14 22:13:20 UTC",
        "env": "existing-venv", "machine": machine, "device": "cpu", "torch_version": "2.5.1",
        "jax_version": "0.4.35", "dtype": "float32", "precision": "highest", "benchmark_version": "v1",
        "status": "ok"}


def test_figure_is_saved_at_its_dpi_with_a_larger_title_and_a_frameless_legend_at_the_top_right() -> None:
    # a matplotlibrc that moves legends elsewhere must not move this one: the layout reserves room at the top right
    with matplotlib.rc_context({"legend.loc": "lower left", "figure.dpi": 72}):
        fig, axes, _ = figures._figure([1.6, 2.0], "recording: PyTorch and JAX", "commit abc")
    assert fig.get_dpi() == figures.DPI == 130  # 7.5 in at 130 dpi: the PNG's width the README assumes
    assert len(axes) == 2
    assert fig._suptitle.get_text() == "recording: PyTorch and JAX"
    assert fig._suptitle.get_fontsize() == figures.FONT + 2 == 11
    (legend,) = fig.legends
    assert legend._loc == 1  # matplotlib's code for "upper right"
    assert legend.get_frame_on() is False
    assert [t.get_text() for t in legend.get_texts()] == [f.label for f in frameworks.FRAMEWORKS.values()]


def test_labels_collapse_the_gap_an_empty_part_leaves() -> None:
    rows = pd.DataFrame([row("torch", size="", variant="checkpointed"), row("torch", size="", variant="")])
    assert list(figures._labels(rows, False)) == ["mlp checkpointed", "mlp"]


def test_log_axis_ticks_at_1_2_5_per_decade_on_a_narrow_range() -> None:
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    ax.plot([1.5, 90], [0, 1])
    figures._log(ax)
    low, high = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if low <= t <= high]
    expected = sorted(m * 10.0**e for e in range(-1, 4) for m in (1, 2, 5) if low <= m * 10.0**e <= high)
    assert 5 in expected and 50 in expected  # the range covers the fives that a wrong tick set would miss
    assert ticks == pytest.approx(expected)


def test_rows_panel_places_each_framework_a_fifth_of_a_row_either_side_in_9_pt() -> None:
    from matplotlib.figure import Figure

    first, second = frameworks.NAMES
    rows = pd.DataFrame([row(first, workload="mlp"), row(second, workload="mlp"), row(first, workload="cnn")])
    ax = Figure().subplots()
    figures._rows_panel(ax, rows, "time", True)
    # mlp is row 0: the first framework 0.2 above its middle, the second 0.2 below
    ys = sorted(float(line.get_ydata()[0]) for line in ax.lines if len(line.get_ydata()) == 1)
    assert ys == pytest.approx([-0.2, 0.2, 0.8])
    (text,) = ax.texts  # cnn has no result of the second framework
    assert text.get_text() == f"{frameworks.label(second)}: not run"
    assert text.get_position()[1] == pytest.approx(1.2)
    assert text.get_fontsize() == figures.FONT == 9
    # the rows fill the axis from half a row above the first to half a row below the last, first on top
    assert ax.get_ylim() == pytest.approx((1.5, -0.5))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["mlp small", "cnn small"]


def lines_of(table: pd.DataFrame) -> list[str]:
    return markdown.markdown(Results(table=table, machines={"box": {}, "lab": {}}), {}, "results").split("\n")


def test_markdown_separates_its_blocks_with_blank_lines() -> None:
    lines = lines_of(pd.DataFrame([row(fw) for fw in frameworks.NAMES]))
    assert lines[0] == "# tape-vs-trace report" and lines[1] == "" and lines[2].startswith("Built by ")
    table_end = max(i for i, line in enumerate(lines) if line.startswith("| mlp small"))
    assert lines[table_end + 1] == ""


def test_markdown_heads_each_machine_of_several_with_a_blank_line_after() -> None:
    lines = lines_of(pd.DataFrame([row("torch", machine="box"), row("torch", machine="lab")]))
    heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
    assert [lines[i] for i in heads] == ["## box", "## lab"]
    for i in heads:
        assert lines[i + 1] == ""
        assert lines[i + 2] == "### Provenance"


def test_rows_panel_draws_ok_rows_as_unjoined_dots_and_bars_in_the_framework_colour() -> None:
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure

    first, second = frameworks.NAMES
    rows = pd.DataFrame([row(first), row(second) | {"status": "failed"}])
    ax = Figure().subplots()
    figures._rows_panel(ax, rows, "time", True)
    [dot] = [line for line in ax.lines if len(line.get_xdata()) == 1]  # the ok row: a dot, not "failed"
    assert dot.get_linestyle() == "None" and dot.get_marker() == "o"
    assert [t.get_text() for t in ax.texts] == [f"{frameworks.label(second)}: failed"]
    mib = [row(fw, value=2 ** 21, metric="track_peak_bytes", unit="bytes") for fw in (first, second)]
    ax = Figure().subplots()
    figures._rows_panel(ax, pd.DataFrame(mib), "peak", False)
    assert [p.get_facecolor() for p in ax.patches] == [to_rgba(frameworks.FRAMEWORKS[fw].color)
                                                       for fw in (first, second)]
    assert [p.get_width() for p in ax.patches] == [2.0, 2.0]  # MiB


def test_rows_panel_says_when_the_frameworks_peaks_were_measured_differently() -> None:
    from matplotlib.figure import Figure

    first, second = frameworks.NAMES
    peaks = [row(fw, value=2 ** 20, metric="track_peak_bytes", unit="bytes") | {"memory_method": m}
             for fw, m in ((first, "tracker"), (second, "buffer plan"))]
    ax = Figure().subplots()
    figures._rows_panel(ax, pd.DataFrame(peaks), "peak", False)
    assert ax.get_title() == "peaks measured differently per framework: compare within one"
    same = [p | {"memory_method": "allocator"} for p in peaks]
    ax = Figure().subplots()
    figures._rows_panel(ax, pd.DataFrame(same), "peak", False)
    assert ax.get_title() == ""


def test_differences_place_each_framework_a_fifth_of_a_row_either_side_of_its_case() -> None:
    from matplotlib.figure import Figure

    from tape_vs_trace.report import stats

    first, second = frameworks.NAMES
    ax = Figure().subplots()
    figures._differences(ax, [("a", first, stats.Comparison(1.2, 1.1, 1.3)), ("a", second, stats.Comparison(0.9)),
                              ("b", second, stats.Comparison(1.5, 1.4, 1.6))], "step time")
    dots = sorted((round(float(line.get_ydata()[0]), 6), round(float(line.get_xdata()[0]), 6)) for line in ax.lines
                  if line.get_marker() == "o")  # the dots, not the interval's caps
    assert dots == [(-0.2, 20.0), (0.2, -10.0), (1.2, 50.0)]  # +/- 0.2 around row 0 and row 1; x in % change


def test_the_rows_panel_note_on_missing_intervals_is_in_9_pt() -> None:
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    figures._rows_panel(ax, pd.DataFrame([row(fw) for fw in frameworks.NAMES]), "time", True)
    assert ax.get_title() == "dot: median (no interval: no between-process samples)"
    assert ax.title.get_fontsize() == figures.FONT
