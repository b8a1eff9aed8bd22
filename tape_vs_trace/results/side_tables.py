"""The side measurements' tables beside the asv results (results/<name>/<machine>-<commit8>.csv, some gzipped), each
declared by one spec: its columns, the columns that name a row, those that hold values and those that name the method,
and how its newest-file rule groups and dates its files. One reader lists a table's files and checks what every such
file must hold; one rule picks what each machine shows (`newest_rows`, of which `newest` is the whole-file case)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tape_vs_trace.results import rowkey, schema
from tape_vs_trace.results.rowkey import RowKey

NAME = re.compile(r"(.+)-([0-9a-f]{8})")  # <machine>-<commit8>
GIT = "git"  # a spec's `dated`: its files' date is their commit's, as git knows it (the file records none)


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
    newest_by: tuple[str, ...] = ()  # the newest-file rule's groups: each from the newest file holding it; () whole
    dated: str = "commit_date"  # the column that dates a file, else the caller's dates of its commit (or GIT)
    repeats: str = ""  # the column numbering a key's repeated measurements (its processes), "" for one row a key
    command: str = ""  # the tape-vs-trace command that writes it, where not its name
    optional: tuple[str, ...] = ()  # columns a file from before them lacks: read as empty

    def writer(self) -> str:
        return self.command or self.name

    def read(self, path: Path) -> pd.DataFrame:
        """One of its files as `read_csv` checks it, a column of `optional` it lacks empty."""
        table = read_csv(path, tuple(f for f in self.fields if f not in self.optional))
        return table.assign(**{c: "" for c in self.optional if c not in table.columns})

    def folder(self, results: Path) -> Path:
        return Path(results) / self.name


SPECS = {spec.name: spec for spec in (
    SideTable("paired", "paired results", schema.PAIRED_FIELDS,
              ("experiment", "framework", "workload", "size", "mode", "formulation", "attention", "point"),
              ("time_s", "ratio", "saved_bytes", "flops", "peak_bytes"), ("cost_method", "peak_method"),
              # the formulation is checked first, for its own reason (scan against unrolled)
              ("framework", "workload", "size", "mode", "point", "device"),
              (("saved_bytes", "cost_method"), ("flops", "cost_method"), ("peak_bytes", "peak_method")),
              optional=("attention",)),
    SideTable("distributed", "distributed results", schema.DISTRIBUTED_FIELDS, schema.DISTRIBUTED_KEY,
              ("time_s", "compile_s", "peak_bytes", "comm_bytes"), ("peak_method", "collectives_method"),
              (*schema.DISTRIBUTED_KEY, "device"), (("peak_bytes", "peak_method"),)),
    SideTable("saved", "saved-bytes breakdown", schema.SAVED_FIELDS,
              ("workload", "size", "variant", "dtype", "program", "framework", "op"), ("nbytes",), (),
              ("workload", "size", "variant", "dtype", "program", "framework", "op"), command="saved-all",
              optional=("program",)),
    # each case (its parameters, every framework) from the newest file that holds it: a newer file of a few cases
    # hides only those
    SideTable(schema.NATIVE_PEAK_FOLDER, "native-peak results", schema.NATIVE_PEAK_FIELDS,
              (*schema.NATIVE_PEAK_PARAMS, "framework"),
              ("peak_bytes", "workspace_bytes", "small_bytes", "step_s", "tracked_step_s"), ("method", "other_method"),
              (*schema.NATIVE_PEAK_PARAMS, "framework"), (("peak_bytes", "method"),),
              newest_by=schema.NATIVE_PEAK_PARAMS, dated=GIT, repeats="process"),
    SideTable(schema.FIRST_STEP_FOLDER, "time-to-first-step results", schema.FIRST_STEP_FIELDS,
              ("workload", "size", "framework", "mode", "cache"),
              ("wall_s", "interpreter_s", "import_s", "harness_s", "backend_start_s", "compiler_start_s", "compile_s",
               "first_execution_s", "steady_step_s"), (),
              ("workload", "size", "framework", "mode", "cache", "device"), dated="written", repeats="process",
              command="first-step"),
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


def git_date(commit: str, folder: Path) -> str:
    """The ISO date of `commit` from the git repository around `folder`; '' where git does not know it."""
    try:
        done = subprocess.run(["git", "show", "-s", "--format=%cI", commit], capture_output=True, text=True,
                              cwd=folder)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def ordered(found: Iterable[tuple[str, Path, pd.DataFrame]], shown: dict[str, str] | None = None,
            dates: dict[str, str] | None = None, dated: str = "commit_date"
            ) -> dict[str, list[tuple[Path, pd.DataFrame]]]:
    """Per machine, its (path, table)s oldest first, as THE newest-file rule orders them: the file of the commit the
    report shows for that machine (`shown`) last, else by date (the file's `dated` column, else `dates` of its commit,
    else for GIT git's date of it), else as written; of files alike in all three, the first named counts newest."""
    shown, dates = shown or {}, dates or {}
    keyed: dict[str, list[tuple[tuple, Path, pd.DataFrame]]] = {}
    for index, (machine, path, data) in enumerate(found):
        commit = data.commit.iloc[0]
        if dated in data.columns:
            date = str(data[dated].iloc[0])
        else:
            date = dates.get(commit) or (git_date(commit, path.parent) if dated == GIT else "")
        key = (commit == shown.get(machine), date, path.stat().st_mtime, -index)
        keyed.setdefault(machine, []).append((key, path, data))
    return {machine: [(path, data) for _, path, data in sorted(items, key=lambda item: item[0])]
            for machine, items in sorted(keyed.items())}


def newest(found: Iterable[tuple[str, Path, pd.DataFrame]], shown: dict[str, str] | None = None,
           dates: dict[str, str] | None = None, dated: str = "commit_date") -> dict[str, tuple[Path, pd.DataFrame]]:
    """Per machine, the (path, table) of its newest file (`ordered`): the rule of a spec whose `newest_by` is ()."""
    return {machine: files[-1] for machine, files in ordered(found, shown, dates, dated).items()}


def newest_rows(spec: SideTable, found: Iterable[tuple[str, Path, pd.DataFrame]], shown: dict[str, str] | None = None,
                dates: dict[str, str] | None = None, by: tuple[str, ...] | None = None) -> dict[str, pd.DataFrame]:
    """Per machine, the rows to show, each naming its `file` (and `machine`): per group of the `by` columns
    (spec.newest_by unless given), every row of the group from the newest file that holds it (`ordered`), so the
    group never mixes two commits; with no columns, the newest file whole. Groups keep the order they first came in."""
    by = spec.newest_by if by is None else by
    out = {}
    for machine, paths in ordered(found, shown, dates, spec.dated).items():
        chosen: dict[object, pd.DataFrame] = {}
        for path, data in paths:  # oldest first: a newer file's group replaces the older one's whole
            data = data.assign(file=path.name, machine=machine)
            chosen.update(iter(data.groupby(list(by), sort=False, dropna=False)) if by else [((), data)])
        out[machine] = pd.concat(chosen.values(), ignore_index=True)
    return out


def load(spec: SideTable, results: Path, warn: Callable[[str], None],
         read: Callable[[Path], pd.DataFrame] | None = None) -> list[tuple[str, Path, pd.DataFrame]]:
    """Every readable file of `spec`'s table in `results` (`files`), read by `read` (the checked strings of
    spec.read unless given); [] without its folder."""
    folder = spec.folder(results)
    if not folder.is_dir():
        return []
    return list(files(folder, spec.what, read or spec.read, warn))


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
