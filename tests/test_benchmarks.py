"""The asv suite: it passes `asv check`, every benchmark method runs once on tiny sizes, and remat is real."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from benchmarks import common, count_processes, counts, custom_backward, recording, remat
from implementations import frameworks, workloads
from implementations.frameworks import NAMES as FRAMEWORKS
from implementations.pillars import PILLARS

ROOT = Path(__file__).resolve().parents[1]


# Every combination the suite skips on purpose, as (class-name prefix, {param: value}) rules written apart from the
# code that skips them: a wrong skip (a whole pillar n/a, say) or a missing one turns
# test_skips_are_exactly_the_expected_ones red.
SKIPS = [
    # compile phases: each framework's own phases and block-once formulation; a warm cache at the shallowest depth
    *(("CompilePhases_", {"framework": fw, "phase": p}) for fw, other in (("torch", "jax"), ("jax", "torch"))
      for p in set(recording.COMPILE_PHASES[other]) - set(recording.COMPILE_PHASES[fw])),
    ("CompilePhases_", {"framework": "torch", "formulation": "scan"}),
    ("CompilePhases_", {"framework": "jax", "formulation": "regional"}),
    *((f"CompilePhases_{w}", {"cache": "warm", "size": size, "device": device}) for device in ("cpu", "cuda")
      for w in workloads.runs("CompilePhases", device)
      for size in list(workloads.depth_series(w, device).values())[1:]),
    # compiling the unrolled loop takes minutes (both frameworks): the compiled LSTM pair is the scan form
    ("GradStep_lstm", {"mode": "compiled", "formulation": "unrolled"}),
    ("GradStep_transformer", {"framework": "torch", "formulation": "scan"}),  # no PyTorch scan form
    ("GradStep_", {"mode": "eager", "formulation": "scan"}),  # op-by-op scans recompile / retrace per call
    # on CPU the LSTM's eager pair runs the short sequence, its compiled pair the long one
    ("GradStep_lstm", {"mode": "eager", "size": "l2-c128-b14", "device": "cpu"}),
    ("GradStep_lstm", {"mode": "compiled", "size": "l2-c32-b14", "device": "cpu"}),
    # fused attention's default style is timed on CUDA only (budget); the custom backward has one style
    ("GradStep_transformer", {"attention": "fused", "style": "default", "device": "cpu"}),
    ("CustomMemory_", {"variant": "custom", "style": "default"}),
    # the workload's spec has no bfloat16 (CUDA grid only: CPU machines run float32)
    ("GradStep_chain", {"dtype": "bfloat16"}),
    ("GradStep_lstm", {"dtype": "bfloat16"}),
    ("CustomStep_gmm", {"dtype": "bfloat16"}),
    ("", {"dtype": "bfloat16", "precision": "tf32"}),  # TF32 is a float32 setting
    ("GraphCost_", {"framework": "torch", "formulation": "scan"}),
    ("Forward_", {"framework": "jax", "mode": "inference_mode"}),  # JAX has no inference_mode
    # PyTorch's own engine features (its baseline pairs in tape-vs-trace paired)
    *(("EngineStep_", {"framework": "jax", "feature": f}) for f in
      ("accumulate_grad_attr", "hooks", "zero_grad_none", "zero_grad_zeros")),
    # PyTorch's tape APIs, which JAX has no counterpart of
    *((family, {"framework": "jax", "transform": t}) for t in
      ("grad_autograd", "grad_backward", "jvp_dual", "hvp_double_backward")
      for family in ("TransformStep_", "TransformMemory_", "TransformSaved_")),
    # forward mode keeps no tape: no saved bytes; torch.func.grad refuses the saved-tensor hooks PyTorch's probe uses
    *(("TransformSaved_", {"transform": t}) for t in ("jvp", "jvp_dual", "hvp_fwd_rev", "jacfwd_tall", "jacfwd_wide")),
    ("TransformSaved_", {"framework": "torch", "transform": "hvp_rev_rev"}),
    # no compiled double backward in AOTAutograd; compiled reverse-over-forward crashed in Inductor's CPU code
    *(("TransformStep_", {"framework": "torch", "mode": "compiled", "transform": t}) for t in
      ("hvp_double_backward", "hvp_rev_fwd")),
    # torch.compile on a CPU: only the gradient, forward-over-reverse and vmapped per-example gradients (budget)
    *(("TransformStep_", {"framework": "torch", "mode": "compiled", "transform": t, "device": "cpu"}) for t in
      ("grad_autograd", "grad_backward", "jvp", "jvp_dual", "hvp_rev_rev", "jacfwd_tall", "jacrev_tall",
       "jacfwd_wide", "jacrev_wide", "per_example_loop")),
]

# Every method the suite skips where its class's other methods run (counts.skip_method), as (track method,
# {param: value}): the GEMM-library workspace inside a peak is read on CUDA only.
METHOD_SKIPS = [("track_workspace_bytes", {"device": "cpu"})]
WORKSPACE_SKIP = ("no GEMM-library workspace is read on cpu: its GEMMs take none from an allocator the probes can "
                  "see, and the peak has none inside it")


def _expected_method_skip(method: str, args: dict) -> bool:
    return any(method == m and all(args.get(k) == v for k, v in rule.items()) for m, rule in METHOD_SKIPS)


# The remat curve's points (RematCurve_*), written out apart from implementations.experiments: at the first depth every
# policy in both modes (no remat_names under torch.compile, which cannot see named regions; its memory budgets
# instead), JAX also as lax.scan when jitted; at twice the depth the granularity, PyTorch both ways and JAX's scan.
# All of it with written attention, and the first depth's policies again with fused attention, compiled, loops only.
_POLICIES = ("plain", "remat_dots", "remat_names", "remat_every2", "remat_full")
_GRAIN = ("plain", "remat_every2", "remat_every4", "remat_full")
_BUDGETS = ("budget_0.5", "budget_0.25", "budget_0.1", "budget_0")


def _curve_runs(device: str) -> set[tuple]:
    first, second = workloads.runs("RematCurve", device)["transformer"]
    fused = {("torch", first, "compiled", "unrolled", p, "fused") for p in _POLICIES if p != "remat_names"}
    fused |= {("jax", first, "compiled", "unrolled", p, "fused") for p in _POLICIES}
    return {(*run, "written") for run in _written_curve_runs(device, first, second)} | fused


def _written_curve_runs(device: str, first: str, second: str) -> set[tuple]:
    offload = ("remat_offload",) if device == "cuda" else ()
    runs = {("torch", first, "eager", "unrolled", p) for p in _POLICIES + offload}
    runs |= {("torch", first, "compiled", "unrolled", p) for p in _POLICIES + _BUDGETS if p != "remat_names"}
    runs |= {("jax", first, "eager", "unrolled", p) for p in _POLICIES}
    runs |= {("jax", first, "compiled", "unrolled", p) for p in _POLICIES + offload}
    runs |= {("jax", first, "compiled", "scan", p) for p in _POLICIES}
    for framework, mode, formulation in (("torch", "eager", "unrolled"), ("torch", "compiled", "unrolled"),
                                         ("jax", "compiled", "scan")):
        runs |= {(framework, second, mode, formulation, p) for p in _GRAIN}
    return runs


def _expected_skip(cls, args: dict) -> bool:
    if cls.__name__.startswith("RematCurve_"):
        return tuple(args[k] for k in ("framework", "size", "mode", "formulation", "point", "attention")) not in \
            _curve_runs(args["device"])
    return any(cls.__name__.startswith(prefix) and all(args.get(k) == v for k, v in rule.items())
               for prefix, rule in SKIPS)


def _benchmark_classes():
    for cls in common.suite_classes():
        yield cls.__module__.rsplit(".", 1)[-1], cls.__name__, cls


def _methods(cls) -> list[str]:
    return [m for m in dir(cls) if m.startswith(("time_", "track_"))]


def _combinations(cls):
    for combo in itertools.product(*cls.params):
        yield dict(zip(cls.param_names, combo))


def _tiny_combination(cls):
    """The first combination the suite runs, at the workload's tiny size: the whole build-and-measure path of the
    class (compiled torch only on the mlp: each torch.compile costs ~15 s on a 2-core CPU)."""
    for args in _combinations(cls):
        if "size" in args and not cls.__name__.startswith("RematCurve_"):  # the curve's points are at its sizes
            args["size"] = "tiny"
        if args["framework"] == "torch" and args.get("mode") == "compiled" and args.get("workload") != "mlp":
            continue
        if args["framework"] == "torch" and "cache" in args:  # torch's compile: tests/test_compile_probe.py (slow)
            continue
        if not _expected_skip(cls, args):
            return args
    raise AssertionError(f"{cls.__name__} runs no combination")


CASES = [pytest.param(cls, _tiny_combination(cls), id=f"{pillar}.{name}")
         for pillar, name, cls in _benchmark_classes()]


def test_every_pillar_has_both_frameworks() -> None:
    for pillar in PILLARS:
        classes = [cls for p, _, cls in _benchmark_classes() if p == pillar]
        assert classes, f"benchmarks/{pillar}.py has no benchmark class"
        for cls in classes:
            assert cls.param_names[0] == "framework" and cls.params[0] == list(FRAMEWORKS), cls
            assert cls.version, cls


def _setup(bench, params) -> tuple:
    """asv's set-up of one combination in this process; returns the arguments asv passes to its methods. A counted
    class gets the cache asv's setup_cache would give it, for this one combination, counted in this process."""
    params = tuple(params)
    if not isinstance(bench, counts._Counted):
        bench.setup(*params)
        return params
    cache = {(counts.benchmark_name(type(bench)), params): counts.count_one(type(bench), params)}
    bench.setup(cache, *params)
    return (cache, *params)


@pytest.mark.parametrize(("cls", "args"), CASES)
def test_benchmark_runs_once(cls, args: dict) -> None:
    bench = cls()
    params = _setup(bench, args.values())
    for method in _methods(cls):
        if _expected_method_skip(method, args):
            with pytest.raises(NotImplementedError):
                getattr(bench, method)(*params)
            continue
        value = getattr(bench, method)(*params)
        if method.startswith("track_"):
            assert isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, (method, value)


def _wrong_skips(name: str, cls) -> list[tuple]:
    """(class, combination, reason) wherever the class skips a combination SKIPS does not, or runs one it does;
    (class.method, combination, reason) wherever a method of a combination that runs is skipped and METHOD_SKIPS
    does not say so, or the other way round."""
    if name == "Overhead":
        return []
    wrong = [(name, args, reason) for args in _combinations(cls)
             if bool(reason := cls().reason_to_skip(common.Case(args))) != _expected_skip(cls, args)]
    by_method = getattr(cls, "reason_to_skip_method", None)
    return wrong + [(f"{name}.{method}", args, reason) for args in _combinations(cls) for method in _methods(cls)
                    if by_method and not _expected_skip(cls, args)
                    and bool(reason := by_method(cls(), method, common.Case(args)))
                    != _expected_method_skip(method, args)]


@pytest.mark.parametrize(("pillar", "name", "cls"), list(_benchmark_classes()), ids=lambda v: getattr(v, "__name__", v))
def test_skips_are_exactly_the_expected_ones(pillar, name, cls) -> None:
    """Every combination of the real grid: skipped exactly where SKIPS says, with a reason (no framework import)."""
    assert _wrong_skips(name, cls) == []


def test_every_lstm_grad_step_row_is_a_pair() -> None:
    """Every GradStep_lstm combination that runs has its other framework's twin running too (a row of the headline
    tables divides the two), and on CPU the rows are eager at the short sequence and compiled scan at the long one."""
    ran = {tuple(a.items()) for a in _combinations(recording.GradStep_lstm)
           if not recording.GradStep_lstm().reason_to_skip(common.Case(a))}
    for row in ran:
        args = dict(row)
        twin = {**args, "framework": "jax" if args["framework"] == "torch" else "torch"}
        assert tuple(twin.items()) in ran, args
    rows = {(a["mode"], a["size"], a["formulation"]) for a in map(dict, ran)}
    if common.DEVICE == "cpu":
        assert rows == {("eager", "l2-c32-b14", "unrolled"), ("compiled", "l2-c128-b14", "scan")}


def test_gmm_compile_time_and_compiled_custom_steps_run_for_both_frameworks() -> None:
    """The gmm objective's cold compile is a CompileSeconds row and its compiled CustomStep rows run on this device
    (CPU included, timed from the persistent compile cache), each framework beside the other."""
    for cls in (recording.CompileSeconds_gmm, custom_backward.CustomStep_gmm):
        assert cls.params[2] == list(workloads.spec("gmm").runs(cls.__name__.split("_")[0], common.DEVICE))
        ran = [a for a in _combinations(cls) if a.get("mode", "compiled") == "compiled"
               and a["dtype"] == "float32" and not cls().reason_to_skip(common.Case(a))]
        assert {a["framework"] for a in ran} == set(FRAMEWORKS), cls.__name__
        if cls is custom_backward.CustomStep_gmm:
            assert {(a["framework"], a["variant"]) for a in ran} >= {("torch", "plain"), ("torch", "custom")}


def test_skips_on_the_cuda_grid() -> None:
    """The same on a CUDA machine's grid, the only one with bfloat16 and TF32 (a CPU machine runs float32 at full
    precision only, so the dtype and precision rules are exercised here alone): the classes as asv builds them in a
    process where TVT_DEVICE=cuda, which imports no framework."""
    code = ("import json; from tests.test_benchmarks import _benchmark_classes, _wrong_skips; "
            "print(json.dumps([w for _, name, cls in _benchmark_classes() for w in _wrong_skips(name, cls)]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TVT_DEVICE": "cuda", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_graph_cost_counts_the_matmul_flops_the_roofline_divides_by() -> None:
    """GraphCost's track_flops is the matmul flops of one forward + backward, the same number in both frameworks
    for the same program (the report divides each framework's GradStep times by its own count)."""
    for framework in FRAMEWORKS:
        bench = recording.GraphCost_mlp()
        params = _setup(bench, [framework, "mlp", "tiny", "matched", "float32", "highest", common.DEVICE])
        # 2 matmuls of 4 x 8 x 16 in the tiny mlp, 3 products each (forward, two in the backward), 2 flops each
        assert bench.track_flops(*params) == 2 * 2 * (4 * 8 * 16) * 3, framework


def _asv_run(cls, params: tuple) -> dict:
    """One asv process's work on one combination, as asv_runner does it: discovery's TimeBenchmark of the class's
    time_ method, set-up, the timed run, teardown."""
    from asv_runner.benchmarks.time import TimeBenchmark

    instance = cls()
    [method] = [m for m in _methods(cls) if m.startswith("time_")]
    timed = TimeBenchmark(f"recording.{cls.__name__}.{method}", getattr(instance, method),
                          [getattr(instance, method), instance, recording])
    timed.set_param_idx([list(c) for c in itertools.product(*cls.params)].index(list(params)))
    assert not timed.do_setup()
    try:
        return timed.do_run()
    finally:
        timed.do_teardown()


def test_compile_seconds_times_the_first_call_after_a_warmed_compiler(monkeypatch) -> None:
    """asv_runner with the class's settings: set-up warms the compiler and prepares the cache, then exactly one
    timed call, which is the step's first (its trace and compile): a second call (a warm-up round, repeat > 1)
    would be a steady call, and raises."""
    import jax.numpy as jnp

    from implementations.jax import compile_probe, steps

    log: list[str] = []
    warm_up = compile_probe.warm_up_compiler
    monkeypatch.setattr(compile_probe, "warm_up_compiler", lambda device: (log.append("warm-up"), warm_up(device)))

    def grad_fn(inputs, variant, device):
        def fn(x):
            log.append("traced")
            return jnp.sin(x).sum()
        return fn, (jnp.ones(8, dtype=jnp.float32),)

    monkeypatch.setattr(steps, "grad_fn", grad_fn)
    common._MEMO.clear()
    cls = recording.CompileSeconds_mlp  # on every device (the transformer's on CUDA only)
    assert (cls.rounds, cls.repeat, cls.number, cls.warmup_time) == (3, 1, 1, 0)
    params = ("jax", "mlp", "64x256x1024", "cold", "matched", "float32", "highest", common.DEVICE)
    result = _asv_run(cls, params)
    assert log == ["warm-up", "traced"] and len(result["samples"]) == 1 and result["number"] == 1
    bench = cls()
    bench.setup(*params)
    assert log[2:] == ["warm-up"], "set-up warms the compiler and compiles nothing of the step"
    bench.time_compile_seconds(*params)
    with pytest.raises(RuntimeError, match="would not compile"):
        bench.time_compile_seconds(*params)
    bench.teardown(*params)
    common._MEMO.clear()


def test_asv_check_passes() -> None:
    result = subprocess.run([sys.executable, "-m", "asv", "check", "-E", f"existing:{sys.executable}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in (result.stdout + result.stderr).lower()


def _release(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as '0.10.2'."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.parametrize("framework", ["torch", "jax"])
@pytest.mark.parametrize(("workload", "size"), [("mlp", "64x256x1024"), ("lstm", "l2-c128-b14")])
def test_remat_recomputes_for_real(framework: str, workload: str, size: str) -> None:
    """Recomputing every block keeps fewer bytes for the backward, lowers the step's peak, and costs flops."""
    costs = {}
    for variant in ("plain", "remat_full"):
        bench = getattr(remat, f"RematCost_{workload}")()
        params = _setup(bench, [framework, workload, size, variant,
                                *workloads.spec(workload).styles[1:], "float32", "highest", common.DEVICE])
        costs[variant] = {m: getattr(bench, m)(*params) for m in ("track_saved_bytes", "track_peak_bytes",
                                                                     "track_flops")}
    plain, full = costs["plain"], costs["remat_full"]
    assert full["track_saved_bytes"] < plain["track_saved_bytes"], costs
    if workload == "mlp":
        # One checkpointed block: its forward is recomputed while the backward's own buffers are live, so the peak
        # cannot fall; PyTorch's tape peaks at the same bytes. jax 0.10's XLA:CPU plan holds the recomputed
        # [64, 1024] float32 hidden layer beside them, jax 0.11's reuses a buffer for it.
        assert full["track_peak_bytes"] >= plain["track_peak_bytes"], costs
        if framework == "jax":
            import jax

            recomputed = 64 * 1024 * 4 if _release(jax.__version__) < (0, 11) else 0
            assert full["track_peak_bytes"] - plain["track_peak_bytes"] == recomputed, costs
        else:
            assert full["track_peak_bytes"] == plain["track_peak_bytes"], costs
    else:
        assert full["track_peak_bytes"] < plain["track_peak_bytes"], costs
    if workload != "lstm":  # matmul flops only, on both sides: the ADBench LSTM's gates are elementwise (0 flops)
        assert full["track_flops"] > plain["track_flops"], costs


def test_counted_classes_are_the_deterministic_metrics() -> None:
    """Every track_ method of a counted class is an exact metric, and every exact metric of the suite is counted: a
    timing in the shared count process would be measured once, in the wrong place."""
    from implementations.metrics import get

    classes = counts.counted_classes()
    assert {counts.benchmark_name(c).rsplit("_", 1)[0] for c in classes} == {
        "recording.GraphCost", "custom_backward.CustomMemory", "inference.ForwardMemory", "remat.RematCost",
        "transforms.TransformMemory", "transforms.TransformSaved"}
    for cls in classes:
        assert cls.rounds == 1 and not [m for m in _methods(cls) if m.startswith("time_")], cls
        assert all(not get(m).sampled for m in counts.tracks(cls)), cls
    for _, name, cls in _benchmark_classes():
        exact = [m for m in _methods(cls) if m.startswith("track_") and not get(m).sampled]
        assert bool(exact) == issubclass(cls, counts._Counted), (name, exact)


SHARED_ONLY = pytest.mark.skipif(not counts.SHARED_COUNTS, reason="CUDA machines count in each benchmark's process")


@pytest.mark.parametrize("shared", [pytest.param(True, id="shared", marks=pytest.mark.slow),
                                    pytest.param(False, id="per-process")])
def test_cached_counts_equal_the_direct_probe_values(shared: bool, monkeypatch) -> None:
    """asv's setup_cache (both frameworks' subprocesses) gives each benchmark the values the probes give for its
    own combination, as does the per-process path CUDA machines take; a skipped combination keeps its reason."""
    if shared and not counts.SHARED_COUNTS:
        pytest.skip("CUDA machines count in each benchmark's process")
    monkeypatch.setattr(counts, "SHARED_COUNTS", shared)
    cls = custom_backward.CustomMemory_swiglu
    cache = counts._Counted.setup_cache(cls())
    assert bool(cache) == shared
    assert not shared or {k[1][0] for k in cache if k[0] == "custom_backward.CustomMemory_swiglu"} == set(FRAMEWORKS)
    for framework in FRAMEWORKS:
        fw = frameworks.load(framework)
        for variant in ("plain", "custom"):
            params = (framework, "swiglu", cls.params[2][0], variant, "matched", "float32", "highest", common.DEVICE)
            inputs = workloads.make_inputs("swiglu", params[2], "float32")
            saved = fw.probe.saved_bytes(*_flat(fw.steps.loss_fn(inputs, variant, common.DEVICE))).extra_bytes
            peak = fw.probe.peak_bytes(*_flat(fw.steps.grad_fn(inputs, variant, common.DEVICE)))
            bench = cls()
            bench.setup(cache, *params)
            assert bench.track_saved_bytes(cache, *params) == saved, (params, saved)
            if common.DEVICE == "cpu":  # a CUDA peak depends on what the process allocated before
                assert bench.track_peak_bytes(cache, *params) == peak.bytes, (params, peak)
    skipped = ("torch", "lstm", recording.GraphCost_lstm.params[2][0], "scan", "float32", "highest", common.DEVICE)
    entry = counts.count_one(recording.GraphCost_lstm, skipped)
    assert entry == {"skip": "PyTorch's scan form is timed only (GradStep): its graph is one scan node"}
    with pytest.raises(common.Skip, match="PyTorch's scan form is timed only"):
        recording.GraphCost_lstm().setup({("recording.GraphCost_lstm", skipped): entry}, *skipped)


def _flat(fn_args) -> tuple:
    fn, args = fn_args
    return (fn, *args)


@SHARED_ONLY
def test_a_failed_count_fails_its_benchmark_with_the_error(monkeypatch) -> None:
    """A count that raised in the count process raises, with its text, in the benchmark that reports it (asv
    records it as failed), never a None or 0; so does a combination whose framework could not be loaded."""
    cls = remat.RematCost_mlp
    params = ("jax", "mlp", "tiny", "plain", "matched", "float32", "highest", common.DEVICE)
    monkeypatch.setattr(frameworks, "memory_method", lambda framework, device: "another method")
    cache = {("remat.RematCost_mlp", params): counts.count_one(cls, params)}
    bench = cls()
    bench.setup(cache, *params)
    assert bench.track_saved_bytes(cache, *params) > 0  # the other counts of the combination stand
    with pytest.raises(RuntimeError, match="track_peak_bytes failed.*results declare 'another method'"):
        bench.track_peak_bytes(cache, *params)
    monkeypatch.setenv("TVT_INJECT_FAILURE", "jax")
    cache = counts.collect([cls])
    bench = cls()
    with pytest.raises(RuntimeError, match="injected failure for jax"):
        bench.setup(cache, *(p if p != "tiny" else cls.params[2][0] for p in params))
    torch_params = ("torch", *params[1:2], cls.params[2][0], *params[3:])
    bench.setup(cache, *torch_params)
    assert bench.track_flops(cache, *torch_params) > 0


@SHARED_ONLY
def test_a_dead_count_process_fails_every_benchmark_it_had_to_count(monkeypatch) -> None:
    """A count subprocess that dies (a crash, an out-of-memory kill) leaves no value behind: each of its
    combinations fails with the process's last line of stderr, and no framework is imported to find that out."""
    monkeypatch.setattr(count_processes, "_BOOT", "raise SystemExit('count process crashed')")
    cache = counts.collect([remat.RematCost_mlp])
    assert len(cache) == len(list(itertools.product(*remat.RematCost_mlp.params)))
    for params in itertools.product(*remat.RematCost_mlp.params):
        with pytest.raises(RuntimeError, match="count process failed: count process crashed"):
            remat.RematCost_mlp().setup(cache, *params)


# --- the GEMM-library workspace inside a peak: its own row ------------------------------------------------------------


def test_every_peak_has_a_workspace_row_beside_it() -> None:
    """Every class with a track_peak_bytes has a track_workspace_bytes in bytes, taken in a fresh process where the
    peak is (CUDA) and from the shared count process where it is (CPU)."""
    peaks = [cls for _, _, cls in _benchmark_classes() if hasattr(cls, "track_peak_bytes")]
    assert peaks and all(hasattr(cls, "track_workspace_bytes") for cls in peaks)
    method = counts._PeakBytes.track_workspace_bytes
    assert method.unit == "bytes" and method.fresh_process == counts._PeakBytes.track_peak_bytes.fresh_process


def test_the_cpu_grid_skips_the_workspace_rows_with_the_reason() -> None:
    """On CPU the workspace row of every peak is n/a, with the reason, through asv's SkipNotImplemented (its n/a
    from a body) from the shared count process's cache, and the class's other counts still run."""
    from asv_runner.benchmarks.mark import SkipNotImplemented

    cpu = [args | {"device": "cpu"} for _, _, cls in _benchmark_classes() if hasattr(cls, "track_peak_bytes")
           for args in _combinations(cls)]
    assert cpu and {counts._PeakBytes().reason_to_skip_method("track_workspace_bytes", common.Case(a))
                    for a in cpu} == {WORKSPACE_SKIP}
    if common.DEVICE != "cpu":
        return
    cls = remat.RematCost_mlp
    params = ("torch", "mlp", "tiny", "plain", "matched", "float32", "highest", "cpu")
    entry = counts.count_one(cls, params)
    assert entry["values"]["track_workspace_bytes"] == {"skip": WORKSPACE_SKIP}
    cache = {("remat.RematCost_mlp", params): entry}
    bench = cls()
    bench.setup(cache, *params)
    assert bench.track_peak_bytes(cache, *params) > 0
    with pytest.raises(SkipNotImplemented, match="no GEMM-library workspace is read on cpu"):
        bench.track_workspace_bytes(cache, *params)


def test_the_cuda_peak_and_its_workspace_come_from_one_probe_call() -> None:
    """On CUDA both rows of a combination read one probe call (JAX's allocator peak cannot be reset): the peak's
    bytes and the workspace inside it, each from the same PeakBytes. A fake probe stands in for the GPU."""
    calls = []

    class Probe:
        @staticmethod
        def peak_bytes(fn, *args):
            calls.append(fn)
            return types.SimpleNamespace(bytes=1000, method="torch.cuda.max_memory_allocated", workspace_bytes=64)

    case = common.Case({"framework": "torch", "workload": "mlp", "size": "tiny", "variant": "plain",
                        "dtype": "float32", "precision": "highest", "device": "cuda"})
    case.fw = types.SimpleNamespace(probe=Probe())
    bench = remat.RematCost_mlp()
    bench.__dict__.update(case=case, peak_fn=lambda c: ("step", ()))
    try:
        assert (bench.count_peak_bytes(), bench.count_workspace_bytes()) == (1000, 64)
        assert len(calls) == 1
    finally:
        common._MEMO.pop(("peak", "RematCost_mlp", tuple(case.params.values())), None)


def test_which_steps_have_a_peak() -> None:
    # A peak only where the framework's memory method measures the step as timed: on a CPU, PyTorch's tracker cannot
    # see inside Inductor's kernels and op-by-op JAX has no buffer plan; on CUDA the allocators see every step but
    # op-by-op JAX's (its probe jits the step, which would be another program).
    have = {(f, m, d): not remat.no_peak(f, m, d)
            for f in ("torch", "jax") for m in ("eager", "compiled") for d in ("cpu", "cuda")}
    assert have == {("torch", "eager", "cpu"): True, ("torch", "compiled", "cpu"): False,
                    ("jax", "eager", "cpu"): False, ("jax", "compiled", "cpu"): True,
                    ("torch", "eager", "cuda"): True, ("torch", "compiled", "cuda"): True,
                    ("jax", "eager", "cuda"): False, ("jax", "compiled", "cuda"): True}
