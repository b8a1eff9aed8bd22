"""The Makefile's clean-tree check before `make bench`: results are recorded under HEAD, so every file that
measures or records must be committed; each tracked file is either in RECORDED_SOURCES or named here as one that
does neither."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Tracked paths that neither measure nor record a value: prose, tests, CI glue, and what bench itself writes.
NOT_MEASURING = (".ci/", ".gitignore", "CONTRIBUTING.md", "README.md", "docs/", "results/", "tests/")


def recorded_sources() -> list[str]:
    """RECORDED_SOURCES as the Makefile defines it (continuation lines joined)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    found = re.search(r"^RECORDED_SOURCES\s*:=(.*)$", text, flags=re.M)
    assert found, "the Makefile defines no RECORDED_SOURCES"
    return found.group(1).split()


def _covered(path: str, sources: list[str]) -> bool:
    return any(path == s or path.startswith(s.rstrip("/") + "/") for s in sources)


def test_every_tracked_file_that_measures_or_records_is_in_the_clean_tree_check() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    sources = recorded_sources()
    outside = [p for p in tracked if not _covered(p, sources) and not p.startswith(NOT_MEASURING)]
    assert not outside, f"tracked files outside the Makefile's RECORDED_SOURCES: {outside}"


def test_the_measuring_packages_and_scripts_are_in_it() -> None:
    sources = recorded_sources()
    for path in ("tape_vs_trace/running/runner.py", "tape_vs_trace/side/paired.py", "tape_vs_trace/side/saved.py",
                 "benchmarks/common.py", "implementations/frameworks.py", "scripts/gpu_bench.sh", "pyproject.toml",
                 "requirements/cpu.txt", "asv.conf.json"):
        assert _covered(path, sources), path


def test_bench_refuses_a_tree_that_differs_in_any_of_them() -> None:
    recipe = (ROOT / "Makefile").read_text().split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert 'git status --porcelain -- $(RECORDED_SOURCES)' in recipe
