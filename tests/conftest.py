"""Test-session settings: float64 on in JAX, since the float64 parity and ADBench tests need it (benchmark
processes turn it on only for float64 runs; float32 arrays keep their dtype either way). A benchmark built in a
test configures JAX as its process would (float64 off): each test starts from the session's setting again.

One JAX persistent compilation cache for the session, fresh and removed at its end: the pytest-xdist workers and
the processes tests start inherit it, so a program that several of them compile (the same op-by-op primitive, the
same jitted step) is compiled once. A test about compiles or caches sets its own (compile_probe.persistent_cache)
or counts cache hits as compiles (test_steps). XLA compiles the session's programs with LLVM's optimizations off
(--xla_backend_optimization_level=0): the same HLO and buffer plan, emitted without the code-quality passes that
make most of a CPU compile's time (a multiply-add left unfused can move a last bit, inside every tolerance); speed
is the benchmarks' business, not the tests'."""

import atexit
import gc
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller (or a lone process), before JAX is imported anywhere
    _cache = tempfile.mkdtemp(prefix="tvt-tests-jax-cache-")
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
    os.environ.update({"JAX_COMPILATION_CACHE_DIR": _cache, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                       "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
                       "XLA_FLAGS": " ".join(filter(None, (os.environ.get("XLA_FLAGS"),
                                                           "--xla_backend_optimization_level=0")))})

import implementations.jax as jax_side  # noqa: E402 (after the cache's settings, which JAX reads at import)
from tests import shared  # noqa: E402


@pytest.fixture(autouse=True)
def _float64_on():
    jax_side.configure("highest", None, float64=True)


_frozen_for: list[object] = [None]


def pytest_runtest_setup(item: pytest.Item) -> None:
    # The probes collect garbage around each measurement, and a full gc.collect walks every tracked object: what
    # earlier test files left alive (modules, collected items, caches) is frozen out of those walks at each file's
    # first test, once its garbage is collected, so that they see only what the file itself creates.
    module = getattr(item, "module", None)
    if module is not _frozen_for[0]:
        _frozen_for[0] = module
        gc.collect()
        gc.freeze()


@pytest.fixture(scope="session")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this session shares (tests/shared.py): under pytest-xdist each worker's base
    temporary folder lies in one folder of the session's."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "shared"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture
def load_once(shared_root: Path) -> Iterator[Callable]:
    """report.load.load_results, each results folder read once a session (tests/shared.py): returned, and used by
    the report's commands (build, cite, compare, the comparison page) during the test."""
    from tape_vs_trace.report import load

    with shared.results_loaded_once(shared_root):
        yield shared.loading_once(shared_root, load.load_results)
