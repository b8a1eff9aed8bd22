"""Choosing rows from the tidy table: each machine's latest commit, one dtype and precision, lookups by case."""

from __future__ import annotations

import pandas as pd

from implementations import metrics
from tape_vs_trace.results.rowkey import RowKey

# The columns of the report's table that name a case of a pillar's metric, the framework apart (report.rows)
CASE = ("workload", "size", "program", "variant")


class Cells:
    """Lookup of one machine's latest results by case: a RowKey of the pillar, metric, framework, workload, size and
    the table's program and variant columns; a table without a program column (rows from before the style axis) has
    the program "" throughout."""

    def __init__(self, table: pd.DataFrame):
        if "program" not in table.columns:
            table = table.assign(program="")
        self.table = table
        self.rows = {_case(r): r for r in table.to_dict("records")}

    def get(self, pillar: str, metric: str, workload: str, size: str, program: str, variant: str,
            framework: str) -> dict | None:
        return self.rows.get(_case({"pillar": pillar, "metric": metric, "workload": workload, "size": size,
                                    "program": program, "variant": variant, "framework": framework}))

    def cases(self, pillar: str, metric: str) -> list[tuple[str, str, str]]:
        """(workload, size, program) of a pillar's metric, in table order."""
        sel = self.table[(self.table.pillar == pillar) & (self.table.metric == metric)]
        return list(dict.fromkeys(zip(sel.workload, sel["size"], sel.program)))

    def programs(self, pillar: str, metric: str, workload: str, size: str) -> list[str]:
        """The programs of one (workload, size) of a pillar's metric, in table order."""
        return [p for w, s, p in self.cases(pillar, metric) if (w, s) == (workload, size)]


def _case(row: dict) -> RowKey:
    """The key a cell is looked up by: the pillar stands for the benchmark, as a case names no family."""
    return RowKey.of_columns(row, CASE, row["pillar"], row["metric"])


def latest(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per machine (and asv environment, where a machine has several), the rows of its most recent commit (by
    commit date), keyed by a name for the section and figure folder. Nothing is compared across commits."""
    groups = list(table.groupby(["machine", "env"], sort=True))
    several_envs = len(groups) > table.machine.nunique()
    out = {}
    for (machine, env), rows in groups:
        commit = rows.sort_values(["date", "commit"]).commit.iloc[-1]
        out[f"{machine}-{env}" if several_envs else machine] = rows[rows.commit == commit]
    return out


def ordered(rows: pd.DataFrame) -> pd.DataFrame:
    """Registry order of the metrics (time first, then compile time, memory, counts); asv's order within."""
    order = {m: i for i, m in enumerate(metrics.METRICS)}
    rank = rows.metric.map(order).fillna(len(order))
    return rows.assign(_rank=rank).sort_values("_rank", kind="stable").drop(columns="_rank")


def base_numerics(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of one dtype and precision (float32 at full precision where present, else the most common pair),
    plus those without one (the harness): findings and figures compare like with like. GPU machines also run
    bfloat16 and TF32 steps; the tables show every pair."""
    pairs = rows[rows.dtype != ""].groupby(["dtype", "precision"]).size()
    if pairs.empty:
        return rows
    base = ("float32", "highest") if ("float32", "highest") in pairs.index else pairs.idxmax()
    return rows[((rows.dtype == base[0]) & (rows.precision == base[1])) | (rows.dtype == "")]


def display(metric: str) -> str:
    return metrics.METRICS[metric].display if metric in metrics.METRICS else metric
