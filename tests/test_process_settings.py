"""implementations.process_settings.after_import: a setting of a module applied once that module is imported, at
once where it already is, and never importing it itself."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from implementations import process_settings


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "tvt_later.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tvt_later", raising=False)
    yield tmp_path
    sys.modules.pop("tvt_later", None)


def test_the_setting_waits_for_the_import_and_runs_once_right_after_it(module_dir: Path) -> None:
    seen = []

    def then() -> None:
        seen.append(sys.modules["tvt_later"].VALUE)

    process_settings.after_import("tvt_later", then)
    process_settings.after_import("tvt_later", then)  # asked twice: still one hook
    assert seen == [] and "tvt_later" not in sys.modules
    import tvt_later  # noqa: F401

    assert seen == [1]


def test_two_settings_of_one_module_both_run_after_its_import(module_dir: Path) -> None:
    seen = []
    process_settings.after_import("tvt_later", lambda: seen.append("first"))
    process_settings.after_import("tvt_later", lambda: seen.append("second"))
    import tvt_later  # noqa: F401

    assert seen == ["first", "second"]


def test_a_module_already_imported_gets_the_setting_at_once(module_dir: Path) -> None:
    import tvt_later  # noqa: F401

    seen = []
    process_settings.after_import("tvt_later", lambda: seen.append("now"))
    assert seen == ["now"]
