"""scripts/report_diff.py: what the before/after check of a regenerated report calls a difference."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tape_vs_trace.results.rowkey import RowKey

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("report_diff", ROOT / "scripts" / "report_diff.py")
rd = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(rd)

HEADER = "pillar,workload,framework,metric,params,benchmark,commit,machine,value,spread\n"


def row(workload: str, value: str, spread: str) -> str:
    """A line of summary.csv: its parameters (JSON, quoted for CSV) name the workload, as report.rows writes them."""
    return f'remat,{workload},torch,time_step,"{{""framework"":""torch"",""workload"":""{workload}""}}",b.t,abc,m1,' \
        f"{value},{spread}\n"


def _folder(root: Path, csv_text: str, page: str, block: str) -> Path:
    (root / "report" / "m").mkdir(parents=True)
    (root / "report" / "summary.csv").write_text(HEADER + csv_text)
    (root / "report" / "m" / "page.md").write_text(page)
    (root / "README.md").write_text(f"intro\n{rd.START}\n{block}\n{rd.END}\nrest\n")
    return root


def test_identical_folders_have_no_difference(tmp_path: Path) -> None:
    rows = row("mlp", "0.5", "0.1")
    a = _folder(tmp_path / "a", rows, "# page\n", "table")
    b = _folder(tmp_path / "b", rows, "# page\n", "table")
    assert rd.compare(a, b) == []


def test_a_changed_value_names_its_row_and_field(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", row("mlp", "0.5", "0.1") + row("lstm", "1", "0"), "# page\n", "table")
    b = _folder(tmp_path / "b", row("mlp", "0.6", "0.1"), "# page\n", "table")
    lines = rd.compare(a, b)
    assert "summary.csv: 2 row(s) differ" in lines
    assert "- only before: benchmark=b.t metric=time_step framework=torch workload=lstm commit=abc machine=m1" in lines
    assert ("~ benchmark=b.t metric=time_step framework=torch workload=mlp commit=abc machine=m1: value: '0.5' -> "
            "'0.6'" in lines)


def test_pages_and_the_readme_block_are_diffed_but_not_the_readme_around_it(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", "", "# page\nold\n", "table")
    b = _folder(tmp_path / "b", "", "# page\nnew\n", "table")
    (b / "README.md").write_text((b / "README.md").read_text().replace("intro", "another intro"))
    lines = rd.compare(a, b)
    assert "-old" in lines and "+new" in lines
    assert not any("README" in line for line in lines)
    (b / "README.md").write_text((b / "README.md").read_text().replace("table", "other table"))
    assert "+other table" in rd.compare(a, b)


def test_a_row_is_named_by_its_source_and_row_key() -> None:
    side = {"benchmark": "paired.paired", "metric": "time_step", "framework": "torch", "machine": "m1", "file": "f",
            "group": "paired", "params": '{"framework":"torch","workload":"mlp","point":"no_grad"}', "point": "no_grad"}
    k = rd.key(side | {"experiment": "e1"})
    assert isinstance(k[-1], RowKey) and k[-1].axis("experiment") == "e1" and k[-1].workload == "mlp"
    # one asv combination can be a point of two experiments: two rows; another column's value makes none
    assert k != rd.key(side | {"experiment": "e2"}) and k == rd.key(side | {"experiment": "e1", "value": "2"})
