"""The count processes behind benchmarks/counts.py's shared ``setup_cache``: ``collect`` starts one subprocess per
framework (through _BOOT), which counts every combination of the counted classes it is given (``count_all``), each
prepared exactly as a benchmark process prepares it (``Benchmark._prepare``) and counted by the class's own
``count_<metric>`` methods. No framework is imported at module level (asv imports this module when it discovers the
suite)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.common import Skip
from implementations import frameworks

Key = tuple[str, tuple]


def benchmark_name(cls: type) -> str:
    """asv's name of a benchmark class: '<pillar module>.<class>', e.g. 'recording.GraphCost_mlp'."""
    return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"


def tracks(cls: type) -> list[str]:
    """The track_ methods of `cls`, sorted."""
    return sorted(m for m in dir(cls) if m.startswith("track_"))


def grid(cls: type, framework: str) -> list[tuple]:
    """Every parameter combination of `cls` that runs `framework` (asv's order)."""
    index = cls.param_names.index("framework")
    return [combo for combo in itertools.product(*cls.params) if combo[index] == framework]


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def count_one(cls: type, params: tuple) -> dict[str, Any]:
    """One combination, in this process: {'skip': reason}, {'error': text} if it could not be prepared, or
    {'values': {track method: value, or {'error': text} where that count failed, {'skip': reason} where the method
    is not measured}}."""
    bench = cls()
    try:
        state = bench._prepare(dict(zip(cls.param_names, params)))
    except Exception as exc:  # a failed load or build fails every method of the combination, with its text
        return {"error": _error(exc)}
    if isinstance(state, Skip):
        return {"skip": str(state)}
    bench.__dict__.update(state)
    values: dict[str, Any] = {}
    for method in tracks(cls):
        try:
            values[method] = getattr(bench, count_method(method))()
        except NotImplementedError as skip:  # one method not measured where the others are (skip_method)
            values[method] = {"skip": str(skip)}
        except Exception as exc:
            traceback.print_exc()  # the subprocess's stderr, shown by asv --show-stderr
            values[method] = {"error": _error(exc)}
    return {"values": values}


def count_all(framework: str, classes: list[type]) -> list[dict[str, Any]]:
    """Every combination of every class of `classes` (counted classes) for `framework`, in this process."""
    out = []
    for cls in classes:
        for params in grid(cls, framework):
            out.append({"benchmark": benchmark_name(cls), "params": list(params), **count_one(cls, params)})
    return out


# The child imports `benchmarks` and `implementations` from exactly where this process did: asv imports the suite
# through its own importer, and implementations may come from another tree (an installed or editable checkout), so
# neither sys.path order would be right for both. A finder placed first maps each name to its folder. The child
# imports benchmarks.counts by name, not as __main__, whose second _Counted no benchmark class derives from.
_BOOT = """
import importlib.machinery, json, os, sys
roots = json.loads(os.environ.pop("TVT_COUNT_ROOTS"))
class Roots:
    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.PathFinder.find_spec(name, [roots[name]], target) if name in roots else None
sys.meta_path.insert(0, Roots())
from benchmarks import counts
sys.exit(counts.main(sys.argv[1:]))
"""


def _roots() -> dict[str, str]:
    return {package: str(Path(module.__file__).resolve().parents[1])
            for package, module in (("benchmarks", common), ("implementations", frameworks))}


def collect(classes: list[type]) -> dict[Key, dict[str, Any]]:
    """asv's setup_cache: every count, keyed by (benchmark name, params). The frameworks' subprocesses run side by
    side (the counts are structural, not timed). A subprocess that dies fails every combination it had to count,
    with its last line of stderr."""
    names = [benchmark_name(cls) for cls in classes]
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for framework in frameworks.NAMES:
            out, err = Path(tmp) / f"{framework}.json", Path(tmp) / f"{framework}.err"
            with err.open("w") as stderr:  # a file, not a pipe: neither child waits for the other's reader
                runs[framework] = (out, err, subprocess.Popen(
                    [sys.executable, "-c", _BOOT, framework, str(out), *names], stderr=stderr,
                    env=dict(os.environ, TVT_COUNT_ROOTS=json.dumps(_roots()))))
        cache: dict[Key, dict[str, Any]] = {}
        for framework, (out, err, process) in runs.items():
            process.wait()
            stderr = err.read_text(errors="replace")
            sys.stderr.write(stderr)
            if process.returncode == 0 and out.exists():
                for entry in json.loads(out.read_text()):
                    cache[(entry.pop("benchmark"), tuple(entry.pop("params")))] = entry
                continue
            last = (stderr.strip().splitlines() or [f"exit status {process.returncode}"])[-1]
            failed = {"error": f"the {frameworks.label(framework)} count process failed: {last}"}
            for cls in classes:
                for params in grid(cls, framework):
                    cache[(benchmark_name(cls), params)] = failed
    return cache


def count_method(track: str) -> str:
    """The method that counts what track_ method `track` reports: track_peak_bytes -> count_peak_bytes."""
    return "count_" + track.removeprefix("track_")


