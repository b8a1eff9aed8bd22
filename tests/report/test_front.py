"""report.front: what the front page says of a GPU machine's allocator peaks (which cases, the versions, the caveat
of one process), from the rows its newest run holds."""

from __future__ import annotations

import pandas as pd

from tape_vs_trace.report import front


def _peak(framework: str, workload: str, size: str, variant: str, processes: float | None, **kw) -> dict:
    return {"machine": "gpu-nvidia-h200", "commit": "c" * 40, "date": pd.Timestamp("2026-12-04"), "env": "e",
            "device": "NVIDIA H200", "torch_version": "2.11.0", "jax_version": "0.11.2", "framework": framework,
            "workload": workload, "size": size, "variant": variant, "metric": "track_peak_bytes", "status": "ok",
            "processes": processes, "value": 1.0, **kw}


def test_the_gpu_peaks_are_named_with_their_cases_versions_and_caveat() -> None:
    rows = [_peak(f, "mlp", "2048x4096x16384", v, None) for f in ("torch", "jax") for v in ("plain", "remat_dots")]
    rows += [_peak("torch", "lstm", "l2-c128-b14", "plain", None),
             _peak("torch", "lstm", "l2-c128-b14", "remat_full", None, status="failed"),  # not a peak that exists
             {**_peak("torch", "mlp", "64x256x1024", "plain", 5), "device": "cpu", "machine": "cpu-x"}]
    [line, blank] = front.gpu_peak_lines(pd.DataFrame(rows))
    assert blank == ""
    assert line.startswith("- gpu-nvidia-h200 (torch 2.11.0, jax 0.11.2): 5 allocator peaks, ")
    assert "mlp 2048x4096x16384 (plain, remat_dots); lstm l2-c128-b14 (plain)" in line
    assert "one process each, no interval" in line and "cpu-x" not in line


def test_gpu_peaks_of_several_processes_carry_no_one_process_caveat_and_a_cpu_run_says_nothing() -> None:
    rows = [_peak(f, "mlp", "2048x4096x16384", "plain", 5) for f in ("torch", "jax")]
    [line, _] = front.gpu_peak_lines(pd.DataFrame(rows))
    assert "2 allocator peaks" in line and "no interval" not in line
    cpu = [{**r, "device": "cpu"} for r in rows]
    assert front.gpu_peak_lines(pd.DataFrame(cpu)) == []
