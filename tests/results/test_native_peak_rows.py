"""tape_vs_trace.results.native_peak_rows: a ratio of native peaks only between like rows (one mode, one method, one
case), the per-case summary over processes, and the reader's refusal of a file that is not a native-peak file."""

from __future__ import annotations

import math

import pytest

from tape_vs_trace.results import native_peak_rows as rows

METHOD = "memray native heap peak above the call's start (PYTHONMALLOC=malloc)"


def _row(framework: str, peak: int, process: int = 0, **changes) -> dict:
    base = {"selection": "check", "workload": "mlp", "size": "64x256x1024", "kind": "grad", "variant": "plain",
            "mode": "eager", "formulation": "", "attention": "", "budget": "", "transform": "",
            "framework": framework, "process": process, "peak_bytes": peak, "workspace_bytes": 0, "small_bytes": 0,
            "method": METHOD, "lower_bytes": "", "upper_bytes": "", "resident_bytes": "", "saved_bytes": "",
            "returned_bytes": "", "verdict": "ok", "other_peak_bytes": "", "other_method": "", "step_s": 0.01,
            "tracked_step_s": 0.02, "machine": "m", "commit": "c" * 40}
    return {**base, **changes}


def write_results(folder):
    """FOLDER/native-peak/m-cccccccc.csv: an eager case of both frameworks over two processes each, and two compiled
    rows of different workloads (no like pair); returns FOLDER."""
    (folder / "native-peak").mkdir()
    found = [_row("torch", 2 << 20, p) for p in (0, 1)] + [_row("jax", 3 << 20, p) for p in (0, 1)]
    found += [_row("torch", 5 << 20, mode="compiled"), _row("jax", 4 << 20, mode="compiled", workload="swiglu")]
    rows.write(folder / "native-peak" / "m-cccccccc.csv", found)
    return folder


def test_like_modes_are_divided_jax_over_torch() -> None:
    lines = rows.summary([_row("torch", 100), _row("jax", 150)])
    [ratio] = rows.ratios(lines)
    assert ratio["ratio"] == 1.5 and ratio["mode"] == "eager"


def test_unlike_modes_are_not_divided() -> None:
    torch_eager, jax_jit = rows.summary([_row("torch", 100), _row("jax", 150, mode="compiled")])
    with pytest.raises(rows.NativePeakError, match="not like rows"):
        rows.divide(torch_eager, jax_jit)
    assert rows.ratios([torch_eager, jax_jit]) == []


def test_a_peak_mode_alone_decides_likeness_of_otherwise_equal_rows() -> None:
    a, b = (rows.like_row(line, line["peak_bytes"]) for line in rows.summary([_row("torch", 100), _row("jax", 150)]))
    from tape_vs_trace.results import rowkey

    assert rowkey.like(a, b) is None
    assert rowkey.like(a, {**b, "peak_mode": "compiled"}).startswith("unlike modes")


def test_different_methods_are_not_divided() -> None:
    torch, jax = rows.summary([_row("torch", 100), _row("jax", 150, method="jax compiled.memory_analysis")])
    with pytest.raises(rows.NativePeakError, match="different memory methods"):
        rows.divide(torch, jax)


def test_the_summary_takes_the_median_and_the_interval_over_processes() -> None:
    [line] = rows.summary([_row("jax", p, i, workspace_bytes=p // 10) for i, p in enumerate((300, 100, 200))])
    assert (line["peak_bytes"], line["peak_min"], line["peak_max"], line["processes"]) == (200, 100, 300, 3)
    assert (line["workspace_bytes"], line["process"]) == (20, 2)  # the median process's parts, not the first's
    assert line["ci_low"] < 200 < line["ci_high"]
    [single] = rows.summary([_row("jax", 100)])
    assert math.isnan(single["ci_low"])


def test_equal_repeats_give_an_exact_ratio() -> None:
    lines = rows.summary([_row("torch", 100, 0), _row("torch", 100, 1), _row("jax", 150, 0), _row("jax", 150, 1)])
    [ratio] = rows.ratios(lines)
    assert ratio["ratio_low"] == ratio["ratio_high"] == pytest.approx(1.5)


def test_write_then_read_round_trips(tmp_path) -> None:
    path = rows.write(tmp_path / "m-cccccccc.csv", [_row("torch", 100), _row("jax", 150)])
    back = rows.read(path)
    assert [r["peak_bytes"] for r in back] == [100, 150] and back[0]["lower_bytes"] == ""
    assert rows.newest(tmp_path) == {"m": path}


def test_each_machine_has_its_newest_file(tmp_path) -> None:
    import os

    old, new = (rows.write(tmp_path / name, [_row("torch", 1)]) for name in ("m-aaaaaaaa.csv", "m-bbbbbbbb.csv"))
    other = rows.write(tmp_path / "cpu-x-2c-cccccccc.csv", [_row("torch", 1, machine="cpu-x-2c")])
    os.utime(old, (2e9, 2e9))  # written last, but an unknown commit either way: the time decides
    assert rows.newest(tmp_path) == {"m": old, "cpu-x-2c": other}
    assert new.exists()


def test_a_file_of_other_columns_is_refused(tmp_path) -> None:
    path = tmp_path / "m-cccccccc.csv"
    path.write_text("framework,peak\ntorch,1\n")
    with pytest.raises(rows.NativePeakError, match="no native-peak file"):
        rows.read(path)
