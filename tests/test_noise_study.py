"""scripts/noise_study.py's statistics: each combination's samples split into its processes as the report splits
them, the between- and within-process spread, and the processes' slowdown set against the steal the runner
recorded around each of them. Synthetic result files; nothing runs a benchmark."""

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
import noise_study  # noqa: E402

# per round (process), PyTorch's eager process 1.5x slower in round 2, the compiled one steady
TORCH_EAGER = [[2e-3, 2.2e-3], [3e-3, 3.3e-3], [2e-3, 2.2e-3]]
TORCH_COMPILED = [[4e-3, 4e-3], [4e-3, 4e-3], [4e-3, 4e-3]]


def _result_file(tmp_path: Path, steal: list[float]) -> Path:
    samples = [sum(TORCH_EAGER, []), sum(TORCH_COMPILED, []), None]
    processes = [{"round": r, "framework": "torch", "compiled": compiled, "host": {"steal": s, "busy": 0.5}}
                 for r, s in zip((1, 2, 3), steal) for compiled in (False, True)]
    data = {"commit_hash": "c" * 40, "date": 0, "params": {"machine": "m"}, "python": "3.11", "requirements": {},
            "env_name": "existing-venv", "version": 2, "result_columns": ["result", "params", "samples"],
            "results": {"recording.GradStep_mlp.time_step": [
                [2.1e-3, 4e-3, None], [["'torch'"], ["'eager'", "'compiled'", "'none'"]], samples]},
            "tape_vs_trace": {"worker_runs": {"per_process": processes}}}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    return path


def test_samples_are_split_into_their_processes_in_round_order(tmp_path: Path) -> None:
    split = noise_study.per_process(_result_file(tmp_path, [0.0, 0.0, 0.0]), rounds=3)
    assert split == {"recording.GradStep_mlp.time_step-0": TORCH_EAGER,
                     "recording.GradStep_mlp.time_step-1": TORCH_COMPILED}  # a combination without samples: none
    assert noise_study.per_process(_result_file(tmp_path, [0.0] * 3), rounds=4) == {}  # 6 samples are not 4 processes


def test_spread_separates_the_processes_from_the_samples_inside_them(tmp_path: Path) -> None:
    spread = noise_study.spread(noise_study.per_process(_result_file(tmp_path, [0.0] * 3), rounds=3))
    eager_between = float(np.std(math.log(1.5) * np.array([0, 1, 0]), ddof=1))
    assert spread["between_cv"] == pytest.approx(eager_between / 2)  # the median of the eager's and 0
    assert spread["within_cv"] == pytest.approx(math.log(1.1) / math.sqrt(2) / 2)
    assert spread["combinations"] == 2 and spread["timed_rows"] == 2
    assert 0 < spread["half_width"] < 1


def test_a_slow_process_is_set_against_the_steal_recorded_while_it_ran(tmp_path: Path) -> None:
    path = _result_file(tmp_path, [0.0, 0.08, 0.01])  # the slow round 2 ran while the hypervisor took 8 %
    effect = noise_study.steal_effect(path, noise_study.per_process(path, rounds=3))
    assert effect["processes"] == 6 and effect["steal_max"] == 0.08
    assert effect["slowdown_high_steal"] > effect["slowdown_low_steal"]
    assert effect["spearman"] > 0
