"""The distributed section of the report (tape_vs_trace.report.distributed_results, distributed_section and
distributed_figure): hand-made rows of the CSV `tape-vs-trace distributed` writes, read into summary.md after the
paired section of their machine; the ratio rule refusing unlike rows, N against N=1 stated only beyond 10 %, the
bytes checked against the analytic count, failed rows with their reason, and a figure whose axes name their
metrics and whose texts do not overlap."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from tape_vs_trace import cli, report
from tape_vs_trace.report import distributed_figure, distributed_results, distributed_section, fmt, stats
from tape_vs_trace.results.rowkey import RowKey
from tests.report.helpers import (
    FIXTURE,
    MACHINE,
    MIB,
    distributed_row,
    messages,
    off_the_page,
    overlapping,
    report_text,
    unnamed_axes,
    unrendered,
    write_csv,
)

FILE = f"{MACHINE}-93acfd55.csv"


def rows() -> list[dict]:
    """Both frameworks, ddp and fsdp, eager and compiled, N=1 and 2; JAX's fsdp eager at N=2 failed."""
    out = []
    for framework, times in (("torch", {1: [1.0, 1.02, 0.98], 2: [3.0, 3.1, 2.9]}),
                             ("jax", {1: [2.0, 2.02, 1.98], 2: [2.1, 2.0, 2.2]})):
        for form in ("ddp", "fsdp"):
            for mode in ("eager", "compiled"):
                measured = (framework, mode) in (("torch", "eager"), ("jax", "compiled"))
                for n in (1, 2):
                    if (framework, form, mode, n) == ("jax", "fsdp", "eager", 2):
                        out.append(distributed_row(framework, form, mode, n, [], status="failed",
                                                   reason="launch 2 of 3: RankTimeout: killed"))
                        continue
                    comm = "" if (framework, mode) == ("jax", "eager") else (0 if n == 1 else 2 * (1 + n) / 4)
                    out.append(distributed_row(framework, form, mode, n, times[n], peak=4 / n if measured else "",
                                               comm=comm, analytic=2 * MIB if form == "ddp" else 3 * MIB)
                               | {"gradient_bytes": 2 * MIB})
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list[str]]:
    results = tmp_path_factory.mktemp("distributed") / "results"
    shutil.copytree(FIXTURE, results)
    write_csv(results / "distributed", rows(), FILE)
    warnings: list[str] = []
    report.write_report(results, results.parent / "report", warnings.append)
    return results.parent / "report", warnings


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[tuple, dict]:
    """The rows as the report reads them, by (framework, form, mode, ranks)."""
    table = distributed_results.read(write_csv(tmp_path_factory.mktemp("rows"), rows(), FILE))
    return {(r["framework"], r["form"], r["mode"], r["ranks"]): r for r in table.to_dict("records")}


def test_the_section_comes_after_the_paired_section_of_its_machine(built) -> None:
    out, warnings = built
    text = report_text(out)
    assert not [w for w in warnings if "distributed" in w], warnings
    head = "## distributed steps (`tape-vs-trace distributed`)"
    tables = text.index(f"# {MACHINE}: every table\n")  # the machine's page of every table
    assert tables < text.index(head, tables)
    assert f"From `results/distributed/{FILE}`: commit `93acfd557dc6d3533c8d26b62e737c3b1f3b0e8b`" in text
    assert f"**{distributed_section.CPU}**" in text
    assert "### mlp 64x256x1024" in text and "![distributed_mlp](../distributed_mlp.png)" in text
    assert (out / "distributed_mlp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_tables_divide_like_rows_only(built, records) -> None:
    text = report_text(built[0])
    r = records
    ratio = fmt.ratio(distributed_section.across(r["torch", "ddp", "eager", 2], r["jax", "ddp", "eager", 2]))
    assert ratio.startswith("0.7× [")  # 2.1 ms over 3 ms: its interval excludes every change within 10 %
    assert "| ddp | eager | 2 | 3 [" in text and f"| {ratio} | 1.5 | 1.5 |" in text
    # peak memory: PyTorch eager against op-by-op JAX: JAX has none
    assert "| ddp | eager | 2 | 2 | n/a (the method cannot see this step) | — (not measured) |" in text
    assert "| fsdp | eager | 2 | failed | — | — |" not in text  # the failed one is JAX's: PyTorch's cell is a value
    assert "| fsdp | eager | 2 | 3 [" in text and "| failed | — (failed) |" in text


def test_the_ratio_rule_refuses_unlike_rows(records) -> None:
    r = records
    t, j = r["torch", "ddp", "eager", 2], r["jax", "ddp", "eager", 2]
    assert distributed_section.across(t, j).formed
    for other, reason in ((r["jax", "ddp", "eager", 1], "not like rows"), (r["jax", "ddp", "compiled", 2],
                                                                           "not like rows"),
                          (r["jax", "fsdp", "eager", 2], "failed"), (None, "only one framework ran"),
                          (r["torch", "ddp", "eager", 2], "not like rows")):
        assert distributed_section.across(t, other).reason == reason
    assert distributed_section.across(t, j | {"size": "tiny"}).reason == "not like rows"
    # memory: only by the same method
    jc, tc = r["jax", "ddp", "compiled", 2], r["torch", "ddp", "compiled", 2]
    assert distributed_section.across(tc, jc, "peak_bytes").reason == "not measured"
    measured = tc | {"peak_bytes": 2 * MIB, "peak_method": "torch live-storage tracking"}
    assert distributed_section.across(measured, jc, "peak_bytes").reason == "different memory methods"
    same = jc | {"framework": "torch", "peak_bytes": 4 * MIB}
    assert distributed_section.across(same, jc, "peak_bytes").ratio == 0.5
    # on GPUs both sides read their allocator's high-water mark: one method, whatever each counter is called
    gpu_t = tc | {"peak_bytes": 4 * MIB, "peak_method": "torch.cuda.max_memory_allocated after a reset, per device"}
    gpu_j = jc | {"peak_bytes": 3 * MIB, "peak_method": "jax peak_bytes_in_use minus bytes_in_use, per device"}
    assert distributed_section.across(gpu_t, gpu_j, "peak_bytes").ratio == 0.75
    fallback = gpu_j | {"peak_method": "jax compiled.memory_analysis (output+temp-alias); of the sharded executable"}
    assert distributed_section.across(gpu_t, fallback, "peak_bytes").reason == "different memory methods"
    # the time ratio's interval: Welch's t across launches
    c = distributed_section.across(t, j)
    assert (c.low, c.high) == stats.ratio_interval(distributed_results.launch_medians(j),
                                                   distributed_results.launch_medians(t))


def test_n_against_one_is_a_change_only_beyond_ten_percent(built, records) -> None:
    text = report_text(built[0])
    r = records
    tripled = distributed_section.change(r["torch", "ddp", "eager", 1], r["torch", "ddp", "eager", 2])
    assert tripled.differs and tripled.resolution == stats.BETWEEN_PROCESSES
    assert "- PyTorch ddp eager: N=2 against N=1: 3× (1 ms → 3 ms; ratio 95 % interval " in text  # a factor
    small = distributed_section.change(r["jax", "ddp", "eager", 1], r["jax", "ddp", "eager", 2])
    assert small.differs is False  # 5 % more: its interval reaches into the 10 % band
    assert f"- JAX ddp eager: N=2 against N=1: {fmt.NO_DIFFERENCE} (2 ms → 2.1 ms; ratio 95 % interval" in text
    assert "- JAX fsdp eager: N=2 against N=1: no ratio (failed)." in text
    assert distributed_section.change(r["jax", "ddp", "eager", 1], r["torch", "ddp", "eager", 2]).reason == \
        "not like rows"


def test_bytes_are_checked_against_the_analytic_count(records) -> None:
    r = records
    assert distributed_section.communicated(r["torch", "ddp", "eager", 2] | {"comm_bytes": 2 * MIB}) == \
        "2 MiB, equal to the analytic count"
    assert distributed_section.communicated(r["torch", "fsdp", "eager", 2]) == \
        "1.5 MiB against 3 MiB analytic (−50.0 %)"
    assert distributed_section.communicated(r["torch", "ddp", "eager", 1] | {"comm_bytes": 2 * MIB}) == \
        "2 MiB where the analytic count is 0 (one rank: nothing to send)"
    assert distributed_section.communicated(r["torch", "ddp", "eager", 1] | {"comm_bytes": 4}) == \
        "4 B where the analytic count is 0 (one rank: nothing to send)"
    assert distributed_section.communicated(r["jax", "ddp", "eager", 2]) == \
        "not measured (op by op there is no one program)"
    assert distributed_section.communicated(r["jax", "fsdp", "eager", 2]) == "failed"


def test_the_rows_are_rows_of_summary_csv_keyed_like_every_other(built) -> None:
    table = pd.read_csv(built[0] / "summary.csv", dtype=str, keep_default_na=False)
    mine = table[table.benchmark == distributed_results.BENCHMARK].to_dict("records")
    # per row of the file its step time and first call, its counts where measured (JAX eager communicates nothing
    # it can count); JAX's fsdp eager N=2 failed
    assert Counter(r["metric"] for r in mine) == {
        "time_step": 16, "time_compile_seconds": 15, "track_peak_bytes": 8, "track_communicated_bytes": 12,
        "track_analytic_bytes": 15, "track_gradient_bytes": 15}
    keys = {RowKey.of(r): r for r in mine}
    assert len(keys) == len(mine)
    torch = RowKey("distributed.step", "time_step", "torch", "mlp", "64x256x1024", "float32", None, "cpu",
                   (("form", "ddp"), ("mode", "eager"), ("ranks", 2), ("variant", "plain")))
    row = keys[torch]
    assert (float(row["value"]), row["processes"], json.loads(row["process_medians"])) == (0.003, "3",
                                                                                          [0.003, 0.0031, 0.0029])
    assert (row["pillar"], row["status"], row["machine"], row["commit"][:8], row["file"]) == (
        "distributed", "ok", MACHINE, "93acfd55", f"distributed/{FILE}")
    jax = RowKey.of({**row, "framework": "jax"})
    assert jax in keys and torch.differing(jax) == {"framework"}  # a like row of the other framework
    sent, analytic, gradient = (keys[replace(torch, metric=m)] for m in (
        "track_communicated_bytes", "track_analytic_bytes", "track_gradient_bytes"))
    assert [float(r["value"]) for r in (sent, analytic, gradient)] == [1.5 * MIB, 2 * MIB, 2 * MIB]
    assert {(r["unit"], r["basis"], r["sampled"]) for r in (sent, analytic, gradient)} == {("bytes", "exact", "False")}
    assert (sent["method"], sent["comparable"], analytic["comparable"]) == ("counted", "False", "True")
    failed = [r for r in mine if r["status"] == "failed"]
    assert [(r["framework"], r["metric"], r["value"]) for r in failed] == [("jax", "time_step", "")]
    assert keys[RowKey.of(failed[0])]["variant"] == "plain/fsdp/eager/N=2"


def test_failed_rows_are_listed_with_their_reason(built) -> None:
    text = report_text(built[0])
    assert "Failed (the row's one-line reason):\n\n- JAX fsdp eager N=2: launch 2 of 3: RankTimeout: killed" in text


def test_the_figure_names_its_metrics_and_nothing_overlaps(tmp_path: Path) -> None:
    table = distributed_results.read(write_csv(tmp_path, rows(), FILE))
    fig = distributed_figure.figure(table[table.workload == "mlp"], "commit 93acfd55 · machine m", tmp_path / "x.png")
    assert unnamed_axes(fig) == [] and overlapping(fig) == [] and off_the_page(fig) == []
    time_ax, memory_ax = fig.axes[:2]
    assert time_ax.get_yscale() == "log" and [t.get_text() for t in time_ax.get_xticklabels()] == ["1", "2"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(legend) == len({(r["framework"], r["form"], r["mode"]) for r in rows()}) == 8
    # memory where measured only: PyTorch eager and JAX compiled lines
    assert len(memory_ax.get_lines()) > 0
    notes = " ".join(t.get_text() for t in fig.texts)
    assert "Memory not drawn for PyTorch ddp compiled, PyTorch fsdp compiled" in notes.replace("\n", " ")


def test_a_corrupt_csv_is_one_warning_and_the_report_is_built(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    write_csv(results / "distributed", [{k: v for k, v in r.items() if k != "launch_medians"} for r in rows()], FILE)
    with unrendered():  # the test reads the warnings and the text
        assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "out")]) == 0
    err = messages(capsys.readouterr().err.splitlines())
    assert len(err) == 1 and err[0].startswith("warning: skipped the distributed results") and \
        "launch_medians" in err[0]
    assert "distributed steps" not in report_text(tmp_path / "out")
    assert pd.read_csv(tmp_path / "out" / "summary.csv").shape[0] > 0
