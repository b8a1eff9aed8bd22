"""The headline (tape_vs_trace.report.headline): which ratios it shows, in which words, the machines it leaves out,
each mechanism's count of verdicts, the verdict across machines, and the chart as drawn (labels, the line at 1, no
overlaps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tape_vs_trace.report import glance, headline, headline_chart, stats
from tape_vs_trace.report.headline import Row
from tape_vs_trace.report.load import load_results
from tests.report.helpers import unrendered, write_results


def data_of(root: Path):
    return load_results(write_results(root), lambda message: None)


def test_sizes_read_as_words_and_an_unknown_size_as_its_name() -> None:
    assert headline.size_words("transformer", "L4-B4-S64-D128") == "4 layers, batch 4, 64 tokens, width 128"
    assert headline.size_words("mlp", "64x256x1024") == "batch 64, width 256, hidden 1024"
    assert headline.size_words("mlp", "no-such-size") == "no-such-size"
    assert headline.case_label(("transformer", "L4-B4-S64-D128", "compiled", "scan", "matched", "fused")) == \
        "transformer (4 layers, batch 4, 64 tokens, width 128): compiled · scan (PyTorch: prototype " \
        "torch._higher_order_ops.scan; JAX: lax.scan) · matched · fused"


def test_the_rows_are_the_step_time_and_saved_bytes_ratios_of_like_rows(tmp_path: Path) -> None:
    data = data_of(tmp_path)
    groups, left_out = headline.current(data)
    rows = headline.rows_of(groups)
    assert left_out == [] and list(groups) == ["box"]
    assert [(r.measure, r.label) for r in rows] == [("step time", "mlp (s): eager"), ("step time", "mlp (s): compiled"),
                                                    ("saved for backward", "mlp (s)")]
    table = data.table
    for r in rows:
        assert r.torch["framework"] == "torch" and r.jax["framework"] == "jax"
        assert r.comparison == stats.compare(r.torch, r.jax)
    saved = rows[-1].comparison
    assert saved.ratio == saved.low == saved.high == 1.5  # 3 * 2**19 B against 2**20 B, exact
    assert set(table[table.metric == "time_step"].framework) == {"torch", "jax"}


def test_a_machine_whose_latest_results_are_of_older_benchmark_versions_is_left_out(tmp_path: Path) -> None:
    data = data_of(tmp_path)
    for name in ("recording.GradStep_mlp.time_step", "recording.GraphCost_mlp.track_saved_bytes"):
        data.benchmarks[name]["version"] = "a newer one"
    groups, left_out = headline.current(data)
    assert groups == {} and headline.rows_of(groups) == []
    assert left_out == ["box (commit abc12300): its latest results are of older benchmark versions, which measured "
                        "other programs"]
    assert not headline.draw([], tmp_path / "h.png", "") and not (tmp_path / "h.png").exists()


def row(machine: str, ratio: float, low: float, high: float, mode: str = "eager", measure: str = "step time") -> Row:
    case = ("mlp", "64x256x1024", mode, "", "matched", "")
    return Row(measure, case, headline.case_label(case), machine, "c" * 40, stats.Comparison(ratio, low, high),
               {"device": "cpu"}, {})


def test_a_mechanism_counts_each_verdict_per_mode_with_the_range_of_its_ratios() -> None:
    rows = [row("a", 4.7, 4.0, 6.0), row("b", 2.0, 1.5, 2.5), row("a", 1.0, 0.8, 1.2),
            row("a", 0.5, 0.4, 0.6, mode="compiled")]
    assert headline.told_by_mode(rows) == (
        "eager: 3 ratios on 2 machines, JAX slower in 2 (2.00–4.70×), no difference measurable in 1; compiled: 1 "
        "ratio on 1 machine, JAX faster in 1 (0.50×)")
    saved = [row("a", 2.0, 2.0, 2.0, mode="", measure="saved for backward")]
    assert headline.told_by_mode(saved) == "1 ratio on 1 machine, JAX keeps more in 1 (2.00×)"


def test_a_mechanism_tells_its_verdicts_in_one_order_whatever_the_order_of_the_rows() -> None:
    """Findings first (slower, faster), then what is no finding: not the order the rows came in. A direction not
    beyond a rerun's band is counted apart from the findings."""
    rows = [row("a", 1.0, 0.8, 1.2), row("a", 1.25, 1.09, 1.45), row("a", 0.5, 0.4, 0.6), row("a", 4.7, 4.0, 6.0)]
    assert headline.told_by_mode(rows) == (
        "eager: 4 ratios on 1 machine, JAX slower in 1 (4.70×), JAX faster in 1 (0.50×), not beyond a rerun's band "
        "in 1, no difference measurable in 1")


def scan_row(machine: str, ratio: float, mode: str, size: str, formulation: str) -> Row:
    case = ("lstm", size, mode, formulation, "", "")
    return Row("step time", case, headline.case_label(case), machine, "c" * 40,
               stats.Comparison(ratio, ratio * 0.9, ratio * 1.1), {"device": "cpu"}, {})


def test_a_scan_row_names_the_prototype_operator_in_its_label_and_in_the_count() -> None:
    rows = [scan_row("a", 0.08, "compiled", "l2-c128-b14", "scan"), row("a", 4.7, 4.0, 6.0, mode="compiled")]
    assert rows[0].label == ("lstm (2 layers, 128 characters): compiled · scan (PyTorch: prototype "
                             "torch._higher_order_ops.scan; JAX: lax.scan)")
    assert "JAX faster in 1 (0.08×; lstm's scan: PyTorch's prototype torch._higher_order_ops.scan against JAX's " \
           "lax.scan)" in headline.told_by_mode(rows)


def test_an_exact_difference_within_the_resolution_counts_as_equal_not_as_a_direction() -> None:
    """16 B of 13,516,800 (JAX's scalar literals) reads "equal (JAX +16 B)" and leaves the count of "keeps more"."""
    saved = [row("a", 2.25, 2.25, 2.25, mode="", measure="saved for backward"),
             row("a", 1.0, 1.0, 1.0, mode="", measure="saved for backward")]
    saved.append(Row("saved for backward", saved[0].case, saved[0].label, "a", "c" * 40,
                     stats.exact(13_516_800, 13_516_816, "track_saved_bytes"), {"device": "cpu"}, {}))
    assert headline.told_by_mode(saved).endswith("JAX keeps more in 1 (2.25×), equal in 2")
    assert headline_chart.ratio_text(saved[-1].comparison) == "equal (JAX +16 B)"
    assert headline.holds({"a": saved[-1]}) == "no finding on any of 1"


def test_across_machines_each_finding_says_on_how_many_it_holds_and_a_direction_within_the_band_by_name() -> None:
    same = [row("a", 4.7, 4.0, 6.0), row("b", 3.0, 2.5, 3.5)]
    assert headline.holds({r.machine: r for r in same}) == "JAX slower on 2 of 2"
    split = [row("a", 4.7, 4.0, 6.0), row("b", 1.05, 0.9, 1.2)]
    assert headline.holds({r.machine: r for r in split}) == "JAX slower on 1 of 2"
    band = [row("a", 4.7, 4.0, 6.0), row("b", 1.25, 1.09, 1.45)]
    assert headline.holds({r.machine: r for r in band}) == \
        "JAX slower on 1 of 2; b: JAX 25 % slower, not beyond a rerun's ±10 %"
    opposite = [row("a", 4.7, 4.0, 6.0), row("b", 0.5, 0.4, 0.6)]
    assert headline.holds({r.machine: r for r in opposite}) == "JAX slower on 1 of 2; JAX faster on 1 of 2"


@pytest.fixture
def drawn(monkeypatch, tmp_path: Path):
    """The headline chart of two machines, with the figure kept to look at what is drawn."""
    from matplotlib.figure import Figure

    kept = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, *a, **k: (kept.append(fig), save(fig, path, *a, **k)))
    rows = [row("a", 4.7, 4.0, 6.0), row("b", 1.05, 0.9, 1.2), row("a", 0.5, 0.4, 0.6, mode="compiled"),
            row("a", 2.0, 2.0, 2.0, mode="", measure="saved for backward")]
    assert headline.draw(rows, tmp_path / headline.NAME, headline.footer(rows))
    assert (tmp_path / headline.NAME).read_bytes()[:4] == b"\x89PNG"
    return kept[0]


def test_the_chart_has_a_panel_per_measure_with_its_metric_a_line_at_one_and_every_case_labelled(drawn) -> None:
    step, saved = drawn.axes
    assert step.get_xscale() == saved.get_xscale() == "log"
    assert "step time" in step.get_xlabel() and "JAX/PyTorch" in step.get_xlabel()
    assert "bytes saved for the backward" in saved.get_xlabel()
    assert [t.get_text() for t in step.get_yticklabels()] == ["", "eager · matched", "compiled · matched"]
    texts = [t.get_text() for t in step.texts]
    assert "mlp (batch 64, width 256, hidden 1024)" in texts  # the workload's heading
    assert {"4.7× [4–6]", "1.05× [0.9–1.2]", "0.5× [0.4–0.6]"} <= set(texts)  # every ratio written out
    assert any(list(line.get_xdata()) == [1.0, 1.0] for line in step.lines)  # the line at 1
    assert len(step.patches) == 1 and not saved.patches  # the rerun band only where a rerun moves the ratio
    band = step.patches[0]
    assert band.get_x() == pytest.approx(1 / 1.1) and band.get_x() + band.get_width() == pytest.approx(1.1)
    legend = [t.get_text() for t in drawn.legends[0].get_texts()]
    assert legend[:2] == ["a", "b"] and "hollow: not a finding" in legend


def test_the_chart_tells_machines_by_marker_in_no_frameworks_colour(drawn) -> None:
    """Blue is JAX and red PyTorch in every other figure: no machine of the headline is drawn in a hue near either."""
    from colorsys import rgb_to_hsv

    from matplotlib.colors import to_rgb

    from implementations import frameworks

    def hue(colour) -> tuple[float, float]:
        h, s, _ = rgb_to_hsv(*to_rgb(colour))
        return h * 360, s

    lines = [a for ax in drawn.axes for a in ax.get_lines() if a.get_marker() in headline_chart.MACHINE_MARKERS]
    assert {line.get_marker() for line in lines} == {"o", "s"}  # two machines, two markers
    taken = [hue(fw.color)[0] for fw in frameworks.FRAMEWORKS.values()]
    for line in lines:
        h, saturation = hue(line.get_color())
        assert saturation < 0.2 or all(min(abs(h - t), 360 - abs(h - t)) > 25 for t in taken), line.get_color()


def test_no_two_labels_of_the_chart_overlap(drawn) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    renderer = FigureCanvasAgg(drawn).get_renderer()
    drawn.draw(renderer)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in drawn.findobj(Text)
             if t.get_text().strip() and t.get_visible()]
    clashes = [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:] if ba.overlaps(bb)]
    assert not clashes


@pytest.mark.parametrize("machines", ["ab", "a"])  # a machine page's strip is one machine's
def test_a_tall_chart_with_a_scan_row_keeps_its_title_and_labels_apart(monkeypatch, tmp_path: Path,
                                                                     machines: str) -> None:
    """Twenty cases and the scan row's long label: the title clears the key line, the label its neighbours."""
    from tests.report.helpers import captured_figures, overlapping

    figs = captured_figures(monkeypatch)
    rows = [Row("step time", ("mlp", f"s{i}", "eager", "", "", ""), f"mlp s{i}", m, "c" * 40,
                stats.Comparison(2.0, 1.5, 2.5), {"device": "cpu"}, {}) for i in range(20) for m in machines]
    rows += [scan_row(m, 0.08, "compiled", "l2-c128-b14", "scan") for m in machines]
    rows += [scan_row(m, 50.0, "eager", "l2-c32-b14", "") for m in machines]  # a heading under the scan label
    assert headline.draw(rows, tmp_path / headline.NAME, headline.footer(rows))
    assert overlapping(figs[headline.NAME]) == []


def test_the_report_opens_with_the_chart_and_the_readme_block_shows_it(tmp_path: Path) -> None:
    from tape_vs_trace import cli

    results = write_results(tmp_path / "results")
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- report:start -->\n<!-- report:end -->\n")
    with unrendered():  # the test reads summary.md and the README block
        assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "out"), "--readme",
                         str(readme)]) == 0
    summary = (tmp_path / "out" / "summary.md").read_text().splitlines()
    heads = [line for line in summary if line.startswith("## ")]
    assert heads[:2] == ["## Scale", "## Each framework at its fastest"]
    chart = f"![{glance.ALT}](headline.png)"
    assert summary.index(chart) < summary.index("## Mechanisms, each in like modes")
    block = readme.read_text()
    assert chart.replace("](headline.png)", "](out/headline.png)") in block
    assert block.count("\n") < 30  # the front page's first part, not the report
