"""tape_vs_trace.host_load: the steal and busy shares between two readings of /proc/stat."""

from __future__ import annotations

from pathlib import Path

import pytest

from tape_vs_trace import host_load


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
