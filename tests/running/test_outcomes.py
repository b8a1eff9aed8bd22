"""What a run reads back of this commit's result file (running.outcomes.held_rounds): each task is paired with the
file's combination of the same parameter values, not the same position, since a merge keeps a value an earlier grid
had and the file's grid may then list the values otherwise than the discovered one."""

from __future__ import annotations

import json
from pathlib import Path

from tape_vs_trace.running.outcomes import Task, held_rounds

NAME = "m.A.time_step"


def test_held_rounds_pair_each_task_with_its_combination_by_values(tmp_path: Path) -> None:
    path = tmp_path / "m" / "aaaaaaaa-existing-venv.json"
    path.parent.mkdir()
    # the file's grid: jax first and a size the discovered grid no longer has; torch at s holds 2 rounds of 5
    grid = [["'jax'", "'torch'"], ["'s'", "'old'"]]
    result = [float("nan"), 7.0, 1.0, float("nan")]
    samples = [None, [7.0] * 5, [1.0] * 10, None]
    path.write_text(json.dumps({
        "commit_hash": "a" * 40, "env_name": "existing-venv", "date": 1, "params": {"machine": "m"},
        "python": "3.11", "requirements": {}, "result_columns": ["result", "params", "version", "samples"],
        "results": {NAME: [result, grid, "1", samples]}, "durations": {}, "version": 2}))
    benchmarks = [{"name": NAME, "params": [["'torch'", "'jax'"], ["'s'"]], "param_names": ["framework", "size"]}]
    torch, jax = Task(NAME, 0, "torch", "time", 3, 5, False), Task(NAME, 1, "jax", "time", 3, 5, False)
    kept, held = held_rounds([torch, jax], path, lambda _: None, benchmarks)
    assert [(t.framework, t.rounds) for t in kept] == [("torch", 1), ("jax", 3)]  # torch lacks one round, jax all
    assert held == {torch.id: held[torch.id]} and held[torch.id].samples == [[1.0] * 5] * 2
