"""The pre-flight (tape_vs_trace/running/preflight.py): each phase under its timeout and the whole under the budget,
with fake phases in real child processes (no framework); its file is what the planner (scripts/gpu_chunks.py) reads; bad
input is one line. The real phases, on this CPU, are a slow test."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tape_vs_trace.running import preflight, preflight_child

ROOT = Path(__file__).resolve().parents[2]
P = preflight.Phase

# A child whose phases sleep 0.1 s, except: FAKE_HANG's phase sleeps a minute, FAKE_RAISE's raises, FAKE_EXIT's
# ends the process with status 3; startup sleeps FAKE_STARTUP_S. It writes its pid to FAKE_PIDFILE, and each phase's
# to a file of the phase's name in FAKE_PIDS.
FAKE_CHILD = r"""
import os, sys, time
from tape_vs_trace.running import preflight

class Fake:
    def prepare(self, phase):
        pass

    def run(self, phase):
        if os.environ.get("FAKE_PIDFILE"):
            open(os.environ["FAKE_PIDFILE"], "w").write(str(os.getpid()))
        if os.environ.get("FAKE_PIDS"):
            open(os.path.join(os.environ["FAKE_PIDS"], phase.id.replace(":", "-")), "w").write(str(os.getpid()))
        if phase.id == os.environ.get("FAKE_HANG"):
            time.sleep(60)
        if phase.id == os.environ.get("FAKE_RAISE"):
            raise RuntimeError("no CUDA here")
        if phase.id == os.environ.get("FAKE_EXIT"):
            os._exit(3)
        time.sleep(float(os.environ.get("FAKE_STARTUP_S", "0.1")) if phase.kind == "startup" else 0.1)

preflight.run_child(sys.argv[1], sys.argv[2], Fake())
"""
PLAN = [P("startup"), P("inputs", "mlp", "s"), P("eager_build", "mlp", "s"), P("eager_step", "mlp", "s"),
        P("compile", "mlp", "s"), P("compiled_step", "mlp", "s"), P("inputs", "swiglu", "s2")]


def _measure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget_s: float, timeouts: dict | None = None,
             **fake: str) -> tuple[dict, float]:
    for name, value in fake.items():
        monkeypatch.setenv(f"FAKE_{name.strip('_').upper()}", value)
    start = time.monotonic()
    records = preflight.measure("torch", PLAN, start + budget_s, [sys.executable, "-c", FAKE_CHILD], tmp_path,
                                timeouts)
    return records, time.monotonic() - start


def test_a_warm_compile_runs_in_a_process_of_its_own(tmp_path, monkeypatch) -> None:
    """The warm compile reads the persistent caches the compile filled, not the compile's own process's caches."""
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    plan = [P("startup"), P("inputs", "mlp", "s"), P("compile", "mlp", "s"), P("compile_warm", "mlp", "s"),
            P("compile_warm", "transformer", "t")]
    records = preflight.measure("torch", plan, time.monotonic() + 20, [sys.executable, "-c", FAKE_CHILD], tmp_path)
    assert all("seconds" in records[p.id] for p in plan), records
    pid = {p.id: (pids / p.id.replace(":", "-")).read_text() for p in plan}
    assert pid["startup"] == pid["inputs:mlp"] == pid["compile:mlp"]
    assert len({pid["compile:mlp"], pid["compile_warm:mlp"], pid["compile_warm:transformer"]}) == 3


def test_a_hanging_phase_is_stopped_at_its_timeout_and_a_fresh_process_goes_on(tmp_path, monkeypatch) -> None:
    records, wall = _measure(tmp_path, monkeypatch, 20, {"compile": 1.0}, hang="compile:mlp")
    assert records["compile:mlp"]["not_timed"] == "timed out after 1 s"
    assert 1.0 <= records["compile:mlp"]["over_s"] < 2.0
    assert records["compiled_step:mlp"] == {"not_timed": "it needs compile:mlp, which was not timed", "over_s": 0.0}
    # the phase after them ran in a second process, and was timed
    assert 0.1 <= records["inputs:swiglu"]["seconds"] < 1.0
    assert all("seconds" in records[p.id] for p in PLAN[:4])
    assert wall < 10


def test_the_budget_stops_a_hanging_phase_and_what_comes_after(tmp_path, monkeypatch) -> None:
    records, wall = _measure(tmp_path, monkeypatch, 3, hang="eager_build:mlp")
    assert wall < 3 + 0.5  # the kill is at the deadline, not at the phase's own timeout
    assert records["eager_build:mlp"]["not_timed"] == "the budget ran out"
    assert records["eager_build:mlp"]["over_s"] > 2
    assert records["inputs:swiglu"] == {"not_timed": "the budget ran out before it started", "over_s": 0.0}
    assert {p.id for p in PLAN} == set(records)


def test_a_phase_that_raises_is_recorded_with_its_error_and_the_rest_go_on(tmp_path, monkeypatch) -> None:
    records, _ = _measure(tmp_path, monkeypatch, 20, raise_="eager_build:mlp")
    assert records["eager_build:mlp"]["not_timed"] == "it failed: RuntimeError: no CUDA here"
    assert records["eager_step:mlp"]["not_timed"] == "it needs eager_build:mlp, which was not timed"
    assert "seconds" in records["compile:mlp"] and "seconds" in records["inputs:swiglu"]


def test_a_process_that_dies_costs_its_phase_only(tmp_path, monkeypatch) -> None:
    records, _ = _measure(tmp_path, monkeypatch, 20, exit="inputs:mlp")
    assert records["inputs:mlp"]["not_timed"].startswith("its process ended (status 3) in it")
    assert records["compile:mlp"]["not_timed"] == "it needs inputs:mlp, which was not timed"
    assert "seconds" in records["inputs:swiglu"]


def test_startup_is_timed_from_the_spawn(tmp_path, monkeypatch) -> None:
    records, wall = _measure(tmp_path, monkeypatch, 20, startup_s="0.3")
    # the interpreter's own start comes on top of the phase's 0.3 s
    assert 0.3 < records["startup"]["seconds"] < wall


def test_a_slow_startup_is_stopped_at_its_timeout(tmp_path, monkeypatch) -> None:
    records, wall = _measure(tmp_path, monkeypatch, 20, {"startup": 1.0}, hang="startup")
    assert records["startup"]["not_timed"] == "timed out after 1 s"
    assert all(records[p.id]["not_timed"] == "it needs startup, which was not timed" for p in PLAN[1:])
    assert wall < 3


def test_the_file_is_what_the_planner_reads(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_HANG", "compile:mlp")
    fake = [sys.executable, "-c", FAKE_CHILD]
    result = preflight.preflight(4, "cuda", commands={"torch": fake, "jax": fake, "discovery": fake},
                                 plans={"torch": PLAN, "jax": PLAN, "discovery": [P("discovery")]})
    assert result["wall_s"] < 4
    assert set(result["frameworks"]) == {"torch", "jax"} and "seconds" in result["discovery"]
    assert result["sizes"] == {"mlp": "s", "swiglu": "s2"}
    path = tmp_path / "costs.json"
    preflight.write(result, path)
    spec = importlib.util.spec_from_file_location("gpu_chunks", ROOT / "scripts" / "gpu_chunks.py")
    chunks = sys.modules["gpu_chunks"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chunks)
    costs = chunks.Costs.load(path)
    assumed: set[str] = set()
    assert costs.get("eager_build", "jax", "mlp", assumed) == result["frameworks"]["jax"]["eager_build"]["mlp"][
        "seconds"]
    assert costs.get("startup", "torch", assumed=assumed) == result["frameworks"]["torch"]["startup"]["seconds"]
    assert not assumed
    over = result["frameworks"]["torch"]["compile"]["mlp"]["over_s"]
    assert costs.get("compile", "torch", "mlp", assumed) == max(over, chunks.DEFAULTS["compile"][("torch", "mlp")])
    assert assumed == {"torch compile mlp (not timed: the budget ran out)"}


def test_a_stopped_pre_flight_stops_its_children(tmp_path: Path) -> None:
    # gpu_bench.sh's `timeout` sends SIGTERM to the pre-flight; its children, in sessions of their own, go with it.
    pidfile = tmp_path / "child.pid"
    code = (f"import signal, sys\nfrom tape_vs_trace.running import preflight\n"
            f"signal.signal(signal.SIGTERM, preflight._stop_children)\n"
            f"fake = [sys.executable, '-c', {FAKE_CHILD!r}]\n"
            f"preflight.preflight(30, 'cuda', commands={{'torch': fake}},\n"
            f"                    plans={{'torch': [preflight.Phase('startup')]}})")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "FAKE_HANG": "startup", "FAKE_PIDFILE": str(pidfile)})
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    parent.terminate()
    _, stderr = parent.communicate(timeout=10)
    assert parent.returncode == 1 and stderr == f"error: the pre-flight was stopped (signal {signal.SIGTERM})\n"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_phases_follow_the_grid_and_put_the_compiles_last(monkeypatch: pytest.MonkeyPatch) -> None:
    from implementations import workloads

    monkeypatch.setenv("TVT_COMPILE_CACHE", "/tmp/caches")  # the warm compiles come last, where the caches are on
    warm = preflight.phases("cuda")
    assert [(p.kind, p.workload) for p in warm[-2:]] == [("compile_warm", w) for w in preflight_child.COMPILED]
    monkeypatch.delenv("TVT_COMPILE_CACHE")
    found = preflight.phases("cuda")
    assert found == warm[:-2]
    assert found[0] == P("startup")
    assert [p.kind for p in found[-4:]] == ["compile", "compiled_step"] * 2
    assert {p.workload for p in found if p.kind == "compile"} == set(preflight_child.COMPILED)
    for p in found[1:]:
        family = next(f for f, w in preflight_child.WORKLOADS if w == p.workload)
        assert p.size == workloads.spec(p.workload).runs(family, "cuda")[0]
    assert P("eager_step", "transformer", "L12-B8-S1024-D1024").needs() == [
        "startup", "eager_build:transformer", "inputs:transformer"]


@pytest.mark.parametrize(("args", "message"), [
    (["--budget-s", "1", "--out", "x.json"], "error: --budget-s must be between 5 and 600 s, not 1"),
    (["--out", "/nonexistent/dir/costs.json"], "error: --out /nonexistent/dir/costs.json: folder"),
    ([], "error: --out FILE is required"),
    (["--budget-s", "soon", "--out", "x.json"], "error: argument --budget-s: invalid float value: 'soon'"),
])
def test_bad_input_is_one_line(args: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.running.preflight", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.slow
def test_the_real_phases_on_this_cpu(tmp_path: Path) -> None:
    out = tmp_path / "costs.json"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.running.preflight", "--out", str(out), "--budget-s",
                           "60"], cwd=ROOT, capture_output=True, text=True, timeout=90,
                          env={**os.environ, "TVT_DEVICE": "cpu", "TVT_INPUT_CACHE": str(tmp_path / "inputs")})
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 60 + 5
    result = json.loads(out.read_text())
    assert result["device"] == "cpu" and result["sizes"]["mlp"] == "64x256x1024"
    for framework in ("torch", "jax"):
        entry = result["frameworks"][framework]
        assert "seconds" in entry["startup"] and "seconds" in entry["eager_step"]["mlp"], entry
    assert "seconds" in result["discovery"]
