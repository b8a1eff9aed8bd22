"""tape-vs-trace paired: which experiments exist on each device, how raw per-pass times become a row (paired ratio,
between-process intervals), the framework order between rounds, and the one-line failures of the CLI and writer.
No worker process is started: the workers' output is written by hand here."""

from __future__ import annotations

import csv
import itertools
import json
import math
import statistics
import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from implementations import experiments, frameworks, workloads
from implementations.experiments import BUDGETS, POLICIES, Experiment, Point
from tape_vs_trace import cli
from tape_vs_trace.results import asv_files
from tape_vs_trace.side import paired, paired_worker
from tape_vs_trace.side.paired import PairedError

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


def test_cli_bad_input_is_one_line_and_starts_no_worker(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paired, "_run_costs", lambda *a: pytest.fail("a worker was started"))
    assert cli.main(["paired", "--out", str(tmp_path / "out"), "--only", "no such experiment"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no experiment matches 'no such experiment'; experiments: ") and \
        err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_cli_without_results_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paired, "_run_costs", lambda *a: pytest.fail("a worker was started"))
    assert cli.main(["paired", "--out", str(tmp_path / "out"), "--results", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no results to pair: ") and "tape-vs-trace run" in err and err.count("\n") == 1


def test_the_curve_is_counted_by_the_suites_count_mixins_and_adds_no_asv_benchmark() -> None:
    from benchmarks import common, counts, remat

    cls = remat.curve_counts("transformer")
    assert issubclass(cls, counts._SavedBytes) and issubclass(cls, counts._PeakBytes)
    assert issubclass(cls, counts._Flops) and issubclass(cls, remat.RematCurve_transformer)
    assert cls.params == remat.RematCurve_transformer.params  # the timed combinations, point by point
    # Private, and built on request: asv and the cited profile's "*.track_*" never see it.
    assert cls.__name__.startswith("_") and cls not in common.suite_classes()
    assert not any("Counts" in c.__name__ for c in counts.counted_classes())


def test_a_curve_points_costs_are_the_count_mixins_counts() -> None:
    # One eager PyTorch point on this machine: the worker's costs are what the mixins' count_ methods give, and the
    # saved bytes those of the probe on the point's loss.
    from benchmarks import remat

    e = _remat("cpu", "torch", "eager", "unrolled")
    point = next(p for p in e.points if p.variant == "remat_full")
    found = paired_worker.costs(e, point, "cpu")
    fw = frameworks.load("torch", "highest", float64=False)
    inputs = workloads.program_of(workloads.make_inputs(e.workload, e.size, "float32"), attention=None)
    loss, args = fw.steps.loss_fn(inputs, "remat_full", "cpu", "unrolled")
    assert found["saved_bytes"] == fw.probe.saved_bytes(loss, *args).extra_bytes > 0
    assert found["cost_method"] == remat.EAGER_COSTS and found["flops"] > 0
    assert found["peak_bytes"] > 0 and found["peak_method"] == frameworks.memory_method("torch", "cpu")


# --- from tape-vs-trace run's samples to processes ---------------------------------------------------------------


def _result_file(chosen: list[Experiment], per_point, runner: str = "worker", drop: tuple = (),
                 omit: tuple = (), folder: Path | None = None) -> tuple[asv_files.ResultFile, dict]:
    """An asv result file (read) and benchmarks.json holding, for each point of `chosen`, the samples
    per_point(e, j) returns (a list of per-process lists), as tape-vs-trace run writes them; without the points
    `drop` names ((experiment, point index)) and the benchmarks `omit` names."""
    benchmarks: dict = {}
    results: dict = {}
    columns = ["result", "params", "version", "started_at", "duration", "samples"]
    for e in chosen:
        for point in e.points:
            name, params = experiments.asv_combination(e, point, "cpu")
            meta = benchmarks.setdefault(name, {"param_names": list(params), "params": [[] for _ in params],
                                                "repeat": 3, "type": "time"})
            for axis, value in zip(meta["params"], params.values()):
                if repr(value) not in axis:
                    axis.append(repr(value))
    for name, meta in benchmarks.items():
        combos = list(itertools.product(*meta["params"]))
        samples: list = [None] * len(combos)
        for e in chosen:
            for j, point in enumerate(e.points):
                n, params = experiments.asv_combination(e, point, "cpu")
                if n == name and (e.name, j) not in drop:
                    samples[combos.index(tuple(repr(v) for v in params.values()))] = \
                        [x for proc in per_point(e, j) for x in proc]
        if name not in omit:
            # a point without samples was not chosen: asv's NaN
            results[name] = [[math.nan if s is None else 1.0 for s in samples], meta["params"], "1", 0, 0, samples]
    data = {"commit_hash": "abcdef1234", "date": 0, "params": {"machine": "m"}, "python": "3.11", "requirements": {},
            "env_name": "existing-venv", "version": 2, "results": results, "result_columns": columns,
            "tape_vs_trace": {"runner_of": {n: runner for n in results}}}
    if folder is not None:  # kept, as the results folder's machine folder
        path = folder / "abcdef12-existing-venv.json"
        path.write_text(json.dumps(data))
        return asv_files.read(path), benchmarks
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "abcdef12-existing-venv.json"
        path.write_text(json.dumps(data))
        return asv_files.read(path), benchmarks


def test_result_file_reads_the_commits_result_file_and_benchmarks_json_of_the_folder(tmp_path: Path) -> None:
    # the pair make bench reads: <machine>/<commit8>-existing-venv.json and benchmarks.json beside the machines
    chosen = [_remat("cpu", "torch", "eager", "unrolled")]
    (tmp_path / "m").mkdir()
    _, benchmarks = _result_file(chosen, lambda *_: [[1.0] * 3] * 3, folder=tmp_path / "m")
    (tmp_path / "benchmarks.json").write_text(json.dumps({**benchmarks, "version": 2}))
    read, meta = paired.result_file(tmp_path, "m", "abcdef1234")
    assert read.commit == "abcdef1234" and read.path.parent.name == "m"
    assert {k: v for k, v in meta.items() if k != "version"} == benchmarks
    (tmp_path / "benchmarks.json").unlink()
    with pytest.raises(paired.PairedError, match="benchmarks.json is missing"):
        paired.result_file(tmp_path, "m", "abcdef1234")


def test_each_points_samples_split_into_its_processes_pass_by_pass() -> None:
    chosen = [_remat("cpu", "torch", "eager", "unrolled"), _remat("cpu", "jax", "compiled", "scan")]

    def per_point(e, j):  # process p, pass k of point j: a value that names all three
        return [[1 + j + 10 * p + 0.1 * k for k in range(3)] for p in range(4)]

    runs = paired.processes(chosen, *_result_file(chosen, per_point), "cpu")
    assert sorted(runs) == ["jax", "torch"] and all(len(v) == 4 for v in runs.values())
    for e in chosen:
        for p, process in enumerate(runs[e.framework]):
            times = process[e.name]["times"]
            assert times == [[1 + j + 10 * p + 0.1 * k for k in range(3)] for j in range(len(e.points))]


def test_rows_from_the_samples_pair_each_pass_with_the_baselines_same_pass() -> None:
    e = _remat("cpu", "torch", "eager", "unrolled")

    def per_point(_, j):  # the baseline's passes swing by 2x; every point is exactly 1.5x its pass's baseline
        return [[(1.0, 2.0, 1.0)[k] * (1.5 if j else 1.0) * (1 + p) for k in range(3)] for p in range(3)]

    runs = paired.processes([e], *_result_file([e], per_point), "cpu")
    table = paired.rows([e], runs, "cpu", "abcdef1234", "m")
    assert table[0]["ratio"] == pytest.approx(1.0)
    for row in table[1:]:
        assert row["ratio"] == pytest.approx(1.5, rel=1e-12)
        assert row["ratio_ci_low"] == pytest.approx(1.5) and row["ratio_ci_high"] == pytest.approx(1.5)
        assert row["processes"] == 3


def test_two_experiments_of_one_framework_in_different_numbers_of_processes_each_keep_their_own() -> None:
    # the eager curve's group copied in every round (6 processes), the compiled one's not (3)
    chosen = [_remat("cpu", "torch", "eager", "unrolled"), _remat("cpu", "torch", "compiled", "unrolled")]

    def per_point(e, j):
        return [[1.0 + j + p] * 3 for p in range(6 if e is chosen[0] else 3)]

    runs = paired.processes(chosen, *_result_file(chosen, per_point), "cpu")
    table = paired.rows(chosen, runs, "cpu", "abcdef1234", "m")
    assert {r["experiment"]: r["processes"] for r in table} == {chosen[0].name: 6, chosen[1].name: 3}
    first = [r for r in table if r["experiment"] == chosen[1].name][0]
    assert first["process_medians"] == "1;2;3"


def test_samples_of_another_runner_are_not_paired() -> None:
    e = _remat("cpu", "torch", "eager", "unrolled")
    data, benchmarks = _result_file([e], lambda *_: [[1.0] * 3] * 3, runner="asv")
    with pytest.raises(PairedError, match="measured by asv, not tape-vs-trace run"):
        paired.processes([e], data, benchmarks, "cpu")


def test_an_experiment_of_a_benchmark_the_run_left_out_says_it_was_not_run() -> None:
    e = _remat("cpu", "torch", "eager", "unrolled")
    curve = "remat.RematCurve_transformer.time_step"  # a profile without the remat curve
    data, benchmarks = _result_file([e], lambda *_: [[1.0] * 3] * 3, omit=(curve,))
    with pytest.raises(PairedError, match="was not run for this commit"):
        paired.processes([e], data, benchmarks, "cpu")


def test_a_point_without_samples_is_one_line_naming_it() -> None:
    e = _remat("cpu", "torch", "eager", "unrolled")
    data, benchmarks = _result_file([e], lambda *_: [[1.0] * 3] * 3, drop=((e.name, 2),))
    with pytest.raises(PairedError) as error:
        paired.processes([e], data, benchmarks, "cpu")
    assert f"point {e.points[2].label!r} has no samples in the results (not run: " in str(error.value)
    assert "\n" not in str(error.value)


def test_samples_that_do_not_split_into_processes_say_why_in_one_line() -> None:
    e = _remat("cpu", "torch", "eager", "unrolled")
    data, benchmarks = _result_file([e], lambda *_: [[1.0] * 3, [1.0] * 2])  # 5 samples, 3 a process
    with pytest.raises(PairedError) as error:
        paired.processes([e], data, benchmarks, "cpu")
    assert str(error.value).endswith("do not split into processes: 5 samples do not split into processes of 3")
    assert "\n" not in str(error.value)


def test_every_point_of_every_experiment_is_a_combination_of_the_suite() -> None:
    from benchmarks import common

    classes = {f"{c.__module__.rsplit('.', 1)[1]}.{c.__name__}": c for c in common.suite_classes()}
    for e in experiments.experiments(common.DEVICE):
        for point in e.points:
            name, params = experiments.asv_combination(e, point, common.DEVICE)
            cls = classes[name.rsplit(".", 1)[0]]
            assert list(params) == cls.param_names, name
            assert tuple(params.values()) in set(itertools.product(*cls.params)), (name, params)
            assert not cls().reason_to_skip(common.Case(params)), (name, params)


def test_make_bench_divides_the_runners_samples_after_the_run() -> None:
    recipe = (paired.ROOT / "Makefile").read_text().split("\nbench:", 1)[1].split("\n\n", 1)[0]
    run, scrub, divide = (recipe.index(s) for s in ("tape-vs-trace run", "scrub-results", "paired --results results"))
    assert run < scrub < divide and "--stage" not in recipe


def test_experiments_without_every_points_samples_are_left_out_and_named() -> None:
    whole, partial = _remat("cpu", "torch", "eager", "unrolled"), _remat("cpu", "jax", "compiled", "scan")
    data, benchmarks = _result_file([whole, partial], lambda *_: [[1.0] * 3] * 3, drop=((partial.name, 1),))
    lines: list[str] = []
    assert paired.available([whole, partial], data, benchmarks, "cpu", lines.append) == [whole]
    assert len(lines) == 1 and partial.name in lines[0] and "has no samples" in lines[0]
    with pytest.raises(PairedError, match="none of the 1 experiments"):
        paired.available([partial], data, benchmarks, "cpu", lambda _: None)


def test_the_remat_curve_has_fused_attention_compiled_in_the_loop_form_on_both_sides() -> None:
    fused = [e for e in experiments.experiments("cpu") if e.group == "remat" and e.attention == "fused"]
    first = workloads.runs("RematCurve", "cpu")["transformer"][0]
    assert {(e.framework, e.mode, e.formulation, e.size) for e in fused} == {
        ("torch", "compiled", "unrolled", first), ("jax", "compiled", "unrolled", first)}
    written = {e.framework: e for e in experiments.experiments("cpu") if e.group == "remat" and not e.attention
               and e.mode == "compiled" and e.formulation == "unrolled" and e.size == first}
    for e in fused:
        assert [p.variant for p in e.points] == [p.variant for p in written[e.framework].points if p.budget is None]
        name, params = experiments.asv_combination(e, e.points[0], "cpu")
        assert params["attention"] == "fused" and "fused attention" in e.name
        assert experiments.asv_combination(written[e.framework], e.points[0], "cpu")[1]["attention"] == "written"
