"""scripts/compile_series.py, what `make compile-series` runs: the CPU depth series' points (every depth, each
formulation, both frameworks, the cold cache), its estimate against its budget, what a rerun skips, and bad input
refused in one line. Nothing here runs a benchmark."""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

import pytest

from benchmarks import recording
from implementations import workloads
from tape_vs_trace.running import profiles

ROOT = Path(__file__).resolve().parents[1]


if str(ROOT / "scripts") not in sys.path:  # a plain-Python script beside the ones it imports
    sys.path.insert(0, str(ROOT / "scripts"))
import compile_series as series  # noqa: E402


@pytest.fixture(scope="module")
def combos() -> list[profiles.Combo]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TVT_DEVICE", "cpu")
        return profiles.combinations()


@pytest.fixture(autouse=True)
def cpu(monkeypatch) -> None:
    monkeypatch.setenv("TVT_DEVICE", "cpu")


def test_the_cpu_series_is_every_depth_formulation_and_framework_cold(combos) -> None:
    points = series.points(combos)
    expected = {(w, fw, form, depth) for w in ("chain", "transformer") for depth in workloads.depth_series(w, "cpu")
                for fw, form in (("torch", "unrolled"), ("torch", "regional"), ("jax", "unrolled"), ("jax", "scan"))}
    assert {(p.workload, p.framework, p.formulation, p.depth) for p in points} == expected
    assert all(p.rounds == 1 for p in points)
    for p in points:  # a point's rows: its framework's phases and the whole first call, at the cold cache only
        phases = {re.findall(r"'([^']*)'", n)[5] for n in p.names}
        assert phases == {"first_call", *recording.COMPILE_PHASES[p.framework]}
        assert all("'cold'" in n and "'warm'" not in n for n in p.names)


def test_each_part_s_regex_selects_exactly_its_points_rows(combos) -> None:
    points = series.points(combos)
    names = [c.name for c in combos]
    for part in series.parts(points).values():
        regex = re.compile(profiles.names_regex(n for p in part for n in p.names))
        assert {n for n in names if regex.search(n)} == {n for p in part for n in p.names}


def test_the_cpu_series_is_estimated_within_its_budget(combos) -> None:
    points = series.points(combos)
    assert 0 < series.estimate_s(points) <= series.BUDGET_S
    # a deeper unrolled point costs more; a block compiled once does not grow
    chain = {(p.framework, p.formulation, p.depth): p.estimate_s() for p in points if p.workload == "chain"}
    assert chain[("torch", "unrolled", 32)] > chain[("torch", "unrolled", 8)]
    assert chain[("jax", "scan", 32)] == chain[("jax", "scan", 8)]


def test_filters_narrow_the_series_to_one_point(combos) -> None:
    [point] = series.points(combos, "transformer", "torch", 4, "unrolled")
    assert point.size == workloads.size_at_depth("transformer", 4)
    assert len(series.points(combos, framework="jax", depth=8)) == 2  # the chain's, unrolled and scan


def _result_file(path: Path, names: list[str]) -> None:
    """An asv result file holding a value for each combination of `names` (one benchmark's) and NaN elsewhere."""
    bench = names[0].split("(")[0]
    params = [sorted({re.findall(r"'[^']*'", n)[i] for n in names}) for i in range(9)]
    combos = [f"{bench}({', '.join(c)})" for c in itertools.product(*params)]
    values = [1.0 if c in names else float("nan") for c in combos]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"commit_hash": "c" * 40, "date": 0, "params": {"machine": "m"}, "python": "3.11",
                                "requirements": {}, "env_name": "existing-venv", "version": 2,
                                "result_columns": ["result", "params", "version"],
                                "results": {bench: [values, params, "1"]}}, allow_nan=True))


def test_a_rerun_runs_only_the_points_the_result_file_lacks(combos, tmp_path) -> None:
    points = series.points(combos, "chain", "jax")
    done = points[0]
    _result_file(tmp_path / "m" / "f.json", list(done.names))
    held = series.gpu_resume.read(tmp_path / "m" / "f.json")
    assert series.pending(points, held) == points[1:]


@pytest.mark.parametrize(("argv", "message"), [
    (["--depth", "7"], "depth 7 is in no compile series on cpu; valid choices: chain 8, 16, 32; transformer 1, 2, 4"),
    (["--workload", "transformer", "--depth", "8"], "valid choices: transformer 1, 2, 4"),
    (["--framework", "tf"], "unknown framework 'tf' of the compile series; valid choices: jax, torch"),
    (["--budget", "1"], "the estimate is over the 1 s budget"),
    (["--depth", "x"], "invalid int value"),
])
def test_bad_input_is_refused_in_one_line(argv, message, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(series, "_result_file", lambda results, machine: tmp_path / "none.json")
    assert series.main(["--machine", "m", "--plan", *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_the_plan_prints_the_estimate_and_runs_nothing(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(series, "_result_file", lambda results, machine: tmp_path / "none.json")
    assert series.main(["--machine", "m", "--plan", "--workload", "chain", "--framework", "jax", "--depth", "8"]) == 0
    out = capsys.readouterr().out
    assert "[compile-series] chain, jax (scan, unrolled) at depths 8: 2 processes" in out
    assert re.search(r"2 points, 2 processes, estimated \d+ s", out)
