"""The suite's one grid: asv's discovery of its benchmarks (asv_runner's, as `asv run` discovers them) and every
benchmark x parameter combination of it, named as asv names it (`module.Class.method('value', ...)`). The worker
runner (running.plan), the profiles and the GPU chunks (running.profiles) all select from this listing, by name and
by what each combination is; an asv `-b` regex is made from the chosen names only where `asv run -b` is called.
Plain Python: the benchmark files are imported (they import no framework), for this process's device (TVT_DEVICE
decides it)."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tape_vs_trace.results.asv_files import literal
from tape_vs_trace.running.worker import BENCHMARK_DIR, ROOT


@dataclass(frozen=True)
class Combo:
    """One benchmark x parameter combination, as the runners see it."""

    name: str  # asv's `module.Class.method(param, ...)`, what a -b regex is matched against
    framework: str
    kind: str  # 'time' or 'track'
    rounds: int  # the class's own
    repeat: int
    fresh: bool  # a process of its own (fresh_process)
    skipped: bool = False  # its setup skips it (the class's rules, evaluated here without a framework)
    workload: str = ""
    size: str = ""
    dtype: str = "float32"
    mode: str = ""  # 'eager', 'compiled', ...; a compile-time benchmark's cache ('cold', 'warm')
    method: str = ""
    params: tuple[tuple[str, str], ...] = ()  # every parameter by name, in the benchmark's order
    index: int = 0  # its position in the benchmark's grid (asv's order: a result file's and the runner's)

    @property
    def benchmark(self) -> str:
        return self.name.split("(", 1)[0]


class DiscoveryError(Exception):
    """The benchmark files cannot be discovered (one of them fails to import); the message is one line."""


def _on_path() -> None:
    if str(ROOT) not in sys.path:  # the benchmarks package sits beside this one, outside any install
        sys.path.insert(0, str(ROOT))


def discover(log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The suite's benchmarks as asv discovers them: asv_runner's list_benchmarks, each benchmark's description
    (name, params as reprs, param_names, type, rounds, repeat, version...), in this process."""
    from asv_runner.discovery import disc_benchmarks

    _on_path()
    found = []
    try:
        for bench in disc_benchmarks(str(BENCHMARK_DIR)):
            # list_benchmarks' own filter and JSON round trip: what `asv run` reads back from its discovery process
            clean = {k: v for k, v in bench.__dict__.items()
                     if isinstance(v, str | int | float | list | dict | bool) and not k.startswith("_")}
            found.append(json.loads(json.dumps(clean, skipkeys=True)))
    except Exception as exc:  # a benchmark file's own error, whatever it is: one line, as asv's discovery fails
        raise DiscoveryError(f"benchmark discovery failed: {exc.__class__.__name__}: {exc}".splitlines()[0]) from exc
    log(f"[run] discovered {len(found)} benchmarks")
    return found


def _suite_order(name: str) -> tuple:
    """The pillar registry's order of benchmark `name`'s module, then its class and method by name (a module of no
    pillar last): the order the profiles' chunks and the plans print."""
    from implementations import pillars

    modules = [p.module.rsplit(".", 1)[-1] for p in pillars.PILLARS.values()]
    module, _, rest = name.partition(".")
    return (modules.index(module) if module in modules else len(modules), *rest.split("."))


def _class(name: str) -> type:
    import importlib

    module, cls, _ = name.rsplit(".", 2)
    return getattr(importlib.import_module(f"benchmarks.{module}"), cls)


def combinations(benchmarks: list[dict[str, Any]] | None = None) -> list[Combo]:
    """Every combination of the discovered `benchmarks` (discover() without them), in the suite's order, each
    benchmark's in asv's order; a combination's process rules (rounds, repeat, fresh_process) and skip are its
    class's."""
    found = discover(log=lambda _: None) if benchmarks is None else benchmarks
    _on_path()
    from benchmarks import common

    combos = []
    for bench in sorted(found, key=lambda b: _suite_order(b["name"])):
        name = bench["name"]
        method, cls = name.rsplit(".", 1)[-1], _class(name)
        fresh = bool(getattr(getattr(cls, method), "fresh_process", getattr(cls, "fresh_process", False)))
        grid = bench.get("params") or []
        for index, values in enumerate(itertools.product(*grid) if grid else [()]):
            p = {n: literal(v) for n, v in zip(bench.get("param_names") or [], values, strict=True)}
            skipped = "framework" in p and bool(cls().reason_to_skip(common.Case(p)))
            combos.append(Combo(
                name=f"{name}({', '.join(values)})" if values else name,
                framework=p.get("framework", "torch"), kind="time" if bench["type"] == "time" else "track",
                rounds=int(getattr(cls, "rounds", 1)), repeat=int(getattr(cls, "repeat", 1) or 1), fresh=fresh,
                skipped=skipped, workload=p.get("workload", ""), size=p.get("size", ""),
                dtype=p.get("dtype", "float32"), mode=p.get("mode", p.get("cache", "")), method=method,
                params=tuple(p.items()), index=index))
    return combos


def by_benchmark(combos: list[Combo], benchmarks: list[dict[str, Any]]) -> dict[str, list[int]]:
    """`combos` as the runner's selection: benchmark -> the indices of its chosen combinations, in the order of the
    discovered `benchmarks`."""
    chosen: dict[str, list[int]] = {}
    for c in combos:
        chosen.setdefault(c.benchmark, []).append(c.index)
    return {b["name"]: sorted(chosen[b["name"]]) for b in benchmarks if b["name"] in chosen}
