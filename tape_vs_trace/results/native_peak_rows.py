"""The rows of `tape-vs-trace native-peak` (results/native-peak/<machine>-<commit8>.csv, the side table SPEC): their
writer, their numbers, the per-case summary over processes, which file each case and curve is shown from (`current`,
`curves`: the side tables' newest-file rule, per case as SPEC declares it), and the JAX/PyTorch ratios that the side
tables' like rule allows. The runner (tape_vs_trace.side.native_peaks) writes them; the report and `cite` read them
through this module."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

import pandas as pd

from tape_vs_trace.results import intervals, schema, side_tables
from tape_vs_trace.results.rowkey import RowKey

BENCHMARK = "native_peak"  # the name a row's RowKey (like_row) gives these rows
VERSION = "1"  # what a row means; changed when the method changes, so old and new rows are never divided
SPEC = side_tables.SPECS[schema.NATIVE_PEAK_FOLDER]
PARAMS = schema.NATIVE_PEAK_PARAMS  # everything that names the step, the framework apart: a case
COLUMNS = schema.NATIVE_PEAK_FIELDS


class NativePeakError(Exception):
    """Bad input, a failed measuring process or an unreadable results file: one line for the user."""


def write(path: Path, rows: Iterable[dict]) -> Path:
    try:
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    except OSError as exc:
        raise NativePeakError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


BYTES = ("peak_bytes", "workspace_bytes", "small_bytes", "lower_bytes", "upper_bytes", "resident_bytes",
         "saved_bytes", "returned_bytes", "other_peak_bytes")


def numbers(table: pd.DataFrame) -> list[dict]:
    """The rows of a file as side_tables.read_csv reads it, numbers as numbers ('' stays '')."""
    rows = table.to_dict("records")
    for row in rows:
        for k in (*BYTES, "process"):
            row[k] = int(row[k]) if row[k] not in ("", None) else ""
        for k in ("step_s", "tracked_step_s"):
            row[k] = float(row[k]) if row[k] not in ("", None) else math.nan
    return rows


def read(path: Path) -> list[dict]:
    """The rows of one results file, numbers as numbers ('' stays '')."""
    try:
        return numbers(side_tables.read_csv(path, COLUMNS))
    except OSError as exc:
        raise NativePeakError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, pd.errors.ParserError) as exc:
        raise NativePeakError(f"{path} is no native-peak file: {exc}") from None


def like_row(row: dict, peak: float) -> dict:
    """`row` (one case and framework, its processes merged) in the shape RowKey.of and rowkey.like read: its
    parameters, the method that measured it and the mode it was measured in (the summary's case key)."""
    return {"benchmark": f"{BENCHMARK}.{row['kind']}", "metric": "peak_bytes", "framework": row["framework"],
            "params": {**{k: row[k] for k in PARAMS}, "dtype": "float32", "device": "cpu"},
            "machine": row["machine"], "commit": row["commit"], "benchmark_version": VERSION, "comparable": True,
            "memory_method": row["method"], "peak_mode": row["mode"], "value": peak}


def summary(rows: list[dict]) -> list[dict]:
    """One line per (case, framework): the process of the median peak over its processes (of every selection that
    ran the case), so its GEMM scratch, small allocations and bounds are that process's own; the range of the peaks,
    their 95 % interval (intervals.median_interval), every process's verdict, and the median step times."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((RowKey.of(like_row(row, 0)), row["machine"], row["commit"]), []).append(row)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda r: r["peak_bytes"])
        peaks = [r["peak_bytes"] for r in members]
        low, high = intervals.median_interval(peaks) if len(peaks) > 1 else (math.nan, math.nan)
        out.append({**members[len(members) // 2], "peaks": peaks, "peak_min": peaks[0], "peak_max": peaks[-1],
                    "processes": len(peaks), "ci_low": low, "ci_high": high,
                    "verdicts": sorted({r["verdict"] for r in members}),
                    "selections": sorted({r["selection"] for r in members}),
                    "step_s": sorted(r["step_s"] for r in members)[len(members) // 2],
                    "tracked_step_s": sorted(r["tracked_step_s"] for r in members)[len(members) // 2]})
    return out


def ratios(lines: list[dict]) -> list[dict]:
    """JAX/PyTorch peak ratios of summary lines, formed only where the side tables' like rule allows (`unlike`);
    each with its 95 % interval across processes (intervals.ratio_interval; NaN unless both sides have two or more)."""
    by_key = {(RowKey.of(like_row(line, 0)), line["machine"], line["commit"]): line for line in lines}
    out = []
    for line in lines:
        if line["framework"] != "torch":
            continue
        other = by_key.get((replace(RowKey.of(like_row(line, 0)), framework="jax"), line["machine"], line["commit"]))
        if other is None:
            continue
        if unlike(line, other) is not None:
            continue

        low, high = intervals.ratio_interval(other["peaks"], line["peaks"])
        out.append({**{k: line[k] for k in PARAMS}, "torch": line["peak_bytes"], "jax": other["peak_bytes"],
                    "ratio": other["peak_bytes"] / line["peak_bytes"], "ratio_low": low, "ratio_high": high,
                    "method": line["method"], "commit": line["commit"]})
    return out


def divide(a: dict, b: dict) -> float:
    """b's peak / a's peak for two summary lines; NativePeakError naming why where the like rule refuses."""
    why = unlike(a, b)
    if why is not None:
        raise NativePeakError(f"not divided: {why}")
    return b["peak_bytes"] / a["peak_bytes"]


def unlike(a: dict, b: dict) -> str | None:
    """Why two summary lines' peaks may not be divided (side_tables.unlike: one case, one machine and commit, like
    methods, and the mode each was measured in, which the case names), or None."""
    return side_tables.unlike(SPEC, a, b, "peak_bytes")


def _found(folder: Path, warn: Callable[[str], None]) -> list[tuple[str, Path, pd.DataFrame]]:
    return list(side_tables.files(folder, SPEC.what, SPEC.read, warn))


def ordered(folder: Path, warn: Callable[[str], None] = lambda _: None) -> dict[str, list[Path]]:
    """Per machine, its results files in `folder` (<machine>-<commit8>.csv), oldest first (side_tables.ordered: by
    their commit's date where git knows the commit, then as written)."""
    return {machine: [path for path, _ in files]
            for machine, files in side_tables.ordered(_found(folder, warn), dated=SPEC.dated).items()}


def case_of(line: dict) -> tuple:
    """What one case of a summary line is, the framework apart: every framework of a case comes from one file."""
    return RowKey.of(like_row(line, 0)).without("framework"), line["machine"]


def shown(found: Iterable[tuple[str, Path, pd.DataFrame]], by: tuple[str, ...] | None = None
          ) -> dict[str, list[dict]]:
    """Per machine, the summary lines of the rows the newest-file rule shows (per case unless `by` says other
    groups), each naming its `file`."""
    return {machine: summary(numbers(table)) for machine, table in side_tables.newest_rows(SPEC, found, by=by).items()}


def current(folder: Path, warn: Callable[[str], None] = lambda _: None) -> dict[str, list[dict]]:
    """Per machine, the summary lines to show: each case from the newest file that holds it, all its frameworks
    from that one file (so a ratio never divides two commits), each line naming its `file`. A newer file that
    measured a few cases hides only those: the older file's other cases stay."""
    return shown(_found(folder, warn))


def _curve_cases(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a file's cases (each framework of each) that the `curve` selection ran, all their processes."""
    ran = table.groupby([*PARAMS, "framework"], sort=False).selection.transform(lambda s: (s == "curve").any())
    return table[ran.astype(bool)]


def curves(folder: Path, warn: Callable[[str], None] = lambda _: None) -> dict[str, list[list[dict]]]:
    """Per machine, its remat curves: per workload and size of the `curve` selection, every point from the newest
    file that ran that curve (one commit a curve), each line naming its `file`."""
    found = [(machine, path, cases) for machine, path, table in _found(folder, warn)
             if not (cases := _curve_cases(table)).empty]
    out = {}
    for machine, lines in shown(found, ("workload", "size")).items():
        held: dict[tuple[str, str], list[dict]] = {}
        for line in lines:
            held.setdefault((line["workload"], line["size"]), []).append(line)
        out[machine] = list(held.values())
    return out
