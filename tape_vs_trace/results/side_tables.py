"""The side measurements' tables beside the asv results (results/<name>/<machine>-<commit8>.csv, some gzipped), each
declared by one spec: its columns, the columns that name a row, those that hold values and those that name the method.
One reader lists a table's files and checks what every such file must hold; one rule picks each machine's file."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tape_vs_trace.results import rowkey, schema
from tape_vs_trace.results.rowkey import RowKey

NAME = re.compile(r"(.+)-([0-9a-f]{8})")  # <machine>-<commit8>


@dataclass(frozen=True)
class SideTable:
    name: str  # its folder under results/, as the command that writes it names it
    what: str  # how a warning names one of its files
    fields: tuple[str, ...]  # every column a file of today has
    key: tuple[str, ...]  # the columns that name a row
    values: tuple[str, ...]  # the measured columns
    method: tuple[str, ...]  # the columns that say how a value was measured
    like: tuple[str, ...]  # the columns two rows must share, but for the axes a ratio lets differ
    method_of: tuple[tuple[str, str], ...] = ()  # (value, the method column a ratio of it checks)

    def folder(self, results: Path) -> Path:
        return Path(results) / self.name


SPECS = {spec.name: spec for spec in (
    SideTable("paired", "paired results", schema.PAIRED_FIELDS,
              ("experiment", "framework", "workload", "size", "mode", "formulation", "attention", "point"),
              ("time_s", "ratio", "saved_bytes", "flops", "peak_bytes"), ("cost_method", "peak_method"),
              # the formulation is checked first, for its own reason (scan against unrolled)
              ("framework", "workload", "size", "mode", "point", "device"),
              (("saved_bytes", "cost_method"), ("flops", "cost_method"), ("peak_bytes", "peak_method"))),
    SideTable("distributed", "distributed results", schema.DISTRIBUTED_FIELDS, schema.DISTRIBUTED_KEY,
              ("time_s", "compile_s", "peak_bytes", "comm_bytes"), ("peak_method", "collectives_method"),
              (*schema.DISTRIBUTED_KEY, "device"), (("peak_bytes", "peak_method"),)),
    SideTable("saved", "saved-bytes breakdown", schema.SAVED_FIELDS,
              ("workload", "size", "variant", "dtype", "program", "framework", "op"), ("nbytes",), (),
              ("workload", "size", "variant", "dtype", "program", "framework", "op")),
)}


def read_csv(path: Path, fields: tuple[str, ...]) -> pd.DataFrame:
    """A side table's file, as strings, checked for what every such file must have: its columns, at least one row,
    one commit. ValueError with the reason otherwise."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in fields if c not in table.columns]
    if missing:
        raise ValueError(f"no column {', '.join(missing)}")
    if table.empty:
        raise ValueError("no rows")
    if table.commit.nunique() != 1:
        raise ValueError("rows of several commits")
    return table


def files(folder: Path, what: str, read: Callable[[Path], pd.DataFrame],
          warn: Callable[[str], None]) -> Iterator[tuple[str, Path, pd.DataFrame]]:
    """(machine, path, table) of every readable <machine>-<commit8>.csv (or .csv.gz) in `folder`, in name order; a
    file named otherwise or unreadable by `read` is skipped with a one-line warning that names `what` it holds."""
    for path in sorted([*Path(folder).glob("*.csv"), *Path(folder).glob("*.csv.gz")]):
        name = NAME.fullmatch(path.name.removesuffix(".gz").removesuffix(".csv"))
        if name is None:
            warn(f"skipped the {what} {path}: not named <machine>-<commit8>.csv")
            continue
        try:
            data = read(path)
        except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            warn(f"skipped the {what} {path}: {exc}")
            continue
        yield name.group(1), path, data


def newest(found: Iterable[tuple[str, Path, pd.DataFrame]], shown: dict[str, str] | None = None,
           dates: dict[str, str] | None = None) -> dict[str, tuple[Path, pd.DataFrame]]:
    """Per machine, the (path, table) the report reads: the file of the commit the report shows for that machine
    (`shown`) if there is one, else the one of the newest commit date (the file's commit_date, else `dates` of its
    commit), else the one written last."""
    shown, dates = shown or {}, dates or {}
    best: dict[str, tuple[tuple, Path, pd.DataFrame]] = {}
    for machine, path, data in found:
        commit = data.commit.iloc[0]
        date = str(data.commit_date.iloc[0]) if "commit_date" in data.columns else dates.get(commit, "")
        key = (commit == shown.get(machine), date, path.stat().st_mtime)
        if machine not in best or key > best[machine][0]:
            best[machine] = (key, path, data)
    return {machine: (path, data) for machine, (_, path, data) in best.items()}


def differing(spec: SideTable, a: Mapping, b: Mapping) -> set[str]:
    """The columns of `spec.like` in which two rows differ, and "place" where they ran on other machines or commits."""
    keys = [RowKey.of_columns(r, spec.like, spec.name) for r in (a, b)]
    return keys[0].differing(keys[1]) | (set() if rowkey.same_place(a, b) else {"place"})


def unlike(spec: SideTable, a: Mapping, b: Mapping, metric: str, lets_differ: frozenset[str] = frozenset({"framework"})
           ) -> str | None:
    """THE rule for a ratio of two rows of a side table: None when they differ in `lets_differ` alone (the framework
    for a ratio across frameworks) and `metric`'s method column agrees (rowkey.unlike_methods), else why not."""
    if differing(spec, a, b) != set(lets_differ):
        return rowkey.NOT_LIKE
    column = dict(spec.method_of).get(metric)
    return rowkey.unlike_methods(a[column], b[column], metric) if column else None
