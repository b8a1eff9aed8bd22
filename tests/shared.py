"""What several test files build from the same input, built once a test session across pytest-xdist's workers
(tests/conftest.py's `shared_root` is the session's folder they share): whoever asks first builds it under a file
lock while the others wait, then each reads its own copy."""

from __future__ import annotations

import contextlib
import hashlib
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from filelock import FileLock


def folder_digest(folder: Path) -> str:
    """Of the names and bytes of every file under `folder` (links followed): equal for copies of one folder."""
    digest = hashlib.sha1()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def once(root: Path, name: str, make: Callable[[], object]) -> object:
    """make()'s value, made by the first worker that asks for `name` and pickled under `root`; a fresh copy each
    call, so that no caller sees what another changed."""
    path = root / f"{name}.pickle"
    with FileLock(f"{path}.lock"):
        if not path.exists():
            data = pickle.dumps(make())
            path.with_suffix(".part").write_bytes(data)
            path.with_suffix(".part").rename(path)
    return pickle.loads(path.read_bytes())


def loading_once(root: Path, load: Callable) -> Callable:
    """report.load.load_results, read once a session per folder content; the warnings and steps it said are said
    again on every call, in their order."""
    def loaded(results, warn, verbose=False, step=lambda _: None):
        def make():
            said: list[tuple[bool, str]] = []
            value = load(results, lambda m: said.append((True, m)), verbose, lambda m: said.append((False, m)))
            return value, said

        value, said = once(root, f"load-{folder_digest(Path(results))}-{bool(verbose)}", make)
        for is_warning, message in said:
            (warn if is_warning else step)(message)
        return value
    return loaded


@contextlib.contextmanager
def results_loaded_once(root: Path) -> Iterator[None]:
    """Every reader of load_results the report's commands use (build, cite, compare, the comparison page) reads
    through loading_once while inside."""
    from tape_vs_trace.report import build, cite, compare, comparison_page, load

    with pytest.MonkeyPatch.context() as patch:
        for module in (build, cite, compare, comparison_page):
            patch.setattr(module, "load_results", loading_once(root, load.load_results))
        yield
