"""tape_vs_trace.running.bench_clock: the runner's budget is make bench's goal less the time spent and the side steps'
last costs on this machine in this profile, the profile's own budget before any is recorded, never below the floor; a
step records its wall time and passes its status on."""

from __future__ import annotations

import sys

import pytest

from tape_vs_trace.running import bench_clock


def test_before_any_record_the_profiles_budget_stands(tmp_path) -> None:
    path = tmp_path / "clock.json"
    bench_clock.start(path, "m", "cited", now=1000.0)
    assert bench_clock.budget(path, 400.0, now=1030.0)[0] == 400.0


def test_the_budget_is_the_goal_less_time_spent_and_the_side_steps_last_costs(tmp_path) -> None:
    path = tmp_path / "clock.json"
    bench_clock.start(path, "m", "cited", now=1000.0)
    bench_clock.record_step(path, "first-step", 90.0)
    bench_clock.record_step(path, "report", 60.0)
    bench_clock.start(path, "m", "cited", now=5000.0)  # the next run reads the last run's costs
    seconds, why = bench_clock.budget(path, 400.0, now=5030.0)
    assert seconds == pytest.approx(bench_clock.GOAL_S - 30.0 - 150.0 * (1 + bench_clock.SIDE_MARGIN))
    assert "first-step 90 s" in why and "report 60 s" in why


def test_another_profiles_or_machines_costs_do_not_count(tmp_path) -> None:
    path = tmp_path / "clock.json"
    bench_clock.start(path, "m", "full", now=0.0)
    bench_clock.record_step(path, "distributed", 3000.0)
    for machine, profile in (("m", "cited"), ("other", "full")):
        bench_clock.start(path, machine, profile, now=100.0)
        assert bench_clock.budget(path, 400.0, now=100.0)[0] == 400.0


def test_the_budget_never_falls_below_the_floor_and_a_profile_without_one_has_none(tmp_path) -> None:
    path = tmp_path / "clock.json"
    bench_clock.start(path, "m", "cited", now=0.0)
    bench_clock.record_step(path, "saved", bench_clock.GOAL_S)
    assert bench_clock.budget(path, 400.0, now=10.0)[0] == bench_clock.MIN_BUDGET_S
    assert bench_clock.budget(path, None, now=10.0)[0] is None


def test_a_step_records_its_wall_time_and_returns_its_status(tmp_path) -> None:
    path = tmp_path / "clock.json"
    bench_clock.start(path, "m", "cited")
    command = [sys.executable, "-c", "import sys, time; time.sleep(0.2); sys.exit(3)"]
    assert bench_clock.run_step(path, "fails", command) == 3
    [(name, seconds)] = bench_clock._load(path)["steps"]["m cited"].items()
    assert name == "fails" and seconds >= 0.2


def test_the_command_line_prints_the_runners_option_and_refuses_bad_input(tmp_path, capsys) -> None:
    path = str(tmp_path / "clock.json")
    assert bench_clock.main([path, "start", "m", "cited"]) == 0
    assert bench_clock.main([path, "budget", "cited"]) == 0
    assert capsys.readouterr().out.strip() == "--budget 400"  # the cited profile's own, nothing recorded yet
    assert bench_clock.main([path, "budget", "full"]) == 0
    assert capsys.readouterr().out == ""  # no budget: every round runs
    for argv in ([path, "budget", "bogus"], [path, "step", "x"], [path, "tick"]):
        assert bench_clock.main(argv) == 2
        assert capsys.readouterr().err.startswith("error:")


def test_a_step_before_the_start_is_refused(tmp_path) -> None:
    with pytest.raises(bench_clock.ClockError, match="no start"):
        bench_clock.record_step(tmp_path / "clock.json", "x", 1.0)
