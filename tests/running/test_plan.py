"""tape-vs-trace run's plan: which process measures each combination in each round (rotation, alternation, fresh
processes, process-wide settings), how many rounds each takes, asv's selection rule, the profiles' selections, and the
budget rule for a later round. Uses the suite's discovery; no worker runs."""

from __future__ import annotations

import itertools
import math

import pytest

from implementations import workloads
from tape_vs_trace.running import plan as suite_plan
from tape_vs_trace.running.outcomes import Task


def _task(name: str, index: int, framework: str = "torch", rounds: int = 3, repeat: int = 5, kind: str = "time",
          fresh: bool = False) -> Task:
    return Task(name, index, framework, kind, rounds, repeat, fresh)


@pytest.fixture(scope="module")
def suite() -> tuple[list[dict], list[Task]]:
    benchmarks = suite_plan.discover(log=lambda _: None)
    return benchmarks, suite_plan.tasks(benchmarks, suite_plan.select(benchmarks, None), None)


# --- the plan ------------------------------------------------------------------------------------------------------


def test_each_round_rotates_the_benchmarks_and_their_combinations() -> None:
    chosen = [_task("m.A.time_step", i) for i in range(3)] + [_task("m.B.time_step", i) for i in range(2)]
    orders = [[t.id for t in suite_plan.round_plans(chosen, r)[0][1]] for r in range(3)]
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
    first = suite_plan.round_plans(chosen, 0)
    assert [(f, [t.id for t in b]) for f, b in first] == [
        ("torch", ["m.A.time_step-0"]), ("torch", ["m.C.time_compile_seconds-0"]),
        ("torch", ["m.C.time_compile_seconds-1"]), ("jax", ["m.A.time_step-1"])]
    assert [f for f, _ in suite_plan.round_plans(chosen, 1)][0] == "jax"


def test_the_phase_rows_of_one_compile_point_share_one_fresh_process_and_two_points_never_do(suite) -> None:
    benchmarks, chosen = suite
    by_name = {b["name"]: b for b in benchmarks}
    name = "recording.CompilePhases_chain.time_compile_phase"
    names = by_name[name]["param_names"]
    combos = list(itertools.product(*by_name[name]["params"]))

    def point(task: Task) -> tuple:
        return tuple(v for n, v in zip(names, combos[task.index], strict=True) if n != "phase")

    phase_rows = [t for t in chosen if t.name == name]
    plans = [[t for t in batch if t.name == name] for _, batch in suite_plan.round_plans(chosen, 0)]
    plans = [batch for batch in plans if batch]
    assert all(len({point(t) for t in batch}) == 1 for batch in plans)  # two points never share a process
    points = {point(t) for t in phase_rows}
    assert len(plans) == len(points) > 1  # one process per point, all its phase rows in it
    assert all(len(batch) == len(by_name[name]["params"][names.index("phase")]) for batch in plans)
    others = [b for _, b in suite_plan.round_plans(chosen, 0) if any(t.name == name for t in b)]
    assert all(len({t.name for t in b}) == 1 for b in others)  # nothing else in a point's process
    seconds = [b for _, b in suite_plan.round_plans(chosen, 0)
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
    chosen = suite_plan.tasks(benchmarks, {n: list(range(combos)) for n in names}, None)
    batches = [b for _, b in suite_plan.round_plans(chosen, 0)]
    assert len(batches) == combos
    assert all(sorted(t.name for t in b) == names and len({t.index for t in b}) == 1 for b in batches)


def test_compiled_combinations_share_a_process_of_their_own_in_every_round() -> None:
    chosen = [_task("m.A.time_step", 0, "torch"), Task("m.A.time_step", 1, "torch", "time", 3, 5, False, True),
              _task("m.A.time_step", 2, "jax"), Task("m.A.time_step", 3, "jax", "time", 3, 5, False, True)]
    first = [(f, [t.id for t in b]) for f, b in suite_plan.round_plans(chosen, 0)]
    assert first == [("torch", ["m.A.time_step-0"]), ("torch", ["m.A.time_step-1"]),
                     ("jax", ["m.A.time_step-2"]), ("jax", ["m.A.time_step-3"])]
    second = [(f, [t.id for t in b]) for f, b in suite_plan.round_plans(chosen, 1)]
    assert second == [("jax", ["m.A.time_step-3"]), ("jax", ["m.A.time_step-2"]),
                      ("torch", ["m.A.time_step-1"]), ("torch", ["m.A.time_step-0"])]


def test_combinations_of_other_process_wide_settings_never_share_a_process() -> None:
    chosen = [Task("m.A.time_step", i, "jax", "time", 3, 5, False, compiled, settings)
              for i, (compiled, settings) in enumerate([(False, ("highest", False)), (False, ("tf32", False)),
                                                        (True, ("highest", False)), (True, ("tf32", False)),
                                                        (False, ("highest", True)), (False, ("highest", False))])]
    for r in range(2):
        plans = suite_plan.round_plans(chosen, r)
        assert all(len({(t.compiled, t.settings) for t in batch}) == 1 for _, batch in plans)
        assert sorted(t.id for _, batch in plans for t in batch) == sorted(t.id for t in chosen)
        assert len(plans) == 5


def test_a_combination_s_process_wide_settings_come_from_its_precision_and_dtype(suite) -> None:
    benchmarks, _ = suite
    [bench] = [dict(b) for b in benchmarks if b["name"] == "recording.GradStep_mlp.time_step"]
    names = bench["param_names"]
    bench["params"] = [["'highest'", "'tf32'"] if n == "precision" else ["'float32'", "'float64'"] if n == "dtype"
                       else values for n, values in zip(names, bench["params"], strict=True)]
    found = suite_plan.tasks([bench], {bench["name"]: list(range(len(list(itertools.product(*bench["params"])))))},
                               None)
    combos = list(itertools.product(*bench["params"]))
    for task in found:
        params = dict(zip(names, (v.strip("'") for v in combos[task.index]), strict=True))
        assert task.settings == (params["precision"], params["dtype"] == "float64")
    assert len({t.settings for t in found}) == 4


def test_the_compiled_mode_combinations_go_apart_except_where_a_paired_ratio_spans_the_modes(suite) -> None:
    import itertools

    benchmarks, chosen = suite
    together = suite_plan.paired_across_modes("cpu")
    assert together == {"transforms.TransformStep_mlp.time_step"}  # compiling the gradient, the HVP: eager/compiled
    by_name = {b["name"]: b for b in benchmarks}
    for t in chosen:
        names = by_name[t.name]["param_names"]
        params = dict(zip(names, list(itertools.product(*by_name[t.name]["params"]))[t.index]))
        assert t.compiled == (params.get("mode") == "'compiled'" and t.name not in together), t.id
    assert any(t.compiled for t in chosen) and any(not t.compiled and t.kind == "time" for t in chosen)


def test_a_shared_group_is_copied_while_its_copies_fit_in_half_the_slowest_groups_wall() -> None:
    # the walls of one round on the noisy AMD host: PyTorch's compiled process, JAX's others, JAX's compiled, PyTorch's
    walls = {"torch compiled highest": 24.5, "jax others highest": 13.2, "jax compiled highest": 8.0,
             "torch others highest": 5.4}
    assert suite_plan.copies(walls) == {"torch compiled highest": 1, "jax others highest": 1,
                                        "jax compiled highest": 1, "torch others highest": 2}
    assert suite_plan.copies({"a": 24.0, "b": 6.0, "c": 6.1, "d": 12.0, "e": 12.1}) == {
        "a": 1, "b": 2, "c": 1, "d": 1, "e": 1}  # 2 x 6 = 12 fits in half of 24, 2 x 6.1 does not
    assert suite_plan.copies({"a": 100.0, "b": 1.0}) == {"a": 1, "b": suite_plan.MAX_COPIES}
    assert suite_plan.copies({}) == {} and suite_plan.copies({"a": 0.0}) == {}


def test_copies_go_to_the_group_whose_next_process_narrows_its_rows_most_per_second() -> None:
    walls = {"slow": 24.0, "noisy": 6.0, "steady": 4.0, "tiny rows": 2.0}
    spreads = {"slow": [(0.1, 3)] * 4, "noisy": [(0.2, 3)] * 5, "steady": [(0.01, 3)] * 5}
    # by cost the cheap steady group would get the copies; by spread the noisy one gets them, up to MAX_COPIES
    # within half the slowest wall (6 + 6 = 12), and a group with no row of 1 ms or more gets none
    assert suite_plan.copies(walls) == {"slow": 1, "noisy": 2, "steady": 3, "tiny rows": 3}
    assert suite_plan.spread_copies(walls, spreads) == {"slow": 1, "noisy": 3, "steady": 1, "tiny rows": 1}
    # the gain is per second: of two groups of one spread, the cheaper takes the copies that fit
    assert suite_plan.spread_copies({"slow": 20.0, "a": 8.0, "b": 2.0}, {"a": [(0.1, 3)], "b": [(0.1, 3)]}) == {
        "slow": 1, "a": 1, "b": 3}
    # no spread anywhere: nothing to narrow, no copies
    assert suite_plan.spread_copies(walls, {g: [(0.0, 5)] for g in walls}) == dict.fromkeys(walls, 1)


def test_copies_go_by_cost_until_every_row_has_enough_processes_for_its_spread() -> None:
    walls = {"slow": 24.0, "noisy": 6.0, "steady": 4.0}
    spreads = {"slow": [(math.nan, suite_plan.SPREAD_PROCESSES - 1)], "noisy": [(0.2, 3)] * 5,
               "steady": [(0.01, 3)] * 5}
    assert suite_plan.spread_copies(walls, spreads) == suite_plan.copies(walls)
    assert suite_plan.spread_copies(walls, {}) == suite_plan.copies(walls)
    assert suite_plan.spread_copies({}, spreads) == {}


def test_a_copied_group_runs_again_in_its_round_rotated_one_further_and_without_the_counts() -> None:
    chosen = [_task("m.A.time_step", 0), _task("m.A.time_step", 1), _task("m.B.time_step", 0),
              _task("m.C.track_bytes", 0, rounds=1, kind="track"), _task("m.A.time_step", 2, "jax")]
    plans = [(f, [t.id for t in b]) for f, b in suite_plan.round_plans(chosen, 0, {"torch others highest": 2})]
    assert plans == [
        ("torch", ["m.A.time_step-0", "m.A.time_step-1", "m.B.time_step-0", "m.C.track_bytes-0"]),
        ("torch", ["m.B.time_step-0", "m.A.time_step-1", "m.A.time_step-0"]),  # the count is taken once
        ("jax", ["m.A.time_step-2"])]
    assert suite_plan.group("torch", suite_plan.round_plans(chosen, 0)[0][1]) == "torch others highest"
    assert suite_plan.round_plans(chosen, 0, {"jax others highest": 1}) == suite_plan.round_plans(chosen, 0)
    fresh = [_task("m.D.time_compile_seconds", 0, fresh=True)]
    assert suite_plan.group("torch", fresh) == ""  # a fresh process is in no group, so never copied
    assert len(suite_plan.round_plans(fresh, 0, {"": 3})) == 1


def test_a_combination_runs_in_as_many_rounds_as_it_asks_and_counts_once() -> None:
    chosen = [_task("m.A.time_step", 0, rounds=5), _task("m.B.time_step", 0, rounds=3),
              _task("m.C.track_bytes", 0, rounds=1, kind="track")]
    per_round = [{t.id for _, b in suite_plan.round_plans(chosen, r) for t in b} for r in range(5)]
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
    chosen = suite_plan.tasks(benchmarks, suite_plan.select(benchmarks, None), 7)
    assert {t.rounds for t in chosen if t.kind == "time" and not t.fresh} == {7}
    own = {b["name"]: int(b.get("rounds", 1)) for b in benchmarks}
    fresh = [t for t in chosen if t.kind == "time" and t.fresh]
    assert fresh and all(t.rounds == own[t.name] for t in fresh)  # a cold compile's own count
    assert {t.rounds for t in chosen if t.kind == "track"} == {1}


def test_selection_follows_asvs_regex_rule(suite) -> None:
    benchmarks, _ = suite
    selection = suite_plan.select(benchmarks, [r"GradStep_mlp\.time_step\('jax'.*'compiled', 'matched'"])
    assert list(selection) == ["recording.GradStep_mlp.time_step"]
    [chosen] = suite_plan.tasks(benchmarks, selection, None)
    assert chosen.framework == "jax"


# --- the budget and the profiles ----------------------------------------------------------------------------------


def test_a_budget_never_cuts_the_first_rounds_and_expects_the_slowest_round_since_the_first() -> None:
    fits = suite_plan.next_round_fits
    assert fits(2, 1e6, [900.0, 10.0], 100.0) == (True, 10.0)  # the first MIN_ROUNDS always run
    assert fits(3, 70.0, [200.0, 20.0, 30.0], 100.0) == (True, 30.0)  # 70 + 30 fits; the cold first round ignored
    assert fits(3, 71.0, [200.0, 20.0, 30.0], 100.0) == (False, 30.0)
    assert fits(5, 1e6, [1.0, 1.0, 1.0], None)[0]  # no budget: every round
    assert fits(0, 0.0, [], 100.0) == (True, 0.0)


def test_a_rounds_copies_run_only_while_the_round_with_them_fits_the_budget() -> None:
    repeats, cheapest = {"jax others": 3, "torch others": 2}, {"jax others": 20.0, "torch others": 5.0}
    # 100 s spent, the round expected at 60 s, its copies 2 x 20 + 5 = 45 s more
    assert suite_plan.affordable(repeats, cheapest, 100.0, 60.0, 205.0) == repeats
    assert suite_plan.affordable(repeats, cheapest, 100.0, 60.0, 204.0) == {}  # a first round that overruns
    assert suite_plan.affordable(repeats, cheapest, 1e6, 60.0, None) == repeats  # no budget: as planned


def test_the_part_of_a_round_that_fits_keeps_the_rounds_order_and_leaves_out_what_has_no_known_wall() -> None:
    chosen = [_task("m.A.time_step", 0), _task("m.A.time_step", 1, "jax"),
              Task("m.B.time_step", 0, "jax", "time", 3, 5, False, True), _task("m.D.time_compile", 0, fresh=True)]
    plans = suite_plan.round_plans(chosen, 1)  # round 2: JAX first, its compiled process first; the fresh one last
    assert [suite_plan.group(f, b) for f, b in plans] == [
        "jax compiled highest", "jax others highest", "torch others highest", ""]
    walls = {"jax compiled highest": 20.0, "jax others highest": 8.0, "torch others highest": 5.0, "": 1.0}
    part = suite_plan.partial_round(plans, walls, 14.0)  # 20 s does not fit; 8 + 5 does, in the round's order
    assert [suite_plan.group(f, b) for f, b in part] == ["jax others highest", "torch others highest"]
    assert [suite_plan.group(f, b) for f, b in suite_plan.partial_round(plans, walls, 12.9)] == ["jax others highest"]
    assert [suite_plan.group(f, b) for f, b in suite_plan.partial_round(plans, walls, 33.0)] == [
        "jax compiled highest", "jax others highest", "torch others highest"]  # never the fresh process
    assert suite_plan.partial_round(plans, {"torch others highest": 0.0}, 100.0) == []  # no known cost: none
    assert suite_plan.partial_round(plans, walls, 4.9) == []


def test_a_profile_selects_by_rows_what_asvs_b_rule_selects_with_its_names(suite) -> None:
    # the grid is read once and selected by what its combinations are; asv's -b, given the chosen names as the GPU
    # chunks give them (names_regex), picks the same (tests/running/test_grid.py: every chunk)
    from tape_vs_trace.running import grid, profiles

    benchmarks, _ = suite
    combos = grid.combinations(benchmarks)
    for name in ("cited", "full"):
        selection = profiles.get(name).selection
        by_rows = suite_plan.select(benchmarks, None, selection)
        names = [c.name for c in profiles.select(selection or (profiles.rows("*"),), combos)]
        assert by_rows == suite_plan.select(benchmarks, [profiles.names_regex(names)]), name


def test_the_cited_profile_selects_the_headline_and_each_pillars_first_rows_and_leaves_the_rest(suite) -> None:
    from tape_vs_trace.running import profiles

    benchmarks, _ = suite
    cited = profiles.get("cited")
    for rows in cited.selection:  # every part of the profile selects something on this grid
        assert suite_plan.select(benchmarks, None, (rows,)), rows
    chosen = suite_plan.tasks(benchmarks, suite_plan.select(benchmarks, None, cited.selection), cited.rounds)
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
    assert modes["remat.RematCurve_transformer.time_step"] == {"'compiled'"}
    assert modes["custom_backward.CustomStep_swiglu.time_step"] == {"'eager'"}
    assert {t.rounds for t in chosen if t.kind == "time" and not t.fresh} == {cited.rounds}
    assert all(t.rounds == int(by_name[t.name].get("rounds", 1)) for t in chosen if t.fresh)  # a cold compile's own


def test_the_cited_profile_times_the_compiled_remat_curve_in_whole_experiments() -> None:
    """The curve a user compares, in the default CPU run: every point of the first size's torch.compile and
    jax.jit loop experiments (policies and memory budgets), and no stray point of another experiment, since
    `tape-vs-trace paired` draws only experiments whose every point was timed."""
    from implementations import experiments
    from tape_vs_trace.running import profiles

    timed = [dict(c.params) for c in profiles.select(profiles.get("cited").selection, profiles.combinations())
             if c.benchmark.startswith("remat.RematCurve_") and not c.skipped]
    curve = [e for e in experiments.experiments("cpu") if e.group == "remat"]

    def is_timed(e, p) -> bool:
        _, params = experiments.asv_combination(e, p, "cpu")
        return any(all(t.get(k) == v for k, v in params.items()) for t in timed)

    drawn = [e for e in curve if all(is_timed(e, p) for p in e.points)]
    assert sorted((e.framework, e.mode, e.formulation, e.attention) for e in drawn) == [
        ("jax", "compiled", "unrolled", ""), ("torch", "compiled", "unrolled", "")]
    assert {e.size for e in drawn} == {workloads.runs("RematCurve", "cpu")["transformer"][0]}
    assert {p.budget for e in drawn for p in e.points} >= set(experiments.BUDGETS)  # torch.compile's budgets too
    assert len(timed) == sum(len(e.points) for e in drawn)  # nothing timed that no drawn experiment uses


def test_an_unknown_profile_is_one_line_naming_the_valid_ones() -> None:
    from tape_vs_trace.running import profiles

    with pytest.raises(profiles.ProfileError, match=r"^unknown profile 'quick'; valid choices: cited, full$"):
        profiles.get("quick")
