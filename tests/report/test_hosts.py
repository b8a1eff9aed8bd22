"""Runs of one machine name from different hosts (tape_vs_trace.report.hosts): called on hand-built tables for the
row filters, the parameter list and the refusals, and once through the report command on two result files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tape_vs_trace import cli, host_check
from tape_vs_trace.report import hosts
from tape_vs_trace.report.load import Results
from tests.report.helpers import write_results

MINE, OTHER, THIRD = "a" * 40, "b" * 40, "c" * 40

CPU_A = {"fingerprint": {"cpu": {"model_name": "CPU A"}}, "calibration": {"matmul_flops_per_s": {"float32": 1e9}}}

CPU_B = {"fingerprint": {"cpu": {"model_name": "CPU B"}}, "calibration": {"matmul_flops_per_s": {"float32": 4e9}}}

PARAMS = json.dumps({"framework": "torch", "mode": "eager", "dtype": "float32", "precision": "highest",
                     "device": "cpu"})

HEADER = ["Step times of both runs in calibrated units (matmul_float32: how many float32 matmul flops each host does "
          "in that time, from its own calibration; not seconds):", "",
          f"| benchmark | parameters | this run | commit `{OTHER[:8]}` |", "|---|---|---:|---:|"]


def entry(commit: str, value: float, benchmark: str = "recording.GradStep_mlp.time_step", params: str = PARAMS,
          machine: str = "box", metric: str = "time_step", status: str = "ok") -> dict:
    return {"machine": machine, "commit": commit, "benchmark": benchmark, "params": params, "metric": metric,
            "status": status, "value": value}


def results(rows: list[dict], details: dict) -> Results:
    return Results(table=pd.DataFrame(rows), details=details)


def test_same_host_adds_nothing() -> None:
    data = results([entry(MINE, 1.0), entry(OTHER, 2.0)], {("box", MINE): CPU_A, ("box", OTHER): CPU_A})
    assert hosts.section(data, "box", MINE) == []


def test_other_host_gets_calibrated_step_times() -> None:
    rows = [entry(MINE, 2e-3), entry(OTHER, 1e-3),
            entry(MINE, 5e-3, benchmark="recording.GradStep_lstm.time_step"),  # only in this run: no row
            entry(OTHER, 9.0, metric="track_peak_bytes"),  # another metric
            entry(MINE, 3e-3, benchmark="x.Failed.time_step", status="failed"),
            entry(OTHER, 3e-3, benchmark="x.Failed.time_step"),
            entry(OTHER, 7e-3, machine="elsewhere")]
    data = results(rows, {("box", MINE): CPU_A, ("box", OTHER): CPU_B, ("elsewhere", THIRD): CPU_B})
    lines = hosts.section(data, "box", MINE)
    # 2 ms x 1e9 flop/s here = 2e6; 1 ms x 4e9 flop/s there = 4e6. dtype, precision and device are not listed.
    why = host_check.same_host(CPU_A, CPU_B)[1]  # the reason is host_check's; this section only quotes it
    assert "CPU A" in why
    assert lines[:2] == [f"Commit `{OTHER[:8]}` of machine box ran on a different host ({why}): its times are not "
                         "compared with this run's as seconds.", ""]
    row = "| `recording.GradStep_mlp.time_step` | framework=torch, mode=eager | 2e+06 | 4e+06 |"
    assert lines[2:] == HEADER + [row, ""]


def test_each_other_host_in_commit_order() -> None:
    fourth = "d" * 40
    data = results([entry(c, 1.0) for c in (MINE, OTHER, THIRD, fourth)],
                   {("box", fourth): CPU_B, ("box", THIRD): CPU_B, ("box", MINE): CPU_A, ("box", OTHER): CPU_A})
    lines = hosts.section(data, "box", MINE)
    starts = [line[:17] for line in lines if line.startswith("Commit")]
    # OTHER ran on this run's host: skipped, and the commits after it still listed.
    assert starts == [f"Commit `{THIRD[:8]}`", f"Commit `{fourth[:8]}`"]


def test_no_calibration_in_one_run() -> None:
    a_only, b_only = {"fingerprint": CPU_A["fingerprint"]}, {"fingerprint": CPU_B["fingerprint"]}
    for details in ({("box", MINE): CPU_A, ("box", OTHER): b_only}, {("box", MINE): a_only, ("box", OTHER): CPU_B}):
        lines = hosts.section(results([entry(MINE, 1.0), entry(OTHER, 1.0)], details), "box", MINE)
        assert lines[2:] == ["(no calibration in both runs: no calibrated comparison)", ""]


def test_calibration_without_a_float32_rate() -> None:
    other = {"fingerprint": CPU_B["fingerprint"], "calibration": {"copy_bytes_per_s": 1e9}}
    data = results([entry(MINE, 1.0), entry(OTHER, 1.0)], {("box", MINE): CPU_A, ("box", OTHER): other})
    assert hosts.section(data, "box", MINE)[2:] == [
        "(no calibrated comparison: the calibration has no positive matmul_flops_per_s.float32)", ""]


def test_no_shared_rows_means_no_table() -> None:
    data = results([entry(MINE, 1.0), entry(OTHER, 1.0, benchmark="other.Bench.time_step")],
                   {("box", MINE): CPU_A, ("box", OTHER): CPU_B})
    assert hosts.section(data, "box", MINE)[2:] == []


def test_this_run_without_a_record_is_another_host() -> None:
    # The loader keeps a run's record only where its file has one; without it no host can be confirmed.
    data = results([entry(MINE, 1.0), entry(OTHER, 1.0)], {("box", OTHER): CPU_B})
    lines = hosts.section(data, "box", MINE)
    assert "cannot tell whether they ran on the same host" in lines[0]
    assert lines[2:] == ["(no calibration in both runs: no calibrated comparison)", ""]


def test_different_fingerprints_say_different_hosts(tmp_path: Path, capsys) -> None:
    """Two runs under one machine name on different CPUs: flagged, and their step times shown in calibrated units
    (float32 matmul flops of each host's own rate), never divided as seconds."""
    root = write_results(tmp_path / "results")
    mine_path = root / "box" / "abc12300-existing-venv.json"
    mine = json.loads(mine_path.read_text())
    mine["tape_vs_trace"].update(fingerprint={"cpu": {"model_name": "Test CPU 9000"}},
                                 calibration={"matmul_flops_per_s": {"float32": 1e11}})
    mine_path.write_text(json.dumps(mine))
    other = json.loads(json.dumps(mine))
    other["commit_hash"], other["date"] = "def456" + "0" * 34, 1600000000000
    other["tape_vs_trace"].update(fingerprint={"cpu": {"model_name": "Another CPU"}},
                                  calibration={"matmul_flops_per_s": {"float32": 2e11}})
    (root / "box" / "def45600-existing-venv.json").write_text(json.dumps(other))
    assert cli.main(["report", "--results", str(root), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "Commit `def45600` of machine box ran on a different host" in text and "model_name" in text
    # PyTorch eager 1.55 ms in both files: 1.55e-3 s x 1e11 flop/s here, x 2e11 flop/s on the other host
    [line] = [x for x in text.splitlines() if "GradStep_mlp.time_step" in x and "framework=torch" in x
              and "mode=eager" in x and x.count("|") == 5]
    assert line.endswith("| 1.55e+08 | 3.1e+08 |")
