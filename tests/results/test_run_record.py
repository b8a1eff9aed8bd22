"""asv result-file surgery: scrub-results run twice, and a second run of one commit merged into the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tape_vs_trace.results import merge, run_record

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
    monkeypatch.setattr(run_record, "_python_version", lambda value: "3.12")
    commit = "a" * 40
    _result_file(folder, commit, "existing-py_x_.venv_bin_python", {"p.A.time_x": _entry([1.0, 2.0]),
                                                                     "p.B.time_y": _entry([3.0, 4.0])})
    [first] = run_record.scrub_results(tmp_path / "results")
    data = json.loads(first.read_text())
    assert first.name == f"{commit[:8]}-existing-venv.json" and data["python"] == "3.12"
    assert data["tape_vs_trace"]["calibration"] == CALIBRATION
    assert data["tape_vs_trace"]["fingerprint"]["cpu"]
    assert run_record.scrub_results(tmp_path / "results") == []  # nothing fresh: a second scrub changes nothing
    assert json.loads(first.read_text()) == data

    # A second run of the same commit: B again, its torch value failed (null); A not run. Another host's speed.
    calibration.write_text(json.dumps({**CALIBRATION, "matmul_flops_per_s": {"float32": 2.0e10}}))
    _result_file(folder, commit, "existing-py_x_.venv_bin_python", {"p.B.time_y": _entry([None, 5.0])})
    [second] = run_record.scrub_results(tmp_path / "results")
    assert second == first and len(list(folder.glob("*.json"))) == 2
    merged = json.loads(second.read_text())
    assert merged["results"]["p.A.time_x"][0] == [1.0, 2.0], "a benchmark the second run skipped is kept"
    assert merged["results"]["p.B.time_y"][0] == [3.0, 5.0], "new values replace, a failed one keeps the old"
    assert merged["results"]["p.B.time_y"][5] == [2.7, 4.5]
    assert merged["tape_vs_trace"]["calibration"]["matmul_flops_per_s"]["float32"] == 2.0e10
    [earlier] = merged["tape_vs_trace"]["earlier_runs"]
    assert earlier["benchmarks_kept"] == ["p.A.time_x", "p.B.time_y"]
    assert earlier["calibration"] == CALIBRATION

    # A changed benchmark version: its values mean other things, the new entry replaces the old one whole.
    _result_file(folder, commit, "existing-py_x_.venv_bin_python", {"p.B.time_y": _entry([None, 6.0], "3")})
    run_record.scrub_results(tmp_path / "results")
    assert json.loads(second.read_text())["results"]["p.B.time_y"][0] == [None, 6.0]


def test_parts_of_one_run_merge_into_one_runner_record_of_every_process(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Two parts of one run (gpu_bench.sh's chunks, make compile-series' parts: one calibration, one host) scrubbed
    one after the other: the file's runner record counts both parts' processes and walls, not the last part's."""
    folder = tmp_path / "results" / "m"
    folder.mkdir(parents=True)
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps(CALIBRATION))
    monkeypatch.setenv("TVT_CALIBRATION", str(calibration))
    monkeypatch.setattr(run_record, "_python_version", lambda value: "3.12")
    commit = "b" * 40

    def part(name: str, started: str, processes: int, wall: float, rounds: int) -> None:
        """One save of the runner: its record so far (a later round's save holds the earlier rounds too)."""
        path = _result_file(folder, commit, "existing-py_x_.venv_bin_python", {name: _entry([1.0, 2.0])})
        data = json.loads(path.read_text())
        data["tape_vs_trace"] = {"runner": "worker", "worker_runs": {
            "started": started, "selection": [name], "processes": processes, "wall_s": wall, "rounds": rounds,
            "per_process": [{"round": r + 1} for r in range(processes)], "graphs": {}, "stopped": None}}
        path.write_text(json.dumps(data))
        run_record.scrub_results(tmp_path / "results")

    part("p.A.time_x", "t1", 5, 124.0, 1)
    part("p.B.time_y", "t2", 3, 11.0, 1)  # the second part's first round, then its second: one part, saved twice
    part("p.B.time_y", "t2", 6, 23.8, 2)
    [merged] = [p for p in folder.glob("*.json")]
    record = json.loads(merged.read_text())["tape_vs_trace"]
    runs = record["worker_runs"]
    assert (runs["parts"], runs["processes"], runs["wall_s"], runs["rounds"]) == (2, 11, 147.8, 2)
    assert len(runs["per_process"]) == 11 and runs["selection"] == ["p.A.time_x", "p.B.time_y"]
    assert record["earlier_runs"] == []  # one run: no earlier one


NAN = float("nan")
GRID = [["'torch'", "'jax'"], ["'eager'", "'compiled'"]]  # four combinations


def _run(values: list, chosen: list[int] | None) -> dict:
    """One run's result file: `values` per combination (NaN: skipped or not chosen, None: failed), their samples,
    and the combinations the run chose (None: a file of asv run, which does not say)."""
    samples = [[v] * 3 if isinstance(v, float) and v == v else None for v in values]
    entry = [values, GRID, "2", 1, 1.0, [None if s is None else v * 0.9 for v, s in zip(values, samples)], samples]
    record = {} if chosen is None else {"chosen": {"p.A.time_x": chosen}}
    return {"result_columns": [*COLUMNS, "samples"], "results": {"p.A.time_x": entry}, "durations": {},
            "tape_vs_trace": record}


def _merged(old: dict, new: dict) -> tuple[list, list]:
    merged, _ = merge.merge_results(old, new)
    entry = merged["results"]["p.A.time_x"]
    return entry[0], entry[6]


def test_a_combination_the_new_run_did_not_choose_keeps_the_old_value_and_samples() -> None:
    values, samples = _merged(_run([1.0, NAN, NAN, None], [0, 3]), _run([NAN, NAN, 2.0, NAN], [2]))
    assert values[0] == 1.0 and samples[0] == [1.0] * 3
    assert values[2] == 2.0 and samples[2] == [2.0] * 3
    assert values[1] != values[1]  # chosen by neither: still not run
    assert values[3] is None and samples[3] is None  # failed in the old run: not turned into a skip or a value


def test_a_skip_or_failure_of_a_chosen_combination_is_no_measured_value() -> None:
    # Chosen again: a skip replaces the old value; a failure leaves the measured one (and says the old run's record
    # holds it), and a failure over nothing stays a failure.
    values, _ = _merged(_run([1.0, 1.5, None, NAN], [0, 1, 2]), _run([NAN, None, None, NAN], [0, 1, 2]))
    assert values[0] != values[0]
    assert values[1] == 1.5
    assert values[2] is None


def test_merged_record_lists_every_run_s_choice() -> None:
    old, new = _run([1.0, NAN, NAN, NAN], [0]), _run([NAN, NAN, 2.0, NAN], [2])
    merged, kept = merge.merge_results(old, new)
    assert merged["tape_vs_trace"]["chosen"] == {"p.A.time_x": [0, 2]}
    assert kept == {"p.A.time_x": [0]}


def test_a_new_benchmark_version_replaces_the_old_entry_and_its_choice() -> None:
    old, new = _run([1.0, NAN, NAN, NAN], [0]), _run([NAN, NAN, 2.0, NAN], [2])
    new["results"]["p.A.time_x"][2] = "3"
    merged, kept = merge.merge_results(old, new)
    assert merged["results"]["p.A.time_x"][0][0] != merged["results"]["p.A.time_x"][0][0]
    assert merged["tape_vs_trace"]["chosen"] == {"p.A.time_x": [2]} and kept == {}


def test_a_file_without_a_choice_never_erases_a_value_with_nan() -> None:
    # asv run writes NaN for a combination it skipped and for one its -b did not select alike: NaN never replaces
    # a value or a failure there; a new value still replaces an old one.
    values, samples = _merged(_run([1.0, None, 3.0, NAN], None), _run([NAN, NAN, 4.0, 5.0], None))
    assert values[0] == 1.0 and samples[0] == [1.0] * 3
    assert values[1] is None
    assert values[2] == 4.0 and values[3] == 5.0
