"""The merge of a second run of one commit into the first pairs each combination by its parameter values, never by
its position: the old and the new file list a benchmark's values in another order, or with a value added or dropped
between the runs (a size added to the grid), and every value lands on its own combination, none is lost, and the
runner's choice, the combinations kept and the failures' ids follow their combinations. asv reads what it writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tape_vs_trace.results import asv_files, merge

NAME = "p.A.time_x"
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_q_25", "samples"]
NAN = float("nan")


def _run(grid: list[list[str]], values: dict[tuple, float | None], chosen: list[tuple] | None,
         failures: dict[tuple, str] | None = None) -> dict:
    """A run's file of one benchmark on `grid`: `values` by combination (a combination left out: NaN), each value's
    quartile and samples derived from it; the combinations the run chose (None: asv run's file, which does not
    say) and its failures, by combination too."""
    import itertools

    combos = list(itertools.product(*grid))
    result = [values.get(c, NAN) for c in combos]
    measured = [isinstance(v, float) and v == v for v in result]
    entry = [result, grid, "2", 1, 1.0, [v * 0.9 if m else None for v, m in zip(result, measured)],
             [[v] * 3 if m else None for v, m in zip(result, measured)]]
    record = {} if chosen is None else {"chosen": {NAME: [combos.index(c) for c in chosen]}}
    record["failures"] = {f"{NAME}-{combos.index(c)}": [{"run": run, "error": "boom"}]
                          for c, run in (failures or {}).items()}
    return {"result_columns": COLUMNS, "results": {NAME: entry}, "durations": {}, "tape_vs_trace": record}


def _by_values(data: dict) -> dict[tuple, tuple]:
    """The merged entry per combination (its values): (value, quartile, samples)."""
    import itertools

    result, grid, _, _, _, q25, samples = (data["results"][NAME] + [None] * 7)[:7]
    combos = list(itertools.product(*grid))
    q25, samples = q25 or [None] * len(combos), samples or [None] * len(combos)
    return {c: (r, q, s) for c, r, q, s in zip(combos, result, q25, samples)}


def _combos(data: dict, indices: list[int]) -> set[tuple]:
    import itertools

    combos = list(itertools.product(*data["results"][NAME][1]))
    return {combos[i] for i in indices}


FW = ["'torch'", "'jax'"]


def test_values_listed_in_another_order_stay_with_their_combination() -> None:
    old = _run([FW], {("'torch'",): 1.0, ("'jax'",): 2.0}, [("'torch'",), ("'jax'",)])
    new = _run([FW[::-1]], {("'jax'",): 3.0}, [("'jax'",)])  # the same grid, jax first: positions swapped
    merged, kept = merge.merge_results(old, new)
    found = _by_values(merged)
    assert found[("'torch'",)] == (1.0, 0.9, [1.0] * 3)  # the new run did not choose torch: its old value stays
    assert found[("'jax'",)][0] == 3.0 and found[("'jax'",)][2] == [3.0] * 3
    assert _combos(merged, kept[NAME]) == {("'torch'",)}
    assert _combos(merged, merged["tape_vs_trace"]["chosen"][NAME]) == {("'torch'",), ("'jax'",)}


def test_a_size_added_between_the_runs_keeps_every_old_value_on_its_own_size() -> None:
    old = _run([FW, ["'s'"]], {("'torch'", "'s'"): 1.0, ("'jax'", "'s'"): 2.0}, None)  # asv run's file
    added = [("'torch'", "'m'"), ("'jax'", "'m'")]
    new = _run([FW, ["'s'", "'m'"]], dict(zip(added, (5.0, None))), added, {("'jax'", "'m'"): "r2"})
    merged, kept = merge.merge_results(old, new)
    found = _by_values(merged)
    assert merged["results"][NAME][1] == [FW, ["'s'", "'m'"]]
    assert {c: v[0] for c, v in found.items()} == {("'torch'", "'s'"): 1.0, ("'torch'", "'m'"): 5.0,
                                                    ("'jax'", "'s'"): 2.0, ("'jax'", "'m'"): None}
    assert found[("'jax'", "'s'")][1:] == (2.0 * 0.9, [2.0] * 3)  # its quartile and samples with it
    assert _combos(merged, kept[NAME]) == {("'torch'", "'s'"), ("'jax'", "'s'")}
    assert _combos(merged, merged["tape_vs_trace"]["chosen"][NAME]) == set(found)
    [failed] = merged["tape_vs_trace"]["failures"]
    assert _combos(merged, [int(failed.rsplit("-", 1)[1])]) == {("'jax'", "'m'")}


def test_a_size_dropped_between_the_runs_loses_no_value_and_moves_the_old_failures_ids() -> None:
    sizes = ["'s'", "'m'"]
    old = _run([FW, sizes], {("'torch'", "'s'"): 1.0, ("'torch'", "'m'"): 2.0, ("'jax'", "'s'"): 3.0},
               [("'torch'", "'s'"), ("'torch'", "'m'"), ("'jax'", "'s'"), ("'jax'", "'m'")],
               {("'jax'", "'m'"): "r1"})
    old["results"][NAME][0][3] = None  # jax at m failed in the old run
    new = _run([FW, ["'m'"]], {("'torch'", "'m'"): 7.0, ("'jax'", "'m'"): 8.0},
               [("'torch'", "'m'"), ("'jax'", "'m'")])
    merged, kept = merge.merge_results(old, new)
    found = _by_values(merged)
    assert merged["results"][NAME][1] == [FW, ["'m'", "'s'"]]  # the new grid, the dropped size after its own
    assert {c: v[0] for c, v in found.items()} == {("'torch'", "'m'"): 7.0, ("'torch'", "'s'"): 1.0,
                                                    ("'jax'", "'m'"): 8.0, ("'jax'", "'s'"): 3.0}
    assert _combos(merged, kept[NAME]) == {("'torch'", "'s'"), ("'jax'", "'s'")}
    [failed] = merged["tape_vs_trace"]["failures"]  # the old failure names its combination in the merged grid
    assert _combos(merged, [int(failed.rsplit("-", 1)[1])]) == {("'jax'", "'m'")}


def test_another_number_of_parameters_replaces_the_old_entry_whole() -> None:
    old = _run([FW, ["'s'"]], {("'torch'", "'s'"): 1.0}, [("'torch'", "'s'")])
    new = _run([FW], {("'jax'",): 2.0}, [("'jax'",)])
    merged, kept = merge.merge_results(old, new)
    assert merged["results"][NAME] == new["results"][NAME] and kept == {}
    assert merged["tape_vs_trace"]["chosen"] == {NAME: [1]}


def test_asv_reads_the_merged_file_with_each_value_on_its_combination(tmp_path: Path) -> None:
    old = _run([FW, ["'s'"]], {("'torch'", "'s'"): 1.0, ("'jax'", "'s'"): 2.0}, None)
    new = _run([FW[::-1], ["'m'", "'s'"]], {("'jax'", "'m'"): 6.0}, [("'jax'", "'m'")])
    merged, _ = merge.merge_results(old, new)
    path = tmp_path / "m" / "aaaaaaaa-existing-venv.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**merged, "commit_hash": "a" * 40, "env_name": "existing-venv", "date": 1,
                                "params": {"machine": "m"}, "python": "3.11", "requirements": {}, "version": 2}))
    file = asv_files.read(path)
    got = {c.values: (c.outcome, c.value, c.q25) for c in file.combinations(NAME)}
    assert got[("'torch'", "'s'")] == (asv_files.MEASURED, 1.0, 0.9)
    assert got[("'jax'", "'s'")] == (asv_files.MEASURED, 2.0, 1.8)
    assert got[("'jax'", "'m'")] == (asv_files.MEASURED, 6.0, 6.0 * 0.9)
    assert got[("'torch'", "'m'")][0] == asv_files.NOT_RUN  # chosen by neither run
    asked = file.results.get_result_value(NAME, [FW, ["'s'"]])  # asv's own pairing by values agrees
    assert asked == [1.0, 2.0] and math.isnan(file.results.get_result_value(NAME, [["'torch'"], ["'m'"]])[0])
