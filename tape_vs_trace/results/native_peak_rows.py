"""The rows of `tape-vs-trace native-peak` (results/native-peak/<machine>-<commit8>.csv): their columns, one reader
and writer, the per-case summary over processes, which file each case and curve is shown from (`current`, `curves`:
the newest that holds it), and the JAX/PyTorch ratios that rowkey.like allows. The runner
(tape_vs_trace.side.native_peaks) writes them; the report and `cite` read them through this module."""

from __future__ import annotations

import csv
import math
import subprocess
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from tape_vs_trace.results import intervals
from tape_vs_trace.results.rowkey import RowKey

BENCHMARK = "native_peak"  # the name rowkey.like sees for these rows
VERSION = "1"  # what a row means; changed when the method changes, so old and new rows are never divided
# A row's parameters as the ratio rule sees them: everything that names the step, the framework apart.
PARAMS = ("workload", "size", "kind", "variant", "mode", "formulation", "attention", "budget", "transform")
COLUMNS = ("selection", *PARAMS, "framework", "process", "peak_bytes", "workspace_bytes",
           "small_bytes", "method", "lower_bytes", "upper_bytes", "resident_bytes", "saved_bytes", "returned_bytes",
           "verdict", "other_peak_bytes", "other_method", "step_s", "tracked_step_s", "machine", "commit")


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


def read(path: Path) -> list[dict]:
    """The rows of one results file, numbers as numbers ('' stays '')."""
    try:
        with path.open(encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise NativePeakError(f"cannot read {path}: {exc.strerror or exc}") from None
    if rows and set(COLUMNS) - set(rows[0]):
        raise NativePeakError(f"{path} is no native-peak file: it lacks {sorted(set(COLUMNS) - set(rows[0]))}")
    for row in rows:
        for k in (*BYTES, "process"):
            row[k] = int(row[k]) if row[k] not in ("", None) else ""
        for k in ("step_s", "tracked_step_s"):
            row[k] = float(row[k]) if row[k] not in ("", None) else math.nan
    return rows


def like_row(row: dict, peak: float) -> dict:
    """`row` (one case and framework, its processes merged) in the shape rowkey.like reads: its parameters, the
    method that measured it and the mode it was measured in."""
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
    """JAX/PyTorch peak ratios of summary lines, formed only where rowkey.like allows; each with its 95 % interval
    across processes (intervals.ratio_interval; NaN unless both sides have two or more)."""
    from tape_vs_trace.results import rowkey

    by_key = {(RowKey.of(like_row(line, 0)), line["machine"], line["commit"]): line for line in lines}
    out = []
    for line in lines:
        if line["framework"] != "torch":
            continue
        other = by_key.get((replace(RowKey.of(like_row(line, 0)), framework="jax"), line["machine"], line["commit"]))
        if other is None:
            continue
        why = rowkey.like(like_row(line, line["peak_bytes"]), like_row(other, other["peak_bytes"]))
        if why is not None:
            continue

        low, high = intervals.ratio_interval(other["peaks"], line["peaks"])
        out.append({**{k: line[k] for k in PARAMS}, "torch": line["peak_bytes"], "jax": other["peak_bytes"],
                    "ratio": other["peak_bytes"] / line["peak_bytes"], "ratio_low": low, "ratio_high": high,
                    "method": line["method"], "commit": line["commit"]})
    return out


def divide(a: dict, b: dict) -> float:
    """b's peak / a's peak for two summary lines; NativePeakError naming why where rowkey.like refuses."""
    from tape_vs_trace.results import rowkey

    why = rowkey.like(like_row(a, a["peak_bytes"]), like_row(b, b["peak_bytes"]))
    if why is not None:
        raise NativePeakError(f"not divided: {why}")
    return b["peak_bytes"] / a["peak_bytes"]


def _commit_date(path: Path) -> str:
    """The ISO date of the commit a file's first row names, from the git repository around it; '' if unknown."""
    try:
        with path.open(encoding="utf-8") as f:
            commit = next(csv.DictReader(f), {}).get("commit", "")
        done = subprocess.run(["git", "show", "-s", "--format=%cI", commit], capture_output=True, text=True,
                              cwd=path.parent) if commit else None
    except OSError:
        return ""
    return done.stdout.strip() if done is not None and done.returncode == 0 else ""


def ordered(folder: Path) -> dict[str, list[Path]]:
    """Per machine, its results files in `folder` (<machine>-<commit8>.csv), oldest first: by their commit's date
    where git knows the commit, then as written."""
    found: dict[str, list[tuple[tuple[str, float], Path]]] = {}
    for path in sorted(folder.glob("*.csv")):
        found.setdefault(path.stem.rsplit("-", 1)[0], []).append(((_commit_date(path), path.stat().st_mtime), path))
    return {machine: [path for _, path in sorted(files)] for machine, files in sorted(found.items())}


def case_of(line: dict) -> tuple:
    """What one case of a summary line is, the framework apart: every framework of a case comes from one file."""
    return RowKey.of(like_row(line, 0)).without("framework"), line["machine"]


def current(folder: Path) -> dict[str, list[dict]]:
    """Per machine, the summary lines to show: each case from the newest file that holds it, all its frameworks
    from that one file (so a ratio never divides two commits), each line naming its `file`. A newer file that
    measured a few cases hides only those: the older file's other cases stay."""
    out = {}
    for machine, paths in ordered(folder).items():
        chosen: dict[tuple, list[dict]] = {}
        for path in paths:  # oldest first: a newer file's case replaces the older one's whole
            held: dict[tuple, list[dict]] = {}
            for line in summary(read(path)):
                held.setdefault(case_of(line), []).append({**line, "file": path.name})
            chosen.update(held)
        out[machine] = [line for lines in chosen.values() for line in lines]
    return out


def curves(folder: Path) -> dict[str, list[list[dict]]]:
    """Per machine, its remat curves: per workload and size of the `curve` selection, every point from the newest
    file that ran that curve (one commit a curve), each line naming its `file`."""
    out = {}
    for machine, paths in ordered(folder).items():
        chosen: dict[tuple[str, str], list[dict]] = {}
        for path in paths:
            held: dict[tuple[str, str], list[dict]] = {}
            for line in summary(read(path)):
                if "curve" in line["selections"]:
                    held.setdefault((line["workload"], line["size"]), []).append({**line, "file": path.name})
            chosen.update(held)
        if chosen:
            out[machine] = list(chosen.values())
    return out
