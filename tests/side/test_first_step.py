"""Time to first step (tape_vs_trace/side/first_step.py, its child implementations/first_step.py and the frameworks'
implementations/<framework>/first_step.py): the parts add up to the parent's wall time, a part left out is caught,
a warm point never reads an empty cache, bad input is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from implementations import workloads
from implementations.first_step import PARTS
from tape_vs_trace import cli
from tape_vs_trace.side import first_step as fs

ROOT = Path(__file__).resolve().parents[2]
SIZE = workloads.size_at_depth("chain", 8)


def _values(**seconds: float) -> dict:
    # each part above the tolerance (a part below it is below the check's resolution)
    parts = {"interpreter_s": 0.3, "import_s": 1.2, "harness_s": 0.2, "backend_start_s": 0.3,
             "compiler_start_s": 3.0, "first_step_s": 2.0}
    parts.update(seconds)
    return {**parts, "wall_s": sum(parts.values()) + 0.004}


def test_the_file_has_a_column_for_every_part() -> None:
    assert all(f"{part}_s" in fs.FIELDS for part in ("interpreter", *PARTS))


def test_parts_that_add_up_pass_the_check() -> None:
    assert fs.check(_values()) == "ok"


@pytest.mark.parametrize("part", ["interpreter", *PARTS])
def test_a_part_left_out_fails_the_check(part: str) -> None:
    values = _values()
    values[f"{part}_s"] = 0.0
    assert fs.check(values).startswith("parts "), part


def _measured(framework: str, mode: str, cache: str, folder: Path) -> dict:
    return fs.measure_point((framework, "chain", SIZE, mode, cache), folder, 0)


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_an_eager_process_adds_up_and_drops_no_part(framework: str, tmp_path: Path) -> None:
    row = _measured(framework, "eager", "cold", tmp_path)
    assert row["status"] == "ok", row["status"]
    assert abs(row["unattributed_s"]) <= fs.TOLERANCE * row["wall_s"] + fs.ABSOLUTE_S
    # every part the child times large enough to be seen, left out, breaks the sum
    for part in ("interpreter", *PARTS):
        if row[f"{part}_s"] > fs.TOLERANCE * row["wall_s"] + fs.ABSOLUTE_S + abs(row["unattributed_s"]):
            assert fs.check({**row, f"{part}_s": 0.0}) != "ok", part
    assert row["import_s"] > 0.1  # the framework's import is timed in the child, not before it starts


def _cold_then_warm(framework: str, folder: Path) -> tuple[dict, dict]:
    cold = _measured(framework, "compiled", "cold", folder)
    return cold, _measured(framework, "compiled", "warm", folder)


def _check_cold_then_warm(cold: dict, warm: dict) -> None:
    for row in (cold, warm):
        assert row["status"] == "ok", row["status"]
        assert row["compile_s"] > 0  # the framework's own timers saw the compile
    assert cold["cache_entries_before"] == 0 and cold["cache_hits"] == 0 and cold["cache_misses"] > 0
    assert warm["cache_entries_before"] > 0 and warm["cache_hits"] > 0
    assert warm["compile_s"] < cold["compile_s"]


def test_jax_cold_fills_the_cache_the_warm_point_reads(tmp_path: Path) -> None:
    _check_cold_then_warm(*_cold_then_warm("jax", tmp_path))


@pytest.mark.slow
def test_torch_cold_fills_the_cache_the_warm_point_reads(tmp_path: Path) -> None:
    cold, warm = _cold_then_warm("torch", tmp_path)
    _check_cold_then_warm(cold, warm)
    assert cold["compiler_start_s"] > 0.5  # Inductor's imports and the C++ toolchain's first use, apart


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_a_warm_point_refuses_an_empty_cache_folder(framework: str, tmp_path: Path) -> None:
    with pytest.raises(fs.FirstStepError, match="holds no entry"):
        _measured(framework, "compiled", "warm", tmp_path)


# An entry of another program: the folder is not empty, but the step's compile finds nothing in it.
_FOREIGN_ENTRY = {"jax": "jax/jit_other-0123abcd-cache", "torch": "torch/fxgraph/ab/fother/entry"}


@pytest.mark.parametrize("framework", [pytest.param("torch", marks=pytest.mark.slow), "jax"])
def test_a_warm_point_that_reads_no_entry_is_an_error(framework: str, tmp_path: Path) -> None:
    entry = tmp_path / _FOREIGN_ENTRY[framework]
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"not this program")
    with pytest.raises(fs.FirstStepError, match="read no cache entry"):
        _measured(framework, "compiled", "warm", tmp_path)


def test_plan_pairs_each_warm_point_after_its_cold_one() -> None:
    points = fs.plan("cited")
    assert {p[0] for p in points} == {"torch", "jax"} and {(p[1], p[2]) for p in points} == {("chain", SIZE)}
    for framework in ("torch", "jax"):
        mine = [p[3:] for p in points if p[0] == framework]
        assert mine.index(("compiled", "cold")) < mine.index(("compiled", "warm"))
    full = fs.plan("full")
    assert {p[1] for p in full} == {"chain", "transformer"} and len(full) > len(points)


@pytest.mark.parametrize(("argv", "message"), [
    (["first-step", "--processes", "1"], "at least 2"),
    (["first-step", "--frameworks", "mxnet"], "valid choices: torch, jax"),
    (["first-step", "--profile", "huge"], "valid choices: cited, full"),
])
def test_bad_input_is_one_line_and_exit_1(argv: list[str], message: str, capsys, tmp_path: Path) -> None:
    assert cli.main([*argv, "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not any(tmp_path.iterdir())


def test_the_child_refuses_bad_input_in_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "implementations.first_step", "jax", "bogus", "chain", SIZE, "cpu"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: unknown mode 'bogus'; valid choices: eager, compiled"


def test_the_written_file_carries_no_path_of_the_machine(tmp_path: Path) -> None:
    row = _measured("jax", "eager", "cold", tmp_path / "cache")
    path = fs.write([row], tmp_path / "out", "some-machine", "0123456789abcdef", "cpu")
    text = path.read_text()
    assert path.name == "some-machine-01234567.csv"
    assert str(tmp_path) not in text and str(Path.home()) not in text


def test_a_process_whose_cache_was_elsewhere_is_an_error(monkeypatch, tmp_path: Path) -> None:
    elsewhere = {"cache_settings": {"dir": str(tmp_path.parent / "elsewhere")}, "cache_reads": {"hits": 1.0}}
    monkeypatch.setattr(fs, "child", lambda *args, **kwargs: elsewhere)
    with pytest.raises(fs.FirstStepError, match="not the point's folder"):
        _measured("jax", "compiled", "cold", tmp_path)
