"""tape_vs_trace.results.native_peak_rows: a ratio of native peaks only between like rows (one mode, one method, one
case), the per-case summary over processes, and the reader's refusal of a file that is not a native-peak file."""

from __future__ import annotations

import math
import os

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
    assert rows.ordered(tmp_path) == {"m": [path]}


def _files(folder, *contents: list[dict]) -> list:
    """One file per `contents`, each at its own commit, written in this order (mtime decides: no git here)."""
    paths = []
    for i, found in enumerate(contents):
        commit = "abcdef"[i] * 40
        path = rows.write(folder / f"m-{commit[:8]}.csv", [{**r, "commit": commit} for r in found])
        os.utime(path, (2e9 + i, 2e9 + i))
        paths.append(path)
    return paths


def test_each_machine_orders_its_files_oldest_first(tmp_path) -> None:
    old, new = (rows.write(tmp_path / name, [_row("torch", 1)]) for name in ("m-aaaaaaaa.csv", "m-bbbbbbbb.csv"))
    other = rows.write(tmp_path / "cpu-x-2c-cccccccc.csv", [_row("torch", 1, machine="cpu-x-2c")])
    os.utime(old, (2e9, 2e9))  # written last, but an unknown commit either way: the time decides
    assert rows.ordered(tmp_path) == {"m": [new, old], "cpu-x-2c": [other]}


CURVE = [_row(fw, peak, selection="curve", variant=v, workload="transformer")
         for fw in ("torch", "jax") for v, peak in (("plain", 4 << 20), ("remat_full", 2 << 20))]


def test_a_newer_small_file_does_not_hide_an_older_curve(tmp_path) -> None:
    # the older file: the curve; the newer: make bench's pair of another case and one of the curve's cases
    _files(tmp_path, CURVE, [_row("torch", 5 << 20, mode="compiled"), _row("jax", 6 << 20, mode="compiled"),
                             _row("torch", 9 << 20, selection="check", workload="transformer")])
    [curve] = rows.curves(tmp_path)["m"]
    assert len(curve) == 4 and {line["commit"][0] for line in curve} == {"a"}
    shown = {(line["workload"], line["variant"], line["mode"], line["framework"]): line["commit"][0]
             for line in rows.current(tmp_path)["m"]}
    assert shown[("transformer", "remat_full", "eager", "jax")] == "a"  # an older case the newer file lacks stays
    assert shown[("mlp", "plain", "compiled", "torch")] == "b"
    # the case both files hold comes from the newer one, both frameworks: its JAX side is not borrowed from the older
    assert shown[("transformer", "plain", "eager", "torch")] == "b"
    assert ("transformer", "plain", "eager", "jax") not in shown


def test_a_newer_curve_replaces_every_point_of_the_older(tmp_path) -> None:
    _files(tmp_path, CURVE, [r for r in CURVE if r["variant"] == "plain"])
    [curve] = rows.curves(tmp_path)["m"]
    assert len(curve) == 2 and {line["commit"][0] for line in curve} == {"b"}


def test_a_ratio_never_pairs_sides_from_two_commits(tmp_path) -> None:
    torch_a, jax_b = rows.summary([_row("torch", 100), _row("jax", 150, commit="d" * 40)])
    assert rows.ratios([torch_a, jax_b]) == []
    with pytest.raises(rows.NativePeakError, match="not like rows"):
        rows.divide(torch_a, jax_b)
    # as read from two files: the newer holds only PyTorch's side, so the case shows no ratio at all
    _files(tmp_path, [_row("torch", 100), _row("jax", 150)], [_row("torch", 120)])
    assert rows.ratios(rows.current(tmp_path)["m"]) == []


def test_a_file_of_other_columns_is_refused(tmp_path) -> None:
    path = tmp_path / "m-cccccccc.csv"
    path.write_text("framework,peak\ntorch,1\n")
    with pytest.raises(rows.NativePeakError, match="no native-peak file"):
        rows.read(path)
