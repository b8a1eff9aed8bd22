"""The distributed results files (`tape-vs-trace distributed`, results/distributed/<machine>-<commit8>.csv) in the
report: read and checked, one per machine (its newest commit). What the report says about them is
`distributed_section`'s, the figures `distributed_figure`'s."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from tape_vs_trace.report.load import Warn, read_side_csv, side_files
from tape_vs_trace.schema import DISTRIBUTED_FIELDS

FOLDER = "distributed"
NUMBERS = ("ranks", "time_s", "time_ci_low", "time_ci_high", "launches", "repeat", "warmup", "compile_s",
           "compile_ci_low", "compile_ci_high", "peak_bytes", "comm_bytes", "analytic_bytes", "gradient_bytes")
STATUSES = ("ok", "failed")


def launch_medians(row: dict) -> list[float]:
    """A row's per-launch medians (the CSV keeps them ';'-separated)."""
    return [float(v) for v in str(row["launch_medians"]).split(";") if v]


def read(path: Path) -> pd.DataFrame:
    """One distributed CSV, checked; ValueError (with the reason) for anything that is not one."""
    table = read_side_csv(path, DISTRIBUTED_FIELDS)
    bad = sorted(set(table.status) - set(STATUSES))
    if bad:
        raise ValueError(f"status {bad[0]!r} is neither {' nor '.join(STATUSES)}")
    for column in NUMBERS:
        table[column] = pd.to_numeric(table[column].replace("", math.nan), errors="coerce")
    if table.ranks.isna().any():
        raise ValueError("ranks is not a number on every row")
    if table[table.status == "ok"].time_s.isna().any():
        raise ValueError("an ok row has no time_s")
    table["ranks"] = table.ranks.astype(int)
    return table


def newest(files: Iterable[tuple[str, Path, pd.DataFrame]]) -> dict[str, tuple[Path, pd.DataFrame]]:
    """Per machine, the (path, table) of its newest commit (by commit date, then as written last)."""
    out: dict[str, tuple[tuple, Path, pd.DataFrame]] = {}
    for machine, path, data in files:
        key = (str(data.commit_date.iloc[0]), path.stat().st_mtime)
        if machine not in out or key > out[machine][0]:
            out[machine] = (key, path, data)
    return {machine: (path, data) for machine, (_, path, data) in out.items()}


def load(results: Path, warn: Warn) -> dict[str, pd.DataFrame]:
    """Per machine, the file of its newest commit (`newest`). An unreadable file is skipped with a one-line
    warning; without results/distributed the report has no distributed sections."""
    folder = results / FOLDER
    if not folder.is_dir():
        return {}
    found = newest(side_files(folder, "distributed results", read, warn))
    return {machine: data for machine, (_, data) in found.items()}
