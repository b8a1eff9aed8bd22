"""asv result-file surgery: scrub-results run twice, and a second run of one commit merged into the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tape_vs_trace import asv_results

CALIBRATION = {"matmul_flops_per_s": {"float32": 5.0e10}, "matmul_flops_per_s_jax": {"float32": 6.0e10},
               "copy_bytes_per_s": 4.0e9, "dispatch_seconds_per_op": {"torch": 5e-6, "jax": 2e-5}}

COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a"]
PARAMS = [["'torch'", "'jax'"]]


def _result_file(folder: Path, commit: str, env: str, results: dict) -> Path:
    path = folder / f"{commit[:8]}-{env}.json"
    path.write_text(json.dumps({"commit_hash": commit, "env_name": env, "python": "/x/.venv/bin/python",
                                "params": {"machine": "m"}, "result_columns": COLUMNS, "results": results,
                                "durations": {}, "version": 2}))
    return path


def _entry(values: list, version: str = "2") -> list:
    return [values, PARAMS, version, 1, 1.0, [v if v is None else v * 0.9 for v in values]]


def test_scrub_results_twice_merges_and_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "results" / "m"
    folder.mkdir(parents=True)
    (folder / "machine.json").write_text("{}")
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps(CALIBRATION))
    monkeypatch.setenv("TVT_CALIBRATION", str(calibration))
    monkeypatch.setattr(asv_results, "_python_version", lambda value: "3.12")
    commit = "a" * 40
    _result_file(folder, commit, "existing-py_x_.venv_bin_python", {"p.A.time_x": _entry([1.0, 2.0]),
                                                                     "p.B.time_y": _entry([3.0, 4.0])})
    [first] = asv_results.scrub_results(tmp_path / "results")
    data = json.loads(first.read_text())
    assert first.name == f"{commit[:8]}-existing-venv.json" and data["python"] == "3.12"
    assert data["tape_vs_trace"]["calibration"] == CALIBRATION
    assert data["tape_vs_trace"]["fingerprint"]["cpu"]
    assert asv_results.scrub_results(tmp_path / "results") == []  # nothing fresh: a second scrub changes nothing
    assert json.loads(first.read_text()) == data

    # A second run of the same commit: B again, its torch value failed (null); A not run. Another host's speed.
    calibration.write_text(json.dumps({**CALIBRATION, "matmul_flops_per_s": {"float32": 2.0e10}}))
    _result_file(folder, commit, "existing-py_x_.venv_bin_python", {"p.B.time_y": _entry([None, 5.0])})
    [second] = asv_results.scrub_results(tmp_path / "results")
    assert second == first and len(list(folder.glob("*.json"))) == 2
    merged = json.loads(second.read_text())
    assert merged["results"]["p.A.time_x"][0] == [1.0, 2.0], "a benchmark the second run skipped is kept"
    assert merged["results"]["p.B.time_y"][0] == [3.0, 5.0], "new values replace, a failed one keeps the old"
    assert merged["results"]["p.B.time_y"][5] == [2.7, 4.5]
    assert merged["tape_vs_trace"]["calibration"]["matmul_flops_per_s"]["float32"] == 2.0e10
    [earlier] = merged["tape_vs_trace"]["earlier_runs"]
    assert earlier["benchmarks_kept"] == ["p.A.time_x", "p.B.time_y"]
    assert earlier["calibration"] == CALIBRATION

    # A changed grid or version: positions mean other things, the new entry replaces the old one whole.
    _result_file(folder, commit, "existing-py_x_.venv_bin_python", {"p.B.time_y": _entry([None, 6.0], "3")})
    asv_results.scrub_results(tmp_path / "results")
    assert json.loads(second.read_text())["results"]["p.B.time_y"][0] == [None, 6.0]
