"""scripts/copies_model.py: the rounds and copies a budget buys, replayed with the runner's own copies rule, and the
per-combination alternative, on rows whose spreads and costs are known."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "scripts") not in sys.path:  # a plain-Python script
    sys.path.insert(0, str(ROOT / "scripts"))
import copies_model  # noqa: E402
from copies_model import Row  # noqa: E402


def test_the_committed_rule_copies_the_cheap_group_and_ends_with_the_processes_that_fit() -> None:
    # Until a row has three processes the runner copies by cost: 0.5 x 40 s holds two 10 s processes of the cheap
    # group. Round 2 (10 + 10 + 40 s) leaves 40 s of 100: round 3 runs the 40 s process and nothing after it.
    rows = [Row("a-0", "a", 0.1), Row("b-0", "b", 0.1)]
    processes = copies_model.committed(rows, {"a": 10.0, "b": 40.0}, left=100.0)
    assert processes == {"a-0": 3, "b-0": 3}
    # 59 s: the 40 s process first, then one of a's two 10 s processes; no further round
    assert copies_model.committed(rows, {"a": 10.0, "b": 40.0}, left=59.0) == {"a-0": 2, "b-0": 2}


def test_the_median_width_is_the_t_half_width_of_the_middle_row() -> None:
    rows = [Row("a-0", "a", 0.05), Row("a-1", "a", 0.20), Row("a-2", "a", 0.10)]
    width = copies_model.median_width(rows, {"a-0": 4, "a-1": 4, "a-2": 9})
    assert width == pytest.approx(stats.t.ppf(0.975, 3) * 0.05 / 2)  # 0.05 at 4 (.061), 0.2 at 4, 0.1 at 9 (.077)


def test_a_partial_copy_takes_the_wide_combination_that_fits_and_leaves_the_rest() -> None:
    # Group a: 11 s a process, 3 s of it start-up, 1 s its wide row, 7 s its narrow one; group b: 20 s, 15 s its
    # row. The envelope (half of 20 s) holds the wide row with a's start-up (4 s), not the narrow one after it
    # (11 s) nor b's (20 s): a round costs 11 + 20 + 4 s, and 70 s hold two.
    rows = [Row("wide", "a", 0.3, 1.0), Row("narrow", "a", 0.01, 7.0), Row("b", "b", 0.1, 15.0)]
    processes = copies_model.parts(rows, {"a": 11.0, "b": 20.0}, left=70.0)
    assert processes == {"wide": 5, "narrow": 3, "b": 3}
