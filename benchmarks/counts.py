"""The deterministic counts of the asv suite (every class with the ``common._Counted`` mixin), taken in one
process per framework: ``collect()`` is their shared ``setup_cache``.

``python -m benchmarks.counts FRAMEWORK OUT`` counts every combination of this device's grid for one framework and
writes them to OUT as JSON; ``collect`` runs one such subprocess per framework, so torch and jax never share a
process and the benchmark processes import neither. Each combination is prepared exactly as a benchmark process
prepares it (``Benchmark._prepare``: the skip rules, the inputs, ``frameworks.load``, ``build``) and counted by the
class's own ``count_<metric>`` methods, the bodies the track_ methods ran per process before. No framework is
imported at module level (asv imports this module when it discovers the suite).
"""

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
from implementations import frameworks

Key = tuple[str, tuple]


def benchmark_name(cls: type) -> str:
    """asv's name of a benchmark class: '<pillar module>.<class>', e.g. 'recording.GraphCost_mlp'."""
    return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"


def counted_classes() -> list[type]:
    """Every asv class of the suite whose track_ methods come from the count cache."""
    return [cls for cls in common.suite_classes() if issubclass(cls, common._Counted)]


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
    {'values': {track method: value, or {'error': text} where that count failed}}."""
    bench = cls()
    try:
        state = bench._prepare(dict(zip(cls.param_names, params)))
    except Exception as exc:  # a failed load or build fails every method of the combination, with its text
        return {"error": _error(exc)}
    if isinstance(state, common.Skip):
        return {"skip": str(state)}
    bench.__dict__.update(state)
    values: dict[str, Any] = {}
    for method in tracks(cls):
        try:
            values[method] = getattr(bench, common.count_method(method))()
        except Exception as exc:
            traceback.print_exc()  # the subprocess's stderr, shown by asv --show-stderr
            values[method] = {"error": _error(exc)}
    return {"values": values}


def count_all(framework: str, classes: list[type] | None = None) -> list[dict[str, Any]]:
    """Every combination of every counted class for `framework`, in this process."""
    out = []
    for cls in classes if classes is not None else counted_classes():
        for params in grid(cls, framework):
            out.append({"benchmark": benchmark_name(cls), "params": list(params), **count_one(cls, params)})
    return out


# The child imports `benchmarks` and `implementations` from exactly where this process did: asv imports the suite
# through its own importer, and implementations may come from another tree (an installed or editable checkout), so
# neither sys.path order would be right for both. A finder placed first maps each name to its folder.
_BOOT = """
import importlib.machinery, json, os, runpy, sys
roots = json.loads(os.environ.pop("TVT_COUNT_ROOTS"))
class Roots:
    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.PathFinder.find_spec(name, [roots[name]], target) if name in roots else None
sys.meta_path.insert(0, Roots())
runpy.run_module("benchmarks.counts", run_name="__main__", alter_sys=True)
"""


def _roots() -> dict[str, str]:
    return {package: str(Path(module.__file__).resolve().parents[1])
            for package, module in (("benchmarks", common), ("implementations", frameworks))}


def collect(classes: list[type] | None = None) -> dict[Key, dict[str, Any]]:
    """asv's setup_cache: every count, keyed by (benchmark name, params). The frameworks' subprocesses run side by
    side (the counts are structural, not timed). A subprocess that dies fails every combination it had to count,
    with its last line of stderr."""
    classes = classes if classes is not None else counted_classes()
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


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in frameworks.NAMES:
        print(f"usage: python -m benchmarks.counts {{{','.join(frameworks.NAMES)}}} OUT [CLASS...]", file=sys.stderr)
        return 2
    framework, out, wanted = argv[0], Path(argv[1]), set(argv[2:])
    classes = [cls for cls in counted_classes() if not wanted or benchmark_name(cls) in wanted]
    # numpy scalars (a probe's sum) leave as the Python numbers asv would have recorded from them.
    out.write_text(json.dumps(count_all(framework, classes), default=lambda value: value.item()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
