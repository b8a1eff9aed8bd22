"""tape_vs_trace.results.host_load: the steal and busy shares between two readings of /proc/stat."""

from __future__ import annotations

from pathlib import Path

import pytest

from tape_vs_trace.results import host_load


def _stat(tmp_path: Path, name: str, user: int, system: int, idle: int, steal: int) -> Path:
    path = tmp_path / name
    path.write_text(f"cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0\ncpu0 1 0 1 1 0 0 0 0 0 0\n")
    return path


def test_shares_divide_steal_and_busy_by_the_ticks_that_passed(tmp_path: Path) -> None:
    before = host_load.cpu_ticks(_stat(tmp_path, "a", 100, 50, 1000, 10))
    after = host_load.cpu_ticks(_stat(tmp_path, "b", 160, 70, 1100, 30))  # +60 user +20 sys +100 idle +20 steal
    assert host_load.shares(before, after) == pytest.approx({"steal": 0.1, "busy": 0.4})


def test_no_share_without_two_readings_or_without_ticks(tmp_path: Path) -> None:
    same = host_load.cpu_ticks(_stat(tmp_path, "a", 1, 1, 1, 1))
    assert host_load.cpu_ticks(tmp_path / "missing") is None
    assert host_load.shares(None, same) is None
    assert host_load.shares(same, same) is None


def test_this_host_is_read() -> None:
    ticks = host_load.cpu_ticks()
    if ticks is None:
        pytest.skip("no /proc/stat on this system")
    assert len(ticks) == 10 and all(t >= 0 for t in ticks)


def _run(*busy: float | None) -> dict:
    """A result file's tape_vs_trace block with one worker process per share (None: a process without a reading)."""
    return {"worker_runs": {"per_process": [{"round": 1, "host": None if b is None else {"steal": 0.0, "busy": b}}
                                            for b in busy]}}


def test_a_runs_busy_share_is_the_median_over_its_processes_with_a_reading() -> None:
    assert host_load.run_busy(_run(0.5, 0.9, 0.6, None)) == pytest.approx(0.6)  # the mean would be 0.667
    assert host_load.run_busy(_run(0.5, 0.6, 0.7, 0.9)) == pytest.approx(0.65)
    assert host_load.run_busy(_run(None)) is None
    assert host_load.run_busy({"worker_runs": {}}) is None and host_load.run_busy(None) is None


def test_the_load_line_asks_about_other_work_where_one_run_was_busier_by_the_threshold() -> None:
    quiet, loaded = _run(0.62, 0.63, 0.64), _run(0.80, 0.81, 0.82)
    line = host_load.load_line("box @ abc12300", quiet, loaded)
    assert line == ("host load: box @ abc12300: the CPUs busy a median 63% of the time during A's worker processes, "
                    "81% during B's (their own work included); B shared the host with other work?")
    assert host_load.load_line("box", loaded, quiet).endswith("; A shared the host with other work?")
    # 9 points apart: no question; exactly the threshold: asked
    assert host_load.load_line("box", quiet, _run(0.72)).endswith("(their own work included)")
    assert host_load.load_line("box", quiet, _run(0.63 + host_load.BUSIER)).endswith("other work?")
    assert host_load.load_line("box", quiet, {}) is None and host_load.load_line("box", None, quiet) is None
