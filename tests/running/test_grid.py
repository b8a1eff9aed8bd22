"""The one grid (running.grid): asv's own discovery, each combination named and indexed as asv names and orders it,
and every selection by name (the profiles', the GPU chunks', the runner's) the set asv's -b picks with those names.
No benchmark runs."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from tape_vs_trace.running import grid, profiles
from tape_vs_trace.running import plan as suite_plan

LIST_BENCHMARKS = ("import sys; from asv_runner.discovery import list_benchmarks; "
                   "list_benchmarks(sys.argv[1], sys.stdout)")


@pytest.fixture(scope="module")
def discovered() -> tuple[list[dict], list[grid.Combo]]:
    benchmarks = grid.discover(log=lambda _: None)
    return benchmarks, grid.combinations(benchmarks)


def test_the_grid_is_what_asvs_discovery_process_lists(discovered) -> None:
    """What `asv run` reads back from its discovery process (asv_runner's list_benchmarks, a process of its own)."""
    benchmarks, _ = discovered
    done = subprocess.run([sys.executable, "-c", LIST_BENCHMARKS, str(grid.BENCHMARK_DIR)], cwd=grid.ROOT,
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == benchmarks


def test_every_combination_is_named_and_indexed_as_asv_orders_its_grid(discovered) -> None:
    benchmarks, combos = discovered
    expected = {(b["name"], i): f"{b['name']}({', '.join(values)})" if values else b["name"]
                for b in benchmarks
                for i, values in enumerate(itertools.product(*b["params"]) if b["params"] else [()])}
    assert {(c.benchmark, c.index): c.name for c in combos} == expected
    assert len(combos) == len(expected)  # each combination once
    by_name = {b["name"]: b for b in benchmarks}
    for c in combos[::50]:
        values = list(itertools.product(*by_name[c.benchmark]["params"]))[c.index]
        assert dict(c.params) == suite_plan.values_of(by_name[c.benchmark], values), c.name


def test_the_grid_imports_no_framework() -> None:
    code = ("import sys; from tape_vs_trace.running import grid; combos = grid.combinations(); "
            "print(len(combos), sorted({'torch', 'jax'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=grid.ROOT, capture_output=True, text=True, check=True)
    count, frameworks = done.stdout.split(" ", 1)
    assert int(count) > 0 and frameworks.strip() == "[]"


def _selections() -> list[tuple[str, tuple]]:
    chunks = [(f"chunk {c.name}", c.selection) for c in profiles.QUICK]
    return [(f"profile {p.name}", p.selection) for p in profiles.PROFILES.values()] + chunks


@pytest.mark.parametrize(("label", "selection"), _selections(), ids=[label for label, _ in _selections()])
def test_a_selection_by_name_is_what_asvs_b_picks_with_those_names(discovered, label: str, selection: tuple) -> None:
    """The runner's choice (benchmark -> indices) for a profile or a chunk names the same combinations the profiles
    choose from the grid, and asv's -b rule given those names (names_regex, what `asv run -b` gets) picks exactly
    them: a grid that named or ordered a combination otherwise than asv does fails here."""
    benchmarks, combos = discovered
    names = sorted(c.name for c in profiles.select(selection or (profiles.rows("*"),), combos))
    chosen = suite_plan.select(benchmarks, None, selection) if selection else suite_plan.select(benchmarks, None)
    by_index = {(c.benchmark, c.index): c.name for c in combos}
    assert sorted(by_index[(n, i)] for n, indices in chosen.items() for i in indices) == names, label
    if not names:
        pytest.skip(f"{label} selects nothing on this grid")
    assert suite_plan.select(benchmarks, [profiles.names_regex(names)]) == chosen, label


def test_a_discovery_that_fails_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import asv_runner.discovery

    def broken(root: str):
        raise ImportError("benchmarks/broken.py: no module named 'nothing'\nsecond line")
        yield

    monkeypatch.setattr(asv_runner.discovery, "disc_benchmarks", broken)
    with pytest.raises(suite_plan.RunError, match=r"^benchmark discovery failed: ImportError: .*'nothing'$"):
        suite_plan.discover(log=lambda _: None)
