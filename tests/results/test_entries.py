"""The merge's reading and writing of an asv result file's entries (results.entries): every combination's value,
statistics and samples by its parameter values are what asv's own Results.load gives for them, and an entry written
again is the row asv wrote, on every committed result file."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from tape_vs_trace.results import asv_files, entries
from tape_vs_trace.results.folder import ResultsFolder, read_json

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(ResultsFolder(ROOT / "results").result_files())


def _same(a: object, b: object) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("path", FILES[::4], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_combination_reads_as_asv_reads_it(path: Path) -> None:
    data, asv = read_json(path), asv_files.read(path).results
    for name, entry in entries.read_all(data).items():
        assert entry.grid == asv.get_result_params(name) or (not entry.grid and not asv.get_result_params(name))
        values = asv.get_result_value(name, entry.grid)
        stats = asv.get_result_stats(name, entry.grid)
        samples = asv.get_result_samples(name, entry.grid)
        for combo, value, stat, kept in zip(entry.combinations(), values, stats, samples, strict=True):
            item = entry.items[combo]
            assert _same(item["result"], value), (name, combo)
            assert item.get("samples") == kept, (name, combo)
            assert {k[6:]: v for k, v in item.items() if k.startswith("stats_") and v is not None} == (stat or {})


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_entry_written_again_is_the_row_asv_wrote(path: Path) -> None:
    data = read_json(path)
    columns = data["result_columns"]
    for name, row in data["results"].items():
        again = entries.read(row, columns).row(columns)
        assert len(again) == len(row) and all(_same(a, b) or a == b for a, b in zip(again, row)), name


def test_a_combination_of_a_joined_grid_that_no_run_wrote_is_not_run() -> None:
    old = entries.read([[1.0], [["'torch'"], ["'s'"]], "2"], ["result", "params", "version"])
    new = entries.read([[2.0], [["'jax'"], ["'m'"]], "2"], ["result", "params", "version"])
    merged, from_old = entries.laid_over(new, old, lambda combo, n, o: False)
    assert merged.grid == [["'jax'", "'torch'"], ["'m'", "'s'"]]
    assert merged.combinations() == list(itertools.product(*merged.grid))
    assert [merged.value(c) for c in merged.combinations()][::3] == [2.0, 1.0] and from_old == [("'torch'", "'s'")]
    assert all(math.isnan(merged.value(c)) for c in (("'jax'", "'s'"), ("'torch'", "'m'")))
    assert entries.joined_grid([["'a'"]], [["'a'"], ["'b'"]]) is None
