"""tape-vs-trace run: which process measures each combination in each round (rotation, alternation, fresh
processes), one crash costing one combination, and the asv result file written after every round, which asv's own
API and the report read, with the runner recorded. Worker processes are faked here, but for the suite's discovery."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tape_vs_trace import machine, suite_results, suite_runner
from tape_vs_trace.report import load
from tape_vs_trace.suite_results import Outcome
from tape_vs_trace.suite_runner import Task


def _task(name: str, index: int, framework: str = "torch", rounds: int = 3, repeat: int = 5, kind: str = "time",
          fresh: bool = False) -> Task:
    return Task(name, index, framework, kind, rounds, repeat, fresh)


@pytest.fixture(scope="module")
def suite() -> tuple[list[dict], list[Task]]:
    benchmarks = suite_runner.discover(log=lambda _: None)
    return benchmarks, suite_runner.tasks(benchmarks, suite_runner.select(benchmarks, None), None)


# --- the plan ------------------------------------------------------------------------------------------------------


def test_each_round_rotates_the_benchmarks_and_their_combinations() -> None:
    chosen = [_task("m.A.time_step", i) for i in range(3)] + [_task("m.B.time_step", i) for i in range(2)]
    orders = [[t.id for t in suite_runner.round_plans(chosen, r)[0][1]] for r in range(3)]
    assert orders[0] == ["m.A.time_step-0", "m.A.time_step-1", "m.A.time_step-2", "m.B.time_step-0",
                         "m.B.time_step-1"]
    assert orders[1] == ["m.B.time_step-1", "m.B.time_step-0", "m.A.time_step-1", "m.A.time_step-2",
                         "m.A.time_step-0"]
    assert orders[2] == ["m.A.time_step-2", "m.A.time_step-0", "m.A.time_step-1", "m.B.time_step-0",
                         "m.B.time_step-1"]
    assert all(sorted(o) == sorted(orders[0]) for o in orders)  # every combination in every round, once


def test_frameworks_alternate_and_fresh_combinations_get_a_process_each() -> None:
    chosen = [_task("m.A.time_step", 0, "torch"), _task("m.A.time_step", 1, "jax"),
              _task("m.C.time_compile_seconds", 0, "torch", fresh=True),
              _task("m.C.time_compile_seconds", 1, "torch", fresh=True)]
    first = suite_runner.round_plans(chosen, 0)
    assert [(f, [t.id for t in b]) for f, b in first] == [
        ("torch", ["m.A.time_step-0"]), ("torch", ["m.C.time_compile_seconds-0"]),
        ("torch", ["m.C.time_compile_seconds-1"]), ("jax", ["m.A.time_step-1"])]
    assert [f for f, _ in suite_runner.round_plans(chosen, 1)][0] == "jax"


def test_the_phase_rows_of_one_compile_point_share_one_fresh_process_and_two_points_never_do(suite) -> None:
    benchmarks, chosen = suite
    by_name = {b["name"]: b for b in benchmarks}
    name = "recording.CompilePhases_chain.time_compile_phase"
    names = by_name[name]["param_names"]
    combos = list(itertools.product(*by_name[name]["params"]))

    def point(task: Task) -> tuple:
        return tuple(v for n, v in zip(names, combos[task.index], strict=True) if n != "phase")

    phase_rows = [t for t in chosen if t.name == name]
    plans = [[t for t in batch if t.name == name] for _, batch in suite_runner.round_plans(chosen, 0)]
    plans = [batch for batch in plans if batch]
    assert all(len({point(t) for t in batch}) == 1 for batch in plans)  # two points never share a process
    points = {point(t) for t in phase_rows}
    assert len(plans) == len(points) > 1  # one process per point, all its phase rows in it
    assert all(len(batch) == len(by_name[name]["params"][names.index("phase")]) for batch in plans)
    others = [b for _, b in suite_runner.round_plans(chosen, 0) if any(t.name == name for t in b)]
    assert all(len({t.name for t in b}) == 1 for b in others)  # nothing else in a point's process
    seconds = [b for _, b in suite_runner.round_plans(chosen, 0)
               if any(t.name.endswith("time_compile_seconds") for t in b)]
    assert seconds and all(len(b) == 1 for b in seconds)  # a fresh benchmark that shares nothing keeps one each


def test_a_cuda_peak_and_its_workspace_share_one_fresh_process_per_combination(monkeypatch) -> None:
    """Where peaks are fresh (CUDA), a combination's peak and workspace rows, which read one probe call, run in one
    fresh process, and two combinations never share one: no process is added for the workspace row."""
    from benchmarks import counts, remat

    for method in ("track_peak_bytes", "track_workspace_bytes"):
        monkeypatch.setattr(getattr(counts._PeakBytes, method), "fresh_process", True)
    cls = remat.RematCost_mlp
    names = [f"remat.RematCost_mlp.{m}" for m in ("track_peak_bytes", "track_workspace_bytes")]
    combos = len(list(itertools.product(*cls.params)))
    benchmarks = [{"name": n, "type": "track", "params": [[repr(v) for v in p] for p in cls.params],
                   "param_names": cls.param_names} for n in names]
    chosen = suite_runner.tasks(benchmarks, {n: list(range(combos)) for n in names}, None)
    batches = [b for _, b in suite_runner.round_plans(chosen, 0)]
    assert len(batches) == combos
    assert all(sorted(t.name for t in b) == names and len({t.index for t in b}) == 1 for b in batches)


def test_compiled_combinations_share_a_process_of_their_own_in_every_round() -> None:
    chosen = [_task("m.A.time_step", 0, "torch"), Task("m.A.time_step", 1, "torch", "time", 3, 5, False, True),
              _task("m.A.time_step", 2, "jax"), Task("m.A.time_step", 3, "jax", "time", 3, 5, False, True)]
    first = [(f, [t.id for t in b]) for f, b in suite_runner.round_plans(chosen, 0)]
    assert first == [("torch", ["m.A.time_step-0"]), ("torch", ["m.A.time_step-1"]),
                     ("jax", ["m.A.time_step-2"]), ("jax", ["m.A.time_step-3"])]
    second = [(f, [t.id for t in b]) for f, b in suite_runner.round_plans(chosen, 1)]
    assert second == [("jax", ["m.A.time_step-3"]), ("jax", ["m.A.time_step-2"]),
                      ("torch", ["m.A.time_step-1"]), ("torch", ["m.A.time_step-0"])]


def test_combinations_of_other_process_wide_settings_never_share_a_process() -> None:
    chosen = [Task("m.A.time_step", i, "jax", "time", 3, 5, False, compiled, settings)
              for i, (compiled, settings) in enumerate([(False, ("highest", False)), (False, ("tf32", False)),
                                                        (True, ("highest", False)), (True, ("tf32", False)),
                                                        (False, ("highest", True)), (False, ("highest", False))])]
    for r in range(2):
        plans = suite_runner.round_plans(chosen, r)
        assert all(len({(t.compiled, t.settings) for t in batch}) == 1 for _, batch in plans)
        assert sorted(t.id for _, batch in plans for t in batch) == sorted(t.id for t in chosen)
        assert len(plans) == 5


def test_a_combination_s_process_wide_settings_come_from_its_precision_and_dtype(suite) -> None:
    benchmarks, _ = suite
    [bench] = [dict(b) for b in benchmarks if b["name"] == "recording.GradStep_mlp.time_step"]
    names = bench["param_names"]
    bench["params"] = [["'highest'", "'tf32'"] if n == "precision" else ["'float32'", "'float64'"] if n == "dtype"
                       else values for n, values in zip(names, bench["params"], strict=True)]
    found = suite_runner.tasks([bench], {bench["name"]: list(range(len(list(itertools.product(*bench["params"])))))},
                               None)
    combos = list(itertools.product(*bench["params"]))
    for task in found:
        params = dict(zip(names, (v.strip("'") for v in combos[task.index]), strict=True))
        assert task.settings == (params["precision"], params["dtype"] == "float64")
    assert len({t.settings for t in found}) == 4


def test_the_compiled_mode_combinations_go_apart_except_where_a_paired_ratio_spans_the_modes(suite) -> None:
    import itertools

    benchmarks, chosen = suite
    together = suite_runner.paired_across_modes("cpu")
    assert together == {"transforms.TransformStep_mlp.time_step"}  # compiling the gradient, the HVP: eager/compiled
    by_name = {b["name"]: b for b in benchmarks}
    for t in chosen:
        names = by_name[t.name]["param_names"]
        params = dict(zip(names, list(itertools.product(*by_name[t.name]["params"]))[t.index]))
        assert t.compiled == (params.get("mode") == "'compiled'" and t.name not in together), t.id
    assert any(t.compiled for t in chosen) and any(not t.compiled and t.kind == "time" for t in chosen)


def test_a_combination_runs_in_as_many_rounds_as_it_asks_and_counts_once() -> None:
    chosen = [_task("m.A.time_step", 0, rounds=5), _task("m.B.time_step", 0, rounds=3),
              _task("m.C.track_bytes", 0, rounds=1, kind="track")]
    per_round = [{t.id for _, b in suite_runner.round_plans(chosen, r) for t in b} for r in range(5)]
    assert per_round[0] == {"m.A.time_step-0", "m.B.time_step-0", "m.C.track_bytes-0"}
    assert per_round[2] == {"m.A.time_step-0", "m.B.time_step-0"}
    assert per_round[3] == per_round[4] == {"m.A.time_step-0"}


def test_the_suite_plan_covers_every_combination_with_its_own_framework(suite) -> None:
    benchmarks, chosen = suite
    import itertools

    expected = {f"{b['name']}-{i}" for b in benchmarks
                for i in range(len(list(itertools.product(*b["params"]))) if b["params"] else 1)}
    assert {t.id for t in chosen} == expected
    by_name = {b["name"]: b for b in benchmarks}
    for t in chosen:
        params = list(itertools.product(*by_name[t.name]["params"]))[t.index]
        assert f"'{t.framework}'" in params, t.id
    compile_tasks = [t for t in chosen if t.name.endswith("time_compile_seconds")]
    assert compile_tasks and all(t.fresh for t in compile_tasks)  # a cold compile in a process of its own
    assert all(t.rounds == 1 for t in chosen if t.kind == "track")
    steps = [t for t in chosen if t.name == "recording.GradStep_transformer.time_step"]
    assert steps and all(t.rounds == 3 and t.repeat == 5 and not t.fresh for t in steps)


def test_rounds_overrides_the_timed_benchmarks_that_share_a_process(suite) -> None:
    benchmarks, _ = suite
    chosen = suite_runner.tasks(benchmarks, suite_runner.select(benchmarks, None), 7)
    assert {t.rounds for t in chosen if t.kind == "time" and not t.fresh} == {7}
    own = {b["name"]: int(b.get("rounds", 1)) for b in benchmarks}
    fresh = [t for t in chosen if t.kind == "time" and t.fresh]
    assert fresh and all(t.rounds == own[t.name] for t in fresh)  # a cold compile's own count
    assert {t.rounds for t in chosen if t.kind == "track"} == {1}


def test_selection_follows_asvs_regex_rule(suite) -> None:
    benchmarks, _ = suite
    selection = suite_runner.select(benchmarks, [r"GradStep_mlp\.time_step\('jax'.*'compiled', 'matched'"])
    assert list(selection) == ["recording.GradStep_mlp.time_step"]
    [chosen] = suite_runner.tasks(benchmarks, selection, None)
    assert chosen.framework == "jax"


# --- the budget and the profiles ----------------------------------------------------------------------------------


def test_a_budget_never_cuts_the_first_rounds_and_expects_the_slowest_round_since_the_first() -> None:
    fits = suite_runner.next_round_fits
    assert fits(2, 1e6, [900.0, 10.0], 100.0) == (True, 10.0)  # the first MIN_ROUNDS always run
    assert fits(3, 70.0, [200.0, 20.0, 30.0], 100.0) == (True, 30.0)  # 70 + 30 fits; the cold first round ignored
    assert fits(3, 71.0, [200.0, 20.0, 30.0], 100.0) == (False, 30.0)
    assert fits(5, 1e6, [1.0, 1.0, 1.0], None)[0]  # no budget: every round
    assert fits(0, 0.0, [], 100.0) == (True, 0.0)


def _fake_clock(monkeypatch, seconds_per_process: float) -> None:
    """perf_counter advanced only by the faked worker processes, each costing `seconds_per_process`."""
    now = [0.0]

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return now[0]

    def fake(batch, framework, caches, scratch, label, log, timeout):
        now[0] += seconds_per_process
        return {t.id: {"samples": [0.01] * t.repeat, "number": 1} for t in batch} | {"graphs": {}}

    monkeypatch.setattr(suite_runner, "time", Clock)
    monkeypatch.setattr(suite_runner, "measure_round", fake)
    monkeypatch.setattr(suite_runner, "_setup_caches", lambda *a: {})
    monkeypatch.setattr(machine, "write_asv_machine_file", lambda fields: None)


def test_a_budget_stops_the_run_before_the_round_that_would_not_fit_and_says_so(monkeypatch, tmp_path: Path) -> None:
    _fake_clock(monkeypatch, seconds_per_process=2.5)  # 4 a round: eager and compiled of torch and jax
    lines: list[str] = []
    done = suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step"], rounds=12, log=lines.append, budget=55.0,
                            profile="cited")
    record = json.loads(done.path.read_text())["tape_vs_trace"]["worker_runs"]
    assert record["rounds"] == 5 and record["rounds_planned"] == 12  # 5 x 10 s end at 50 s; a sixth would end at 60
    assert record["round_wall_s"] == [10.0] * 5
    assert record["stopped"] == "round 6 of 12 not started: about 10 s, 5 s of the 55 s budget left"
    assert record["profile"] == "cited" and record["budget_s"] == 55.0
    assert any(line == f"[run] {record['stopped']}" for line in lines)
    samples = json.loads(done.path.read_text())["results"]["recording.GradStep_mlp.time_step"]
    assert all(len(s) == 5 * 5 for s in samples[json.loads(done.path.read_text())["result_columns"].index("samples")])


def test_without_a_budget_every_planned_round_runs(monkeypatch, tmp_path: Path) -> None:
    _fake_clock(monkeypatch, seconds_per_process=1000.0)
    done = suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step"], rounds=4, log=lambda _: None)
    record = json.loads(done.path.read_text())["tape_vs_trace"]["worker_runs"]
    assert record["rounds"] == 4 and record["stopped"] is None and record["profile"] is None


def test_each_process_records_what_the_host_did_while_it_ran(monkeypatch, tmp_path: Path) -> None:
    """The runner reads /proc/stat around every worker: a process that ran while the hypervisor stole time is told
    apart from one whose framework was slow (host_load's shares of the ticks between the two readings)."""
    from tape_vs_trace import host_load

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


def test_the_cited_profile_selects_the_headline_and_each_pillars_first_rows_and_leaves_the_rest(suite) -> None:
    from tape_vs_trace import profiles

    benchmarks, _ = suite
    cited = profiles.get("cited")
    for regex in cited.bench:  # every regex of the profile selects something on this grid
        assert suite_runner.select(benchmarks, [regex]), regex
    chosen = suite_runner.tasks(benchmarks, suite_runner.select(benchmarks, list(cited.bench)), cited.rounds)
    names = {t.name for t in chosen}
    by_name = {b["name"]: b for b in benchmarks}
    # the headline's two measures, whole: every gradient step and every saved-bytes count
    assert {n for n in by_name if n.startswith("recording.GradStep_")} <= names
    assert {n for n in by_name if n.startswith("recording.GraphCost_") and n.endswith("track_saved_bytes")} <= names
    assert {n for n in by_name if ".track_" in n} <= names  # every count: one shared process counts them all anyway
    assert not any(n.endswith("time_compile_seconds") or n.startswith("transforms.TransformStep") for n in names)
    modes = {t.name: set() for t in chosen}
    import itertools

    for t in chosen:
        params = dict(zip(by_name[t.name]["param_names"], list(itertools.product(*by_name[t.name]["params"]))[t.index]))
        modes[t.name].add(params.get("mode"))
    assert modes["recording.GradStep_mlp.time_step"] == {"'eager'", "'compiled'"}
    assert modes["remat.RematCurve_transformer.time_step"] == {"'eager'"}
    assert modes["custom_backward.CustomStep_swiglu.time_step"] == {"'eager'"}
    assert {t.rounds for t in chosen if t.kind == "time" and not t.fresh} == {cited.rounds}
    assert all(t.rounds == int(by_name[t.name].get("rounds", 1)) for t in chosen if t.fresh)  # a cold compile's own


def test_an_unknown_profile_is_one_line_naming_the_valid_ones() -> None:
    from tape_vs_trace import profiles

    with pytest.raises(profiles.ProfileError, match=r"^unknown profile 'quick'; valid choices: cited, full$"):
        profiles.get("quick")


# --- a crashing worker ---------------------------------------------------------------------------------------------


def test_a_crash_fails_the_combination_in_progress_and_the_rest_run_in_a_new_worker(monkeypatch,
                                                                                    tmp_path: Path) -> None:
    batch = [_task("m.A.time_step", i) for i in range(4)]
    calls: list[list[str]] = []

    def fake(framework, left, caches, scratch, label, timeout):
        calls.append([t.id for t in left])
        if len(calls) == 1:  # dies in the third combination, after the first two were saved
            return ({"m.A.time_step-0": {"samples": [1.0], "number": 1},
                     "m.A.time_step-1": {"samples": [1.0], "number": 1},
                     "current": "m.A.time_step-2", "graphs": {}}, "worker exited with status -11: Segmentation fault")
        return {t.id: {"samples": [2.0], "number": 1} for t in left} | {"current": None, "graphs": {}}, ""

    monkeypatch.setattr(suite_runner, "run_worker", fake)
    lines: list[str] = []
    found = suite_runner.measure_round(batch, "torch", {}, tmp_path, "r0", lines.append)
    assert calls == [[t.id for t in batch], ["m.A.time_step-3"]]
    assert "status -11" in found["m.A.time_step-2"]["error"]
    assert found["m.A.time_step-3"] == {"samples": [2.0], "number": 1}
    assert any("m.A.time_step-2" in line for line in lines)


def test_a_worker_that_dies_before_any_combination_fails_its_batch_once(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(suite_runner, "run_worker", lambda *a: ({}, "worker exited with status 1: ImportError"))
    found = suite_runner.measure_round([_task("m.A.time_step", 0), _task("m.A.time_step", 1)], "jax", {},
                                       tmp_path, "r0", lambda _: None)
    assert found["m.A.time_step-0"]["error"].endswith("ImportError")
    assert found["m.A.time_step-1"]["error"].endswith("ImportError")


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
    monkeypatch.setattr(suite_runner, "_setup_caches", lambda *a: {})
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
    real worker processes, two rounds: no combination fails, and the file holds samples of both rounds."""
    monkeypatch.setattr(machine, "write_asv_machine_file", lambda fields: None)
    done = suite_runner.run(tmp_path, [r"GradStep_chain\.", r"GraphCost_chain\.track_saved_bytes"], rounds=2,
                            log=lambda _: None)
    assert done.failed == []
    data = json.loads(done.path.read_text())
    columns = data["result_columns"]
    steps = data["results"]["recording.GradStep_chain.time_step"]
    assert all(isinstance(s, list) and len(s) == 10 for s in steps[columns.index("samples")])
    saved = data["results"]["recording.GraphCost_chain.track_saved_bytes"][0]
    assert all(isinstance(v, (int, float)) and v > 0 for v in saved)
