"""Reading the report's inputs (tape_vs_trace.report.load): one asv result file's rows on tiny hand-written results,
the side CSVs (saved bytes, paired results), the derived roofline's benchmarks.json entry, what an unknown metric is
read as, and benchmarks gone from the suite."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from implementations import frameworks
from tape_vs_trace.report import load, roofline, rows
from tape_vs_trace.results import asv_files
from tests.report.helpers import ASV_COLUMNS, write_results


def result_entry(params: list[list[str]], **cols) -> list:
    """One asv result entry (ASV_COLUMNS order) with `cols` (by asv column name) filled in and the rest None."""
    return [params if name == "params" else cols.get(name) for name in ASV_COLUMNS]


def meta(name: str, kind: str, names: list[str], **extra) -> dict:
    return {"name": name, "type": kind, "unit": "seconds", "param_names": names, "version": "3", **extra}


def result_rows(name: str, meta: dict, item: list, machine: dict | None = None, run: dict | None = None) -> list[dict]:
    data = {"commit_hash": "c1", "date": 1700000000000, "params": {"machine": "box", **(run or {})}, "requirements": {},
            "python": "3.11",
            "result_columns": ASV_COLUMNS, "results": {name: item}, "env_name": "env", "version": 2}
    warnings: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.json"
        path.write_text(json.dumps(data))
        out, _ = rows.result_rows(asv_files.read(path), {name: meta}, machine or {}, "box",
                                   load.Meanings(warnings.append))
    return out


STEP = "recording.GradStep_mlp.time_step"

TORCH = [["'torch'"]]


def test_device_and_versions_fall_back_to_the_run_record() -> None:
    # machine.json without a device or versions (an older record): the run's params supply them
    (row,) = result_rows(STEP, meta(STEP, "time", ["framework"]), result_entry(TORCH, result=[1.0]),
                  run={"device": "cuda", "torch": "2.9", "jax": "0.10"})
    assert (row["device"], row["torch_version"], row["jax_version"]) == ("cuda", "2.9", "0.10")


def test_workload_is_read_from_the_class_name() -> None:
    (row,) = result_rows(STEP, meta(STEP, "time", ["framework"]), result_entry(TORCH, result=[1.0]))
    assert row["workload"] == "mlp"


def test_without_samples_the_spread_is_asvs_quartiles() -> None:
    (row,) = result_rows(STEP, meta(STEP, "time", ["framework"]),
                  result_entry(TORCH, result=[2.0], stats_q_25=[1.0], stats_q_75=[3.0]))
    assert (row["q25"], row["q75"], row["spread"]) == (1.0, 3.0, 2.0)


def test_rounds_without_a_fixed_repeat_cannot_split_samples() -> None:
    # 3 processes with a variable sample count: samples cannot be assigned to processes
    (row,) = result_rows(STEP, meta(STEP, "time", ["framework"], rounds=3, repeat=0),
                  result_entry(TORCH, result=[2.0], samples=[[1.0, 2.0, 3.0]]))
    assert row["processes"] is None
    assert row["basis"] == "asv: repeat is not a fixed count, so samples cannot be assigned to processes"


def test_cpu_machine_peak_bytes_use_the_cpu_memory_method() -> None:
    name = "remat.RematCost_mlp.track_peak_bytes"
    (row,) = result_rows(name, meta(name, "track", ["framework"]), result_entry(TORCH, result=[1024.0]),
                         machine={"device": "cpu"})
    assert row["memory_method"] == frameworks.memory_method("torch", "cpu")


def test_a_sampled_track_is_one_process() -> None:
    name = "compile.Compile_mlp.track_compile_seconds"
    (row,) = result_rows(name, meta(name, "track", ["framework"]), result_entry(TORCH, result=[2.0]))
    assert (row["basis"], row["processes"], row["samples"]) == ("one process", 1, 1)


def test_nothing_skipped_still_has_the_columns(tmp_path: Path) -> None:
    (tmp_path / "box").mkdir()
    (tmp_path / "benchmarks.json").write_text(json.dumps({STEP: meta(STEP, "time", ["framework"]), "version": 2}))
    (tmp_path / "box" / "machine.json").write_text(json.dumps({"machine": "box", "device": "cpu"}))
    data = {"commit_hash": "c1", "date": 1700000000000, "params": {"machine": "box"}, "requirements": {},
            "python": "3.11", "result_columns": ASV_COLUMNS, "results": {STEP: result_entry(TORCH, result=[1.0])},
            "env_name": "env", "version": 2}
    (tmp_path / "box" / "c1-env.json").write_text(json.dumps(data))
    out = load.load_results(tmp_path, lambda _: None)
    assert out.skipped.empty
    assert list(out.skipped.columns) == load.COLUMNS


def _derived_entries(monkeypatch: pytest.MonkeyPatch, benchmarks: dict, derived: list[dict]) -> dict:
    monkeypatch.setattr(roofline, "derive", lambda table, details, warn: derived)
    out = SimpleNamespace(benchmarks=benchmarks, details={})
    assert load._derived(out, pd.DataFrame(), lambda _: None) == derived
    return out.benchmarks


def test_derived_benchmark_entry_copies_its_source_and_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    source = {"name": roofline.source("mlp"), "type": "time", "unit": "seconds", "param_names": ["framework"]}
    entries = _derived_entries(monkeypatch, {roofline.source("mlp"): source},
                               [{"benchmark": roofline.name("mlp")}])
    assert entries[roofline.name("mlp")] == {"name": roofline.name("mlp"), "type": "derived", "unit": "ratio",
                                             "param_names": ["framework"],
                                             "derived_from": "recording.GradStep_mlp.time_step"}


def test_no_derived_entry_without_derived_rows_or_without_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    source = {"name": roofline.source("mlp"), "type": "time", "unit": "seconds"}
    assert _derived_entries(monkeypatch, {roofline.source("mlp"): source}, []) == {roofline.source("mlp"): source}
    assert _derived_entries(monkeypatch, {}, [{"benchmark": roofline.name("mlp")}]) == {}


@pytest.mark.parametrize(("kind", "word", "sampled"), [("time", "sampled", True), ("track", "exact", False)])
def test_unknown_metric_is_sampled_only_when_timed(kind: str, word: str, sampled: bool) -> None:
    warnings: list[str] = []
    meanings = load.Meanings(warnings.append)
    assert meanings("old_metric", kind) == (sampled, False)
    assert warnings == [f"metric old_metric is not in implementations.metrics: read as {word} (asv type {kind}), "
                        "no ratio"]


def test_benchmarks_gone_from_the_suite_are_one_warning_per_load(tmp_path: Path) -> None:
    # Results of benchmarks later removed from the suite (remat.RematStep_* of version 3, say) or re-parametrised
    # are skipped with one line per load that counts them and their files, not one line per benchmark or file:
    # every cite and report reads every older file. --verbose gives each file's line, naming its benchmarks.
    root = write_results(tmp_path)
    path = root / "box" / "abc12300-existing-venv.json"
    data = json.loads(path.read_text())
    results = data["results"]
    results["remat.RematStep_transformer.time_step"] = results["recording.GradStep_mlp.time_step"]
    results["remat.RematCost_transformer.track_flops"] = results["recording.GraphCost_mlp.track_graph_size"]
    results["recording.GradStep_mlp.time_step"][1] = results["recording.GradStep_mlp.time_step"][1] + [["'x'"]]
    path.write_text(json.dumps(data, allow_nan=True))
    del results["remat.RematStep_transformer.time_step"], results["recording.GradStep_mlp.time_step"]
    data["commit_hash"] = "def45600" + "0" * 32
    path.with_name("def45600-existing-venv.json").write_text(json.dumps(data, allow_nan=True))
    warnings: list[str] = []
    loaded = load.load_results(root, warn=warnings.append)
    assert [w for w in warnings if "older" in w] == [
        f"2 older result file(s) in {root} hold 3 benchmark(s) no longer in the suite or with other parameters "
        "(skipped); --verbose lists them by file"]
    assert not any("parameters, benchmarks.json names" in w for w in warnings)
    assert not loaded.table.benchmark.str.contains("transformer").any()
    warnings.clear()
    load.load_results(root, warn=warnings.append, verbose=True)
    assert [w for w in warnings if "skipped" in w] == [
        f"{root.as_posix()}/box/abc12300-existing-venv.json: skipped 2 benchmark(s) no longer in the suite "
        "(remat.RematCost_transformer.track_flops, remat.RematStep_transformer.time_step); 1 with other parameters "
        "than benchmarks.json lists (recording.GradStep_mlp.time_step)",
        f"{root.as_posix()}/box/def45600-existing-venv.json: skipped 1 benchmark(s) no longer in the suite "
        "(remat.RematCost_transformer.track_flops)"]
