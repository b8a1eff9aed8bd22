"""The side tables' one reader and one newest-file rule (tape_vs_trace.results.side_tables): what every file must
hold, which files are listed, and which file of a machine the report reads."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from tape_vs_trace.results import schema, side_tables


def side(tmp_path: Path, text: str, name: str = "side.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_side_csv_values_stay_text(tmp_path: Path) -> None:
    table = side_tables.read_csv(side(tmp_path, "a,b,commit\n1,NA,c1\n2.50,,c1\n"), ("a", "commit"))
    assert list(table.columns) == ["a", "b", "commit"]
    assert list(table.a) == ["1", "2.50"]  # not parsed as numbers: each reader converts its own columns
    assert list(table.b) == ["NA", ""]  # neither "NA" nor a blank becomes NaN


@pytest.mark.parametrize(("text", "error"), [
    ("a\n1\n", "no column b, commit"),
    ("a,b,commit\n", "no rows"),
    ("a,b,commit\n1,2,c1\n1,2,c2\n", "rows of several commits"),
])
def test_side_csv_refusals_name_the_reason(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ValueError) as exc:
        side_tables.read_csv(side(tmp_path, text), ("a", "b", "commit"))
    assert str(exc.value) == error


def _read(path: Path):
    return side_tables.read_csv(path, ("commit",))


def test_files_lists_plain_and_gzipped_files_and_warns_of_a_misnamed_or_unreadable_one(tmp_path: Path) -> None:
    side(tmp_path, "commit\naaaaaaaa\n", "cpu-x-aaaaaaaa.csv")
    (tmp_path / "cpu-y-bbbbbbbb.csv.gz").write_bytes(gzip.compress(b"commit\nbbbbbbbb\n"))
    side(tmp_path, "commit\nc\n", "notes.csv")
    side(tmp_path, "other\n1\n", "cpu-z-cccccccc.csv")
    warnings: list[str] = []
    found = list(side_tables.files(tmp_path, "paired results", _read, warnings.append))
    assert [(m, p.name) for m, p, _ in found] == [("cpu-x", "cpu-x-aaaaaaaa.csv"), ("cpu-y", "cpu-y-bbbbbbbb.csv.gz")]
    assert len(warnings) == 2 and all(w.startswith("skipped the paired results ") for w in warnings)
    assert "not named <machine>-<commit8>.csv" in warnings[1] and "no column commit" in warnings[0]


def _found(tmp_path: Path, rows: list[tuple[str, str, str, int]]):
    """(machine, path, table) of files (name, commit, commit_date or '', mtime) as files() gives them."""
    out = []
    for name, commit, date, mtime in rows:
        text = f"commit,commit_date\n{commit},{date}\n" if date else f"commit\n{commit}\n"
        path = side(tmp_path, text, name)
        os.utime(path, (mtime, mtime))
        out.append((name.rsplit("-", 1)[0], path, _read(path)))
    return out


def test_newest_prefers_the_shown_commit_then_the_newest_date_then_the_last_written(tmp_path: Path) -> None:
    found = _found(tmp_path, [("m-aaaaaaaa.csv", "aaaaaaaa", "", 300), ("m-bbbbbbbb.csv", "bbbbbbbb", "", 100)])
    assert side_tables.newest(found)["m"][0].name == "m-aaaaaaaa.csv"  # nothing else known: written last
    dates = {"aaaaaaaa": "2026-01-01", "bbbbbbbb": "2026-02-01"}
    assert side_tables.newest(found, dates=dates)["m"][0].name == "m-bbbbbbbb.csv"  # the newer commit
    assert side_tables.newest(found, {"m": "aaaaaaaa"}, dates)["m"][0].name == "m-aaaaaaaa.csv"  # the shown one


def test_newest_reads_a_files_own_commit_date_where_it_has_one(tmp_path: Path) -> None:
    found = _found(tmp_path, [("m-aaaaaaaa.csv", "aaaaaaaa", "2026-03-01", 100),
                              ("m-bbbbbbbb.csv", "bbbbbbbb", "2026-02-01", 300)])
    assert side_tables.newest(found)["m"][0].name == "m-aaaaaaaa.csv"


def test_every_spec_names_columns_its_file_has() -> None:
    for spec in side_tables.SPECS.values():
        assert set(spec.key) | set(spec.values) | set(spec.method) <= set(spec.fields), spec.name
    assert side_tables.SPECS["distributed"].key == schema.DISTRIBUTED_KEY


def test_newest_rows_takes_each_group_from_the_newest_file_that_holds_it(tmp_path: Path) -> None:
    spec = side_tables.SideTable("toy", "toy results", ("case", "framework", "value", "commit"), ("case", "framework"),
                                 ("value",), (), ("case", "framework"), newest_by=("case",))
    old = side(tmp_path, "case,framework,value,commit\na,x,1,aaaaaaaa\na,y,2,aaaaaaaa\nb,x,3,aaaaaaaa\n",
               "m-aaaaaaaa.csv")
    new = side(tmp_path, "case,framework,value,commit\na,x,9,bbbbbbbb\n", "m-bbbbbbbb.csv")
    for mtime, path in enumerate((old, new)):
        os.utime(path, (2e9 + mtime, 2e9 + mtime))
    found = list(side_tables.files(tmp_path, spec.what, lambda p: side_tables.read_csv(p, spec.fields), print))
    [(machine, table)] = side_tables.newest_rows(spec, found).items()
    # case a whole from the newer file (its y side is not borrowed from the older), case b from the older
    assert machine == "m" and list(zip(table.case, table.framework, table.value, table.file)) == [
        ("a", "x", "9", "m-bbbbbbbb.csv"), ("b", "x", "3", "m-aaaaaaaa.csv")]
    whole = side_tables.newest_rows(spec, found, by=())["m"]  # no groups: the newest file whole
    assert list(whole.value) == ["9"] and side_tables.newest(found)["m"][0] == new


def test_a_spec_dates_its_files_by_the_column_it_names(tmp_path: Path) -> None:
    first = side(tmp_path, "written,commit\n2026-02-01,aaaaaaaa\n", "m-aaaaaaaa.csv")
    second = side(tmp_path, "written,commit\n2026-01-01,bbbbbbbb\n", "m-bbbbbbbb.csv")
    os.utime(first, (1e9, 1e9))
    found = list(side_tables.files(tmp_path, "x", lambda p: side_tables.read_csv(p, ("commit",)), print))
    assert side_tables.newest(found)["m"][0] == second  # no date known: written last
    assert side_tables.newest(found, dated="written")["m"][0] == first
    assert side_tables.SPECS["first_step"].dated == "written" and side_tables.SPECS["native-peak"].dated == "git"
    assert side_tables.SPECS["native-peak"].newest_by == schema.NATIVE_PEAK_PARAMS
