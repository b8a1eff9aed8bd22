"""How one asv result file becomes rows (tape_vs_trace.report.load._result_rows) on tiny hand-written results:
found by mutation testing (`make mutate`), where these fallbacks were reached only through whole reports."""

from __future__ import annotations

import json
from pathlib import Path

from implementations import frameworks
from tape_vs_trace.report import load

ASV_COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
               "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]


def entry(params: list[list[str]], **cols) -> list:
    """One asv result entry with `cols` (by asv column name) filled in and the rest None."""
    return [params if name == "params" else cols.get(name) for name in ASV_COLUMNS]


def bench(name: str, kind: str, names: list[str], **extra) -> dict:
    return {"name": name, "type": kind, "unit": "seconds", "param_names": names, "version": "3", **extra}


def rows(name: str, meta: dict, item: list, machine: dict | None = None, run: dict | None = None) -> list[dict]:
    data = {"commit_hash": "c1", "date": 1700000000000, "params": run or {}, "requirements": {},
            "result_columns": ASV_COLUMNS, "results": {name: item}, "env_name": "env"}
    warnings: list[str] = []
    out, _ = load._result_rows(data, {name: meta}, machine or {}, "box", load.Meanings(warnings.append),
                               warnings.append, Path("r.json"))
    return out


STEP = "recording.GradStep_mlp.time_step"
TORCH = [["'torch'"]]


def test_device_and_versions_fall_back_to_the_run_record() -> None:
    # machine.json without a device or versions (an older record): the run's params supply them
    (row,) = rows(STEP, bench(STEP, "time", ["framework"]), entry(TORCH, result=1.0),
                  run={"device": "cuda", "torch": "2.9", "jax": "0.10"})
    assert (row["device"], row["torch_version"], row["jax_version"]) == ("cuda", "2.9", "0.10")


def test_workload_is_read_from_the_class_name() -> None:
    (row,) = rows(STEP, bench(STEP, "time", ["framework"]), entry(TORCH, result=1.0))
    assert row["workload"] == "mlp"


def test_without_samples_the_spread_is_asvs_quartiles() -> None:
    (row,) = rows(STEP, bench(STEP, "time", ["framework"]),
                  entry(TORCH, result=2.0, stats_q_25=[1.0], stats_q_75=[3.0]))
    assert (row["q25"], row["q75"], row["spread"]) == (1.0, 3.0, 2.0)


def test_rounds_without_a_fixed_repeat_cannot_split_samples() -> None:
    # 3 processes with a variable sample count: samples cannot be assigned to processes
    (row,) = rows(STEP, bench(STEP, "time", ["framework"], rounds=3, repeat=0),
                  entry(TORCH, result=2.0, samples=[[1.0, 2.0, 3.0]]))
    assert row["processes"] is None
    assert row["basis"] == "asv: repeat is not a fixed count, so samples cannot be assigned to processes"


def test_cpu_machine_peak_bytes_use_the_cpu_memory_method() -> None:
    name = "remat.RematCost_mlp.track_peak_bytes"
    (row,) = rows(name, bench(name, "track", ["framework"]), entry(TORCH, result=1024.0), machine={"device": "cpu"})
    assert row["memory_method"] == frameworks.memory_method("torch", "cpu")


def test_a_sampled_track_is_one_process() -> None:
    name = "compile.Compile_mlp.track_compile_seconds"
    (row,) = rows(name, bench(name, "track", ["framework"]), entry(TORCH, result=2.0))
    assert (row["basis"], row["processes"], row["samples"]) == ("one process", 1, 1)


def test_nothing_skipped_still_has_the_columns(tmp_path: Path) -> None:
    (tmp_path / "box").mkdir()
    (tmp_path / "benchmarks.json").write_text(json.dumps({STEP: bench(STEP, "time", ["framework"]), "version": 2}))
    (tmp_path / "box" / "machine.json").write_text(json.dumps({"machine": "box", "device": "cpu"}))
    data = {"commit_hash": "c1", "date": 1700000000000, "params": {}, "result_columns": ASV_COLUMNS,
            "results": {STEP: entry(TORCH, result=1.0)}, "env_name": "env", "version": 2}
    (tmp_path / "box" / "c1-env.json").write_text(json.dumps(data))
    out = load.load_results(tmp_path, lambda _: None)
    assert out.skipped.empty
    assert list(out.skipped.columns) == load.COLUMNS
