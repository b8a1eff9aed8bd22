"""The one reader of asv result files (tape_vs_trace.results.asv_files): each combination's outcome read as its own
value (measured, skipped, not run, failed), samples split into processes, the run's fields, and the report's rows, in
which a combination not run is never a measured row."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tape_vs_trace.report import load
from tape_vs_trace.results import asv_files
from tape_vs_trace.results.asv_files import FAILED, MEASURED, NOT_RUN, SKIPPED

NAME = "recording.GradStep_mlp.time_step"
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_q_25", "stats_q_75", "samples"]
GRID = [["'torch'", "'jax'"], ["'eager'", "'compiled'"]]
# torch/eager measured (2 processes of 3 samples), torch/compiled skipped, jax/eager failed, jax/compiled not chosen
VALUES = [2.0, math.nan, None, math.nan]
SAMPLES = [[1.0, 2.0, 3.0, 10.0, 20.0, 30.0], None, None, None]
META = {"name": NAME, "type": "time", "unit": "seconds", "param_names": ["framework", "mode"], "version": "7",
        "rounds": 2, "repeat": 3}


def write(folder: Path, chosen: tuple[int, ...] | None = (0, 1, 2), name: str = "c0ffee00-existing-venv.json") -> Path:
    """A result file of one benchmark's four combinations; `chosen`: the runner's choice (None: asv run's file)."""
    entry = [VALUES, GRID, "7", 1700000001000, 1.5, [1.5, None, None, None], [2.5, None, None, None], SAMPLES]
    data = {"commit_hash": "c0ffee00" + "0" * 32, "env_name": "existing-venv", "date": 1700000000000,
            "params": {"machine": "box", "device": "cpu"}, "python": "3.11", "requirements": {"torch": "2.9"},
            "env_vars": {}, "result_columns": COLUMNS, "results": {NAME: entry}, "durations": {}, "version": 2}
    if chosen is not None:
        data["tape_vs_trace"] = {"runner_of": {NAME: "worker"}, "chosen": {NAME: list(chosen)}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data, allow_nan=True))
    return path


def test_each_combination_is_read_as_its_own_outcome(tmp_path: Path) -> None:
    combos = asv_files.read(write(tmp_path)).combinations(NAME, META)
    assert [(c.params, c.outcome) for c in combos] == [
        ({"framework": "torch", "mode": "eager"}, MEASURED), ({"framework": "torch", "mode": "compiled"}, SKIPPED),
        ({"framework": "jax", "mode": "eager"}, FAILED), ({"framework": "jax", "mode": "compiled"}, NOT_RUN)]
    measured = combos[0]
    assert (measured.value, measured.q25, measured.q75, measured.name) == (2.0, 1.5, 2.5, f"{NAME}('torch', 'eager')")
    # NaN is never a value: whatever was not measured carries none
    assert [c.value for c in combos[1:]] == [None, None, None]


def test_without_the_runners_choice_nan_is_not_run(tmp_path: Path) -> None:
    # asv run's files do not say what they chose: a skip cannot be told from a combination left out
    file = asv_files.read(write(tmp_path, chosen=None))
    assert [c.outcome for c in file.combinations(NAME, META)] == [MEASURED, NOT_RUN, FAILED, NOT_RUN]
    assert file.details is None and file.chosen(NAME) is None


def test_samples_split_into_their_processes_by_repeat(tmp_path: Path) -> None:
    measured, skipped, *_ = asv_files.read(write(tmp_path)).combinations(NAME, META)
    assert measured.processes() == ([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]], "")
    assert measured.split == asv_files.Split(2, 3)
    assert skipped.processes()[0] is None
    uneven = asv_files.read(write(tmp_path)).combinations(NAME, {**META, "repeat": 4})[0]
    assert uneven.processes() == (None, "6 samples do not split into processes of 4")


def test_the_files_own_fields(tmp_path: Path) -> None:
    file = asv_files.read(write(tmp_path))
    assert (file.commit, file.date, file.env, file.machine, file.python) == (
        "c0ffee00" + "0" * 32, 1700000000000, "existing-venv", "box", "3.11")
    assert file.requirements == {"torch": "2.9"} and file.run["device"] == "cpu"
    assert file.details["runner_of"] == {NAME: "worker"} and file.chosen(NAME) == {0, 1, 2}
    assert (file.benchmarks, file.version(NAME), file.started_at(NAME), file.grid(NAME)) == (
        [NAME], "7", 1700000001000, GRID)


def test_records_leave_out_what_benchmarks_json_does_not_list_alike(tmp_path: Path) -> None:
    file = asv_files.read(write(tmp_path))
    assert len(list(file.records({NAME: META}))) == 4
    assert list(file.records({})) == [] and file.unlisted({}) == ([NAME], [])
    reshaped = {NAME: {**META, "param_names": ["framework"]}}
    assert list(file.records(reshaped)) == [] and file.unlisted(reshaped) == ([], [NAME])
    assert file.combinations(NAME)[0].params == {}  # no names: the values only


def test_a_combination_not_run_never_becomes_a_measured_row(tmp_path: Path) -> None:
    write(tmp_path / "box")
    (tmp_path / "box" / "machine.json").write_text(json.dumps({"machine": "box", "device": "cpu"}))
    (tmp_path / "benchmarks.json").write_text(json.dumps({NAME: META, "version": 2}))
    out = load.load_results(tmp_path, lambda _: None)
    measured = out.table[out.table.metric == "time_step"]
    assert sorted(zip(measured.framework, measured.status)) == [("jax", "failed"), ("torch", "ok")]
    ok = measured[measured.status == "ok"].iloc[0]
    assert (ok.processes, json.loads(ok.process_medians)) == (2, [2.0, 20.0])
    assert math.isclose(ok.value, math.sqrt(2.0 * 20.0))  # the geometric mean of the process medians
    assert sorted(out.skipped.params.map(lambda p: json.loads(p)["mode"])) == ["compiled", "compiled"]
    assert set(out.skipped.status) == {"not run"}


@pytest.mark.parametrize(("text", "error"), [
    ("{", "not valid JSON"),
    ("[1]", "not a JSON object"),
    ('{"version": 2, "commit_hash": "c"}', "not an asv result file (Error loading results file"),
])
def test_a_file_that_is_no_result_file_is_one_line(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(asv_files.ResultFileError) as exc:
        asv_files.read(path)
    assert error in str(exc.value) and str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_drawn_are_the_benchmarks_listed_at_the_files_version(tmp_path: Path) -> None:
    # asv publish draws a result only where benchmarks.json lists it at the version the file holds
    file = asv_files.read(write(tmp_path))
    assert file.drawn({NAME: META}) == {NAME}
    assert file.drawn({NAME: {**META, "version": "8"}}) == set() and file.drawn({}) == set()


def test_write_renames_the_machine_and_sets_the_record_keeping_the_rest(tmp_path: Path) -> None:
    path = write(tmp_path)
    before = json.loads(path.read_text())
    copy = asv_files.write(path, tmp_path / "copy.json", machine="box@host2")
    assert copy == tmp_path / "copy.json" and json.loads(path.read_text()) == before  # the source is not written
    renamed = asv_files.read(copy)
    assert (renamed.machine, renamed.run["device"], renamed.details) == ("box@host2", "cpu", before["tape_vs_trace"])
    assert [c.outcome for c in renamed.combinations(NAME, META)] == [MEASURED, SKIPPED, FAILED, NOT_RUN]
    assert asv_files.write(path, record={"chosen": {NAME: [0]}}) == path  # in place
    again = asv_files.read(path)
    assert (again.machine, again.details, again.chosen(NAME)) == ("box", {"chosen": {NAME: [0]}}, {0})
    with pytest.raises(asv_files.ResultFileError):
        asv_files.write(tmp_path / "missing.json", record={})
