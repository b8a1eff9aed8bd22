"""tape-vs-trace run's worker processes: one crash costs the combination in progress and the rest run in a new
worker; a worker that dies before naming a combination fails its batch once. Workers are faked."""

from __future__ import annotations

from pathlib import Path

from tape_vs_trace.running import processes as suite_processes
from tests.running.test_plan import _task


def test_a_crash_fails_the_combination_in_progress_and_the_rest_run_in_a_new_worker(monkeypatch,
                                                                                    tmp_path: Path) -> None:
    batch = [_task("m.A.time_step", i) for i in range(4)]
    calls: list[list[str]] = []

    def fake(framework, left, caches, scratch, label, timeout):
        calls.append([t.id for t in left])
        if len(calls) == 1:  # dies in the third combination, after the first two were saved
            return ({"m.A.time_step-0": {"samples": [1.0], "number": 1},
                     "m.A.time_step-1": {"samples": [1.0], "number": 1},
                     "current": "m.A.time_step-2", "graphs": {}}, "worker exited with status -11: Segmentation fault")
        return {t.id: {"samples": [2.0], "number": 1} for t in left} | {"current": None, "graphs": {}}, ""

    monkeypatch.setattr(suite_processes, "run_worker", fake)
    lines: list[str] = []
    found = suite_processes.measure_round(batch, "torch", {}, tmp_path, "r0", lines.append)
    assert calls == [[t.id for t in batch], ["m.A.time_step-3"]]
    assert "status -11" in found["m.A.time_step-2"]["error"]
    assert found["m.A.time_step-3"] == {"samples": [2.0], "number": 1}
    assert any("m.A.time_step-2" in line for line in lines)


def test_a_worker_that_dies_before_any_combination_fails_its_batch_once(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(suite_processes, "run_worker", lambda *a: ({}, "worker exited with status 1: ImportError"))
    found = suite_processes.measure_round([_task("m.A.time_step", 0), _task("m.A.time_step", 1)], "jax", {},
                                       tmp_path, "r0", lambda _: None)
    assert found["m.A.time_step-0"]["error"].endswith("ImportError")
    assert found["m.A.time_step-1"]["error"].endswith("ImportError")
