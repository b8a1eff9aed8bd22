"""`tape-vs-trace distributed` (tape_vs_trace.side.distributed_run): a real tiny run through the command line (JAX, ddp,
compiled: the fastest launches), one row per combination with its interval across launches; a failing rank makes
its row failed with the reason and the run goes on; the CSV is written whole through a temporary file and merged
with the rows already there; bad input and uncommitted implementations/ are one line and a non-zero exit; the
plan of a machine of 0 to 8 GPUs (which N, sizes, backend and device), `--plan` and `--device`, and make bench's
default on CUDA machines of 1 and 2 GPUs. Without `--device` a test runs as on a machine without GPUs."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import subprocess
from pathlib import Path

import pytest

from implementations import rank_processes, workloads
from tape_vs_trace import cli
from tape_vs_trace.report import stats
from tape_vs_trace.side import distributed_plan, distributed_run
from tape_vs_trace.side.distributed_plan import Case, DistributedError

TINY = ["--frameworks", "jax", "--workloads", "mlp", "--forms", "ddp", "--modes", "compiled", "--size", "tiny",
        "--processes", "2", "--repeat", "2", "--device", "cpu"]
GPU_COUNT = distributed_plan.gpu_count  # the real one: the fixture below stands in a machine without GPUs


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("[distributed ")]


@pytest.fixture(autouse=True)
def no_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs as on a machine without GPUs, whatever this one has, unless it says otherwise."""
    monkeypatch.setattr(distributed_plan, "gpu_count", lambda: 0)


@pytest.fixture
def committed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measure the working tree as it is: the tests run in checkouts with edits."""
    monkeypatch.setattr(distributed_run, "uncommitted", lambda root=None: "")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, str, int]:
    """One real run through the command line: its CSV, its stderr (the progress lines) and its exit status."""
    out = tmp_path_factory.mktemp("distributed")
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
        mp.setattr(distributed_run, "uncommitted", lambda root=None: "")
        status = cli.main(["distributed", *TINY, "--out", str(out)])
    [path] = out.glob("*.csv")
    return path, err.getvalue(), status


def test_a_tiny_run_writes_one_row_per_combination(tiny_run) -> None:
    path, err, status = tiny_run
    assert status == 0
    rows = _rows(path)
    assert [(r["framework"], r["form"], r["mode"], r["ranks"], r["status"]) for r in rows] == [
        ("jax", "ddp", "compiled", "1", "ok"), ("jax", "ddp", "compiled", "2", "ok")]
    for r in rows:
        medians = [float(m) for m in r["launch_medians"].split(";")]
        assert (r["launches"], r["repeat"], r["warmup"], len(medians)) == ("2", "2", "1", 2)
        # the median of the per-launch medians, with Student's t across launches
        assert float(r["time_s"]) == pytest.approx(sum(medians) / 2, rel=1e-4)
        interval = stats.median_interval(medians)  # of the medians as written: 6 digits
        assert (float(r["time_ci_low"]), float(r["time_ci_high"])) == pytest.approx(interval, rel=1e-4)
        assert float(r["compile_s"]) > 0 and int(r["peak_bytes"]) > 0
        assert r["comm_bytes"] == r["analytic_bytes"] and r["mesh_shape"] == f"ranks={r['ranks']}"
        assert r["note"] == rank_processes.CPU_NOTE and path.name == f"{r['machine']}-{r['commit'][:8]}.csv"
        assert (r["device"], r["backend"]) == ("cpu", f"XLA CPU ({r['ranks']} devices of one process)")
    # a progress line per combination as it starts and as it ends
    assert sum("JAX mlp tiny ddp compiled N=" in line and "per step" in line for line in err.splitlines()) == 2
    assert _errors(err) == []


def test_a_failing_rank_fails_its_row_with_the_reason_and_the_run_goes_on(tmp_path: Path, committed,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys) -> None:
    monkeypatch.setenv(rank_processes.INJECT_ENV, "raise:0")
    assert cli.main(["distributed", *TINY, "--out", str(tmp_path)]) == 2
    [path] = tmp_path.glob("*.csv")
    rows = _rows(path)
    assert [r["status"] for r in rows] == ["failed", "failed"]  # both combinations were tried
    assert rows[1]["reason"] == ("launch 1 of 2: RankFailed: jax process of 2 devices failed: RuntimeError: "
                                 f"injected failure in worker 0 ({rank_processes.INJECT_ENV})")
    assert capsys.readouterr().out.strip().endswith("(2 failed row(s), each with its reason)")


def _row(ranks: int, status: str = "ok", time_s: float = 1.0) -> dict:
    return {f: "" for f in distributed_run.FIELDS} | {
        "framework": "jax", "workload": "mlp", "size": "tiny", "dtype": "float32", "variant": "plain", "form": "ddp",
        "mode": "compiled", "ranks": ranks, "status": status, "time_s": time_s, "reason": "" if status == "ok" else
        "launch 1 of 3: RankTimeout: jax process of 2 devices still running after 600 s: killed"}


def test_merge_replaces_a_combination_appends_a_new_one_and_keeps_ok_over_failed() -> None:
    said: list[str] = []
    old = [_row(1), _row(2)]
    merged = distributed_run.merge(old, [_row(2, time_s=2.0), _row(4), _row(1, "failed")], said.append)
    assert [(r["ranks"], r["status"], r["time_s"]) for r in merged] == [(1, "ok", 1.0), (2, "ok", 2.0),
                                                                          (4, "ok", 1.0)]
    assert len(said) == 1 and said[0].startswith("kept the earlier measurement of jax mlp tiny float32 plain ddp "
                                                 "compiled 1: this run's failed (launch 1 of 3: RankTimeout")


def test_merge_knows_a_combination_read_back_from_the_csv_by_its_row_key(tmp_path: Path) -> None:
    old = distributed_run.read(distributed_run.write([_row(2)], tmp_path / "m-01234567.csv"))  # ranks "2"
    assert [(r["ranks"], r["time_s"]) for r in distributed_run.merge(old, [_row(2, time_s=2.0)], [].append)] == [
        (2, 2.0)]
    assert distributed_run.combination(_row(2)) == distributed_run.combination(old[0])


def test_the_csv_is_replaced_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = distributed_run.write([_row(1)], tmp_path / "m-01234567.csv")
    before = path.read_bytes()

    def refuse(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(distributed_run.os, "replace", refuse)
    with pytest.raises(DistributedError, match=r"^cannot write .*m-01234567.csv: No space left on device$"):
        distributed_run.write([_row(1), _row(2)], path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert distributed_run.read(path)[0]["ranks"] == "1"


def test_a_file_that_is_not_ours_is_kept_not_merged(tmp_path: Path) -> None:
    foreign = tmp_path / "m-01234567.csv"
    foreign.write_text("a,b\n1,2\n")
    with pytest.raises(DistributedError, match="no column framework, workload"):
        distributed_run.read(foreign)


def test_a_row_is_the_median_of_launch_medians_with_the_interval_across_launches() -> None:
    records = [{"step_times_s": times, "first_call_s": first, "repeat": 3, "warmup": 1, "peak_bytes": None,
                "peak_method": "not measured: why", "collectives": None, "collectives_method": "none: why",
                "analytic_bytes": 8, "gradient_bytes": 4, "backend": "b", "bucket_cap_mb": None,
                "mesh_shape": {"ranks": 2}, "threads_per_rank": 1, "timing": "t", "note": "n",
                "compile_cache": "cold"}
               for times, first in (([1.0, 2.0, 9.0], 2.0), ([2.0, 4.0, 4.0], 1.0), ([3.0, 5.0, 1.0], 3.0))]
    r = distributed_run.row(Case("jax", "mlp", "tiny", "ddp", "eager", 2), records, "", ("c" * 40, "d"), "m")
    assert (r["time_s"], r["launch_medians"]) == (3.0, "2;4;3")
    low, high = stats.median_interval([2.0, 4.0, 3.0])
    assert (r["time_ci_low"], r["time_ci_high"]) == (low, high) and low < 3.0 < high
    assert r["compile_s"] == 2.0 and r["compile_launches"] == "2;1;3" and r["compile_ci_low"] < 2.0
    assert r["peak_bytes"] == "" and r["comm_bytes"] == "" and r["collectives"] == ""
    failed = distributed_run.row(Case("jax", "mlp", "tiny", "ddp", "eager", 2), [], "launch 1 of 3: X: y",
                                 ("c" * 40, "d"), "m")
    assert (failed["status"], failed["reason"], failed["time_s"]) == ("failed", "launch 1 of 3: X: y", "")


@pytest.mark.parametrize(("argv", "error"), [
    (["--ranks", "3"], "error: mlp 64x256x1024's batch of 64 does not split into 3 equal parts"),
    (["--ranks", "two"], "error: --ranks must be positive integers separated by commas, like 1,2,4, not 'two'"),
    (["--forms", "pipeline"], "error: unknown form 'pipeline'; valid choices: ddp, shard_map, fsdp"),
    (["--workloads", "gmm"], "error: unknown workload 'gmm'; valid choices: mlp, transformer"),
    (["--frameworks", "mlx"], "error: unknown framework 'mlx'; valid choices: torch, jax"),
    (["--processes", "1"], "error: --processes must be at least 2, not 1: the interval is formed across launches"),
    (["--repeat", "0"], "error: --repeat must be at least 1 and --warmup at least 0, not 0 and 1"),
    (["--size", "huge", "--workloads", "mlp"], "error: unknown size for mlp 'huge'; valid choices: tiny, "),
])
def test_bad_input_is_one_line_and_a_non_zero_exit(argv: list[str], error: str, tmp_path: Path, capsys) -> None:
    assert cli.main(["distributed", *argv, "--out", str(tmp_path)]) == 1
    lines = _errors(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith(error), lines
    assert list(tmp_path.iterdir()) == []


def test_uncommitted_implementations_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    repo = tmp_path / "repo"
    (repo / "implementations").mkdir(parents=True)
    (repo / "implementations" / "x.py").write_text("")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert distributed_run.uncommitted(repo) == "?? implementations/"
    monkeypatch.setattr(distributed_run, "uncommitted", lambda root=None: " M implementations/x.py")
    assert cli.main(["distributed", *TINY, "--out", str(tmp_path / "out")]) == 1
    assert _errors(capsys.readouterr().err) == [
        "error: commit implementations/ first: results are recorded under HEAD (1 uncommitted path(s) there)"]


def test_the_default_plan_is_the_grid_at_one_and_two_ranks() -> None:
    found = distributed_plan.plan()
    assert {(c.workload, c.size) for c in found} == {("mlp", "64x256x1024"), ("transformer", "L4-B4-S64-D128")}
    assert len(found) == 2 * 2 * 3 * 2 * 2 and {c.ranks for c in found} == {1, 2}
    assert {c.ranks for c in distributed_plan.plan(ranks="1,2,4")} == {1, 2, 4}


CPU_GRID = {("mlp", "64x256x1024"), ("transformer", "L4-B4-S64-D128")}
GPU_GRID = {("mlp", "512x1024x4096"), ("transformer", "L12-B8-S1024-D1024")}


@pytest.mark.parametrize(("gpus", "device", "ranks", "grid", "backends"), [
    (0, "cpu", {1, 2}, CPU_GRID, {"torch": "gloo", "jax": "XLA CPU"}),
    (1, "cpu", {1, 2}, CPU_GRID, {"torch": "gloo", "jax": "XLA CPU"}),  # one GPU: nothing to communicate with
    (2, "cuda", {1, 2}, GPU_GRID, {"torch": "nccl", "jax": "XLA GPU"}),
    (4, "cuda", {1, 2, 4}, GPU_GRID, {"torch": "nccl", "jax": "XLA GPU"}),
    (8, "cuda", {1, 2, 4, 8}, GPU_GRID, {"torch": "nccl", "jax": "XLA GPU"}),
])
def test_the_plan_of_a_machine_of_g_gpus(gpus: int, device: str, ranks: set, grid: set, backends: dict) -> None:
    found = distributed_plan.plan(gpus=gpus)
    assert {c.device for c in found} == {device} and {c.ranks for c in found} == ranks
    assert {(c.workload, c.size) for c in found} == grid == {
        (w, s) for w, sizes in workloads.runs(distributed_plan.FAMILY, device).items() for s in sizes}
    assert {c.framework: c.backend for c in found} == backends
    assert len(found) == 2 * 2 * 3 * 2 * len(ranks)  # frameworks x workloads x forms x modes x N


def test_the_cpu_can_be_chosen_on_gpus_and_the_ranks_cannot_outnumber_them() -> None:
    found = distributed_plan.plan(device="cpu", gpus=8)
    assert {c.device for c in found} == {"cpu"} and {c.ranks for c in found} == {1, 2}
    assert {(c.workload, c.size) for c in found} == CPU_GRID
    assert {c.ranks for c in distributed_plan.plan(ranks="2", gpus=2)} == {2}
    with pytest.raises(DistributedError, match="^N=4 needs 4 GPUs, one per rank; nvidia-smi -L lists 2$"):
        distributed_plan.plan(ranks="1,2,4", gpus=2)


@pytest.mark.parametrize("argv", [["--device", "cuda"], ["--device", "cuda", "--plan"]])
def test_cuda_without_two_gpus_is_refused_in_one_line(argv: list[str], tmp_path: Path, capsys) -> None:
    assert cli.main(["distributed", *argv, "--out", str(tmp_path)]) == 1
    assert _errors(capsys.readouterr().err) == ["error: --device cuda needs at least 2 GPUs; nvidia-smi -L lists 0"]
    assert list(tmp_path.iterdir()) == []


def test_plan_prints_the_rows_and_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(distributed_plan, "gpu_count", lambda: 4)
    monkeypatch.setattr(distributed_run, "measure", lambda *_: pytest.fail("--plan ran a step"))
    assert cli.main(["distributed", "--plan", "--workloads", "mlp", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "torch mlp 512x1024x4096 ddp eager N=1 nccl cuda"
    assert "jax mlp 512x1024x4096 fsdp compiled N=4 XLA GPU cuda" in lines
    assert lines[-1] == f"{2 * 3 * 2 * 3} rows (cuda)" and len(lines) == 2 * 3 * 2 * 3 + 1
    assert list(tmp_path.iterdir()) == []


def _fake_nvidia_smi(folder: Path, gpus: int) -> dict[str, str]:
    """An environment whose PATH finds an nvidia-smi that lists `gpus` GPUs, as `nvidia-smi -L` prints them."""
    folder.mkdir(exist_ok=True)
    script = folder / "nvidia-smi"
    lines = "".join(f"echo 'GPU {i}: NVIDIA H200 (UUID: GPU-{i:08d})'\n" for i in range(gpus))
    script.write_text(f"#!/bin/sh\n{lines}")
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize("gpus", [0, 1, 2, 8])
def test_gpu_count_is_the_gpus_nvidia_smi_lists(gpus: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path / "bin", gpus)["PATH"])
    assert GPU_COUNT() == gpus
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no nvidia-smi at all
    assert GPU_COUNT() == 0


def _bench_recipe(*assignments: str, device: str = "cpu", env: dict[str, str] | None = None) -> str:
    """The shell `make bench` would run (make -n), with the given variable assignments."""
    done = subprocess.run(["make", "-n", "bench", f"DEVICE={device}", *assignments], cwd=distributed_run.ROOT,
                          capture_output=True, text=True, check=True, timeout=60, env=env)
    return done.stdout


def test_make_bench_on_cpu_runs_the_cited_profile_without_the_distributed_steps_unless_asked() -> None:
    recipe = _bench_recipe()
    assert "tape-vs-trace run --machine" in recipe and "--profile cited" in recipe and "--rounds" not in recipe
    assert "tape-vs-trace distributed" not in recipe and "skipped the distributed steps" in recipe
    assert "--profile cited --rounds 7" in _bench_recipe("ROUNDS=7")
    assert "tape-vs-trace distributed --out results/distributed" in _bench_recipe("DISTRIBUTED=1")


def test_make_bench_on_a_cuda_machine_runs_the_full_profile(tmp_path: Path) -> None:
    assert "--profile full" in _bench_recipe(device="cuda", env=_fake_nvidia_smi(tmp_path, 1))


def test_make_bench_runs_the_distributed_steps_before_the_report_unless_told_not_to() -> None:
    recipe = _bench_recipe("PROFILE=full", "DISTRIBUTED_ARGS=--ranks 1,2,4")
    divide, steps, report = (recipe.index(s) for s in
                             ("paired --results results", "tape-vs-trace distributed --out results/distributed "
                              "--ranks 1,2,4", "tape-vs-trace report"))
    assert divide < steps < report
    skipped = _bench_recipe("PROFILE=full", "DISTRIBUTED=0")
    assert "tape-vs-trace distributed" not in skipped and "skipped the distributed steps" in skipped


@pytest.mark.parametrize("gpus", [0, 1])
def test_make_bench_on_a_cuda_machine_of_one_gpu_leaves_the_cpu_ranks_out_unless_asked(gpus: int,
                                                                                      tmp_path: Path) -> None:
    env = _fake_nvidia_smi(tmp_path, gpus)
    assert "tape-vs-trace distributed" not in _bench_recipe(device="cuda", env=env)
    assert "tape-vs-trace distributed --out results/distributed" in _bench_recipe("DISTRIBUTED=1", device="cuda",
                                                                                  env=env)


@pytest.mark.parametrize("gpus", [2, 8])
def test_make_bench_on_a_machine_of_two_gpus_runs_the_distributed_steps_on_them(gpus: int, tmp_path: Path) -> None:
    env = _fake_nvidia_smi(tmp_path, gpus)
    assert "tape-vs-trace distributed --out results/distributed" in _bench_recipe(device="cuda", env=env)
    assert "skipped the distributed steps" in _bench_recipe("DISTRIBUTED=0", device="cuda", env=env)
