"""The report's "time to first step" section (tape_vs_trace.report.first_step): one row per framework, step and
cache with the one-time start apart from the compile, intervals from the processes, processes whose parts did not
add up left out and counted, and the section's page linked from summary.md when results/first_step exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tape_vs_trace.report import build
from tape_vs_trace.report import first_step as section
from tape_vs_trace.side import first_step as fs
from tests.report.helpers import FIXTURE, unrendered

PARTS = {"interpreter_s": 0.04, "import_s": 1.5, "harness_s": 0.06, "backend_start_s": 0.01, "unattributed_s": 0.0,
         "steady_step_s": 0.001, "cache_hits": 0, "cache_misses": 1, "cache_entries_before": 0,
         "cache_settings": "{}", "start": "{}", "host_busy": 0.5, "host_steal": 0.0}


def _row(framework: str, mode: str, cache: str, process: int, compiler: float, compile_s: float) -> dict:
    phases = {"dynamo": compile_s / 2, "inductor": compile_s / 2} if framework == "torch" else {"xla": compile_s}
    row = {**PARTS, "framework": framework, "mode": mode, "workload": "chain", "size": "d8-4x64", "cache": cache,
           "process": process, "compiler_start_s": compiler, "compile_s": compile_s, "first_execution_s": 0.01,
           "first_step_s": compile_s + 0.01, "phases": json.dumps(phases)}
    row["wall_s"] = sum(row[k] for k in ("interpreter_s", "import_s", "harness_s", "backend_start_s",
                                         "compiler_start_s", "first_step_s"))
    return {**row, "status": fs.check(row)}


def _write(folder: Path) -> Path:
    rows = [_row("torch", "compiled", cache, i, 6.0 + 0.1 * i, (5.0 if cache == "cold" else 0.9) + 0.1 * i)
            for i in range(3) for cache in ("cold", "warm")]
    rows += [_row("jax", "compiled", "cold", i, 0.0, 0.5 + 0.01 * i) for i in range(3)]
    rows += [_row("torch", "eager", "cold", i, 0.0, 0.0) for i in range(3)]
    bad = {**_row("jax", "compiled", "cold", 3, 0.0, 0.5), "wall_s": 9.0}
    rows.append({**bad, "status": fs.check(bad)})
    return fs.write(rows, folder / section.FOLDER, "some-machine", "0123456789abcdef", "cpu")


def test_the_section_shows_the_start_apart_with_intervals(tmp_path: Path) -> None:
    _write(tmp_path)
    text = section.section(tmp_path, print)
    assert text.startswith("## Time to first step")
    lines = [line for line in text.splitlines() if line.startswith("| chain")]
    assert len(lines) == 4  # torch cold, torch warm, jax cold, torch eager
    torch_cold = next(line for line in lines if "torch.compile | cold" in line)
    cells = [c.strip() for c in torch_cold.split("|")]
    # the one-time start (the backend's 0.01 s with the compiler's), then the compile
    assert cells[7].startswith("6.11 s [") and cells[8].startswith("5.10 s [")
    assert "| 3 |" in torch_cold and "dynamo 2.55 s" in torch_cold
    assert "eager (tape)" in text and "1 process(es) left out" in text


def test_no_results_no_section(tmp_path: Path) -> None:
    assert section.section(tmp_path, print) == ""


def test_the_front_page_points_to_the_section_under_compile_time(tmp_path: Path) -> None:
    import shutil

    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    _write(results)
    with unrendered():  # the test reads the text
        build.write_report(results, tmp_path / "report", lambda message: None)
    front = (tmp_path / "report" / "summary.md").read_text()
    compile_time = front.split("## Compile time", 1)[1].split("\n## ", 1)[0]  # said under compile time
    assert "Time to first step" in compile_time and f"]({section.PAGE})" in compile_time
    assert "| chain d8-4x64 | PyTorch | torch.compile | cold |" in (tmp_path / "report" / section.PAGE).read_text()


def test_the_front_row_gives_each_framework_cold_and_warm_with_the_start_apart(tmp_path: Path) -> None:
    _write(tmp_path)
    [row] = section.front_rows(tmp_path, print)
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert cells[:2] == ["some-machine (`01234567`)", "time to first step, chain d8-4x64"]
    torch_cell, jax_cell = cells[2:]
    # the whole wait with its interval, then the one-time start (the backend's 0.01 s with the compiler's 6.0-6.2 s)
    # apart from the compile; the eager steps and the process whose parts did not add up stay out
    assert re.match(r"cold [\d.]+ s \[[\d.]+, [\d.]+\] \(start 6.11 s, compile 5.10 s\); warm ", torch_cell)
    assert torch_cell.endswith(" (start 6.11 s, compile 1.00 s)")
    assert re.fullmatch(r"cold [\d.]+ s \[[\d.]+, [\d.]+\] \(start 0.01 s, compile 0.51 s\)", jax_cell)
    assert section.front_rows(tmp_path / "none", print) == []


def test_the_front_row_stands_beside_its_machines_compile_rows() -> None:
    from tape_vs_trace.report import front

    series = {"a": ("c" * 40, False, [["chain at depth 8", "unrolled 2 s", "unrolled 0.2 s"]], True),
              "b": ("d" * 40, False, [["chain at depth 8", "unrolled 3 s", "unrolled 0.3 s"]], True)}
    first = ["| a (`cccccccc`) | time to first step, chain d8 | cold: start 6 s | cold: start 0.01 s |"]
    lines = front.compile_section(None, series, (first, section.SAID))
    rows = [line.split(" | ")[0] for line in lines if line.startswith("| a") or line.startswith("| b")]
    assert rows == ["| a", "| a (`cccccccc`)", "| b"]
    assert section.SAID in lines[2] and f"]({section.PAGE})" in lines[2]
    assert section.SAID not in "\n".join(front.compile_section(None, series))
