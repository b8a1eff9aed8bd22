"""report.glance: the front page's chart, one row per answer: which ratios each row holds, and what is drawn on it
(each point at its ratio and interval, on its answer's line, filled where a finding, the legend and the scale above
the panels), read back from the figure's artists."""

from __future__ import annotations

from pathlib import Path

import pytest

from tape_vs_trace.report import glance, headline, stats
from tape_vs_trace.report.headline import Headline, Row
from tests.report.helpers import overlapping, write_results


def ratio(machine: str, value: float, low: float, high: float, workload: str = "mlp", mode: str = "compiled",
          style: str = "default", measure: str = "step time") -> Row:
    case = (workload, "s", mode, "", style, "")
    return Row(measure, case, headline.case_label(case), machine, "c" * 40, stats.Comparison(value, low, high),
               {"device": "cpu"}, {})


def fastest(machine: str, value: float, workload: str) -> Row:
    case = (workload, "s", "", "", "", "")
    return Row("step time", case, headline.workload_label(case), machine, "c" * 40,
               stats.Comparison(value, value * 0.9, value * 1.1), {"device": "cpu"}, {})


@pytest.fixture
def top() -> Headline:
    rows = [ratio("a", 1.5, 1.3, 1.7), ratio("b", 1.02, 0.95, 1.1),
            ratio("a", 4.0, 3.5, 4.5, mode="eager"), ratio("a", 9.0, 8.0, 10.0, mode="eager", style="matched"),
            ratio("a", 2.0, 2.0, 2.0, mode="", measure="saved for backward")]
    extra = [ratio("a", 3.0, 2.5, 3.5, mode="eager", measure="custom backward"),
             ratio("b", 0.5, 0.4, 0.6, mode="compiled", measure="custom backward"),
             ratio("a", 0.8, 0.8, 0.8, mode="", measure="remat")]
    return Headline(rows, [], {"a": {"num_cpu": 2}, "b": {"num_cpu": 2}}, False, extra)


def test_a_row_per_answer_the_fastest_per_workload_then_each_mechanism_in_like_modes(top: Headline) -> None:
    best = [fastest("a", 0.9, "mlp"), fastest("b", 1.2, "mlp"), fastest("a", 0.05, "lstm")]
    answers = glance.answers(top, best)
    assert [(a.panel, a.label) for a in answers] == [
        (glance.FASTEST, "mlp s"), (glance.FASTEST, "lstm s"),
        (glance.MECHANISMS, "compiled program (torch.compile against jax.jit)"),
        (glance.MECHANISMS, "dispatch cost (PyTorch's eager tape against un-jitted JAX)"),
        (glance.MECHANISMS, "custom backward (step time)"), (glance.MECHANISMS, "remat (saved bytes)")]
    by_label = {a.label: a.rows for a in answers}
    assert [r.machine for r in by_label["mlp s"]] == ["a", "b"]  # every machine's ratio on one row
    # the dispatch-cost row holds the default programs only, as the front page's table; saved bytes are no mechanism
    assert [r.comparison.ratio for r in by_label["dispatch cost (PyTorch's eager tape against un-jitted JAX)"]] == [4.0]
    assert [r.case[2] for r in by_label["custom backward (step time)"]] == ["eager", "compiled"]
    assert all(r.measure == "step time" for a in answers[:4] for r in a.rows)


@pytest.fixture
def drawn(monkeypatch, tmp_path: Path, top: Headline):
    from tests.report.helpers import captured_figures

    figs = captured_figures(monkeypatch)
    answers = glance.answers(top, [fastest("a", 0.9, "mlp"), fastest("b", 1.2, "mlp")])
    marked = {("b", ("mlp", "s", "compiled", "", "default", ""))}
    assert glance.draw(answers, tmp_path / headline.NAME, glance.scale_words(top), marked)
    return figs[headline.NAME], answers


def points(ax) -> list[tuple[float, float, float, float, str, float]]:
    """(x, y, low, high, face colour, alpha) of each point drawn with its interval."""
    out = []
    for c in ax.containers:
        line, _, (bars, *_) = c.lines if c.has_xerr else (c.lines[0], (), (None,))
        x, y = line.get_xdata()[0], line.get_ydata()[0]
        seg = bars.get_segments()[0] if bars is not None else [(x, y), (x, y)]
        out.append((x, y, seg[0][0], seg[1][0], line.get_markerfacecolor(), line.get_alpha()))
    return out


def test_each_ratio_is_a_point_on_its_answers_line_at_its_value_and_interval(drawn) -> None:
    fig, answers = drawn
    top_panel, mechanisms = fig.axes
    assert top_panel.get_title(loc="left") == glance.FASTEST and mechanisms.get_title(loc="left") == glance.MECHANISMS
    assert [t.get_text() for t in mechanisms.get_yticklabels()] == [
        "compiled program (torch.compile against\njax.jit)", "dispatch cost (PyTorch's eager tape\nagainst "
        "un-jitted JAX)", "custom backward (step time)", "remat (saved bytes)"]
    for ax, mine in ((top_panel, answers[:1]), (mechanisms, answers[1:])):
        want = sorted((i, r.comparison.ratio, r.comparison.low, r.comparison.high) for i, a in enumerate(mine)
                      for r in a.rows)
        got = sorted((round(y), x, low, high) for x, y, low, high, _, _ in points(ax))
        assert got == want
        assert all(abs(y - round(y)) < 0.5 for _, y, *_ in points(ax))  # a machine's offset stays on its line
    # filled where the ratio is a finding, hollow where its interval reaches 1 or the ratio is exact and equal
    faces = {x: face for x, _, _, _, face, _ in points(mechanisms)}
    assert faces[1.02] == "white" and faces[0.8] != "white" and faces[1.5] != "white"


def test_the_shared_axis_is_a_log_ratio_with_a_line_at_one_and_the_rerun_band(drawn) -> None:
    fig, _ = drawn
    for ax in fig.axes:
        assert ax.get_xscale() == "log"
        assert any(list(line.get_xdata()) == [1.0, 1.0] for line in ax.lines)
        [band] = ax.patches
        assert band.get_x() == pytest.approx(1 / 1.1) and band.get_x() + band.get_width() == pytest.approx(1.1)
    assert fig.axes[0].get_shared_x_axes().joined(*fig.axes)
    assert "JAX faster" in fig.axes[-1].get_xlabel() and "JAX slower" in fig.axes[-1].get_xlabel()


def test_the_legend_and_the_scale_stand_above_the_panels_and_no_label_overlaps(drawn) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig, _ = drawn
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    panels_top = max(ax.get_window_extent(renderer).y1 for ax in fig.axes)
    [legend] = fig.legends
    assert legend.get_window_extent(renderer).y0 > panels_top
    [scale] = [t for t in fig.texts if t.get_text().startswith("Scale:")]
    assert "2-core CPUs" in scale.get_text() and "not GPU-scale training" in scale.get_text()
    assert scale.get_window_extent(renderer).y0 > legend.get_window_extent(renderer).y0
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels[:2] == ["a", "b †"] and "compiled" in labels and "hollow: not a finding" in labels
    assert overlapping(fig) == []


def test_a_ratio_left_out_of_its_verdict_is_faint_and_the_others_not(drawn) -> None:
    fig, _ = drawn
    alphas = {x: alpha for x, _, _, _, _, alpha in points(fig.axes[1])}
    assert alphas[1.02] < 1 and alphas[1.5] == 1


def test_built_on_results_the_chart_is_drawn_and_the_strip_goes_to_a_machines_folder(tmp_path: Path) -> None:
    from tape_vs_trace.report.load import load_results

    data = load_results(write_results(tmp_path / "results"), lambda m: None)
    top = glance.build(data, tmp_path)
    assert top.drawn and (tmp_path / headline.NAME).is_file()
    assert glance.strip(top, "box", tmp_path / "box") == [glance.STRIP] and (tmp_path / "box" / glance.STRIP).is_file()
    assert glance.strip(top, "no-such-machine", tmp_path / "none") == []
