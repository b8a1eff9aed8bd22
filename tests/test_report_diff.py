"""scripts/report_diff.py: what the before/after check of a regenerated report calls a difference."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("report_diff", ROOT / "scripts" / "report_diff.py")
rd = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(rd)

HEADER = "pillar,workload,metric,benchmark,commit,machine,value,spread\n"


def _folder(root: Path, csv_text: str, page: str, block: str) -> Path:
    (root / "report" / "m").mkdir(parents=True)
    (root / "report" / "summary.csv").write_text(HEADER + csv_text)
    (root / "report" / "m" / "page.md").write_text(page)
    (root / "README.md").write_text(f"intro\n{rd.START}\n{block}\n{rd.END}\nrest\n")
    return root


def test_identical_folders_have_no_difference(tmp_path: Path) -> None:
    rows = "remat,mlp,time_step,b.t,abc,m1,0.5,0.1\n"
    a = _folder(tmp_path / "a", rows, "# page\n", "table")
    b = _folder(tmp_path / "b", rows, "# page\n", "table")
    assert rd.compare(a, b) == []


def test_a_changed_value_names_its_row_and_field(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", "remat,mlp,time_step,b.t,abc,m1,0.5,0.1\nremat,lstm,time_step,b.t,abc,m1,1,0\n",
                "# page\n", "table")
    b = _folder(tmp_path / "b", "remat,mlp,time_step,b.t,abc,m1,0.6,0.1\n", "# page\n", "table")
    lines = rd.compare(a, b)
    assert "summary.csv: 2 row(s) differ" in lines
    assert "- only before: pillar=remat workload=lstm metric=time_step benchmark=b.t commit=abc machine=m1" in lines
    assert ("~ pillar=remat workload=mlp metric=time_step benchmark=b.t commit=abc machine=m1: value: '0.5' -> '0.6'"
            in lines)


def test_pages_and_the_readme_block_are_diffed_but_not_the_readme_around_it(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", "", "# page\nold\n", "table")
    b = _folder(tmp_path / "b", "", "# page\nnew\n", "table")
    (b / "README.md").write_text((b / "README.md").read_text().replace("intro", "another intro"))
    lines = rd.compare(a, b)
    assert "-old" in lines and "+new" in lines
    assert not any("README" in line for line in lines)
    (b / "README.md").write_text((b / "README.md").read_text().replace("table", "other table"))
    assert "+other table" in rd.compare(a, b)
