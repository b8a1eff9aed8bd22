"""Fixtures of the report's tests: a copy of the real asv fixture to edit, and the report built once from the
synthetic results folder of helpers.write_results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.report.helpers import FIXTURE, unrendered, write_results
from tests.shared import once


@pytest.fixture
def results(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "results")
    return tmp_path / "results"


@pytest.fixture(scope="session")
def synthetic_report(shared_root: Path) -> tuple[pd.DataFrame, str, list[str]]:
    """summary.csv (read as text), summary.md followed by its machine pages, and the warnings of the report built
    from helpers.write_results; built once for all workers (tests/shared.py)."""
    from tape_vs_trace import report

    def build() -> tuple[pd.DataFrame, str, list[str]]:
        root = write_results(shared_root / "synthetic" / "results")
        out = root.parent / "report"
        warnings: list[str] = []
        with unrendered():  # its users read the text and the table
            report.write_report(root, out, warnings.append)
        table = pd.read_csv(out / "summary.csv", keep_default_na=False)
        # each machine's page and its page of every table: the front links them, the detail is there
        pages = sorted([*out.glob("*/summary.md"), *out.glob("*/tables.md")])
        return table, "\n".join(p.read_text() for p in [out / "summary.md", *pages]), warnings

    return once(shared_root, "synthetic-report", build)
