"""Building the report (tape_vs_trace.report.build): where it may write."""

from __future__ import annotations

import pytest


def test_an_out_folder_holding_the_results_is_refused(tmp_path) -> None:
    from tape_vs_trace.report import build

    (tmp_path / "results").mkdir()
    with pytest.raises(build.ReportError, match="contains the results folder"):
        build.check_out(tmp_path / "results", tmp_path)
