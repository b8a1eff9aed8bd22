"""The README's report block markers (tape_vs_trace.report.readme.split and update) on small files: found by mutation
testing (`make mutate`), where the end-to-end tests covered one well-formed README and one without markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tape_vs_trace.report import readme
from tape_vs_trace.report.load import ReportError

START, END = "<!-- report:start -->", "<!-- report:end -->"


def test_update_replaces_only_the_block(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_text(f"head\n{START}\nold\n{END}\ntail {END[:4]}\n", encoding="utf-8")
    assert readme.split(path) == ("head\n", "\ntail <!--\n")
    readme.update(path, f"{START}\nnew µs\n{END}")
    assert path.read_text(encoding="utf-8") == f"head\n{START}\nnew µs\n{END}\ntail <!--\n"


@pytest.mark.parametrize("text", [f"{START}\n{START}\n{END}\n", f"{START}\n{END}\n{END}\n", f"{START}\n", f"{END}\n",
                                  "no markers\n"])
def test_anything_but_one_block_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "README.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ReportError, match=f"^{path} needs one '{START}' and one '{END}' line to put the results in$"):
        readme.split(path)
    with pytest.raises(ReportError):
        readme.update(path, "x")
    assert path.read_text(encoding="utf-8") == text


def test_an_unreadable_readme_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.md"
    with pytest.raises(ReportError, match=f"^cannot read {missing}: No such file or directory$"):
        readme.split(missing)
