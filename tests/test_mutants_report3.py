"""summary.md's provenance block, its list of skipped cases and the head of the paired section, on hand-built rows
with the expected lines written out by hand: found by mutation testing (`make mutate`), where a changed default,
key, row filter or sentence stayed green because no test compared these lines whole."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from implementations import metrics
from tape_vs_trace.report import markdown, paired
from tape_vs_trace.report.load import COLUMNS, Results
from tests.test_report_paired import COMMIT, MACHINE, point, write_csv

NAN = math.nan
RUN = "2023-11-14 22:13:20 UTC"


def asv_row(benchmark: str, metric: str, framework: str = "torch", sampled: bool = True, status: str = "ok",
            processes: float = 3, samples: float = 12, basis: str = "process medians", dtype: str = "float32") -> dict:
    """One row of summary.csv of machine `box`, commit abc123..., as load.py writes it."""
    return {c: "" for c in COLUMNS} | {
        "benchmark": benchmark, "metric": metric, "framework": framework, "sampled": sampled, "status": status,
        "processes": processes, "samples": samples, "basis": basis, "params": json.dumps({"framework": framework}),
        "commit": "abc123" + "0" * 34, "date": "2023-11-14", "run_date": RUN, "env": "existing-venv",
        "machine": "box", "device": "cpu", "torch_version": "2.5.1", "jax_version": "0.4.35", "dtype": dtype,
        "precision": "highest", "benchmark_version": "v1"}


# machine.json without the CPU's name: the cell says '?' for it, and every other field is read by its own key
INFO = {"num_cpu": 2, "ram": "16333648", "os": "Linux", "arch": "x86_64"}


def test_provenance_counts_only_sampled_ok_rows_and_says_n_a_for_missing_counts() -> None:
    rows = pd.DataFrame([
        asv_row("recording.GradStep_mlp.time_step", "time_step"),
        asv_row("recording.GradStep_mlp.time_step", "time_step", framework="jax"),
        # asv's own median, no per-process counts
        asv_row("recording.GradStep_lstm.time_step", "time_step", processes=NAN, samples=NAN, basis="asv median"),
        # an exact value and a failed timing: not timed benchmarks
        asv_row("memory.Peak_mlp.track_peak_bytes", "track_peak_bytes", sampled=False, samples=NAN, basis="exact",
                dtype=""),
        asv_row("recording.GradStep_cnn.time_step", "time_step", status="failed"),
    ])
    lines = markdown.provenance(Results(table=rows, machines={"box": INFO}), rows)
    step, peak = metrics.METRICS["time_step"], metrics.METRICS["track_peak_bytes"]
    assert lines[:12] == [
        "| | |", "|---|---|",
        f"| commit | `abc123{'0' * 34}` (commit date 2023-11-14) |",
        f"| run date | {RUN} to {RUN} |",
        "| machine | box: ?, 2 cores, 16333648 RAM, Linux x86_64 |",
        "| device | cpu |", "| torch | 2.5.1 |", "| jax | 0.4.35 |",
        "| python | n/a (asv environment `existing-venv`) |",
        "| dtype | float32 |", "| matmul precision | highest |", "| benchmark versions | v1 |"]
    start = lines.index("Samples and processes per timed benchmark (the interval comes from per-process medians):")
    assert lines[start:] == [
        "Samples and processes per timed benchmark (the interval comes from per-process medians):", "",
        "| benchmark | processes | samples | basis |", "|---|---:|---:|---|",
        "| `recording.GradStep_mlp.time_step` | 3 | 12 | process medians |",
        "| `recording.GradStep_lstm.time_step` | n/a | n/a | asv median |",
        "", "Measurement methods:", "",
        f"- `time_step` ({step.display}, seconds, sampled): {step.description}",
        f"- `track_peak_bytes` ({peak.display}, bytes, exact): {peak.description}",
        "- value of a sampled metric: the median of per-process medians; IQR: q75 − q25 of the per-process medians; "
        "[interval]: 95 % Student-t interval across processes on the logarithms of the per-process medians "
        "(n − 1 degrees of freedom). Results without samples give asv's median and quartiles and no interval.",
        lines[-1]]
    assert lines[-1].startswith("- JAX/PyTorch: formed only between rows whose parameters differ in the framework")


def test_provenance_of_a_single_row() -> None:
    """A result file with one benchmark: its one row is the provenance."""
    rows = pd.DataFrame([asv_row("recording.GradStep_mlp.time_step", "time_step")])
    lines = markdown.provenance(Results(table=rows), rows)
    assert lines[2:4] == [f"| commit | `abc123{'0' * 34}` (commit date 2023-11-14) |", f"| run date | {RUN} to {RUN} |"]
    assert lines[5:8] == ["| device | cpu |", "| torch | 2.5.1 |", "| jax | 0.4.35 |"]


def case(framework: str, params: str) -> dict:
    return {"benchmark": "recording.GradStep_mlp.time_step", "framework": framework, "params": params,
            "workload": "mlp", "size": "S", "variant": "eager"}


def test_not_run_finds_the_other_framework_whatever_the_order_of_the_parameters() -> None:
    # asv writes the parameters in the benchmark's order, not sorted: the lookup must not depend on it
    skipped = pd.DataFrame([case("jax", '{"size": "S", "mode": "eager", "framework": "jax"}')])
    ran = pd.DataFrame([case("torch", '{"framework": "torch", "mode": "eager", "size": "S"}')])
    assert markdown.not_run(skipped, ran) == [
        "- `recording.GradStep_mlp.time_step` mlp S eager: not implemented for JAX (PyTorch ran it)"]


def test_paired_section_of_the_shown_commit_with_its_curve_and_jax_against_pytorch(tmp_path: Path) -> None:
    one = (1.0, 1.0, 1.0)
    table = paired._read(write_csv(tmp_path, [
        point("remat torch", "remat", "torch", "compiled", "unrolled", "plain", [10, 10, 10], one, saved=8),
        point("remat jax", "remat", "jax", "compiled", "unrolled", "plain", [20, 20], one, saved=4),
    ])).assign(machine=MACHINE)
    lines = paired.section(table, [], COMMIT, "##")
    assert lines[:4] == [
        "## remat trade-off curve and paired comparisons (`tape-vs-trace paired`)", "",
        f"From `results/paired/{MACHINE}-{COMMIT[:8]}.csv`: commit `{COMMIT}` (the same commit as the asv "
        "results), device cpu, 2, 3 processes per framework. Each experiment's points are built in one process and "
        "timed call by call, alternating; a time is the geometric mean of the per-process medians with its 95 % "
        "Student-t interval across processes; a ratio to the baseline is formed pass by pass in one process (median "
        "per process, geometric mean and 95 % interval across processes). A difference is stated only where the "
        "ratio's interval excludes every change up to 3 % (10 % for JAX/PyTorch, between processes): how far such "
        "ratios moved between two runs of one commit; else 'no difference measurable on this machine'.", ""]
    pairs = paired.across_table(table)
    assert len(pairs) == 3  # the header, its rule and the one like pair
    start = lines.index("Remat trade-off curve (every point; peak n/a where the framework's memory method cannot "
                        "see the step, with the reason; matmul GFLOP counts recomputation):")
    assert lines[start + 1:] == [
        "", *paired.curve_table(table), "",
        "JAX/PyTorch on the curve, only between like rows (same size, mode, formulation and point; memory measured "
        "by the same method): a JAX lax.scan is not divided by a PyTorch loop.", "", *pairs, ""]
