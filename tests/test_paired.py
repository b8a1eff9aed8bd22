"""tape-vs-trace paired: which experiments exist on each device, how raw per-pass times become a row (paired ratio,
between-process intervals), the framework order between rounds, and the one-line failures of the CLI and writer.
No worker process is started: the workers' output is written by hand here."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from implementations import frameworks, workloads
from tape_vs_trace import cli, experiments, paired, paired_worker
from tape_vs_trace.experiments import BUDGETS, POLICIES, Experiment, PairedError, Point

SMALL = {"cpu": "L4-B4-S64-D128", "cuda": "L12-B8-S1024-D1024"}


def _remat(device: str, framework: str, mode: str, formulation: str, size: str | None = None) -> Experiment:
    [found] = [e for e in experiments.experiments(device) if e.name == f"remat {size or SMALL[device]} {framework} "
               f"{mode} {formulation}"]
    return found


def _policies(e: Experiment) -> tuple[str, ...]:
    return tuple(p.variant for p in e.points if p.budget is None)


# --- the experiments of each device --------------------------------------------------------------------------------


def test_cpu_curve_has_every_policy_and_the_budgets_where_they_apply() -> None:
    for framework, mode, formulation in (("torch", "eager", "unrolled"), ("jax", "eager", "unrolled"),
                                         ("jax", "compiled", "unrolled"), ("jax", "compiled", "scan")):
        e = _remat("cpu", framework, mode, formulation)
        assert _policies(e) == POLICIES, e.name
        assert all(p.budget is None for p in e.points), e.name
    compiled = _remat("cpu", "torch", "compiled", "unrolled")
    # remat_names has no torch.compile form (torch steps.grad_step refuses it); the budgets stand in for a policy.
    assert _policies(compiled) == tuple(p for p in POLICIES if p != "remat_names")
    budgets = [p for p in compiled.points if p.budget is not None]
    assert [p.budget for p in budgets] == list(BUDGETS) and len(BUDGETS) == 4
    assert all(p.variant == "plain" and p.mode == "compiled" for p in budgets)
    # A budget anywhere else would reach a framework or mode that refuses it (JAX, eager PyTorch).
    others = [e for e in experiments.experiments("cpu") if e.name != compiled.name]
    assert not any(p.budget is not None for e in others for p in e.points)


def test_cuda_adds_host_offload_and_the_cpu_has_none() -> None:
    cpu, cuda = experiments.experiments("cpu"), experiments.experiments("cuda")
    assert not any(p.variant == "remat_offload" for e in cpu for p in e.points)
    with_offload = {e.name for e in cuda if any(p.variant == "remat_offload" for p in e.points)}
    assert with_offload == {f"remat {SMALL['cuda']} torch eager unrolled",
                            f"remat {SMALL['cuda']} jax compiled unrolled"}
    # Otherwise the same curve: the points of each cuda experiment, offload left out, are those of its cpu twin.
    cpu, cuda = ([e for e in found if e.group == "remat"] for found in (cpu, cuda))
    assert len(cpu) == len(cuda)
    for a, b in zip(cpu, cuda):
        assert a.points == tuple(p for p in b.points if p.variant != "remat_offload"), b.name


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_experiment_can_be_built(device: str) -> None:
    found = experiments.experiments(device)
    # Raw results are keyed by experiment name: two with one name would overwrite each other's measurements.
    assert len({e.name for e in found}) == len(found)
    for e in found:
        # The GPU sizes never run on this machine: a misspelt one would fail only there.
        workloads.validate(e.workload, e.size)
        assert e.baseline.label == ("plain" if e.group == "remat" else e.points[0].label)
        features = frameworks.get(e.framework).engine_features
        assert all(p.feature in features for p in e.points if p.kind == "engine"), e.name
        assert len({p.label for p in e.points}) == len(e.points), e.name


def test_the_gpu_quick_profile_selects_the_small_depth_curve() -> None:
    # scripts/gpu_bench.sh runs `paired --only "remat L12-B8-S1024-D1024"`: the five formulations at the small
    # depth, not the L24 ones.
    chosen = paired.select("cuda", f"remat {SMALL['cuda']}")
    assert {(e.framework, e.mode, e.formulation) for e in chosen} == {
        ("torch", "eager", "unrolled"), ("torch", "compiled", "unrolled"), ("jax", "eager", "unrolled"),
        ("jax", "compiled", "unrolled"), ("jax", "compiled", "scan")}
    assert {e.size for e in chosen} == {SMALL["cuda"]}


def test_select_an_unknown_name_lists_the_experiments() -> None:
    with pytest.raises(PairedError) as error:
        paired.select("cpu", "no such experiment")
    message = str(error.value)
    assert "\n" not in message and message.startswith("no experiment matches 'no such experiment'")
    assert all(e.name in message for e in experiments.experiments("cpu"))


# --- from raw per-pass times to rows ------------------------------------------------------------------------------

EXPERIMENT = Experiment("remat tiny torch eager unrolled", "remat", "torch", "transformer", "tiny", "eager",
                        "unrolled", (Point("plain"), Point("remat_full", variant="remat_full")))
# Per process (3): per-pass seconds of the baseline, then of remat_full, in the same passes. Odd pass counts, so
# that a median is one pass's value. The median of the per-pass ratios differs from the ratio of the medians
# (process 1: 1.5 against 2.0 / 1.1), and the geometric mean of the medians from their arithmetic mean.
BASE = ([1.0, 1.2, 0.9, 1.1, 3.0], [2.0, 2.1, 1.9, 2.0, 2.2, 2.3, 1.8], [0.5, 0.6, 0.7, 0.5, 0.55])
POLICY = ([2.0, 1.8, 2.7, 1.1, 3.3], [2.2, 4.2, 3.8, 2.0, 2.2, 2.3, 3.6], [1.0, 0.6, 1.4, 0.75, 1.1])
COSTS = [{"saved_bytes": 100, "flops": 2.0, "peak_bytes": None, "cost_method": "m", "peak_method": "not measured: x"},
         {"saved_bytes": 40, "flops": 3.0, "peak_bytes": None, "cost_method": "m", "peak_method": "not measured: x"}]


def _raw() -> dict:
    processes = [{EXPERIMENT.name: {"times": [b, t], "calls": [1, 1]}} for b, t in zip(BASE, POLICY)]
    processes[0][EXPERIMENT.name]["costs"] = COSTS  # costs are taken in the first round only
    return {"torch": processes}


def _t_interval(values: list[float]) -> tuple[float, float]:
    """95 % Student-t interval of the mean log, back-transformed, written out."""
    logs = np.log(values)
    half = scipy.stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    return math.exp(logs.mean() - half), math.exp(logs.mean() + half)


def test_rows_are_geometric_means_of_process_medians_with_t_intervals() -> None:
    base_row, row = paired.rows([EXPERIMENT], _raw(), "cpu", "abcdef1234", "m")
    medians = [statistics.median(t) for t in POLICY]
    # Paired: per pass this point over the baseline of the same pass, a median per process, then between processes.
    ratios = [statistics.median([t / b for t, b in zip(ts, bs)]) for ts, bs in zip(POLICY, BASE)]
    assert ratios == [1.5, 1.1, 2.0] and medians == [2.0, 2.3, 1.0]
    assert row["time_s"] == pytest.approx(statistics.geometric_mean(medians), rel=1e-12)
    assert row["ratio"] == pytest.approx(statistics.geometric_mean(ratios), rel=1e-12)
    assert (row["time_ci_low"], row["time_ci_high"]) == pytest.approx(_t_interval(medians), rel=1e-12)
    assert (row["ratio_ci_low"], row["ratio_ci_high"]) == pytest.approx(_t_interval(ratios), rel=1e-12)
    assert (row["processes"], row["passes"], row["process_medians"]) == (3, 5, "2;2.3;1")
    assert (row["point"], row["variant"], row["baseline"], row["budget"]) == ("remat_full", "remat_full", "plain", "")
    # The baseline against itself: 1 in every pass, so exactly 1 with no spread.
    assert base_row["ratio"] == base_row["ratio_ci_low"] == base_row["ratio_ci_high"] == 1.0
    assert base_row["time_s"] == pytest.approx(statistics.geometric_mean([1.1, 2.0, 0.55]), rel=1e-12)
    # The first round's costs; a peak the memory method cannot see is an empty cell, not 'None'.
    assert (row["saved_bytes"], row["flops"], row["peak_bytes"]) == (40, 3.0, "")
    assert base_row["saved_bytes"] == 100


def test_written_csv_has_every_field(tmp_path: Path) -> None:
    table = paired.rows([EXPERIMENT], _raw(), "cpu", "abcdef1234", "m")
    path = paired.write(table, tmp_path / "out", "m", "abcdef1234")
    assert path == tmp_path / "out" / "m-abcdef12.csv"
    with path.open() as fh:
        reader = csv.DictReader(fh)
        read = list(reader)
    assert tuple(reader.fieldnames) == paired.FIELDS
    assert [r["point"] for r in read] == ["plain", "remat_full"] and read[1]["ratio"] == str(table[1]["ratio"])
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


# --- failures: one line, the old CSV whole ------------------------------------------------------------------------


def test_write_under_a_regular_file_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    with pytest.raises(PairedError) as error:
        paired.write([], blocker / "paired", "m", "abcdef1234")
    assert "\n" not in str(error.value) and str(error.value).startswith(f"cannot create {blocker / 'paired'}")
    assert blocker.read_text() == "not a folder"


def test_a_failed_write_leaves_the_old_csv_whole(tmp_path: Path) -> None:
    # A row the writer rejects half-way (a field FIELDS lacks): the old CSV must not have been opened for writing.
    old = paired.write(paired.rows([EXPERIMENT], _raw(), "cpu", "abcdef1234", "m"), tmp_path, "m", "abcdef1234")
    before = old.read_text()
    table = paired.rows([EXPERIMENT], _raw(), "cpu", "abcdef1234", "m")
    table[1]["unexpected"] = 1
    with pytest.raises(ValueError):
        paired.write(table, tmp_path, "m", "abcdef1234")
    assert old.read_text() == before


def test_an_unwritable_csv_is_one_line(tmp_path: Path) -> None:
    # The temporary file's name taken by a folder: as root, the nearest stand-in for a folder without write access.
    old = paired.write([], tmp_path, "m", "abcdef1234")
    (tmp_path / "m-abcdef12.csv.tmp").mkdir()
    with pytest.raises(PairedError) as error:
        paired.write([], tmp_path, "m", "abcdef1234")
    assert "\n" not in str(error.value) and old.read_bytes() == (",".join(paired.FIELDS) + "\r\n").encode()


@pytest.mark.parametrize(("args", "message"), [
    (["--rounds", "1"], "error: --rounds must be at least 2 (an interval needs two processes), not 1"),
    (["--only", "no such experiment"], "error: no experiment matches 'no such experiment'; experiments: "),
])
def test_cli_bad_input_is_one_line_and_starts_no_worker(args: list[str], message: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paired, "_run_worker", lambda *a: pytest.fail("a worker was started"))
    assert cli.main(["paired", "--out", str(tmp_path / "out"), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


# --- the runner: rounds of workers, the frameworks alternating ------------------------------------------------------


def test_rounds_alternate_the_framework_order(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = [_remat("cpu", "torch", "eager", "unrolled"), _remat("cpu", "jax", "compiled", "scan")]
    calls = []

    def fake_worker(framework: str, names: list[str], with_costs: bool, scratch: Path, index: int) -> dict:
        calls.append((framework, index, with_costs))
        # Each framework's processes run a step of their own speed: 1 ms per pass for PyTorch, 3 ms for JAX.
        scale = {"torch": 1e-3, "jax": 3e-3}[framework]
        return {name: {"times": [[scale * (1 + index)] * 5 for _ in next(e for e in chosen if e.name == name).points],
                       "calls": [1]} for name in names}

    monkeypatch.setattr(paired, "_run_worker", fake_worker)
    runs = paired.measure(chosen, rounds=3, log=lambda line: None)
    # Whichever framework ran second in a round runs first in the next: a machine that slows down over the run
    # would otherwise always favour the framework that goes first. Costs in the first round only.
    assert calls == [("torch", 0, True), ("jax", 0, True), ("jax", 1, False), ("torch", 1, False),
                     ("torch", 2, False), ("jax", 2, False)]
    table = paired.rows(chosen, runs, "cpu", "abcdef1234", "m")
    for row in table:
        scale = {"torch": 1e-3, "jax": 3e-3}[row["framework"]]
        assert row["processes"] == 3
        assert row["time_s"] == pytest.approx(scale * statistics.geometric_mean([1, 2, 3]), rel=1e-12)
        assert row["ratio"] == pytest.approx(1.0, rel=1e-12)


def test_which_steps_have_a_peak() -> None:
    # A peak only where the framework's memory method measures the step as timed: on a CPU, PyTorch's tracker cannot
    # see inside Inductor's kernels and op-by-op JAX has no buffer plan; on CUDA the allocators see every step but
    # op-by-op JAX's (its probe jits the step, which would be another program).
    have = {(f, m, d): not paired_worker._no_peak(f, m, d)
            for f in ("torch", "jax") for m in ("eager", "compiled") for d in ("cpu", "cuda")}
    assert have == {("torch", "eager", "cpu"): True, ("torch", "compiled", "cpu"): False,
                    ("jax", "eager", "cpu"): False, ("jax", "compiled", "cpu"): True,
                    ("torch", "eager", "cuda"): True, ("torch", "compiled", "cuda"): True,
                    ("jax", "eager", "cuda"): False, ("jax", "compiled", "cuda"): True}


# --- the stages: round 1 before asv, the others after it ------------------------------------------------------------


def _fake_worker(calls: list) -> object:
    def fake_worker(framework: str, names: list[str], with_costs: bool, scratch: Path, index: int) -> dict:
        calls.append((framework, index, with_costs))
        assert scratch.is_dir()
        scale = {"torch": 1e-3, "jax": 3e-3}[framework]
        found = {}
        for name in names:
            points = next(e for e in experiments.experiments("cpu") if e.name == name).points
            found[name] = {"times": [[scale * (1 + index) * (1 + j)] * 5 for j in range(len(points))],
                           "calls": [1] * len(points)}
            if with_costs:
                found[name]["costs"] = [dict(COSTS[0]) for _ in points]
        return found
    return fake_worker


@pytest.fixture
def staged(monkeypatch: pytest.MonkeyPatch) -> list:
    """A fake worker (its calls logged), this host named 'm', a CPU."""
    from tape_vs_trace import machine

    calls: list = []
    monkeypatch.setattr(paired, "_run_worker", _fake_worker(calls))
    monkeypatch.setattr(machine, "record", lambda: {"machine": "m"})
    monkeypatch.setattr(frameworks, "detect_device", lambda: "cpu")
    return calls


ONLY = "remat L4-B4-S64-D128"  # one torch and one jax experiment or more: both frameworks alternate


def _csv(path: Path) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_first_then_rest_gives_the_rows_of_one_stage(staged: list, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    kept = paired.run(tmp_path / "out", 3, ONLY, "first", raw)
    # Round 1 alone, costs taken, and no CSV yet.
    assert staged == [("torch", 0, True), ("jax", 0, True)]
    assert kept == raw / paired.FIRST_ROUND and not (tmp_path / "out").exists()
    staged.clear()
    split = _csv(paired.run(tmp_path / "out", 3, ONLY, "rest", raw))
    # The other rounds, the framework order still alternating, no costs taken again.
    assert staged == [("jax", 1, False), ("torch", 1, False), ("torch", 2, False), ("jax", 2, False)]
    staged.clear()
    whole = _csv(paired.run(tmp_path / "whole", 3, ONLY))
    assert len(staged) == 6 and split == whole
    assert {r["processes"] for r in split} == {"3"} and all(r["saved_bytes"] == "100" for r in split)
    assert {r["framework"] for r in split} == {"torch", "jax"}


def test_rest_without_a_first_round_is_one_line_and_starts_no_worker(staged: list, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    args = ["paired", "--only", ONLY, "--out", str(tmp_path / "out"), "--stage", "rest", "--raw", str(tmp_path / "r")]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert err == f"error: no first round in {tmp_path / 'r'}: run `tape-vs-trace paired --stage first` before " \
                  "--stage rest\n"
    assert staged == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("change", "message"), [
    (lambda kept: kept["what"].update(commit="0" * 40), f"was taken with commit '{'0' * 40}', this run has '"),
    (lambda kept: kept["what"].update(rounds=4), "was taken with rounds 4, this run has 3;"),
    (lambda kept: kept["what"].update(machine="other"), "was taken with machine 'other', this run has 'm';"),
    (lambda kept: kept["what"].update(device="cuda"), "was taken with device 'cuda', this run has 'cpu';"),
    (lambda kept: kept["what"]["experiments"].pop(), "was taken with experiments "),
    (lambda kept: kept["runs"].pop("jax"), "does not hold one process per framework;"),
    (lambda kept: kept["runs"]["torch"].append({}), "does not hold one process per framework;"),
    (lambda kept: kept.pop("what"), "cannot read the first round"),
])
def test_a_first_round_of_something_else_is_one_line(change: object, message: str, staged: list, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    import json

    raw = tmp_path / "raw"
    path = paired.run(tmp_path / "out", 3, ONLY, "first", raw)
    kept = json.loads(path.read_text())
    change(kept)
    path.write_text(json.dumps(kept))
    staged.clear()
    assert cli.main(["paired", "--only", ONLY, "--out", str(tmp_path / "out"), "--stage", "rest",
                     "--raw", str(raw)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: ") and err.count("\n") == 1, err
    assert err.rstrip().endswith("run `tape-vs-trace paired --stage first` again")
    assert staged == [] and not (tmp_path / "out").exists()


def test_a_corrupt_first_round_is_one_line(staged: list, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / paired.FIRST_ROUND).write_text("{not json")
    assert cli.main(["paired", "--only", ONLY, "--out", str(tmp_path / "out"), "--stage", "rest",
                     "--raw", str(tmp_path / "raw")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot read the first round {tmp_path / 'raw' / paired.FIRST_ROUND} "
                          "(JSONDecodeError: ") and err.count("\n") == 1, err
    assert staged == []


def test_a_stage_needs_its_folder(staged: list, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["paired", "--only", ONLY, "--out", str(tmp_path / "out"), "--stage", "first"]) == 1
    assert capsys.readouterr().err == "error: --stage first needs --raw, the folder that keeps the first round\n"
    assert staged == []


def test_first_clears_its_own_scratch_and_nothing_else(staged: list, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    raw = tmp_path / "raw"
    (raw / "scratch").mkdir(parents=True)
    (raw / "scratch" / "old-cache").write_text("x")
    (raw / "someone-else's").write_text("y")
    assert cli.main(["paired", "--only", ONLY, "--stage", "first", "--raw", str(raw)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[paired] round 1/3: torch (")
    assert out[-1] + "\n" == f"kept round 1 of 3 in {raw / paired.FIRST_ROUND}: `tape-vs-trace paired " \
                                      f"--stage rest --raw {raw}` takes the rest\n"
    assert not (raw / "scratch" / "old-cache").exists() and (raw / "someone-else's").read_text() == "y"


def test_make_bench_takes_round_1_before_asv_and_the_rest_after_it() -> None:
    recipe = (paired.ROOT / "Makefile").read_text().split("\nbench:", 1)[1].split("\n\n", 1)[0]
    first, asv, rest = (recipe.index(s) for s in ("paired --stage first", "asv run", "paired --stage $$rest"))
    assert first < asv < rest
    assert recipe.count("--raw $(PAIRED_RAW)") == 2


def _fake_venv(tmp_path: Path, fail_first: bool) -> tuple[Path, Path]:
    """A VENV for `make bench` whose tools log their arguments; its `tape-vs-trace paired --stage first` fails when
    asked to."""
    venv, log = tmp_path / "venv", tmp_path / "calls.log"
    (venv / "bin").mkdir(parents=True)
    (venv / ".installed-cpu").touch()  # newer than pyproject.toml: make skips the set-up
    for tool in ("tape-vs-trace", "asv", "python"):
        script = venv / "bin" / tool
        fail = 'case "$*" in *"--stage first"*) exit 3;; esac' if tool == "tape-vs-trace" and fail_first else ""
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\n{fail}\n'
                          + ('[ "$1" = machine ] && echo fake-machine\n' if tool == "tape-vs-trace" else "")
                          + "exit 0\n")
        script.chmod(0o755)
    return venv, log


@pytest.mark.parametrize("fail_first", [False, True])
def test_make_bench_runs_asv_even_when_the_first_round_fails(fail_first: bool, tmp_path: Path) -> None:
    import subprocess

    venv, log = _fake_venv(tmp_path, fail_first)
    done = subprocess.run(["make", "-s", "bench", "DEVICE=cpu", f"VENV={venv}", f"PAIRED_RAW={tmp_path / 'raw'}"],
                          cwd=paired.ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    calls = [line.split()[:4] for line in log.read_text().splitlines()]
    paired_calls = [c[3] for c in calls if c[:2] == ["tape-vs-trace", "paired"]]
    # Without its first round the runner takes every round after asv, and says so; asv runs either way.
    assert paired_calls == ["first", "all" if fail_first else "rest"]
    assert ["asv", "run"] in [c[:2] for c in calls]
    assert ("first round failed" in done.stdout) == fail_first
