"""Row selection for the report (tape_vs_trace.report.select), one rule per case on small hand-built tables: which
case a cell looks up, each machine's newest commit, section names, metric order, the base numerics, display names."""

from __future__ import annotations

import pandas as pd

from tape_vs_trace.report import select
from tape_vs_trace.results.rowkey import RowKey


def frame(*rows: dict) -> pd.DataFrame:
    base = {"pillar": "recording", "metric": "time_step", "workload": "mlp", "size": "s", "variant": "eager",
            "framework": "torch", "machine": "m1", "env": "venv", "date": "2024-01-01", "commit": "c1",
            "dtype": "float32", "precision": "highest", "value": 1.0}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_cells_look_up_one_case_and_list_cases_in_table_order() -> None:
    table = frame({"workload": "mlp", "size": "l", "value": 1.0},
                  {"workload": "lstm", "size": "s", "value": 2.0},
                  {"workload": "mlp", "size": "l", "framework": "jax", "value": 3.0},
                  {"workload": "chain", "size": "s", "metric": "track_flops", "value": 4.0},
                  {"workload": "gmm", "size": "s", "pillar": "remat", "value": 5.0})
    cells = select.Cells(table)
    assert cells.get("recording", "time_step", "mlp", "l", "", "eager", "jax")["value"] == 3.0
    # The row itself, column by column, and nothing else (no pandas index).
    row = cells.get("recording", "time_step", "mlp", "l", "", "eager", "torch")
    assert row == {**table.iloc[0].to_dict(), "program": ""}
    assert cells.get("recording", "time_step", "mlp", "s", "", "eager", "torch") is None
    # Each (workload, size, program) once, first appearance first; other metrics and pillars are not cases of this.
    assert cells.cases("recording", "time_step") == [("mlp", "l", ""), ("lstm", "s", "")]
    assert cells.cases("recording", "track_flops") == [("chain", "s", "")]
    assert cells.cases("remat", "time_step") == [("gmm", "s", "")]


def test_cells_keep_the_programs_of_one_case_apart() -> None:
    table = frame({"workload": "mlp", "size": "l", "program": "default", "value": 1.0},
                  {"workload": "mlp", "size": "l", "program": "matched", "value": 2.0})
    cells = select.Cells(table)
    assert cells.cases("recording", "time_step") == [("mlp", "l", "default"), ("mlp", "l", "matched")]
    assert cells.get("recording", "time_step", "mlp", "l", "matched", "eager", "torch")["value"] == 2.0
    assert cells.programs("recording", "time_step", "mlp", "l") == ["default", "matched"]


def test_cells_are_keyed_by_the_rows_key() -> None:
    cells = select.Cells(frame({"variant": "eager"}, {"variant": "compiled", "value": 2.0}))
    key = next(k for k, r in cells.rows.items() if r["value"] == 2.0)
    assert isinstance(key, RowKey) and (key.pillar, key.metric, key.framework) == ("recording", "time_step", "torch")
    assert (key.workload, key.size, key.axis("variant"), key.axis("program")) == ("mlp", "s", "compiled", "")
    # the variant tells two rows of one case apart, as each is a cell of its own
    assert cells.get("recording", "time_step", "mlp", "s", "", "compiled", "torch")["value"] == 2.0


def test_latest_takes_each_machines_newest_commit_by_date() -> None:
    table = frame({"machine": "m2", "commit": "ccc", "date": "2023-01-01", "value": 4.0},
                  {"machine": "m1", "commit": "bbb", "date": "2024-01-01", "value": 1.0},
                  {"machine": "m1", "commit": "aaa", "date": "2024-02-01", "value": 2.0},  # newer, smaller hash
                  {"machine": "m1", "commit": "aaa", "date": "2024-02-01", "value": 3.0, "workload": "lstm"})
    out = select.latest(table)
    # One environment per machine: sections named by the machine alone, in name order whatever the files' order.
    assert list(out) == ["m1", "m2"]
    assert list(out["m1"].value) == [2.0, 3.0] and list(out["m2"].value) == [4.0]


def test_latest_breaks_a_date_tie_by_commit() -> None:
    table = frame({"commit": "aaa", "date": "2024-01-01", "value": 1.0},
                  {"commit": "bbb", "date": "2024-01-01", "value": 2.0})
    assert list(select.latest(table)["m1"].value) == [2.0]


def test_latest_names_sections_by_environment_when_a_machine_has_several() -> None:
    table = frame({"machine": "m1", "env": "venv", "value": 1.0},
                  {"machine": "m1", "env": "conda", "value": 2.0},
                  {"machine": "m2", "env": "venv", "value": 3.0})
    out = select.latest(table)
    # Any machine with two environments names every section by machine and environment.
    assert sorted(out) == ["m1-conda", "m1-venv", "m2-venv"]
    assert list(out["m1-conda"].value) == [2.0] and list(out["m2-venv"].value) == [3.0]


def test_ordered_follows_the_metric_registry_and_puts_unknown_metrics_last() -> None:
    table = frame({"metric": "unknown_b", "value": 1.0}, {"metric": "track_flops", "value": 2.0},
                  {"metric": "unknown_a", "value": 3.0}, {"metric": "time_step", "value": 4.0},
                  {"metric": "track_peak_bytes", "value": 5.0}, {"metric": "time_step", "value": 6.0})
    # time_step < track_peak_bytes < track_flops in the registry; ties and unknowns keep their table order.
    assert list(select.ordered(table).value) == [4.0, 6.0, 5.0, 2.0, 1.0, 3.0]
    assert "_rank" not in select.ordered(table).columns


def test_base_numerics_prefers_float32_at_full_precision_and_keeps_the_harness() -> None:
    table = frame({"dtype": "bfloat16", "precision": "default", "value": 1.0},
                  {"dtype": "bfloat16", "precision": "default", "value": 2.0},
                  {"dtype": "float32", "precision": "highest", "value": 3.0},
                  {"dtype": "float32", "precision": "high", "value": 4.0},
                  {"dtype": "", "precision": "", "value": 5.0})
    assert list(select.base_numerics(table).value) == [3.0, 5.0]


def test_base_numerics_falls_back_to_the_most_common_pair() -> None:
    table = frame({"dtype": "float32", "precision": "high", "value": 1.0},
                  {"dtype": "bfloat16", "precision": "default", "value": 2.0},
                  {"dtype": "bfloat16", "precision": "default", "value": 3.0},
                  {"dtype": "", "precision": "", "value": 4.0},
                  {"dtype": "", "precision": "", "value": 5.0},
                  {"dtype": "", "precision": "", "value": 6.0})  # rows without a dtype do not vote
    assert list(select.base_numerics(table).value) == [2.0, 3.0, 4.0, 5.0, 6.0]


def test_base_numerics_without_any_dtype_keeps_every_row() -> None:
    table = frame({"dtype": "", "precision": "", "value": 1.0}, {"dtype": "", "precision": "", "value": 2.0})
    assert list(select.base_numerics(table).value) == [1.0, 2.0]


def test_display_names_registered_metrics_and_passes_others_through() -> None:
    assert select.display("track_saved_bytes") == "saved for backward"
    assert select.display("time_step") == "step time"
    assert select.display("not_a_metric") == "not_a_metric"
