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


def test_the_allocator_is_set_outright_and_a_replaced_preset_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An image that presets preallocation or the platform allocator would make JAX's allocator peak the pool's
    size or none at all: isolate_allocators replaces both, and the record names what it replaced, in this
    process and in the children that inherit the environment."""
    import os
    import subprocess

    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
    monkeypatch.setenv(process_settings.REPLACED_VARIABLE, "")  # restored after the test, whatever it is set to
    before = process_settings.environment_settings()  # a parent that has not isolated yet records what children get
    process_settings.isolate_allocators()
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and "XLA_PYTHON_CLIENT_ALLOCATOR" not in os.environ
    after = process_settings.environment_settings()
    assert before == after
    assert after["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false (replaced the preset 'true')"
    assert after["XLA_PYTHON_CLIENT_ALLOCATOR"] == "unset (replaced the preset 'platform')"
    child = subprocess.run([sys.executable, "-c", "from implementations import process_settings as p; "
                            "p.isolate_allocators(); print(p.environment_settings()['XLA_PYTHON_CLIENT_ALLOCATOR'])"],
                           capture_output=True, text=True, check=True, env=dict(os.environ))
    assert child.stdout.strip() == "unset (replaced the preset 'platform')"


def test_an_allocator_preset_equal_to_the_suites_is_no_replacement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "False")
    monkeypatch.delenv("XLA_PYTHON_CLIENT_ALLOCATOR", raising=False)
    monkeypatch.setenv(process_settings.REPLACED_VARIABLE, "")  # restored after the test, whatever it is set to
    process_settings.isolate_allocators()
    settings = process_settings.environment_settings()
    assert settings["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and settings["XLA_PYTHON_CLIENT_ALLOCATOR"] == "unset"
