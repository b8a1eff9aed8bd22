"""One benchmark's entry of an asv result file (format 2), per parameter combination, as the merge (results.merge)
reads and writes it: the entry's grid, and for each combination, named by its parameter values (asv's reprs, in the
grid's order: asv_files.Combination.values), every per-combination column's item (its value, samples, statistics);
the per-benchmark columns (version, started_at, duration, profile) beside. Columns are read by name, as asv's
Results.load reads them, and written in the form Results.save writes (an all-None per-combination list as None,
trailing Nones dropped), so asv reads back what the merge writes (tests/results/test_entries.py)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

Values = tuple[str, ...]  # one combination: its parameter values as asv's reprs, in the grid's order


def per_combination(column: str) -> bool:
    """Whether asv's column holds one item per parameter combination (the others hold one item per benchmark)."""
    return column in ("result", "samples") or column.startswith("stats_")


def combinations(grid: list[list[str]]) -> list[Values]:
    """Every combination of `grid` in asv's order (itertools.product; one, of no value, without parameters)."""
    return list(itertools.product(*grid)) if grid else [()]


@dataclass(frozen=True)
class Entry:
    grid: list[list[str]]
    items: dict[Values, dict[str, Any]]  # every combination of the grid, in its order: column -> item
    fields: dict[str, Any]  # the per-benchmark columns but the grid ("params")

    @property
    def version(self) -> Any:
        return self.fields.get("version")

    def combinations(self) -> list[Values]:
        return list(self.items)

    def value(self, values: Values) -> Any:
        """The value asv wrote for combination `values` (None: failed, NaN: asv's n/a)."""
        return self.items[values].get("result")

    def index(self, values: Values) -> int:
        """The position of combination `values` in the grid (what the runner's "chosen" and failure ids count)."""
        return self.combinations().index(values)

    def row(self, columns: list[str]) -> list:
        """The entry as asv writes its row under `columns`."""
        combos = self.combinations()
        out = []
        for column in columns:
            if column == "params":
                out.append(self.grid)
            elif per_combination(column):
                items = [self.items[c].get(column) for c in combos]
                out.append(None if all(x is None for x in items) else items)
            else:
                out.append(self.fields.get(column))
        while out and out[-1] is None:
            out.pop()
        return out


NOT_RUN: dict[str, Any] = {"result": math.nan}  # a combination of a grid that no run of it wrote


def read(row: list, columns: list[str]) -> Entry:
    """The entry asv wrote as `row` under `columns` (a missing column, or a per-combination one written as None,
    holds None for every combination: a None result is a failure, as asv reads it)."""
    by_column = dict(itertools.zip_longest(columns, row[:len(columns)]))
    grid = [list(p) for p in by_column.get("params") or []]
    combos = combinations(grid)
    items: dict[Values, dict[str, Any]] = {c: {} for c in combos}
    for column, value in by_column.items():
        if per_combination(column):
            values = value if isinstance(value, list) else [None] * len(combos)
            for combo, item in zip(combos, values):
                items[combo][column] = item
    for combo in combos:
        items[combo].setdefault("result", None)
    fields = {c: v for c, v in by_column.items() if c != "params" and not per_combination(c)}
    return Entry(grid, items, fields)


def read_all(data: dict) -> dict[str, Entry]:
    """Every benchmark's entry of the result file's JSON `data`."""
    columns = list(data.get("result_columns") or [])
    return {name: read(row, columns) for name, row in (data.get("results") or {}).items()}


def joined_grid(first: list[list[str]], then: list[list[str]]) -> list[list[str]] | None:
    """`first`'s grid with the values of `then` it lacks added to each parameter (after its own, in `then`'s
    order), so every combination of either is one of it; None where they have other numbers of parameters."""
    if len(first) != len(then):
        return None
    return [[*a, *(v for v in b if v not in a)] for a, b in zip(first, then)]


def laid_over(new: Entry, old: Entry, take_old: Any) -> tuple[Entry, list[Values]]:
    """`new` with `old`'s item of each combination where `take_old(values, new item, old item)` says so, on the
    grid of both (joined_grid: a combination only `old` has keeps its item, one neither has is not run), `new`'s
    per-benchmark columns; and the combinations whose item is `old`'s. Pairs combinations by their values, never by
    position: a value added to or dropped from a parameter between the runs moves every position after it."""
    grid = joined_grid(new.grid, old.grid)
    if grid is None:
        raise ValueError("entries of other numbers of parameters have no combination in common")
    items, from_old = {}, []
    for combo in combinations(grid):
        now, before = new.items.get(combo), old.items.get(combo)
        if before is not None and (now is None or take_old(combo, now, before)):
            items[combo] = before
            from_old.append(combo)
        else:
            items[combo] = NOT_RUN if now is None else now
    return Entry(grid, items, new.fields), from_old
