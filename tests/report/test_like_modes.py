"""report.like_modes: the front page's mechanisms and memory count each verdict over the like machines only, in like
modes, and the page of every workload and machine keeps each cell; report.front.holds_short says how many point one
way within a rerun's band."""

from __future__ import annotations

from tape_vs_trace.report import front, headline, like_modes, stats
from tape_vs_trace.report.headline import Headline, Row
from tests.report.test_hosts import APART, MINE, OTHER, WORKER, ratio_row


def _row(machine: str, ratio: float, low: float, high: float, mode: str, measure: str = "step time",
         workload: str = "mlp") -> Row:
    case = (workload, "s", mode, "", "", "")
    side = {"device": "cpu", "machine": machine, "commit": MINE, "benchmark": "recording.GradStep_mlp.time_step",
            "sampled": measure != "saved for backward", "benchmark_version": "3", "date": "2026-12-01 00:00:00 UTC",
            "basis": "processes", "method": "", "memory_method": ""}
    return Row(measure, case, headline.case_label(case), machine, MINE, stats.Comparison(ratio, low, high), side,
               side)


def _top(rows: list[Row], extra: list[Row] = ()) -> Headline:
    return Headline(rows, [], {m: {"num_cpu": 2} for m in {r.machine for r in rows}}, False, list(extra))


def test_the_summary_counts_each_mechanism_by_mode_and_names_the_dispatch_pair() -> None:
    rows = [_row("a", 1.5, 1.3, 1.7, "compiled"), _row("b", 0.95, 0.92, 0.98, "compiled"),
            _row("a", 4.0, 3.5, 4.5, "eager"), _row("b", 5.0, 4.5, 5.5, "eager")]
    extra = [_row("a", 3.0, 2.5, 3.5, "eager", "custom backward"), _row("a", 1.0, 0.8, 1.2, "compiled",
                                                                      "custom backward")]
    lines = like_modes.mechanism_summary(_top(rows, extra), {})
    body = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert body == [
        "| compiled program | `torch.compile`, `jax.jit`: step time | slower 1 (1.50×), within a rerun's band 1 of 2, "
        "2 machines |",
        "| dispatch cost | eager tape, un-jitted JAX: per-op dispatch | slower 2 (4.00–5.00×) of 2, 2 machines |",
        "| custom backward | `autograd.Function`, `custom_vjp`: step time | eager: slower 1 (3.00×) of 1, 1 machine; "
        "compiled: no difference 1 of 1, 1 machine |"]
    assert f"]({like_modes.PAGE})" in lines[2]


def test_an_unlike_machine_is_in_no_count_of_the_front_page() -> None:
    details = {("new", MINE): WORKER, ("old", OTHER): WORKER}
    rows = [ratio_row("new", 4.2, 4.1, 4.5, APART.author_date_ms),
            ratio_row("old", 0.5, 0.4, 0.6, APART.author_date_ms - 1, commit=OTHER)]
    assert [r.machine for r in like_modes.like_only(rows, details)] == ["new"]
    # the one-machine count: the old run's faster ratio would have added "faster 1"
    assert like_modes.counted(like_modes.like_only(rows, details), False) == "eager: slower 1 (4.20×) of 1, 1 machine"


def test_memory_counts_programs_where_every_machine_agrees_and_ratios_where_not() -> None:
    saved = [_row(m, v, v, v, "", "saved for backward", w) for m in ("a", "b")
             for w, v in (("mlp", 2.0), ("chain", 1.0), ("lstm", 1.5))]
    [head, _, caption, _, said, _] = like_modes.memory_summary(_top(saved), {})
    assert head == "## Memory" and "residuals before XLA" in caption
    assert said.startswith("- **Saved for the backward**: JAX keeps more in 2 (1.50–2.00×), equal in 1 of 3 "
                           "programs, alike on all 2 machines; ")
    apart = saved[:-1] + [_row("b", 1.2, 1.2, 1.2, "", "saved for backward", "lstm")]
    [*_, said, _] = like_modes.memory_summary(_top(apart), {})
    assert ": keeps more 4 (1.20–2.00×), equal 2 of 6, 2 machines; " in said


def test_the_page_keeps_every_machines_cell_and_the_front_page_links_it() -> None:
    rows = [_row("a", 1.5, 1.3, 1.7, "compiled"), _row("b", 0.95, 0.92, 0.98, "compiled"),
            _row("a", 2.0, 2.0, 2.0, "", "saved for backward")]
    text = like_modes.page(_top(rows), {})
    assert "| compiled program | mlp s | — | 1.5× [1.3–1.7] | 0.95× [0.92–0.98] |" in text
    assert "## Memory" in text and "| mlp s | — | 2× |" in text


def test_the_short_verdict_counts_findings_then_directions_within_a_rerun_band() -> None:
    rows = {"a": _row("a", 1.5, 1.3, 1.7, "compiled"), "b": _row("b", 1.18, 1.03, 1.35, "compiled"),
            "c": _row("c", 1.34, 1.05, 1.7, "compiled"), "d": _row("d", 1.0, 0.8, 1.2, "compiled")}
    assert front.holds_short(rows) == "JAX slower on 1 of 4; 2 slower, within a rerun's ±10 %"
    assert front.holds_short({"d": rows["d"]}) == "no finding on any of 1"


def test_the_unlike_line_links_the_hosts_page_from_where_it_is_read() -> None:
    left = {"old": "its runner layout (one worker process) is not new's (none)"}
    assert front.unlike_short(left) == ["- **†** old: left out of the verdicts, another kind of run (runner layout; "
                                        "[hosts.md](hosts.md))."]
    assert front.unlike_short(left, "results/report/")[0].endswith("[hosts.md](results/report/hosts.md)).")
