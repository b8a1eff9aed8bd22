"""The figures' placeholders and styling rules (tape_vs_trace.report.figures), read back from the matplotlib artists:
found by mutation testing (`make mutate`), where the report tests checked only that a PNG was written."""

from __future__ import annotations

from tape_vs_trace.report import figures


def test_an_empty_panel_says_so_in_its_middle_without_ticks() -> None:
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    figures._no_data(ax, "the engine pillar")
    (text,) = ax.texts
    assert text.get_text() == "no results for the engine pillar"
    assert text.get_position() == (0.5, 0.5)
    assert text.get_transform() is ax.transAxes  # the middle of the panel, not data coordinates
    assert (text.get_ha(), text.get_va()) == ("center", "center")
    assert to_rgba(text.get_color()) == to_rgba("0.4")
    assert text.get_fontsize() == figures.FONT == 9
    assert list(ax.get_xticks()) == [] and list(ax.get_yticks()) == []
