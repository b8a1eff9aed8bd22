"""The docs' pillar and workload tables against the registries: the committed text is what they give, and a pillar
or a workload added to a registry makes the check name the blocks that no longer match."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from implementations import pillars, workloads
from tape_vs_trace.report import registry_docs
from tests import toy

ROOT = Path(__file__).resolve().parents[2]


def _copy(tmp_path: Path) -> Path:
    for file in {file for file, _ in registry_docs.BLOCKS}:
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / file, tmp_path / file)
    return tmp_path


def test_the_committed_docs_tables_are_what_the_registries_give() -> None:
    assert registry_docs.drift(ROOT) == [], "run: python -m tape_vs_trace.report.registry_docs"


def test_a_new_pillar_drifts_both_pillar_blocks_and_a_rewrite_names_it(tmp_path: Path, monkeypatch) -> None:
    root = _copy(tmp_path)
    monkeypatch.setattr(pillars, "PILLARS", dict(pillars.PILLARS))
    monkeypatch.setattr(pillars, "FAMILIES", pillars.FAMILIES)
    toy.register_pillar()
    assert registry_docs.drift(root) == ["README.md: pillars", "docs/metrics.md: pillars"]
    registry_docs.write(root)
    assert registry_docs.drift(root) == []
    assert "**a toy pillar**" in (root / "README.md").read_text()
    row = next(line for line in (root / "docs/metrics.md").read_text().splitlines() if "a toy pillar" in line)
    assert row == "| a toy pillar | the eager tape | op-by-op jax.value_and_grad | `benchmarks/toy_pillar.py` |"


def test_a_new_workload_drifts_both_workload_blocks(tmp_path: Path, monkeypatch) -> None:
    root = _copy(tmp_path)
    monkeypatch.setitem(workloads.WORKLOADS, toy.NAME, toy.spec(("GradStep", "saved")))
    assert registry_docs.drift(root) == ["README.md: workloads", "docs/metrics.md: workloads"]
    registry_docs.write(root)
    table = (root / "docs/metrics.md").read_text()
    assert f"| `{toy.NAME}` | tanh(x @ w) * x | graph recording vs tracing | saved |" in table


def test_a_file_without_its_block_is_one_line_and_exit_2(tmp_path: Path, monkeypatch, capsys) -> None:
    root = _copy(tmp_path)
    (root / "README.md").write_text("no markers here\n")
    with pytest.raises(ValueError, match="registry:pillars"):
        registry_docs.drift(root)
    monkeypatch.setattr(registry_docs, "ROOT", root)
    assert registry_docs.main(["--check"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
