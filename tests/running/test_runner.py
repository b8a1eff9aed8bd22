"""tape-vs-trace run: which process measures each combination in each round (rotation, alternation, fresh
processes), one crash costing one combination, and the asv result file written after every round, which asv's own
API and the report read, with the runner recorded. Worker processes are faked here, but for the suite's discovery."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tape_vs_trace.report import load
from tape_vs_trace.results import machine
from tape_vs_trace.running import outcomes as suite_results
from tape_vs_trace.running import runner as suite_runner
from tape_vs_trace.running.outcomes import Outcome
from tests.running.test_plan import _task


def _fake_clock(monkeypatch, seconds_per_process: float | Callable[[list], float]) -> None:
    """perf_counter advanced only by the faked worker processes, each costing `seconds_per_process` (or what it
    returns for the process's batch)."""
    now = [0.0]

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return now[0]

    def fake(batch, framework, caches, scratch, label, log, timeout):
        now[0] += seconds_per_process(batch) if callable(seconds_per_process) else seconds_per_process
        return {t.id: {"samples": [0.01] * t.repeat, "number": 1} for t in batch} | {"graphs": {}}

    monkeypatch.setattr(suite_runner, "time", Clock)
    monkeypatch.setattr(suite_runner, "measure_round", fake)
    monkeypatch.setattr(suite_runner, "setup_caches", lambda *a: {})
    monkeypatch.setattr(machine, "write_asv_machine_file", lambda fields: None)


def test_a_budget_runs_the_part_of_the_round_that_fits_ends_there_and_says_so(monkeypatch, tmp_path: Path) -> None:
    _fake_clock(monkeypatch, seconds_per_process=2.5)  # 4 a round: eager and compiled of torch and jax
    lines: list[str] = []
    done = suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step"], rounds=12, log=lines.append, budget=55.0,
                            profile="cited")
    data = json.loads(done.path.read_text())
    record = data["tape_vs_trace"]["worker_runs"]
    # 5 x 10 s end at 50 s; a sixth whole round would end at 60, so of it the two processes that fit in 5 s run
    assert record["rounds"] == 6 and record["rounds_planned"] == 12 and record["processes"] == 5 * 4 + 2
    assert record["round_wall_s"] == [10.0] * 5 + [5.0]
    assert record["stopped"] == "round 6 of 12 run in part, 2 of 4 processes: about 10 s, 5 s of the 55 s budget left"
    assert record["profile"] == "cited" and record["budget_s"] == 55.0
    assert any(line == f"[run] {record['stopped']}" for line in lines)
    # the sixth round starts with JAX (the frameworks alternate): its two processes, nothing of PyTorch's
    assert [(p["framework"], p["compiled"]) for p in record["per_process"] if p["round"] == 6] == [
        ("jax", True), ("jax", False)]
    steps = data["results"]["recording.GradStep_mlp.time_step"]
    params = steps[data["result_columns"].index("params")]
    framework = next(i for i, values in enumerate(params) if "'jax'" in values)
    assert [len(s) // 5 for s in steps[data["result_columns"].index("samples")]] == [
        6 if combination[framework] == "'jax'" else 5 for combination in itertools.product(*params)]
    # 2 s left: no process of the sixth round fits, so none starts
    short = suite_runner.run(tmp_path / "short", [r"GradStep_mlp\.time_step"], rounds=12, log=lambda _: None,
                             budget=52.0)
    record = json.loads(short.path.read_text())["tape_vs_trace"]["worker_runs"]
    assert record["rounds"] == 5 and record["processes"] == 20
    assert record["stopped"] == "round 6 of 12 not started: about 10 s, 2 s of the 52 s budget left"
    # the minimum rounds ran past the budget: the record says by how much, not a negative remainder
    over = suite_runner.run(tmp_path / "over", [r"GradStep_mlp\.time_step"], rounds=12, log=lambda _: None,
                            budget=25.0)
    record = json.loads(over.path.read_text())["tape_vs_trace"]["worker_runs"]
    assert record["rounds"] == 3
    assert record["stopped"] == "round 4 of 12 not started: about 10 s, the 25 s budget overrun by 5 s"


def test_without_a_budget_every_planned_round_runs(monkeypatch, tmp_path: Path) -> None:
    _fake_clock(monkeypatch, seconds_per_process=1000.0)
    done = suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step"], rounds=4, log=lambda _: None)
    record = json.loads(done.path.read_text())["tape_vs_trace"]["worker_runs"]
    assert record["rounds"] == 4 and record["stopped"] is None and record["profile"] is None


def test_a_cheap_group_is_copied_from_the_second_round_of_a_budgeted_run_and_the_file_says_so(monkeypatch,
                                                                                              tmp_path: Path) -> None:
    """In a run with a budget, a shared group whose process costs at most half the slowest group's gets a second
    process per round once its wall is known; each copy adds its samples, and the record names the copies of every
    round."""
    _fake_clock(monkeypatch, lambda batch: 20.0 if batch[0].compiled else 4.0)  # the compiled processes are slow
    done = suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step"], rounds=3, log=lambda _: None, budget=1000.0)
    data = json.loads(done.path.read_text())
    record = data["tape_vs_trace"]["worker_runs"]
    copied = {"torch others highest": 2, "jax others highest": 2}
    assert record["copies"] == [{}, copied, copied]
    assert record["processes"] == 4 + 6 + 6 and record["round_wall_s"] == [48.0, 56.0, 56.0]
    assert {p["group"] for p in record["per_process"]} == {"torch others highest", "torch compiled highest",
                                                           "jax others highest", "jax compiled highest"}
    steps = data["results"]["recording.GradStep_mlp.time_step"]
    params = steps[data["result_columns"].index("params")]
    mode = next(i for i, values in enumerate(params) if "'compiled'" in values)
    # a compiled combination: one process a round; the others: 1 + 2 + 2
    assert [len(s) // 5 for s in steps[data["result_columns"].index("samples")]] == [
        3 if combination[mode] == "'compiled'" else 5 for combination in itertools.product(*params)]
    # without a budget every round runs, so a copy would only lengthen the run: none
    unbounded = suite_runner.run(tmp_path / "unbounded", [r"GradStep_mlp\.time_step"], rounds=3, log=lambda _: None)
    assert json.loads(unbounded.path.read_text())["tape_vs_trace"]["worker_runs"]["copies"] == [{}, {}, {}]


def test_once_every_row_has_its_spread_the_copies_go_to_the_noisy_group(monkeypatch, tmp_path: Path) -> None:
    """From the round after every timed row has SPREAD_PROCESSES processes, copies go where they narrow intervals:
    PyTorch's eager process draws its own speed every time, JAX's is steady, so only PyTorch's is copied."""
    _fake_clock(monkeypatch, lambda batch: 20.0 if batch[0].compiled else 4.0)
    measured = suite_runner.measure_round
    drawn = iter([1.0, 1.3, 0.8, 1.1, 0.9, 1.4, 1.2, 0.7] * 4)

    def speeds(batch, framework, *args):
        found = measured(batch, framework, *args)
        if framework == "torch" and not batch[0].compiled:
            speed = next(drawn)
            found.update({t.id: {"samples": [0.01 * speed] * t.repeat, "number": 1} for t in batch})
        return found

    monkeypatch.setattr(suite_runner, "measure_round", speeds)
    done = suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step"], rounds=5, log=lambda _: None, budget=1000.0)
    record = json.loads(done.path.read_text())["tape_vs_trace"]["worker_runs"]
    by_cost = {"torch others highest": 2, "jax others highest": 2}
    # rounds 2 and 3 by cost (the compiled rows have 1 and 2 processes); then by spread, two copies in 10 s
    assert record["copies"] == [{}, by_cost, by_cost, {"torch others highest": 3}, {"torch others highest": 3}]
    assert "narrows most per second" in record["layout"]["copies"]


def test_a_groups_spread_is_read_from_its_timed_rows_of_a_millisecond_or_more() -> None:
    """_Run.spreads: per shared group, each timed row of 1 ms or more gives the SD of its log per-process medians and
    its processes; a shorter row, a fresh one, a count and a failed one give nothing."""

    def task(name: str, **kw) -> suite_results.Task:
        return suite_results.Task(name, 0, kw.pop("framework", "torch"), kw.pop("kind", "time"), 3, 5,
                                  kw.pop("fresh", False), **kw)

    rows = {"a": task("m.A.time_step"), "short": task("m.B.time_step"), "fresh": task("m.C.time_step", fresh=True),
            "count": task("m.D.track_n", kind="track"), "failed": task("m.E.time_step"),
            "compiled": task("m.F.time_step", framework="jax", compiled=True)}
    medians = {"a": [0.010, 0.012, 0.011], "short": [0.0005, 0.0009, 0.0007], "fresh": [0.01, 0.02, 0.03],
               "count": [0.01, 0.02, 0.03], "failed": [0.01, 0.02, 0.03], "compiled": [0.004, 0.004]}
    outcomes = {rows[k].id: Outcome(samples=[[m * f for f in (0.9, 1.0, 1.2)] for m in v]) for k, v in medians.items()}
    outcomes[rows["failed"].id].error = "boom"
    state = suite_runner._Run([], list(rows.values()), {}, Path("."), "", 0, {}, None, outcomes)
    found = state.spreads()
    assert set(found) == {"torch others highest", "jax compiled highest"}
    (sd, n), = found["torch others highest"]
    assert n == 3 and sd == pytest.approx(float(np.std(np.log(medians["a"]), ddof=1)), rel=1e-12)
    assert found["jax compiled highest"] == [(0.0, 2)]


def test_each_process_records_what_the_host_did_while_it_ran(monkeypatch, tmp_path: Path) -> None:
    """The runner reads /proc/stat around every worker: a process that ran while the hypervisor stole time is told
    apart from one whose framework was slow (host_load's shares of the ticks between the two readings)."""
    from tape_vs_trace.results import host_load

    _fake_clock(monkeypatch, seconds_per_process=1.0)
    readings = iter([[0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [50, 0, 0, 40, 0, 0, 0, 10, 0, 0]] * 8)
    monkeypatch.setattr(host_load, "cpu_ticks", lambda: next(readings))
    done = suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step"], rounds=2, log=lambda _: None)
    processes = json.loads(done.path.read_text())["tape_vs_trace"]["worker_runs"]["per_process"]
    assert len(processes) == 8 and {p["compiled"] for p in processes} == {True, False}
    assert all(p["host"] == {"steal": 0.1, "busy": 0.5} for p in processes)


@pytest.mark.parametrize("budget", [0.0, -5.0, float("nan")])
def test_a_budget_that_is_not_a_positive_number_is_refused(tmp_path: Path, budget: float) -> None:
    with pytest.raises(suite_runner.RunError, match="--budget must be a positive number"):
        suite_runner.run(tmp_path, None, budget=budget, log=lambda _: None)





# --- the result file -----------------------------------------------------------------------------------------------


class Stop(Exception):
    pass


def _fake_rounds(monkeypatch, stop_after: int | None = None, failing: frozenset[str] = frozenset(),
                 scale: float = 1.0) -> list[int]:
    seen: list[int] = []

    def fake(batch, framework, caches, scratch, label, log, timeout):
        r = int(label[1:].split("-")[0])
        if stop_after is not None and r >= stop_after:
            raise Stop
        seen.append(r)
        return {t.id: ({"error": "boom"} if t.id in failing else
                       {"samples": [0.01 * (r + 1) * scale] * t.repeat, "number": 1} if t.kind == "time"
                       else {"value": 4096}) for t in batch} | {"graphs": {}}

    monkeypatch.setattr(suite_runner, "measure_round", fake)
    monkeypatch.setattr(suite_runner, "setup_caches", lambda *a: {})
    monkeypatch.setattr(machine, "write_asv_machine_file", lambda fields: None)
    return seen


REGEX = [r"GradStep_mlp\.time_step", r"RematCost_mlp\.track_saved_bytes"]


def test_the_result_file_is_saved_after_every_round_and_asv_reads_it(monkeypatch, tmp_path: Path) -> None:
    from asv.results import Results

    _fake_rounds(monkeypatch, stop_after=1)
    with pytest.raises(Stop):
        suite_runner.run(tmp_path, REGEX, rounds=3, log=lambda _: None)
    [path] = [p for p in tmp_path.glob("*/*.json") if p.name != "machine.json"]
    assert path.name.endswith("-existing-venv.json")  # scrubbed: no interpreter path in the name
    result = Results.load(str(path))
    samples = result.get_result_samples("recording.GradStep_mlp.time_step",
                                        result.get_result_params("recording.GradStep_mlp.time_step"))
    assert all(s == [0.01] * 5 for s in samples)  # round 1 only: the round cut short lost nothing saved before it
    assert result.get_result_value("remat.RematCost_mlp.track_saved_bytes",
                                   result.get_result_params("remat.RematCost_mlp.track_saved_bytes"))[0] == 4096


def test_every_round_adds_its_samples_and_the_report_splits_them_into_processes(monkeypatch, tmp_path: Path) -> None:
    seen = _fake_rounds(monkeypatch)
    suite_runner.run(tmp_path, REGEX, rounds=3, log=lambda _: None)
    assert sorted(set(seen)) == [0, 1, 2]
    [path] = [p for p in tmp_path.glob("*/*.json") if p.name != "machine.json"]
    data = json.loads(path.read_text())
    samples = data["results"]["recording.GradStep_mlp.time_step"][data["result_columns"].index("samples")]
    assert all(s == [0.01] * 5 + [0.02] * 5 + [0.03] * 5 for s in samples)
    table = load.load_results(tmp_path, lambda _: None).table
    steps = table[table.benchmark == "recording.GradStep_mlp.time_step"]
    assert len(steps) == 8 and set(steps.processes) == {3}  # 2 frameworks x 2 modes x 2 styles


def test_the_result_file_records_the_runner_of_every_benchmark(monkeypatch, tmp_path: Path) -> None:
    _fake_rounds(monkeypatch)
    suite_runner.run(tmp_path, REGEX, rounds=2, log=lambda _: None)
    [path] = [p for p in tmp_path.glob("*/*.json") if p.name != "machine.json"]
    record = json.loads(path.read_text())["tape_vs_trace"]
    assert record["runner_of"] == {"recording.GradStep_mlp.time_step": "worker",
                                   "remat.RematCost_mlp.track_saved_bytes": "worker"}
    assert record["worker_runs"]["rounds"] == 2
    assert "runner" not in record


STEP = "recording.GradStep_mlp.time_step"  # [framework, workload, size, mode, style, ...]: torch eager is 0-1


def _step_entry(folder: Path) -> tuple[list, list]:
    [path] = [p for p in folder.glob("*/*.json") if p.name != "machine.json"]
    data = json.loads(path.read_text())
    entry = data["results"][STEP]
    return entry[0], entry[data["result_columns"].index("samples")]


def test_two_runs_of_different_combinations_of_one_benchmark_keep_both(monkeypatch, tmp_path: Path) -> None:
    # PyTorch's eager combinations (the second fails), then every compiled one, into one results folder: JAX's eager
    # combinations were chosen by neither run.
    monkeypatch.setenv("TVT_CALIBRATION", str(tmp_path / "none.json"))
    _fake_rounds(monkeypatch, failing=frozenset({f"{STEP}-1"}))
    suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step\('torch'.*'eager'"], rounds=3, log=lambda _: None)
    _fake_rounds(monkeypatch, scale=10.0)
    suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step\(.*'compiled'"], rounds=3, log=lambda _: None)
    values, samples = _step_entry(tmp_path)
    assert values[0] == pytest.approx(0.02) and samples[0] == [0.01] * 5 + [0.02] * 5 + [0.03] * 5
    for i in (2, 3, 6, 7):
        assert values[i] == pytest.approx(0.2) and samples[i] == pytest.approx([0.1] * 5 + [0.2] * 5 + [0.3] * 5)
    assert values[1] is None and samples[1] is None  # failed in the first run: neither a value nor a skip
    assert all(v != v for v in (values[4], values[5]))  # NaN: not run by either
    [record] = [json.loads(p.read_text())["tape_vs_trace"] for p in tmp_path.glob("*/*-existing-venv.json")]
    assert record["chosen"][STEP] == [0, 1, 2, 3, 6, 7]


def test_a_rerun_of_the_same_combination_replaces_it_and_a_failure_keeps_the_measured_value(
        monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TVT_CALIBRATION", str(tmp_path / "none.json"))
    torch_eager = [r"GradStep_mlp\.time_step\('torch'.*'eager'"]
    _fake_rounds(monkeypatch)
    suite_runner.run(tmp_path, torch_eager, rounds=3, log=lambda _: None)
    _fake_rounds(monkeypatch, failing=frozenset({f"{STEP}-1"}), scale=10.0)
    suite_runner.run(tmp_path, torch_eager, rounds=3, log=lambda _: None)
    values, samples = _step_entry(tmp_path)
    assert values[0] == pytest.approx(0.2) and samples[0] == pytest.approx([0.1] * 5 + [0.2] * 5 + [0.3] * 5)
    assert values[1] == pytest.approx(0.02) and samples[1] == [0.01] * 5 + [0.02] * 5 + [0.03] * 5


def test_outcomes_become_asvs_values_nan_for_a_skip_none_for_a_failure() -> None:
    bench = {"name": "m.A.time_step", "params": [["'torch'", "'jax'"], ["'a'", "'b'"]], "version": "1",
             "param_names": ["framework", "x"]}
    chosen = [_task("m.A.time_step", i, "torch" if i < 2 else "jax") for i in range(4)]
    outcomes = {"m.A.time_step-0": Outcome(samples=[[1.0, 3.0], [2.0]], number=1),
                "m.A.time_step-1": Outcome(skip="not a size"), "m.A.time_step-2": Outcome(error="boom")}
    results = suite_results.to_results([bench], outcomes, chosen, {"machine": "m"}, "3.11", "a" * 40, 0, None, {})
    values = results.get_result_value("m.A.time_step", bench["params"])
    assert values[0] == 2.0  # the median of every round's samples
    assert values[1] != values[1] and values[3] != values[3]  # NaN: skipped, or never reached
    assert values[2] is None
    assert results.get_result_samples("m.A.time_step", bench["params"])[0] == [1.0, 3.0, 2.0]


@pytest.mark.slow
def test_a_real_run_of_timed_and_counted_benchmarks_saves_every_value(monkeypatch, tmp_path: Path) -> None:
    """The chain's gradient steps (timed, both modes) and its graph costs (counts from the shared setup_cache) in
    real worker processes, two rounds: no combination fails, and the file holds the samples of every process that
    measured a combination (both rounds, and the second round's copies of a cheap group)."""
    monkeypatch.setattr(machine, "write_asv_machine_file", lambda fields: None)
    done = suite_runner.run(tmp_path, [r"GradStep_chain\.", r"GraphCost_chain\.track_saved_bytes"], rounds=2,
                            log=lambda _: None)
    assert done.failed == []
    data = json.loads(done.path.read_text())
    columns = data["result_columns"]
    steps = data["results"]["recording.GradStep_chain.time_step"]
    runs = data["tape_vs_trace"]["worker_runs"]
    held = {}  # processes of each (framework, compiled): every combination of the chain's steps is in each of them
    for p in runs["per_process"]:
        held[(p["framework"], p["compiled"])] = held.get((p["framework"], p["compiled"]), 0) + 1
    frameworks, modes = (steps[columns.index("params")][i] for i in (0, 3))
    expected = [5 * held[(f.strip("'"), m == "'compiled'")] for f in frameworks for m in modes]
    assert [len(s) for s in steps[columns.index("samples")]] == expected
    assert min(expected) == 10 and runs["copies"][0] == {}  # two rounds; no copies before a wall is known
    saved = data["results"]["recording.GraphCost_chain.track_saved_bytes"][0]
    assert all(isinstance(v, (int, float)) and v > 0 for v in saved)


def test_extend_adds_only_the_rounds_a_cut_run_lacks_and_keeps_its_samples(monkeypatch, tmp_path: Path) -> None:
    # A contact cut after round 2 of 3, then the next contact with --extend: it runs one round, and the file holds
    # the first contact's two rounds beside it.
    monkeypatch.setenv("TVT_CALIBRATION", str(tmp_path / "none.json"))
    torch_eager = [r"GradStep_mlp\.time_step\('torch'.*'eager'"]
    _fake_rounds(monkeypatch, stop_after=2)
    with pytest.raises(Stop):
        suite_runner.run(tmp_path, torch_eager, rounds=3, log=lambda _: None)
    assert _step_entry(tmp_path)[1][0] == [0.01] * 5 + [0.02] * 5
    seen = _fake_rounds(monkeypatch, scale=10.0)
    lines: list[str] = []
    suite_runner.run(tmp_path, torch_eager, rounds=3, log=lines.append, extend=True)
    assert sorted(set(seen)) == [0]  # one round: the one missing
    values, samples = _step_entry(tmp_path)
    assert samples[0] == pytest.approx([0.01] * 5 + [0.02] * 5 + [0.1] * 5)
    assert values[0] == pytest.approx(0.02)
    assert any("2 of 2 to run adding the rounds they lack" in line for line in lines)
    # Every round held: nothing to run, said in one line.
    with pytest.raises(suite_runner.RunError, match="holds every round"):
        suite_runner.run(tmp_path, torch_eager, rounds=3, log=lambda _: None, extend=True)


def test_every_runs_failure_of_a_combination_is_kept_in_the_files_record(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TVT_CALIBRATION", str(tmp_path / "none.json"))
    torch_eager = [r"GradStep_mlp\.time_step\('torch'.*'eager'"]
    for _ in range(2):
        _fake_rounds(monkeypatch, failing=frozenset({f"{STEP}-1"}))
        suite_runner.run(tmp_path, torch_eager, rounds=2, log=lambda _: None)
    [path] = [p for p in tmp_path.glob("*/*-existing-venv.json")]
    failures = json.loads(path.read_text())["tape_vs_trace"]["failures"]
    assert list(failures) == [f"{STEP}-1"]
    assert [f["error"] for f in failures[f"{STEP}-1"]] == ["boom", "boom"]  # two runs, each once
    assert len({f["run"] for f in failures[f"{STEP}-1"]}) == 2
