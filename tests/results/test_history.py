"""The runner's process layout of a result file's benchmark (tape_vs_trace.results.history.placement): recorded by the
runner, or derived for older files from their commit date against the commits that changed the layout."""

from __future__ import annotations

import json
from pathlib import Path

from tape_vs_trace.results import history

RECORDS = Path(__file__).parents[1] / "data" / "host_records"
GRAD = "recording.GradStep_mlp.time_step"
TRANSFORM = "transforms.TransformStep_mlp.time_step"
APART, SHARED = history.LAYOUTS[1], history.LAYOUTS[0]


def _worker(runs: dict | None = None, **extra) -> dict:
    return {"runner_of": {GRAD: "worker", TRANSFORM: "worker", "x.Asv.time_step": "asv"},
            "worker_runs": runs or {"profile": "cited"}, **extra}


def test_older_files_take_the_layout_of_their_commit_date() -> None:
    before, at = APART.author_date_ms - 1, APART.author_date_ms
    old = history.placement(_worker(), before, GRAD)
    assert old.words == SHARED.words
    assert old.source == "derived: its commit is dated before 7b3a82c3, which introduced the next layout"
    new = history.placement(_worker(), at, GRAD)
    assert new.words == APART.words
    assert new.source == "derived: its commit is dated on or after 7b3a82c3, which introduced it"
    # between the two changes the transforms' compiled combinations were apart too; since the second, with eager
    assert history.placement(_worker(), at, TRANSFORM).words == APART.words
    later = history.placement(_worker(), history.COMPILED_WITH_EAGER[1], TRANSFORM)
    assert later.words.startswith(APART.words) and later.words.endswith("which share the eager worker")
    assert history.placement(_worker(), history.COMPILED_WITH_EAGER[1], GRAD).words == APART.words


def test_asv_run_and_a_recorded_layout() -> None:
    assert history.placement(_worker(), 0, "x.Asv.time_step") == (history.ASV, "recorded by the runner")
    assert history.placement({}, 0, GRAD) == (history.ASV, "derived: the file names no runner, as asv run's files did "
                                                           "not")
    recorded = _worker({"layout": {"id": "worker-shared", "compiled_with_eager": []}})
    # the record wins over the date
    assert history.placement(recorded, APART.author_date_ms, GRAD) == (SHARED.words, "recorded by the runner")
    kept = _worker(earlier_runs=[{"benchmarks_kept": [GRAD], "worker_runs": {"layout": {"id": "worker-shared"}}}])
    assert history.placement(kept, APART.author_date_ms, GRAD).words == SHARED.words  # the earlier run's values


def test_the_committed_runs_of_the_issue() -> None:
    """f6m207's results at 0f953aff predate compiled combinations in processes of their own; f6m167's at 7b3a82c3
    and the AMD host's at 6f5e58d1 do not."""
    f6m207 = json.loads((RECORDS / "intel-xeon-f6m207-2c-0f953aff.json").read_text())
    assert history.placement(f6m207["tape_vs_trace"], f6m207["date"], GRAD).words == SHARED.words
    for name in ("intel-xeon-f6m167-2c-7b3a82c3.json", "amd-epyc-f25m17-2c-run-b-quiet.json"):
        record = json.loads((RECORDS / name).read_text())
        assert history.placement(record["tape_vs_trace"], record["date"], GRAD).words == APART.words


def test_the_runner_records_the_newest_layout(monkeypatch, tmp_path: Path) -> None:
    """tape-vs-trace run writes its layout into the result file, and it is the newest one history knows."""
    from tape_vs_trace.running import plan
    from tape_vs_trace.running import runner as suite_runner
    from tests.running.test_runner import _fake_clock

    assert plan.LAYOUT == history.LAYOUTS[-1].id
    _fake_clock(monkeypatch, seconds_per_process=1.0)
    done = suite_runner.run(tmp_path, [r"GradStep_mlp\.time_step"], rounds=1, log=lambda _: None)
    record = json.loads(done.path.read_text())
    layout = record["tape_vs_trace"]["worker_runs"]["layout"]
    copies = layout.pop("copies")
    assert f"{plan.COPY_SHARE:g} of the slowest group's cheapest wall, at most {plan.MAX_COPIES} in all" \
        in copies and f"once every such row has {plan.SPREAD_PROCESSES} processes, by cost alone before" in copies
    assert copies.endswith("a round's copies only while the round with them is expected to end within the budget")
    assert layout.pop("partial").startswith("under a budget, of the round that would not fit whole the processes "
                                            "that fit run")
    assert layout == {"id": plan.LAYOUT, "settings": [["highest", False]],
                      "compiled_with_eager": ["transforms.TransformStep_mlp.time_step"], "fresh_shared_by_point": []}
    assert history.placement(record["tape_vs_trace"], 0, GRAD) == (APART.words, "recorded by the runner")
    # combinations of two process-wide settings took processes apart: said where the run had them
    record["tape_vs_trace"]["worker_runs"]["layout"]["settings"].append(["tensorfloat32", False])
    assert history.placement(record["tape_vs_trace"], 0, GRAD).words == f"{APART.words}, {history.SETTINGS_APART}"
