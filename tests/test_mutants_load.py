"""Reading the report's inputs (tape_vs_trace.report.load) on small hand-written files: found by mutation testing
(`make mutate`), where the side-CSV check (saved bytes, paired results) was reached only through whole reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tape_vs_trace.report import load


def side(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "side.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_side_csv_values_stay_text(tmp_path: Path) -> None:
    table = load.read_side_csv(side(tmp_path, "a,b,commit\n1,NA,c1\n2.50,,c1\n"), ("a", "commit"))
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
        load.read_side_csv(side(tmp_path, text), ("a", "b", "commit"))
    assert str(exc.value) == error
