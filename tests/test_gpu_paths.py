"""The GPU paths, as far as a CPU allows: the peak check's bounds, the GPU script's chunks, budget and copies (with
a fake asv and a fake nvidia-smi), the CUDA benchmark grid, and the offline set-up on a venv of a venv. What needs
CUDA itself is skipped without it, never faked."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from implementations import frameworks
from tape_vs_trace import gpucheck

ROOT = Path(__file__).resolve().parents[1]
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _load_script(name: str):
    """A plain-Python script of scripts/ as a module (registered first: dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


chunks = _load_script("gpu_chunks")


def test_bounds_need_the_saved_bytes() -> None:
    # A step that saves 1,000 bytes and returns 100: a peak of 500 above 50 resident bytes cannot be right.
    expected = gpucheck.bounds(resident=50, saved=1000, returned=100)
    assert (expected.lower, expected.upper) == (1050, 1150)
    assert gpucheck.verdict(550, expected, "torch.cuda.max_memory_allocated").startswith("FLAG: below")
    assert gpucheck.verdict(1100, expected, "torch.cuda.max_memory_allocated") == "ok"
    assert gpucheck.verdict(1151, expected, "jax peak_bytes_in_use").startswith("FLAG: above")


def test_an_upper_bound_is_an_error_and_never_printed() -> None:
    row = {"framework": "jax", "workload": "mlp", "size": "s", "peak_bytes": 12_345_678, "lower_bytes": 1,
           "upper_bytes": 99_999_999, "method": "jax memory_analysis (upper bound)"}
    row["verdict"] = gpucheck.verdict(row["peak_bytes"], gpucheck.Bounds(1, 99_999_999), row["method"])
    assert row["verdict"].startswith("error")
    text = "\n".join(gpucheck.format_rows([row]))
    assert "12,345,678" not in text and "12345678" not in text and "upper bound" in text


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_peak_check_measures_on_cpu(framework: str) -> None:
    row = gpucheck.measure(framework, "mlp", "64x256x1024", "cpu")
    assert row["method"] == frameworks.memory_method(framework, "cpu")
    # 64x256 input and two 256x1024 weights in float32; a gradient for each, and the float32 loss.
    assert row["resident_bytes"] == 4 * (64 * 256 + 2 * 256 * 1024)
    assert row["returned_bytes"] == row["resident_bytes"] + 4
    assert row["saved_bytes"] > 0
    assert row["lower_bytes"] == row["resident_bytes"] + max(row["saved_bytes"], row["returned_bytes"])
    assert row["workspace_bytes"] == 0  # CPU GEMMs take no library workspace from either allocator
    assert row["upper_bytes"] == row["resident_bytes"] + row["saved_bytes"] + row["returned_bytes"]
    assert row["verdict"] == "ok", row


def test_gpucheck_turns_preallocation_off_for_its_measurements(monkeypatch: pytest.MonkeyPatch) -> None:
    # XLA would otherwise take most of the GPU at start-up, and its allocator peak would be that, not the step's.
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "unset")  # remembers the value to restore afterwards
    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE")
    seen = []

    def fake_run(cmd, **kwargs):
        seen.append(os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"))
        row = {"framework": cmd[4], "workload": cmd[5], "size": cmd[6], "peak_bytes": 2, "lower_bytes": 1,
               "upper_bytes": 3, "method": "m", "verdict": "ok"}
        return subprocess.CompletedProcess(cmd, 0, json.dumps(row) + "\n", "")

    monkeypatch.setattr(gpucheck.subprocess, "run", fake_run)
    assert gpucheck.main(["--device", "cpu"]) == 0
    assert seen and set(seen) == {"false"}


def test_gpucheck_bad_framework_is_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.gpucheck", "--measure", "mxnet", "mlp", "s",
                           "--device", "cpu"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.startswith("error: unknown framework 'mxnet'")
    assert "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def cuda_grid() -> list[str]:
    """asv's benchmark names on a CUDA machine: discovery in a process where TVT_DEVICE=cuda."""
    code = ("import json, sys; sys.path.insert(0, 'scripts'); import gpu_chunks; "
            "print(json.dumps(gpu_chunks.discover()))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "TVT_DEVICE": "cuda", "PYTHONPATH": str(ROOT)})
    return json.loads(done.stdout)


def test_the_cuda_grid_is_discovered(cuda_grid: list[str]) -> None:
    classes = {name.split("(")[0].rsplit(".", 1)[0] for name in cuda_grid}
    assert {"recording.GradStep_transformer", "recording.GradStep_mlp"} <= classes
    assert any(c.startswith("remat.RematCost_mlp") for c in classes)
    assert all("'cuda')" in name for name in cuda_grid if "(" in name and "'cpu'" not in name)
    assert not any("'cpu')" in name for name in cuda_grid)
    assert any("'bfloat16'" in name for name in cuda_grid) and any("'tf32'" in name for name in cuda_grid)
    # The eager JAX LSTM at c1024 dispatches about 1e5 ops per step: minutes per process, no GPU measurement.
    assert any("lstm" in name.lower() for name in cuda_grid) and not any("c1024" in name for name in cuda_grid)


def test_quick_chunks_select_what_they_promise(cuda_grid: list[str]) -> None:
    picked = {c.name: sorted(set(chunks.select(c, cuda_grid))) for c in chunks.QUICK}
    assert all(picked.values()), {k: len(v) for k, v in picked.items()}
    for workload, formulation in (("mlp", ""), ("transformer", "'unrolled', ")):
        steps = picked[f"gradstep-{workload}-eager"]
        assert [n.split("(")[1].split(",")[0] for n in steps] == ["'jax'", "'torch'"]
        assert all(f"GradStep_{workload}." in n and f"'eager', {formulation}'float32', 'highest'" in n
                   for n in steps)
    precisions = picked["gradstep-eager-precisions"]
    assert len(precisions) == 8 and not any("'float32', 'highest'" in n or "'scan'" in n for n in precisions)
    assert {n.split("'eager', ")[1].split(", 'cuda'")[0] for n in precisions} == {
        "'float32', 'tf32'", "'bfloat16', 'highest'",
        "'unrolled', 'float32', 'tf32'", "'unrolled', 'bfloat16', 'highest'"}
    remat = picked["remat-costs"]
    assert {n.split("(")[0] for n in remat} == {"remat.RematCost_mlp.track_peak_bytes",
                                                "remat.RematCost_lstm.track_peak_bytes"}
    assert all("swiglu" in n and "'eager', 'float32', 'highest'" in n for n in picked["custom-swiglu"])
    assert not any("'compiled'" in n for names in picked.values() for n in names)


def test_quick_chunks_count_their_rounds_and_fit_the_budget_in_order(cuda_grid: list[str]) -> None:
    mlp = chunks.QUICK[0]
    # 2 frameworks x 2 rounds of a timed step, plus asv's discovery.
    assert len(chunks.select(mlp, cuda_grid)) == 4
    assert chunks.estimate(mlp, cuda_grid) == chunks.DISCOVERY_S + 4 * chunks.PROCESS_S["time"]
    # The three most cited chunks fit the quick budget after set-up at the planned costs; all six do not.
    spent = chunks.QUICK_RESERVE_S + sum(chunks.estimate(c, cuda_grid) for c in chunks.QUICK[:3])
    assert spent <= chunks.QUICK_BUDGET_S < spent + sum(chunks.estimate(c, cuda_grid) for c in chunks.QUICK[3:])
    assert all(chunks.estimate(c, cuda_grid) <= c.timeout_s for c in chunks.QUICK)


def test_full_profile_runs_every_benchmark_once(cuda_grid: list[str]) -> None:
    full = chunks.full(cuda_grid)
    covered = [n for c in full for n in chunks.select(c, cuda_grid)]
    assert sorted(covered) == sorted(cuda_grid)
    assert full[0].name.startswith("harness") and all(c.timeout_s >= chunks.FULL_MIN_TIMEOUT_S for c in full)
    with pytest.raises(ValueError, match="valid choices"):
        chunks.profile("medium", cuda_grid)


FAKE_ASV = r"""#!/usr/bin/env python3
# A stand-in for asv run: records what OUTDIR held when it started, then saves one result for its -b regex.
import json, os, pathlib, sys, time
args = sys.argv[1:]
regex, machine = args[args.index("-b") + 1], args[args.index("--machine") + 1]
out = pathlib.Path(os.environ["FAKE_OUT"])
seen = sorted(p.name for p in out.glob("*/*.json"))
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"regex": regex, "outdir": seen,
                          "attributes": [args[i + 1] for i, a in enumerate(args) if a == "-a"]}) + "\n")
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
if regex == os.environ.get("FAKE_HANG"):
    time.sleep(60)
folder = pathlib.Path("results") / machine
folder.mkdir(parents=True, exist_ok=True)
(folder / "machine.json").write_text("{}")
path = folder / "abcdef12-existing-py_fake_python.json"
data = json.loads(path.read_text()) if path.exists() else {
    "commit_hash": "abcdef12" * 5, "env_name": "existing-py_fake_python", "python": "3.12", "params": {},
    "result_columns": ["result", "params", "version"], "results": {}, "durations": {}, "version": 2}
data["results"][f"bench.{regex}"] = [[1.0], [["'torch'"]], "1"]
path.write_text(json.dumps(data))
"""
FAKE_TVT = r"""#!/usr/bin/env python3
# A stand-in for tape-vs-trace paired: logs its arguments (after the fake asv's lines), writes a CSV to --out.
import json, os, pathlib, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"tape-vs-trace": args}) + "\n")
time.sleep(float(os.environ.get("FAKE_PAIRED_SLEEP", "0")))
out = pathlib.Path(args[args.index("--out") + 1])
out.mkdir(parents=True, exist_ok=True)
(out / "gpu-nvidia-h200-abcdef12.csv").write_text("experiment,point\nremat,plain\n")
"""
FAKE_SMI = """#!/bin/sh
case "$1" in --query-gpu*) echo "NVIDIA H200, 143771 MiB, 580.65.06, 1980 MHz, 345 MHz, 9.0";;
*) echo "| Driver Version: 580.65.06   CUDA Version: 13.0 |";; esac
"""


def _gpu_script_copy(tmp_path: Path) -> tuple[Path, dict]:
    """The scripts in a git repository of their own (results land there, not here), fake asv and nvidia-smi."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "scripts", repo / "scripts")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "s"], cwd=repo, check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("asv", FAKE_ASV), ("nvidia-smi", FAKE_SMI), ("tape-vs-trace", FAKE_TVT)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    out = tmp_path / "out"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
           "TVT_PYTHON": sys.executable, "TVT_ASV": str(bin_dir / "asv"), "TVT_CLI": str(bin_dir / "tape-vs-trace"),
           "TVT_SETUP": "0", "TVT_CALIBRATE": "0",
           "TVT_PEAKCHECK": "0", "FAKE_OUT": str(out), "FAKE_LOG": str(tmp_path / "asv.log")}
    return repo, env


def _run_gpu_script(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(repo / "scripts" / "gpu_bench.sh"), env["FAKE_OUT"], *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow
def test_gpu_script_copies_results_after_every_chunk_and_survives_a_timeout(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_GPU_BENCHMARKS="alpha beta gamma", TVT_CHUNK_TIMEOUT_S="3", FAKE_HANG="beta")
    run = _run_gpu_script(repo, env, "full")
    assert run.returncode == 124, run.stdout[-2000:]
    calls = [json.loads(line) for line in (tmp_path / "asv.log").read_text().splitlines()]
    assert [c["regex"] for c in calls] == ["alpha", "beta", "gamma"]
    scrubbed = "abcdef12-existing-venv.json"
    assert calls[0]["outdir"] == [] and calls[1]["outdir"] == calls[2]["outdir"] == [scrubbed, "machine.json"]
    saved = json.loads((tmp_path / "out" / "gpu-nvidia-h200" / scrubbed).read_text())
    assert sorted(saved["results"]) == ["bench.alpha", "bench.gamma"]  # beta was killed: only it is lost
    log = (tmp_path / "out" / "log.txt").read_text()
    assert "chunk beta timed out after 3s" in log and "machine: gpu-nvidia-h200, profile: full" in log
    assert "CUDA graphs: torch_compile_mode default, xla_command_buffers on (XLA default)" in log
    assert saved["tape_vs_trace"]["graph_settings"]["torch_compile_mode"] == "default"


@pytest.mark.slow
def test_gpu_script_starts_no_chunk_past_the_budget(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_GPU_BENCHMARKS="one two three", TVT_BUDGET_S="24", FAKE_SLEEP="5",
               TVT_TORCH_COMPILE_MODE="reduce-overhead")
    start = time.monotonic()
    run = _run_gpu_script(repo, env, "quick")
    assert time.monotonic() - start < 24 + 5
    assert run.returncode == 0, run.stdout[-2000:]
    started = [json.loads(line)["regex"] for line in (tmp_path / "asv.log").read_text().splitlines()]
    assert started[0] == "one" and len(started) < 3
    assert f"time budget reached: not run: {' '.join(['one', 'two', 'three'][len(started):])}" in run.stdout
    # The CUDA-graph pairing reaches the log and the machine name the results are saved under.
    assert "CUDA graphs: torch_compile_mode reduce-overhead, xla_command_buffers on (XLA default)" in run.stdout
    assert (tmp_path / "out" / "gpu-nvidia-h200-torch-reduce-overhead").is_dir()


@pytest.mark.slow
def test_gpu_quick_profile_runs_its_chunks_by_estimate_and_no_curve(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    # 100 s: only the chunks estimated under what is left start (inference-transformer, 50 s); the others would be
    # killed by the budget and lose their results, so they are not started at all.
    env.update(TVT_BUDGET_S="100")
    run = _run_gpu_script(repo, env, "quick")
    assert run.returncode == 0, run.stdout[-2000:]
    calls = [json.loads(line) for line in (tmp_path / "asv.log").read_text().splitlines()]
    assert [c["regex"] for c in calls] == [chunks.QUICK[4].regex]
    assert calls[0]["attributes"] == []  # a track_ chunk keeps its benchmarks' own rounds
    assert "time budget reached: not run: gradstep-mlp-eager gradstep-transformer-eager remat-costs " \
           "custom-swiglu gradstep-eager-precisions" in run.stdout
    assert "remat-curve" not in run.stdout


@pytest.mark.slow
def test_gpu_quick_profile_times_in_two_rounds(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_BUDGET_S="160")
    run = _run_gpu_script(repo, env, "quick")
    calls = [json.loads(line) for line in (tmp_path / "asv.log").read_text().splitlines()]
    assert calls[0] == {"regex": chunks.QUICK[0].regex, "outdir": [], "attributes": ["rounds=2"]}
    assert "estimate 110s, -a rounds=2" in run.stdout


@pytest.mark.slow
def test_gpu_full_profile_runs_the_remat_curve_after_the_chunks(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_GPU_BENCHMARKS="alpha", TVT_CURVE="1")
    run = _run_gpu_script(repo, env, "full")
    assert run.returncode == 0, run.stdout[-2000:]
    calls = [json.loads(line) for line in (tmp_path / "asv.log").read_text().splitlines()]
    assert calls[0]["regex"] == "alpha"
    assert calls[-1] == {"tape-vs-trace": ["paired", "--only", "remat L12-B8-S1024-D1024", "--rounds", "2", "--out",
                                           str(tmp_path / "out" / "paired")]}
    assert (tmp_path / "out" / "paired" / "gpu-nvidia-h200-abcdef12.csv").read_text().startswith("experiment,")
    assert "== remat-curve (timeout 3600s)" in run.stdout


@pytest.mark.slow
def test_gpu_remat_curve_has_its_own_timeout(tmp_path: Path) -> None:
    # A curve that overruns is killed, the run says so and fails; the asv chunks' results are kept.
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_GPU_BENCHMARKS="alpha", TVT_CURVE="1", TVT_PAIRED_TIMEOUT_S="2", FAKE_PAIRED_SLEEP="30")
    run = _run_gpu_script(repo, env, "full")
    assert run.returncode == 124, run.stdout[-2000:]
    assert "remat-curve timed out after 2s" in run.stdout
    assert not (tmp_path / "out" / "paired").exists()
    assert (tmp_path / "out" / "gpu-nvidia-h200" / "abcdef12-existing-venv.json").exists()


def test_gpu_script_refuses_a_machine_without_gpu(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "gpu_bench.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi: the refusal path does not apply")
    run = subprocess.run(["bash", str(script), str(tmp_path / "out")], capture_output=True, text=True,
                         env={"PATH": "/nonexistent:/usr/bin:/bin"}, timeout=60)
    assert run.returncode == 1
    assert "no NVIDIA GPU found" in run.stdout
    assert (tmp_path / "out" / "log.txt").read_text().count("no NVIDIA GPU found") == 1


def test_jax_cuda_plugin_follows_torch_cuda() -> None:
    jax_cuda = _load_script("jax_cuda")
    assert jax_cuda.jax_cuda_requirement("13.0", "0.11.2") == "jax[cuda13]==0.11.2"
    assert jax_cuda.jax_cuda_requirement("12.8", None) == "jax[cuda12]"
    for bad in (None, "11.8"):
        with pytest.raises(ValueError):
            jax_cuda.jax_cuda_requirement(bad, "0.11.2")


def _offline_machine(tmp_path: Path, also_missing: tuple[str, ...] = ()) -> tuple[Path, dict]:
    """The GPU machine's python3 is itself a venv with torch and jax; no network. Here: venv A of the base
    interpreter, the frameworks 'preinstalled' in A by a .pth to a folder of links into this test's own
    site-packages (without setuptools, pip, this project and `also_missing`), and a copy of this checkout without
    .git. Returns the copy and the environment to run the set-up in."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(tmp_path / "A")], check=True)
    links = tmp_path / "preinstalled"
    links.mkdir()
    [site] = [p for p in sys.path if p.endswith("site-packages") and Path(p, "torch").is_dir()]
    skip = ("setuptools", "_distutils_hack", "distutils-precedence", "pip", "__editable__", "tape_vs_trace",
            *also_missing)
    for entry in Path(site).iterdir():
        if not entry.name.startswith(skip):
            (links / entry.name).symlink_to(entry)
    [a_site] = (tmp_path / "A" / "lib").glob("python3*/site-packages")
    (a_site / "preinstalled.pth").write_text(f"{links}\n")
    copy = tmp_path / "copy"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    # An index that cannot answer: any attempt to reach one fails instead of downloading.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHON": str(tmp_path / "A" / "bin" / "python"),
           "DEVICE": "cpu", "TVT_WHEELS": str(tmp_path / "no-wheels"), "PIP_INDEX_URL": "http://127.0.0.1:9/",
           "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}
    return copy, env


def test_offline_setup_on_a_venv_of_a_venv(tmp_path: Path) -> None:
    copy, env = _offline_machine(tmp_path)
    setup = subprocess.run(["bash", "scripts/setup_offline.sh"], cwd=copy, capture_output=True, text=True,
                           env=env, timeout=120)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert (copy / ".venv" / ".installed-cpu").exists()
    venv_python = copy / ".venv" / "bin" / "python"
    probe = subprocess.run([str(venv_python), "-c", "import tape_vs_trace, importlib.util as u; "
                            "print(tape_vs_trace.__file__, u.find_spec('setuptools'))"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, check=True)
    assert probe.stdout.split() == [str(copy / "tape_vs_trace" / "__init__.py"), "None"]
    assert subprocess.run(["git", "branch", "--list", "main"], cwd=copy, capture_output=True, text=True,
                          check=True).stdout.strip().endswith("main")
    name = subprocess.run([str(copy / ".venv" / "bin" / "tape-vs-trace"), "machine"], cwd=copy, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()
    assert name.startswith("cpu-")
    smoke = subprocess.run([str(copy / ".venv" / "bin" / "asv"), "run", "--quick", "--dry-run", "-E",
                            f"existing:{venv_python}", "--machine", name, "-b", r"harness.*\('torch', 'raw'",
                            "--launch-method", "spawn"], cwd=copy, env=env, capture_output=True, text=True,
                           timeout=120)
    assert smoke.returncode == 0, smoke.stdout[-2000:] + smoke.stderr[-2000:]
    assert "harness.Overhead.time_step" in smoke.stdout and "failed" not in smoke.stdout


@requires_cuda
@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_cuda_peak_uses_the_allocator(framework: str) -> None:
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.gpucheck", "--measure", framework, "mlp",
                           "64x256x1024", "--device", "cuda"], capture_output=True, text=True, check=True)
    assert frameworks.memory_method(framework, "cuda") in done.stdout


# --- workspaces: counted inside the peak on both sides ---------------------------------------------------------------


class _FakeCachingAllocator:
    """torch.cuda's counters for a step that takes a 32-byte cuBLAS workspace at its first GEMM (kept until
    cleared, as cuBLAS keeps it per handle) and 100 bytes of temporaries."""

    def __init__(self) -> None:
        self.allocated = self.peak = 0
        self.workspace = False

    def alloc(self, nbytes: int) -> None:
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)

    def step(self) -> None:
        if not self.workspace:
            self.workspace = True
            self.alloc(32)
        self.alloc(100)
        self.allocated -= 100

    def clear(self) -> None:
        if self.workspace:
            self.workspace = False
            self.allocated -= 32

    def reset(self, device: object = None) -> None:
        self.peak = self.allocated


def test_torch_cuda_peak_counts_the_cublas_workspace_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    from implementations.torch import probe

    fake = _FakeCachingAllocator()
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: fake.allocated)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: fake.peak)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", fake.reset)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(probe, "_clear_gemm_workspaces", fake.clear)
    peak = probe._allocator_peak(fake.step, (), torch.device("cuda"))
    # The warm-up cached the workspace; it is freed before the baseline, so the measured call allocates it again.
    assert peak == probe.PeakBytes(132, "torch.cuda.max_memory_allocated", workspace_bytes=32)


def test_the_upper_bound_makes_room_for_the_counted_workspace() -> None:
    expected = gpucheck.bounds(resident=50, saved=1000, returned=100, workspace=32)
    assert (expected.lower, expected.upper) == (1050, 1182)
    assert gpucheck.verdict(1180, expected, "jax peak_bytes_in_use") == "ok"
    row = {"framework": "torch", "workload": "mlp", "size": "s", "peak_bytes": 1180, "lower_bytes": 1050,
           "upper_bytes": 1182, "workspace_bytes": 32, "method": "torch.cuda.max_memory_allocated", "verdict": "ok"}
    header, line = gpucheck.format_rows([row])
    assert line.split()[3:7] == ["1,050", "1,180", "1,182", "32"] and "workspace" in header


# --- CUDA graphs: torch.compile's mode and XLA's command buffers, recorded and applied ------------------------------


@pytest.mark.parametrize(("flags", "expected"), [
    ("", "on (XLA default)"),
    ("--xla_gpu_autotune_level=0", "on (XLA default)"),
    ("--xla_gpu_enable_command_buffer=", "off"),
    ("--xla_gpu_enable_command_buffer=FUSION,CUBLAS --xla_gpu_autotune_level=0", "FUSION,CUBLAS"),
    ("--xla_gpu_enable_command_buffer=FUSION --xla_gpu_enable_command_buffer=", "off"),
    ("--xla_gpu_enable_command_buffer_min_size=2", "on (XLA default)"),
])
def test_xla_command_buffers_follow_xla_flags(flags: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLA_FLAGS", flags)
    assert frameworks.xla_command_buffers() == expected
    assert frameworks.graph_settings()["xla_command_buffers"] == expected


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_the_torch_compile_mode_reaches_every_torch_compile(mode: str | None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from implementations import workloads
    from implementations.torch import probe, steps

    if mode is None:
        monkeypatch.delenv("TVT_TORCH_COMPILE_MODE", raising=False)
    else:
        monkeypatch.setenv("TVT_TORCH_COMPILE_MODE", mode)
    seen = []

    def fake_compile(fn, mode=None, **kwargs):
        seen.append(mode)
        return fn

    monkeypatch.setattr(torch, "compile", fake_compile)
    inputs = workloads.make_inputs("mlp", "tiny", "float32")
    steps.grad_step(inputs, "plain", "compiled")
    steps.forward_step(inputs, "plain", "compiled")
    fn, args = steps.grad_fn(inputs, "plain", "cpu")
    with probe.first_compiled_call(fn, *args):
        pass
    wanted = mode or "default"
    # first_compiled_call's first compile is the unrelated warm-up function (any mode); the step's own gets the knob.
    assert seen[:2] == [wanted, wanted] and seen[3:] == [wanted] and len(seen) == 4
    assert frameworks.graph_settings()["torch_compile_mode"] == wanted


def test_a_bad_torch_compile_mode_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TVT_TORCH_COMPILE_MODE", "max-speed")
        with pytest.raises(ValueError, match="valid choices: default, reduce-overhead"):
            frameworks.torch_compile_mode()
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.cli", "machine"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "HOME": str(tmp_path), "TVT_TORCH_COMPILE_MODE": "max-speed"})
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: unknown TVT_TORCH_COMPILE_MODE 'max-speed'")
    assert not (tmp_path / ".asv-machine.json").exists()


def test_asv_discovers_the_cuda_grid_that_the_chunks_select_from(tmp_path: Path, cuda_grid: list[str]) -> None:
    """asv's own discovery (`asv run --bench just-discover`) in an environment with TVT_DEVICE=cuda lists exactly
    the grid that gpu_chunks.discover() sees, so the chunks' regexes select from asv's names; with TVT_DEVICE=cpu
    it lists the CPU grid, which is not it."""
    asv = Path(sys.executable).with_name("asv")
    if not asv.exists():
        pytest.skip("asv is not installed beside this interpreter")
    machine_file = tmp_path / ".asv-machine.json"
    machine_file.write_text(json.dumps({"version": 1, "fake": {"machine": "fake", "os": "Linux", "arch": "x86_64",
                                                               "cpu": "c", "num_cpu": "1", "ram": "1"}}))

    def asv_names(device: str) -> set[str]:
        results = tmp_path / f"results-{device}"
        config = tmp_path / f"asv-{device}.json"
        config.write_text(json.dumps({
            "version": 1, "project": "tape-vs-trace", "repo": str(ROOT), "branches": ["HEAD"], "dvcs": "git",
            "environment_type": "existing", "launch_method": "spawn", "benchmark_dir": str(ROOT / "benchmarks"),
            "results_dir": str(results), "html_dir": str(tmp_path / "html"), "env_dir": str(tmp_path / "env")}))
        env = {**os.environ, "HOME": str(tmp_path), "TVT_DEVICE": device, "ASV_PYTHONPATH": str(ROOT)}
        done = subprocess.run([str(asv), "--config", str(config), "run", "--bench", "just-discover", "-E",
                               f"existing:{sys.executable}", "--machine", "fake"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        found = json.loads((results / "benchmarks.json").read_text())
        names = set()
        for name, info in found.items():
            if name == "version":
                continue
            combos = itertools.product(*info["params"]) if info["params"] else [()]
            names.update(f"{name}({', '.join(c)})" if c else name for c in combos)
        return names

    cuda = asv_names("cuda")
    assert cuda == set(cuda_grid)
    assert asv_names("cpu") != cuda


def _fake_wheel(folder: Path, dist: str, module: str) -> None:
    """A minimal pure-Python wheel of `dist` whose module says where it was installed from."""
    import base64
    import hashlib
    import zipfile

    info = f"{module}-0.0.1.dist-info"
    files = {f"{module}/__init__.py": "FROM_LOCAL_WHEEL = True\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.1\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip('=')},"
              f"{len(text.encode())}" for name, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    folder.mkdir(exist_ok=True)
    with zipfile.ZipFile(folder / f"{module}-0.0.1-py3-none-any.whl", "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


def test_offline_setup_installs_asv_from_local_wheels_only(tmp_path: Path) -> None:
    """A parent without asv: the set-up installs asv and asv-runner from TVT_WHEELS with pip --no-index (the index
    it is given cannot answer), and without the wheels it stops with one line."""
    copy, env = _offline_machine(tmp_path, also_missing=("asv",))
    missing = subprocess.run(["bash", "scripts/setup_offline.sh"], cwd=copy, capture_output=True, text=True,
                             env=env, timeout=180)
    assert missing.returncode == 1 and "Traceback" not in missing.stdout + missing.stderr
    assert "error: asv and asv-runner are missing and not installable from the wheels in" in missing.stdout
    wheels = tmp_path / "wheels"
    _fake_wheel(wheels, "asv", "asv")
    _fake_wheel(wheels, "asv-runner", "asv_runner")
    setup = subprocess.run(["bash", "scripts/setup_offline.sh"], cwd=copy, capture_output=True, text=True,
                           env={**env, "TVT_WHEELS": str(wheels)}, timeout=180)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    venv_python = copy / ".venv" / "bin" / "python"
    probe = subprocess.run([str(venv_python), "-c", "import asv, asv_runner; print(asv.__file__, "
                            "asv.FROM_LOCAL_WHEEL, asv_runner.FROM_LOCAL_WHEEL)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True)
    path, *flags = probe.stdout.split()
    assert path.startswith(str(copy / ".venv")) and flags == ["True", "True"]
