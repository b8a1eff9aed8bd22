"""scripts/arms_study.py's summary: the between-process spread of each arm and the same-round correlation of two
arms' process factors, from a log whose values are known."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "scripts") not in sys.path:  # a plain-Python script
    sys.path.insert(0, str(ROOT / "scripts"))
import arms_study  # noqa: E402


def _log(tmp_path: Path, factors: dict[str, list[float]]) -> Path:
    """A log.jsonl of two combinations (1 ms and 4 ms) whose per-round medians are the base times x the arm's factor."""
    lines = [{"round": r, "arm": arm, "wall_s": 1.0, "host": None, "error": "",
              "medians": {"a-0": 1e-3 * f, "b-0": 4e-3 * f}}
             for arm, fs in factors.items() for r, f in enumerate(fs)]
    (tmp_path / "log.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    return tmp_path


def test_an_arm_that_moves_with_the_baseline_round_by_round_correlates_at_one(tmp_path: Path) -> None:
    swing = [1.0, 1.2, 0.9, 1.1, 1.0]
    lines = arms_study.summary(_log(tmp_path, {"torch": swing, "torch-again": swing,
                                               "torch-x4": swing[::-1]}))
    assert lines[0] == "5 rounds"
    assert "process factors of torch and torch-again, same round: correlation +1.00 (5 rounds)" in lines
    cv = float(np.std(np.log(swing), ddof=1))
    torch_line = [x for x in lines if x.startswith("torch ")][0]
    assert f"between-process CV median {cv:.1%}" in torch_line
    assert "the rest 0.0%" in torch_line  # both combinations move by the process factor alone
    assert not math.isclose(cv, 0.0)


def test_equal_processes_leave_no_spread_and_an_interval_of_zero_width(tmp_path: Path) -> None:
    lines = arms_study.summary(_log(tmp_path, {"jax": [1.0, 1.0, 1.0]}))
    assert "between-process CV median 0.0%, half-width median 0.0% (2 rows)" in lines[1]


@pytest.mark.parametrize("arm", ["nonsense"])
def test_an_unknown_arm_is_one_line_and_exit_two(arm: str, tmp_path: Path, capsys) -> None:
    assert arms_study.main(["run", "--out", str(tmp_path), arm]) == 2
    assert capsys.readouterr().err.strip() == (f"error: unknown arm {arm!r}; valid: {', '.join(arms_study.ARMS)}")
