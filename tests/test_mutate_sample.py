"""scripts/mutate_sample.py: which mutants the sampled mutation score takes, and how it counts them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("mutate_sample", ROOT / "scripts" / "mutate_sample.py")
ms = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(ms)


def names(prefix: str, count: int) -> dict[str, int | None]:
    return {f"{prefix}__mutmut_{i}": None for i in range(1, count + 1)}


def test_every_nth_mutant_of_each_file_in_mutmut_order() -> None:
    by_file = {"a.py": names("a.x_f", 12), "b.py": names("b.x_g", 3) | names("b.x_h", 2)}
    # a: mutmut_1..12 in numeric order (10 after 9, not after 1); from offset 2: 3, 7, 11. b: g1 g2 g3 h1 h2 -> g3
    assert ms.sample(by_file, 4) == ["a.x_f__mutmut_3", "a.x_f__mutmut_7", "a.x_f__mutmut_11", "b.x_g__mutmut_3"]
    assert ms.sample(by_file, 1) == [*by_file["a.py"], *by_file["b.py"]]
    with pytest.raises(ms.SampleError, match="--every must be 1 or more"):
        ms.sample(by_file, 0)


def test_the_score_counts_only_the_sample_and_lists_its_survivors() -> None:
    codes = {"a.x_f__mutmut_1": 1, "a.x_f__mutmut_2": 0, "a.x_f__mutmut_3": 33, "a.x_f__mutmut_4": -24,
             "a.x_f__mutmut_5": 0}
    table = ms.score({"a.py": codes, "b.py": {"b.x_g__mutmut_1": 1}},
                     ["a.x_f__mutmut_1", "a.x_f__mutmut_2", "a.x_f__mutmut_3", "a.x_f__mutmut_4", "b.x_g__mutmut_1"])
    assert table[2] == "| a.py | 4 | 1 | 1 | 1 | 1 | 0 | 0 | 1 of 3 (33.3 %) |"
    assert table[3] == "| b.py | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 1 of 1 (100.0 %) |"
    assert table[4] == "| **all** | 5 | 2 | 1 | 1 | 1 | 0 | 0 | 2 of 4 (50.0 %) |"
    # mutmut_5 survived but is not in the sample
    assert table[-3:] == ["Survivors and timeouts (2):", "- `a.x_f__mutmut_2`", "- `a.x_f__mutmut_4`"]


def test_unreadable_results_are_one_error(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(ms, "MUTANTS", tmp_path)
    assert ms.main(["--score"]) == 2
    assert capsys.readouterr().err.startswith("error: no mutants of '*' under")
    (tmp_path / "a.py.meta").write_text("{not json")
    assert ms.main(["--score"]) == 2
    assert "cannot read mutmut's results" in capsys.readouterr().err
    (tmp_path / "a.py.meta").write_text(json.dumps({"exit_code_by_key": {"a.x_f__mutmut_1": 1}}))
    assert ms.main(["--score", "--every", "1"]) == 0
    assert "| **all** | 1 | 1 |" in capsys.readouterr().out
    assert ms.main(["--score", "--every", "1", "--files", "b*"]) == 2
    assert "no mutants of 'b*'" in capsys.readouterr().err


def test_mutants_without_a_selected_test_run_against_the_tests_outside_it(tmp_path: Path, monkeypatch,
                                                                          capsys) -> None:
    monkeypatch.setattr(ms, "MUTANTS", tmp_path)
    codes = {"a.x_f__mutmut_1": 1, "a.x_f__mutmut_2": 33, "a.x_f__mutmut_3": 33, "a.x_f__mutmut_4": 0,
             "a.x_f__mutmut_5": 33}
    (tmp_path / "a.py.meta").write_text(json.dumps({"exit_code_by_key": codes}))
    (tmp_path / "sample.txt").write_text("a.x_f__mutmut_1\na.x_f__mutmut_2\na.x_f__mutmut_3\na.x_f__mutmut_4\n")
    runs = []

    def fake_run(mutant: str):
        runs.append(mutant)
        if mutant == "a.x_f__mutmut_3":
            return ms.subprocess.CompletedProcess([], 1, "F\nFAILED tests/t.py::test_x - assert 1 == 2\n1 failed", "")
        return ms.subprocess.CompletedProcess([], 0, "", "")

    monkeypatch.setattr(ms, "_outside_run", fake_run)
    assert ms.main(["--score", "--outside"]) == 0
    # The run with none switched on first; mutmut_5 has no test but is not in the sample.
    assert runs == ["none", "a.x_f__mutmut_2", "a.x_f__mutmut_3"]
    out = capsys.readouterr().out
    assert "| **all** | 4 | 1 | 1 | 0 | 2 | 0 | 0 | 1 of 2 (50.0 %) |" in out
    assert "(OUTSIDE_TESTS): 1 of 2 killed; with them, 2 of 4 (50.0 %) of the sample killed.\n" \
           "- `a.x_f__mutmut_2`: survived\n- `a.x_f__mutmut_3`: killed by tests/t.py::test_x\n" in out
    assert json.loads((tmp_path / "outside.json").read_text()) == {
        "a.x_f__mutmut_2": "survived", "a.x_f__mutmut_3": "killed by tests/t.py::test_x"}
    # --score alone reads them back without running anything.
    runs.clear()
    assert ms.main(["--score"]) == 0
    assert runs == [] and "1 of 2 killed; with them, 2 of 4 (50.0 %)" in capsys.readouterr().out


def test_tests_outside_that_fail_without_a_mutant_are_one_error(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(ms, "MUTANTS", tmp_path)
    (tmp_path / "a.py.meta").write_text(json.dumps({"exit_code_by_key": {"a.x_f__mutmut_1": 33}}))
    monkeypatch.setattr(ms, "_outside_run",
                        lambda mutant: ms.subprocess.CompletedProcess([], 1, "E  boom\n1 failed in 2s\n", ""))
    assert ms.main(["--score", "--every", "1", "--outside"]) == 2
    assert capsys.readouterr().err == "error: the tests outside the selection fail with no mutant switched on: " \
                                      "1 failed in 2s\n"
    assert not (tmp_path / "outside.json").exists()


def test_every_outside_test_exists() -> None:
    # A renamed test would leave its mutants unreached: pytest errors on the missing id, and so would this list.
    for node in ms.OUTSIDE_TESTS:
        path, _, name = node.partition("::")
        text = (ROOT / path).read_text()
        assert not name or f"def {name}(" in text, node


def test_a_verdict_names_the_first_failed_test_or_the_status() -> None:
    run = ms.subprocess.CompletedProcess
    assert ms._verdict(run([], 0, "1 passed", "")) == "survived"
    assert ms._verdict(run([], 1, "ERROR tests/a.py - ImportError\nFAILED tests/b.py::t\n", "")) == \
        "killed by tests/a.py"
    assert ms._verdict(run([], 124, "", "timed out after 600 s")) == "killed (pytest status 124)"
