"""The host allocator's thresholds, a fairness setting of every framework process (implementations.frameworks): both
held at glibc's fully adjusted values, once per process, recorded with the results; nothing changed without glibc."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from implementations import frameworks, process_settings
from tape_vs_trace.results import machine

ROOT = Path(__file__).resolve().parents[1]
HELD = "glibc malloc, mmap threshold 32 MiB and trim threshold 64 MiB held fixed"


class FakeGlibc:
    def __init__(self, accepts: bool = True) -> None:
        self.calls: list[tuple[int, int]] = []
        self.accepts = accepts

    def gnu_get_libc_version(self) -> bytes:
        return b"2.36"

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return 1 if self.accepts else 0


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_settings, "_host_allocator", None)


def test_both_thresholds_are_held_at_glibcs_adjusted_values() -> None:
    libc = FakeGlibc()
    assert frameworks.host_allocator(libc) == HELD
    # M_MMAP_THRESHOLD is -3 and M_TRIM_THRESHOLD -1 in malloc.h; glibc's own adjustment sets trim to twice mmap,
    # and 32 MiB is the most it raises mmap to on a 64-bit machine.
    assert libc.calls == [(-3, 32 * 2**20), (-1, 64 * 2**20)]


def test_without_glibc_nothing_is_changed_and_the_record_says_so() -> None:
    class Musl:
        def mallopt(self, param: int, value: int) -> int:
            pytest.fail("mallopt called on a C library that is not glibc")

    assert frameworks.host_allocator(Musl()) == "platform default (no glibc)"


def test_a_refused_threshold_is_recorded_as_the_defaults() -> None:
    assert frameworks.host_allocator(FakeGlibc(accepts=False)) == \
        "glibc malloc, its defaults (mallopt refused the thresholds)"


def test_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert frameworks.host_allocator(FakeGlibc()) == HELD
    monkeypatch.setattr("ctypes.CDLL", lambda *a: pytest.fail("looked up the C library again"))
    assert frameworks.host_allocator() == HELD


def test_every_framework_process_holds_them_and_the_results_record_them() -> None:
    # A fresh interpreter: loading a framework applies the setting with the real C library of this machine.
    code = ("from implementations import frameworks, process_settings; frameworks.load('torch'); "
            "print(process_settings._host_allocator)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == HELD  # this project's machines run glibc
    assert machine.details()["host_allocator"] == HELD
