"""scripts/copies_model.py: the rounds and copies a budget buys, replayed as the runner decides them (its own
copies rule and round test), and the per-combination alternative, on rows whose spreads and costs are known."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "scripts") not in sys.path:  # a plain-Python script
    sys.path.insert(0, str(ROOT / "scripts"))
import copies_model  # noqa: E402
from copies_model import Row, Walls  # noqa: E402

TWO = [Row("a-0", "torch others highest", 0.1), Row("b-0", "jax compiled highest", 0.1)]
COSTS = {"torch others highest": Walls(10.0, 10.0, 10.0), "jax compiled highest": Walls(40.0, 40.0, 40.0)}


def test_the_committed_rule_copies_the_cheap_group_in_every_round_the_budget_holds() -> None:
    # Rounds 2 and 3 copy by cost while a row has fewer than three processes: half of 40 s holds two 10 s processes
    # (60 s rounds). Round 4 copies by spread: jax's 40 s process does not fit the 20 s envelope, torch's goes to
    # its cap of 3 (70 s, by 240 s). Round 5, expected at the slowest round so far (70 s) with 40 s left, runs in
    # part: torch first in its order, its three 10 s processes, not jax's 40 s one after them; the run ends there.
    processes = copies_model.replay(TWO, COSTS, first=50.0, budget=280.0, rounds=12, rule=copies_model.committed)
    assert processes == {"a-0": 1 + 2 + 2 + 3 + 3, "b-0": 1 + 1 + 1 + 1}
    # the plan's rounds cap it however large the budget
    assert copies_model.replay(TWO, COSTS, 50.0, 1e6, rounds=4, rule=copies_model.committed) == {"a-0": 8, "b-0": 4}


def test_a_partial_round_ends_the_run() -> None:
    # The first three rounds always run (suite_plan.MIN_ROUNDS); round 4 would take 60 s with 10 s left: of its
    # processes (jax first in round 4) only one 10 s torch process fits, and nothing runs after it.
    processes = copies_model.replay(TWO, COSTS, first=50.0, budget=180.0, rounds=12, rule=copies_model.committed)
    assert processes == {"a-0": 1 + 2 * 2 + 1, "b-0": 1 + 2}
    # 45 s left for round 4: jax's 40 s process comes first in its order and fits; torch's copies then do not
    processes = copies_model.replay(TWO, COSTS, first=50.0, budget=215.0, rounds=12, rule=copies_model.committed)
    assert processes == {"a-0": 1 + 2 * 2, "b-0": 1 + 2 + 1}


def test_the_median_width_is_the_t_half_width_of_the_middle_row() -> None:
    rows = [Row("a-0", "a", 0.05), Row("a-1", "a", 0.20), Row("a-2", "a", 0.10)]
    width = copies_model.median_width(rows, {"a-0": 4, "a-1": 4, "a-2": 9})
    # at 4 processes sd 0.05 gives 0.080 and 0.2 gives 0.318; at 9, sd 0.1 gives 0.077: the middle is 0.080
    assert width == pytest.approx(stats.t.ppf(0.975, 3) * 0.05 / 2)


def test_a_partial_copy_takes_the_wide_combination_that_fits_and_leaves_the_rest() -> None:
    # Group a: 11 s a process, 3 s of it start-up, 1 s its wide row, 7 s its narrow one; group b: 20 s, 15 s its
    # row. The envelope (half of 20 s) holds the wide row with a's start-up (4 s), not the narrow one after it
    # (11 s) nor b's (20 s): the copy runs right after a's process.
    rows = [Row("wide", "torch others highest", 0.3, 1.0), Row("narrow", "torch others highest", 0.01, 7.0),
            Row("b", "jax compiled highest", 0.1, 15.0)]
    walls = {"torch others highest": Walls(11.0, 11.0, 11.0), "jax compiled highest": Walls(20.0, 20.0, 20.0)}
    plan = copies_model.parts(rows, walls, {"wide": 3, "narrow": 3, "b": 3}, r=2)
    assert plan == [("torch others highest", ["wide", "narrow"], 11.0, 11.0),
                    ("torch others highest", ["wide"], 4.0, 4.0), ("jax compiled highest", ["b"], 20.0, 20.0)]
