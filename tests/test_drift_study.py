"""scripts/drift_study.py's statistics: the drift inside one process (window medians, their spread and lag-1
autocorrelation), an arm's spread per framework and of the JAX/PyTorch ratio with rounds paired, and each arm set
against the sequential one. Synthetic samples; nothing runs a benchmark except the bad-input checks."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "scripts") not in sys.path:  # a plain-Python script
    sys.path.insert(0, str(ROOT / "scripts"))
import drift_study  # noqa: E402


def _timed(values: list[float], every: float = 0.1) -> list[tuple[float, float]]:
    return [(100.0 + i * every, v) for i, v in enumerate(values)]


def test_window_medians_take_each_second_and_drop_a_window_of_fewer_than_three_samples() -> None:
    samples = _timed([1, 2, 9, 3, 3, 4, 5, 6, 7, 8] + [5, 5, 5, 5, 5, 5, 5, 5, 5, 5] + [7, 7])
    assert drift_study.window_medians(samples) == [4.5, 5.0]


def test_a_level_that_steps_once_drifts_slowly_and_noise_alternating_does_not() -> None:
    step = _timed([1.0] * 50 + [1.2] * 50)  # ten windows at one level, then ten at another
    slow = drift_study.drift(step)
    assert slow["windows"] == 10 and slow["lag1"] > 0.5
    assert slow["cv"] == pytest.approx(0.1 / 1.1)
    flicker = drift_study.drift(_timed(([1.0] * 10 + [1.2] * 10) * 5))
    assert flicker["lag1"] < -0.5 and flicker["cv"] == pytest.approx(slow["cv"])


def test_too_few_windows_give_no_drift_figure() -> None:
    assert math.isnan(drift_study.drift(_timed([1.0] * 15))["cv"])


SHARED = [1.0, 1.3, 0.8, 1.1]  # the host's speed factor of each round, shared by both frameworks


def _rounds(torch: float, jax: float, jitter: tuple[float, ...] = (1.0,) * 4) -> list[dict[str, list[float]]]:
    return [{"torch": [torch * f] * 5, "jax": [jax * f * j] * 5} for f, j in zip(SHARED, jitter)]


def test_a_drift_shared_by_both_frameworks_leaves_the_paired_ratio_exact_and_each_side_wide() -> None:
    summary = drift_study.arm_summary(_rounds(2e-3, 6e-3))
    assert summary["ratio"]["value"] == pytest.approx(3.0)
    assert summary["ratio"]["sd"] == pytest.approx(0.0, abs=1e-12)
    assert summary["ratio"]["half_width"] == pytest.approx(0.0, abs=1e-9)
    assert summary["torch"]["sd"] == pytest.approx(summary["jax"]["sd"]) and summary["torch"]["sd"] > 0.1
    # Welch's interval over the same round medians cannot see the pairing
    assert summary["ratio"]["unpaired_half_width"] > 0.2


def test_the_ratio_pairs_each_round_with_its_own_round() -> None:
    rounds = _rounds(2e-3, 6e-3, jitter=(1.0, 1.1, 1.0, 1.1))
    summary = drift_study.arm_summary(rounds)
    logs = [math.log(1.0), math.log(1.1)] * 2
    assert summary["ratio"]["value"] == pytest.approx(3.0 * math.sqrt(1.1))
    assert summary["ratio"]["sd"] == pytest.approx(math.sqrt(sum((x - sum(logs) / 4) ** 2 for x in logs) / 3))


def test_each_arm_is_set_against_the_sequential_arm() -> None:
    def timed(rounds: list[dict[str, list[float]]]) -> list[dict[str, list[tuple[float, float]]]]:
        return [{fw: _timed(v * 6) for fw, v in r.items()} for r in rounds]

    found = {"sequential": timed(_rounds(2e-3, 6e-3)), "cotimed": timed(_rounds(2.4e-3, 6.6e-3))}
    summary = drift_study.summarise(found)
    assert summary["arms"]["cotimed"]["against_sequential"] == {"torch": pytest.approx(1.2),
                                                                 "jax": pytest.approx(1.1)}
    assert "against_sequential" not in summary["arms"]["sequential"]
    assert summary["drift_inside_a_process"]["torch"]["cv"] == pytest.approx(0.0)


def test_a_workload_without_the_step_is_one_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert drift_study.main(["--out", "/tmp/unused", "--workload", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: no benchmark recording.GradStep_nosuch.time_step"


def test_too_few_rounds_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert drift_study.main(["--out", "/tmp/unused", "--rounds", "1"]) == 2
    assert capsys.readouterr().err.strip() == "error: --rounds must be at least 2 and --seconds positive"
