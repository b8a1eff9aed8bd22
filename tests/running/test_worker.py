"""The worker of tape-vs-trace run: samples interleaved combination by combination with the order rotated every pass,
each combination's `repeat` samples, skips and failures recorded as asv records them, the output rewritten after
every benchmark, and TorchDynamo's recompile guard. The benchmarks are fakes with asv_runner's interface; one slow
test runs the real suite's compiled PyTorch combinations."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tape_vs_trace.running import worker as suite_worker
from tape_vs_trace.running.worker import Worker


class FakeBench:
    """asv_runner's Benchmark as the worker uses it: set_cache, do_setup (True: skipped), do_run, do_teardown."""

    setup_cache_key = None

    def __init__(self, name: str, log: list[str], skip: bool = False, fail_setup: bool = False,
                 fail_run_at: int | None = None, value: float | None = None, on_setup=None):
        self.name = name
        self.log = log
        self.skip = skip
        self.fail_setup = fail_setup
        self.fail_run_at = fail_run_at
        self.value = value
        self.on_setup = on_setup
        self.runs = 0
        self.setups = 0
        self.torn_down = False

    def set_cache(self, cache):
        self.cache = cache

    def do_setup(self):
        self.setups += 1
        if self.on_setup:
            self.on_setup()
        if self.fail_setup:
            raise RuntimeError("no such input")
        return self.skip

    def do_run(self):
        self.runs += 1
        self.log.append(self.name)
        if self.fail_run_at is not None and self.runs >= self.fail_run_at:
            raise ValueError("step failed")
        if self.value is not None:
            return self.value
        return {"samples": [0.001 * self.runs], "number": 1}

    def do_teardown(self):
        self.torn_down = True


def _plan(tasks: list[tuple[str, int, int, str]]) -> dict:
    return {"framework": "torch", "caches": {},
            "tasks": [{"name": n, "index": i, "repeat": r, "kind": k} for n, i, r, k in tasks]}


def test_samples_are_interleaved_with_the_order_rotated_every_pass(tmp_path: Path) -> None:
    log: list[str] = []
    benches = {f"a.B.time_step-{i}": FakeBench(f"a.B.time_step-{i}", log) for i in range(3)}
    worker = Worker(_plan([("a.B.time_step", i, 4, "time") for i in range(3)]), tmp_path / "out.json",
                    benches.__getitem__)
    worker.run()
    names = [n.rsplit("-", 1)[1] for n in log]
    assert names == ["0", "1", "2", "1", "2", "0", "2", "0", "1", "0", "1", "2"]
    found = json.loads((tmp_path / "out.json").read_text())
    for i in range(3):
        assert found[f"a.B.time_step-{i}"] == {"samples": [0.001, 0.002, 0.003, 0.004], "number": 1}
    assert all(b.torn_down for b in benches.values())


def test_each_combination_gets_its_own_repeat(tmp_path: Path) -> None:
    log: list[str] = []
    benches = {"a.B.time_step-0": FakeBench("a.B.time_step-0", log), "a.B.time_step-1": FakeBench("x", log)}
    worker = Worker(_plan([("a.B.time_step", 0, 2, "time"), ("a.B.time_step", 1, 5, "time")]),
                    tmp_path / "out.json", benches.__getitem__)
    worker.run()
    found = json.loads((tmp_path / "out.json").read_text())
    assert len(found["a.B.time_step-0"]["samples"]) == 2
    assert len(found["a.B.time_step-1"]["samples"]) == 5


def test_skips_failures_and_track_values_are_recorded(tmp_path: Path) -> None:
    log: list[str] = []
    benches = {
        "a.B.time_step-0": FakeBench("t0", log, skip=True),
        "a.B.time_step-1": FakeBench("t1", log, fail_setup=True),
        "a.B.time_step-2": FakeBench("t2", log, fail_run_at=2),
        "a.B.time_step-3": FakeBench("t3", log),
        "a.C.track_bytes-0": FakeBench("c0", log, value=1024),
    }
    worker = Worker(_plan([("a.B.time_step", i, 3, "time") for i in range(4)] + [("a.C.track_bytes", 0, 1, "track")]),
                    tmp_path / "out.json", benches.__getitem__)
    worker.run()
    found = json.loads((tmp_path / "out.json").read_text())
    assert "skip" in found["a.B.time_step-0"]
    assert "no such input" in found["a.B.time_step-1"]["error"]
    assert "step failed" in found["a.B.time_step-2"]["error"]  # a failure after samples voids the combination
    assert len(found["a.B.time_step-3"]["samples"]) == 3  # the others go on
    assert found["a.C.track_bytes-0"] == {"value": 1024}
    assert found["current"] is None


def test_a_track_body_that_raises_asvs_skip_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    """asv records a SkipNotImplemented from a benchmark's body as n/a (a method not measured where the class's
    others are: the CPU's GEMM workspace) and any other error there as a failure; so does the worker."""
    from asv_runner.benchmarks.mark import SkipNotImplemented

    class SkippedInBody(FakeBench):
        def do_run(self):
            raise SkipNotImplemented("no workspace on cpu")

    worker = Worker(_plan([("a.C.track_bytes", 0, 1, "track")]), tmp_path / "out.json",
                    {"a.C.track_bytes-0": SkippedInBody("c0", [])}.__getitem__)
    worker.run()
    assert json.loads((tmp_path / "out.json").read_text())["a.C.track_bytes-0"] == {"skip": "no workspace on cpu"}

    class FailedInBody(FakeBench):
        def do_run(self):
            raise NotImplementedError("not asv's skip")

    worker = Worker(_plan([("a.C.track_bytes", 0, 1, "track")]), tmp_path / "out.json",
                    {"a.C.track_bytes-0": FailedInBody("c0", [])}.__getitem__)
    worker.run()
    assert "not asv's skip" in json.loads((tmp_path / "out.json").read_text())["a.C.track_bytes-0"]["error"]


def test_the_output_is_written_after_every_benchmark_and_names_the_one_in_progress(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    seen: list[dict] = []
    log: list[str] = []

    def look():
        seen.append(json.loads(out.read_text()))

    benches = {"a.B.time_step-0": FakeBench("b", log), "a.C.time_step-0": FakeBench("c", log, on_setup=look)}
    Worker(_plan([("a.B.time_step", 0, 2, "time"), ("a.C.time_step", 0, 2, "time")]), out,
           benches.__getitem__).run()
    # While the second benchmark sets up, the file holds the first one's samples and names the second.
    first = seen[0]
    assert first["current"] == "a.C.time_step-0"
    assert len(first["a.B.time_step-0"]["samples"]) == 2
    assert "a.C.time_step-0" not in first


def test_the_setup_cache_reaches_the_benchmarks_that_have_one(tmp_path: Path) -> None:
    import pickle

    cache = tmp_path / "cache.pickle"
    cache.write_bytes(pickle.dumps({"k": 1}))
    log: list[str] = []
    keyed, plain = FakeBench("k", log, value=1), FakeBench("p", log, value=2)
    keyed.setup_cache_key = "common:1"
    benches = {"a.K.track_x-0": keyed, "a.P.track_x-0": plain}
    other = FakeBench("o", log, value=3)
    other.setup_cache_key = "common:2"  # a key the plan has no cache for
    benches = {"a.K.track_x-0": keyed, "a.P.track_x-0": plain, "a.O.track_x-0": other}
    plan = {**_plan([("a.P.track_x", 0, 1, "track"), ("a.K.track_x", 0, 1, "track"), ("a.O.track_x", 0, 1, "track")]),
            "caches": {"common:1": str(cache)}}
    Worker(plan, tmp_path / "out.json", benches.__getitem__).run()
    # Each benchmark gets its own key's cache, whatever comes first in the plan; none without a key.
    assert keyed.cache == {"k": 1} and plain.cache is None
    found = json.loads((tmp_path / "out.json").read_text())
    assert "no setup_cache common:2" in found["a.O.track_x-0"]["error"]


# --- TorchDynamo's recompile guard ---------------------------------------------------------------------------------


@pytest.fixture
def dynamo_config():
    import torch._dynamo

    config = torch._dynamo.config
    saved = (config.recompile_limit, config.accumulated_recompile_limit, config.fail_on_recompile_limit_hit)
    torch._dynamo.reset()
    yield config
    config.recompile_limit, config.accumulated_recompile_limit, config.fail_on_recompile_limit_hit = saved
    torch._dynamo.reset()


def _compile_shapes(n: int) -> int:
    """Graphs compiled for one code object called at n shapes (static shapes: one graph per shape)."""
    import torch

    def step(x):
        return (x * 2).sum()

    compiled = torch.compile(step, backend="eager", dynamic=False)
    before = suite_worker.compiled_graphs()
    for size in range(1, n + 1):
        compiled(torch.ones(size))
    return suite_worker.compiled_graphs() - before


def test_without_the_guard_the_ninth_version_silently_runs_eager(dynamo_config) -> None:
    assert _compile_shapes(10) == dynamo_config.recompile_limit == 8


def test_with_the_guard_every_version_compiles_its_own_graph(dynamo_config) -> None:
    suite_worker.guard_recompiles()
    assert _compile_shapes(10) == 10


def test_with_the_guard_a_reached_limit_is_an_error_not_an_eager_fallback(dynamo_config) -> None:
    suite_worker.guard_recompiles()
    dynamo_config.recompile_limit = 2
    with pytest.raises(Exception, match="(?i)recompile"):
        _compile_shapes(3)


@pytest.mark.slow
def test_every_compiled_torch_combination_of_the_suite_runs_its_own_graph(tmp_path: Path) -> None:
    """The real worker over every compiled PyTorch gradient step of the custom-backward pillar and the mlp (one loss
    code object each, compiled again per combination): each one's setup compiled at least one graph."""
    import subprocess

    from tape_vs_trace.running import plan as suite_plan

    benchmarks = suite_plan.discover(log=lambda _: None)
    selection = suite_plan.select(benchmarks, [r"(CustomStep_\w+|GradStep_mlp)\.time_step\('torch'.*'compiled'"])
    chosen = suite_plan.tasks(benchmarks, selection, rounds=1)
    assert len(chosen) >= 3
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"framework": "torch", "caches": {}, "tasks": [t.plan() for t in chosen]}))
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, "-m", "tape_vs_trace.running.worker", str(plan), str(out)], check=True,
                   cwd=suite_worker.ROOT, timeout=900)
    found = json.loads(out.read_text())
    for task in chosen:
        if "skip" in found[task.id]:
            continue
        assert "samples" in found[task.id], found[task.id]
        assert found["graphs"].get(task.id, 0) >= 1, task.id


def test_each_combination_is_timed_per_call_of_its_own_loop_after_another(tmp_path: Path) -> None:
    """The suite's real classes in one worker: the chain's eager step (sub-millisecond, so timed as a loop of many
    calls) and then the harness's 1 ms step (one call per sample). A loop count left over from the combination before
    would divide the harness's samples by it."""
    from tape_vs_trace.running import plan as suite_plan

    benchmarks = suite_plan.discover(log=lambda _: None)
    selection = suite_plan.select(benchmarks, [r"GradStep_chain\.time_step\('torch'.*'eager'",
                                                 r"harness\.Overhead\.time_step\('torch', 'raw'"])
    chosen = suite_plan.tasks(benchmarks, selection, rounds=1)
    chosen.sort(key=lambda t: not t.name.startswith("recording"))  # the chain first
    out = tmp_path / "out.json"
    Worker({"framework": "torch", "caches": {}, "tasks": [t.plan() for t in chosen]}, out).run()
    found = json.loads(out.read_text())
    [harness] = [t for t in chosen if t.name.startswith("harness")]
    assert min(found[harness.id]["samples"]) >= 0.95e-3  # the spin alone is 1 ms


def test_setup_runs_again_only_where_another_combination_set_up_since(tmp_path: Path) -> None:
    # A lone combination (a cold compile in its own process) is set up once, as asv does it; interleaved ones are
    # set up again before each sample, so each is timed with its own state.
    log: list[str] = []
    alone = FakeBench("a", log)
    Worker(_plan([("a.B.time_compile-0".rsplit("-", 1)[0], 0, 1, "time")]), tmp_path / "one.json",
           {"a.B.time_compile-0": alone}.__getitem__).run()
    assert alone.setups == 1 and alone.runs == 1
    events: list[str] = []
    pair = {f"a.B.time_step-{i}": FakeBench(str(i), events, on_setup=lambda i=i: events.append(f"setup {i}"))
            for i in range(2)}
    Worker(_plan([("a.B.time_step", i, 3, "time") for i in range(2)]), tmp_path / "two.json", pair.__getitem__).run()
    runs = [j for j, e in enumerate(events) if not e.startswith("setup")]
    assert len(runs) == 6
    for j in runs:  # the setup that ran last before each sample is that combination's own
        assert [e for e in events[:j] if e.startswith("setup")][-1] == f"setup {events[j]}"
    assert sum(b.setups for b in pair.values()) < 2 + 6  # not before every sample: only where the other's ran


# --- process-wide settings ----------------------------------------------------------------------------------------


def _precision_in_force(framework: str) -> str:
    if framework == "torch":
        import torch

        return torch.get_float32_matmul_precision()
    import jax

    return jax.config.jax_default_matmul_precision


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_each_combination_is_timed_at_its_own_matmul_precision(tmp_path: Path, framework: str) -> None:
    """The suite's Benchmark base with both precisions in one worker: the precision is a process-wide setting, so
    the one in force inside each timed call must be the combination's own, not the one set up last."""
    from asv_runner.discovery import _get_benchmark

    from benchmarks import common
    from implementations import frameworks

    seen: list[tuple[str, str]] = []

    class PrecisionProbe(common.Benchmark):
        params = [[framework], ["highest", "tf32"]]
        param_names = ["framework", "precision"]
        repeat = 3

        def build(self, case):
            return {}

        def time_step(self, framework, precision):
            seen.append((precision, _precision_in_force(framework)))

    def get(benchmark_id: str):
        bench = _get_benchmark("time_step", sys.modules[__name__], PrecisionProbe, PrecisionProbe.time_step)
        bench.set_param_idx(int(benchmark_id.rsplit("-", 1)[1]))
        return bench

    plan = {"framework": framework, "caches": {},
            "tasks": [{"name": "p.PrecisionProbe.time_step", "index": i, "repeat": 3, "kind": "time"} for i in (0, 1)]}
    try:
        Worker(plan, tmp_path / "out.json", get).run()
    finally:
        frameworks.load(framework, "highest")
        for k in [k for k in common._MEMO if k[0] == "PrecisionProbe"]:
            del common._MEMO[k]
    own = frameworks.get(framework).precisions
    assert len(seen) == 6 and {p for p, _ in seen} == {"highest", "tf32"}
    assert all(in_force == own[precision] for precision, in_force in seen), seen


# --- compile phases: one point, one compile ------------------------------------------------------------------------


def test_the_phase_rows_of_one_point_read_one_compile_in_one_worker(tmp_path: Path, monkeypatch) -> None:
    """The real CompilePhases rows of one JAX point (the chain at its shallowest depth, scan, cold cache) in one
    worker, as the runner plans them: the first call is set up and measured once, every phase row reads its phase
    from that compile, and the phases still add up to the first call."""
    import itertools

    from benchmarks import recording
    from implementations import first_call
    from implementations.jax import compile_phases

    cls = recording.CompilePhases_chain
    wanted = {"framework": "jax", "size": cls.params[2][0], "formulation": "scan", "cache": "cold"}
    indices = [i for i, combo in enumerate(itertools.product(*cls.params))
               if all(dict(zip(cls.param_names, combo))[k] == v for k, v in wanted.items())]
    phase_of = {i: dict(zip(cls.param_names, list(itertools.product(*cls.params))[i]))["phase"] for i in indices}
    compiles: list[int] = []
    real = compile_phases.first_call

    def counted(*args, **kwargs):
        compiles.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_phases, "first_call", counted)
    name = "recording.CompilePhases_chain.time_compile_phase"
    out = tmp_path / "out.json"
    Worker({"framework": "jax", "caches": {}, "tasks": [{"name": name, "index": i, "repeat": 1, "kind": "time"}
                                                         for i in indices]}, out).run()
    found = json.loads(out.read_text())
    seconds = {phase_of[i]: found[suite_worker.key(name, i)]["samples"][0] for i in indices
               if "samples" in found[suite_worker.key(name, i)]}
    assert len(compiles) == 1
    assert set(seconds) == {"first_call", *compile_phases.PHASES}
    total, wall = sum(seconds[p] for p in compile_phases.PHASES), seconds["first_call"]
    assert all(seconds[p] > 0 for p in compile_phases.PHASES), seconds
    assert abs(wall - total) <= first_call.TOLERANCE * wall + first_call.ABSOLUTE_S, seconds


_GUARDED_LATER = """
import sys
from tape_vs_trace.running import worker as suite_worker
suite_worker.guard_recompiles_when_imported()
import torch
assert "torch._dynamo" not in sys.modules, "import torch alone imported TorchDynamo"
compiled = torch.compile(lambda x: (x * 2).sum(), backend="eager", dynamic=False)
before = suite_worker.compiled_graphs()
for size in range(1, 11):
    compiled(torch.ones(size))
print(suite_worker.compiled_graphs() - before)
"""


def test_the_guard_set_before_torch_dynamo_is_imported_holds_for_the_first_compile() -> None:
    """The worker arms the guard before TorchDynamo is imported (a process that compiles nothing never imports it);
    the first torch.compile imports it, and the ten shapes still get ten graphs, not the default limit's eight."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", _GUARDED_LATER], capture_output=True, text=True, timeout=300,
                          cwd=suite_worker.ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["10"]


def test_an_eager_pytorch_worker_imports_neither_torch_dynamo_nor_ml_dtypes(tmp_path: Path) -> None:
    """The real worker over eager PyTorch gradient steps: the start-up a torch.compile or a bfloat16 would need is
    not paid by a process that has neither."""
    import subprocess

    from tape_vs_trace.running import plan as suite_plan

    benchmarks = suite_plan.discover(log=lambda _: None)
    selection = suite_plan.select(benchmarks, [r"GradStep_mlp\.time_step\('torch'.*'eager'.*'float32'"])
    chosen = suite_plan.tasks(benchmarks, selection, rounds=1)[:2]
    assert chosen
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"framework": "torch", "caches": {}, "tasks": [t.plan() for t in chosen]}))
    out = tmp_path / "out.json"
    script = ("import sys; from tape_vs_trace.running import worker; rc = worker.main(sys.argv[1:]); "
              "print(rc, 'torch._dynamo' in sys.modules, 'ml_dtypes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script, str(plan), str(out)], capture_output=True, text=True,
                          timeout=300, cwd=suite_worker.ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-3:] == ["0", "False", "False"]
    found = json.loads(out.read_text())
    assert all("samples" in found[t.id] for t in chosen), found
