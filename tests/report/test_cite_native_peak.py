"""tape_vs_trace.report.cite_native_peak: a citable block names the method with every peak, divides only like modes, and
narrows to one case or names what is left to choose."""

from __future__ import annotations

import pytest

from tape_vs_trace import cli
from tests.results.test_native_peak_rows import METHOD, write_results


@pytest.fixture()
def results(tmp_path):
    return write_results(tmp_path)


def test_cite_names_the_method_and_the_like_ratio(results, capsys) -> None:
    assert cli.main(["cite", "native-peak", "mode=eager", "--results", str(results)]) == 0
    text = capsys.readouterr().out
    assert METHOD in text and "JAX / PyTorch: 1.500" in text and "2.000 MiB" in text


def test_cite_asks_to_choose_between_cases(results, capsys) -> None:
    assert cli.main(["cite", "native-peak", "--results", str(results)]) != 0
    err = capsys.readouterr().err
    assert "mode takes compiled, eager" in err and len(err.strip().splitlines()) == 1


def test_cite_refuses_an_unknown_key(results, capsys) -> None:
    assert cli.main(["cite", "native-peak", "shape=1", "--results", str(results)]) != 0
    assert "no column 'shape'; keys: workload" in capsys.readouterr().err


def test_cite_takes_a_case_from_the_newest_file_that_holds_it(tmp_path, capsys) -> None:
    import os

    from tape_vs_trace.results import native_peak_rows
    from tests.results.test_native_peak_rows import _row

    old = write_results(tmp_path) / "native-peak" / "m-cccccccc.csv"
    new = native_peak_rows.write(old.parent / "m-dddddddd.csv",
                                 [_row(fw, 1 << 20, mode="compiled", commit="d" * 40) for fw in ("torch", "jax")])
    os.utime(old, (2e9, 2e9))
    os.utime(new, (2e9 + 1, 2e9 + 1))
    assert cli.main(["cite", "native-peak", "mode=eager", "--results", str(tmp_path)]) == 0
    eager = capsys.readouterr().out
    assert "commit cccccccc, m-cccccccc.csv" in eager and "JAX / PyTorch: 1.500" in eager
    assert cli.main(["cite", "native-peak", "mode=compiled", "workload=mlp", "--results", str(tmp_path)]) == 0
    assert "commit dddddddd, m-dddddddd.csv" in capsys.readouterr().out
