"""The GPU paths, as far as a CPU allows: the peak check's bounds, the GPU script's chunks, their plan, budget and
copies (with a fake tape-vs-trace, asv and nvidia-smi), the CUDA benchmark grid, and the offline set-up on a venv of
a venv. What needs CUDA itself is skipped without it, never faked."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from implementations import frameworks
from tape_vs_trace.running import profiles
from tape_vs_trace.running.profiles import rows
from tape_vs_trace.side import gpucheck

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
    # 64x256 input and two 256x1024 weights in float32; a gradient for each, and the float32 loss; on the JAX side
    # also the output tuple's table of four pointers, which XLA's buffer plan counts.
    assert row["resident_bytes"] == 4 * (64 * 256 + 2 * 256 * 1024)
    assert row["returned_bytes"] == row["resident_bytes"] + 4 + (4 * 8 if framework == "jax" else 0)
    assert row["saved_bytes"] > 0
    assert row["lower_bytes"] == row["resident_bytes"] + max(row["saved_bytes"], row["returned_bytes"])
    assert row["workspace_bytes"] == 0  # CPU GEMMs take no library workspace from either allocator
    assert row["upper_bytes"] == row["resident_bytes"] + row["saved_bytes"] + row["returned_bytes"]
    assert row["verdict"] == "ok", row


def test_gpucheck_pairs_like_modes_only() -> None:
    # On CUDA: torch.compile beside jax.jit, then eager PyTorch, whose op-by-op JAX counterpart has no peak; never a
    # jitted JAX program beside PyTorch's eager tape.
    cuda = gpucheck.modes("cuda")
    assert cuda[:2] == [("torch", "compiled"), ("jax", "compiled")]
    assert cuda[2:] == [("torch", "eager"), ("jax", "eager")]
    row = gpucheck.measure("jax", "transformer", "tiny", "cuda", "eager")  # answered before any framework loads
    assert row["verdict"].startswith("not measured") and "peak_bytes" not in row
    assert row["formulation"] == "unrolled"  # the loop form both frameworks run
    text = "\n".join(gpucheck.format_rows([row]))
    assert "not measured" in text and "eager" in text


def test_gpucheck_records_the_mode_and_loop_form_it_measured() -> None:
    row = gpucheck.measure("jax", "transformer", "tiny", "cpu")
    assert (row["mode"], row["formulation"], row["verdict"]) == ("compiled", "unrolled", "ok")
    assert gpucheck.measure("torch", "mlp", "tiny", "cpu")["mode"] == "eager"


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
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.side.gpucheck", "--measure", "mxnet", "mlp", "s",
                           "--device", "cpu"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.startswith("error: unknown framework 'mxnet'")
    assert "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def cuda_combos() -> list:
    """Every benchmark x parameter combination of a CUDA machine: discovery in a process where TVT_DEVICE=cuda."""
    code = ("import sys; sys.path.insert(0, 'scripts'); import gpu_chunks; "
            "print(gpu_chunks.to_json(gpu_chunks.combinations()))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "TVT_DEVICE": "cuda", "PYTHONPATH": str(ROOT)})
    return chunks.from_json(done.stdout)


@pytest.fixture(scope="module")
def cuda_grid(cuda_combos: list) -> list[str]:
    """asv's benchmark names on a CUDA machine."""
    return [c.name for c in cuda_combos]


def test_the_cuda_grid_is_discovered(cuda_grid: list[str]) -> None:
    classes = {name.split("(")[0].rsplit(".", 1)[0] for name in cuda_grid}
    assert {"recording.GradStep_transformer", "recording.GradStep_mlp"} <= classes
    assert any(c.startswith("remat.RematCost_mlp") for c in classes)
    assert all("'cuda')" in name for name in cuda_grid if "(" in name and "'cpu'" not in name)
    assert not any("'cpu')" in name for name in cuda_grid)
    assert any("'bfloat16'" in name for name in cuda_grid) and any("'tf32'" in name for name in cuda_grid)
    # The eager JAX LSTM at c1024 dispatches about 1e5 ops per step: minutes per process, no GPU measurement.
    assert any("lstm" in name.lower() for name in cuda_grid) and not any("c1024" in name for name in cuda_grid)


def test_combinations_carry_what_the_runners_do_with_them(cuda_combos: list) -> None:
    by_name = {c.name: c for c in cuda_combos}
    peak = next(c for c in cuda_combos if c.name.startswith("remat.RematCost_mlp.track_peak_bytes('jax'"))
    assert (peak.kind, peak.fresh, peak.workload) == ("track", True, "mlp")  # a CUDA peak: a process of its own
    step = by_name["recording.GradStep_mlp.time_step('torch', 'mlp', '2048x4096x16384', 'eager', 'matched', "
                   "'float32', 'highest', 'cuda')"]
    assert (step.kind, step.fresh, step.rounds, step.repeat, step.mode) == ("time", False, 5, 5, "eager")
    # the classes' own skips, without a framework: PyTorch has no scan form, tf32 applies to float32 only
    assert by_name[step.name.replace("'eager', ", "'compiled', ")].skipped is False
    assert all(c.skipped for c in cuda_combos if "GradStep_transformer" in c.name and "('torch'" in c.name
               and "'scan'" in c.name)
    assert all(c.skipped for c in cuda_combos if "'bfloat16', 'tf32'" in c.name)
    assert all(c.fresh for c in cuda_combos if ".time_compile_seconds(" in c.name)


def _live(chunk, combos) -> list[str]:
    return sorted(c.name for c in chunks.select(chunk, combos) if not c.skipped)


def test_quick_chunks_select_what_they_promise(cuda_combos: list) -> None:
    picked = {c.name: _live(c, cuda_combos) for c in chunks.QUICK}
    curve = picked.pop("remat-curve-policies")
    assert all(picked.values()), {k: len(v) for k, v in picked.items()}
    # the curve's step time per policy, where the suite has it as a benchmark: eager, the first GPU depth, no budgets
    has_curve = any(".RematCurve_" in c.name for c in cuda_combos)
    assert bool(curve) == has_curve
    assert all("'L12-B8-S1024-D1024', 'eager'" in n and "budget" not in n for n in curve)
    assert {n.split("(")[1].split(",")[0] for n in curve} == ({"'torch'", "'jax'"} if has_curve else set())
    assert chunks.QUICK[0].name == "gradstep"  # the most cited first
    # both modes of the matched program, unrolled, float32 at full precision, both frameworks; the mlp first
    first = picked["gradstep"]
    assert len(first) == 8 and all("'matched'" in n and "'float32', 'highest'" in n and "'scan'" not in n
                                   and "'fused'" not in n for n in first)
    assert sorted((n.split("(")[0], n.split(", ")[3]) for n in first) == sorted(
        (f"recording.GradStep_{w}.time_step", f"'{m}'") for w in ("mlp", "transformer")
        for m in ("eager", "compiled") for _ in ("torch", "jax"))
    for mode in ("eager", "compiled"):
        precisions = picked[f"gradstep-{mode}-precisions"]
        assert len(precisions) == 8 and not any("'float32', 'highest'" in n for n in precisions)
        assert {n.split("'matched', ")[1].split(", 'cuda'")[0].removeprefix("'written', ")
                for n in precisions} == {"'float32', 'tf32'", "'bfloat16', 'highest'"}
    # the other programs of the transformer (the default style, fused attention, JAX's scan), both frameworks
    programs = picked["gradstep-eager-programs"] + picked["gradstep-compiled-programs"]
    assert programs and all("'matched', 'written'" not in n or "'scan'" in n for n in programs)
    assert [n for n in programs if "'scan'" in n] == [
        "recording.GradStep_transformer.time_step('jax', 'transformer', 'L12-B8-S1024-D1024', 'compiled', 'scan', "
        "'matched', 'written', 'float32', 'highest', 'cuda')"]
    remat = picked["remat-peaks"]
    assert {n.split("(")[0] for n in remat} == {f"remat.RematCost_{w}.track_{m}_bytes" for w in ("mlp", "lstm")
                                                for m in ("peak", "workspace")}  # each peak with its workspace
    assert {n.split(", ")[3] for n in remat} == {"'plain'", "'remat_full'", "'remat_dots'"}  # every policy they have
    assert len(picked["custom-swiglu"]) == 4 and all("'eager', 'matched', 'float32', 'highest'" in n
                                                     for n in picked["custom-swiglu"])
    assert {n.split("(")[0] for n in picked["inference-transformer"]} == {  # the peak and the workspace inside it
        f"inference.ForwardMemory_transformer.track_{m}_bytes" for m in ("peak", "workspace")}
    assert all(c.rounds >= 3 for c in chunks.QUICK)  # a t interval of at least 2 degrees of freedom


def test_a_selection_and_its_asv_regex_pick_the_same_combinations(cuda_combos: list) -> None:
    """asv's rule (re.search on the name with its parameters) applied to the regex of a selection's names picks
    exactly what the selection's predicates pick, for every chunk of both profiles."""

    for chunk in [*chunks.QUICK, *chunks.profile("full", cuda_combos)[:5]]:
        chosen = {c.name for c in chunks.select(chunk, cuda_combos)}
        exact = profiles.names_regex(sorted(chosen))
        assert {c.name for c in cuda_combos if re.search(exact, c.name)} == chosen, chunk.name


def _cost_file(tmp_path: Path, frameworks: dict, discovery: float = 2.0) -> Path:
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"device": "cuda", "frameworks": frameworks, "discovery": {"seconds": discovery}}))
    return path


def _combo(framework: str, kind: str, **fields) -> object:
    method = "time_step" if kind == "time" else "track_peak_bytes"
    defaults = {"rounds": 5, "repeat": 5 if kind == "time" else 1, "fresh": kind == "track", "workload": "mlp",
                "size": "s", "mode": "eager" if kind == "time" else "", "method": method}
    return chunks.Combo(name=f"bench.{method}('{framework}', {fields.get('mode', '')!r})", framework=framework,
                        kind=kind, **{**defaults, **fields})


def test_the_plan_arithmetic_from_a_fake_cost_file(tmp_path: Path) -> None:
    costs = chunks.Costs.load(_cost_file(tmp_path, {
        "torch": {"startup": {"seconds": 6}, "inputs": {"mlp": {"seconds": 1}}, "eager_build": {"mlp": {"seconds": 2}},
                  "eager_step": {"mlp": {"seconds": 0.004}}},
        "jax": {"startup": {"seconds": 5}, "inputs": {"mlp": {"seconds": 2}}, "eager_build": {"mlp": {"seconds": 3}},
                "eager_step": {"mlp": {"seconds": 0.02}},
                "compile": {"mlp": {"not_timed": "timed out after 30 s", "over_s": 31.0}}}}))
    combos = [_combo("torch", "time"), _combo("torch", "track"), _combo("jax", "time"), _combo("jax", "track")]
    chunk = chunks.Chunk("all", (rows("bench.*"),), rounds=2)
    # A 4 ms step is timed 3 calls a sample (10 ms at least), a 20 ms one 1 call: build + sizing call + 5 samples.
    torch_steps = 6 + 1 + 2 + 0.004 + 5 * 3 * 0.004
    jax_steps = 5 + 2 + 3 + 0.02 + 5 * 1 * 0.02
    # A peak is a process of its own, its build the probe's: PyTorch's eager step, JAX's compile (not timed: no
    # less than the 31 s it ran).
    torch_peak, jax_peak = 6 + 1 + 2, 5 + 2 + 31.0
    worker = chunks.estimate(chunk, combos, costs, "worker")
    # counts once, in round 1; JAX's op-by-op build in round 2 reads the caches round 1 filled
    jax_warm = jax_steps - 3 * (1 - sys.modules["gpu_costs"].EAGER_WARM_SHARE["jax"])
    expected = 2 + (torch_steps + torch_peak + jax_steps + jax_peak + chunks.SAVE_S) + (
        torch_steps + jax_warm + chunks.SAVE_S)
    assert worker.seconds == pytest.approx(expected)
    assert (worker.processes, worker.rounds, worker.combinations) == (6, 2, 4)
    assert worker.assumed == {"jax compile mlp (not timed: timed out after 30 s)",
                              "jax eager warm share (EAGER_WARM_SHARE)"}
    # asv run: a process per combination and round, counts included, nothing saved between rounds
    asv = chunks.estimate(chunk, combos, costs, "asv")
    assert asv.seconds == pytest.approx(2 + 2 * (torch_steps + torch_peak + jax_peak) + jax_steps + jax_warm)
    assert asv.processes == 8
    # without the chunk's rounds, each benchmark's own
    assert chunks.estimate(chunks.Chunk("own", (rows("bench.*"),)), combos, costs, "worker").rounds == 5
    # a skipped combination costs nothing in a shared process
    skipped = chunks.estimate(chunk, [*combos, _combo("torch", "time", skipped=True)], costs)
    assert skipped.seconds == pytest.approx(worker.seconds) and skipped.combinations == 4


def test_later_rounds_compile_warm_and_a_compile_benchmark_stays_cold(tmp_path: Path) -> None:
    """A chunk's first round compiles cold; its later rounds read both frameworks' persistent caches, at the stated
    share of a cold compile, marked assumed; a compile-time benchmark clears its caches in every round."""
    fw = {"startup": {"seconds": 1}, "inputs": {"mlp": {"seconds": 1}}, "compile": {"mlp": {"seconds": 10}},
          "compiled_step": {"mlp": {"seconds": 0.02}}}
    costs = chunks.Costs.load(_cost_file(tmp_path, {"torch": fw, "jax": fw}))
    combos = [_combo(f, "time", mode="compiled", fresh=False) for f in ("torch", "jax")]
    est = chunks.estimate(chunks.Chunk("c", (rows("bench.*"),), rounds=3), combos, costs)
    samples = 0.02 + 5 * 1 * 0.02
    warm = {f: chunks.WARM_COMPILE_SHARE[f] for f in ("torch", "jax")}
    expected = 2 + 3 * chunks.SAVE_S + sum(3 * (1 + 1 + samples) + 10 + 2 * 10 * warm[f] for f in warm)
    assert est.seconds == pytest.approx(expected) and est.processes == 6
    assert est.assumed == {f"{f} warm compile share (WARM_COMPILE_SHARE)" for f in warm}
    cold = [_combo("torch", "time", mode="cold", method="time_compile_seconds", fresh=True)]
    assert chunks.estimate(chunks.Chunk("c", (rows("bench.*"),), rounds=3), cold, costs).seconds == pytest.approx(
        2 + 3 * chunks.SAVE_S + 3 * (1 + 1 + 10))


def test_the_warm_compile_share_is_the_pre_flights_where_it_timed_one(tmp_path: Path) -> None:
    fw = {"compile": {"mlp": {"seconds": 10}}, "compile_warm": {"mlp": {"seconds": 2}}}
    costs = chunks.Costs.load(_cost_file(tmp_path, {"torch": fw, "jax": {"compile": {"mlp": {"seconds": 4}}}}))
    assumed: set[str] = set()
    assert costs.warm_share("torch", "mlp", assumed) == pytest.approx(0.2) and not assumed
    assert costs.warm_share("jax", "mlp", assumed) == chunks.WARM_COMPILE_SHARE["jax"]
    assert assumed == {"jax warm compile share (WARM_COMPILE_SHARE)"}


def test_a_round_runs_a_process_per_precision() -> None:
    """tape-vs-trace run splits a round's processes by process-wide settings (benchmarks.common.process_settings):
    two precisions of one framework and mode are two processes a round."""
    combos = [_combo("torch", "time", fresh=False, params=(("framework", "torch"), ("precision", p)))
              for p in ("highest", "tf32")]
    est = chunks.estimate(chunks.Chunk("p", (rows("bench.*"),), rounds=3), combos, chunks.Costs())
    assert est.processes == 6
    one = chunks.estimate(chunks.Chunk("p", (rows("bench.*"),), rounds=3), combos[:1], chunks.Costs())
    assert one.processes == 3
    # a paired experiment dividing an eager point by a compiled one keeps both in one process (suite_plan.tasks)
    paired = [dataclasses.replace(c, name=f"transforms.TransformStep_mlp.time_step('torch', '{m}')", mode=m)
              for c, m in zip(combos[:1] * 2, ("eager", "compiled"), strict=True)]
    both = chunks.estimate(chunks.Chunk("t", (rows("transforms.*"),), rounds=3), paired, chunks.Costs())
    assert both.processes == 3


def test_the_first_contact_commits_the_gradient_steps_of_the_mlp_and_the_transformer(cuda_combos: list) -> None:
    """From the stated defaults, the quick profile's first contact (its pre-flight after its first chunks) runs the
    float32 gradient steps of the mlp and the transformer, eager and compiled, both frameworks, in 3 rounds, within
    its budget: at least MARGIN short of the command's limit, and one lease of either kind holds it with the
    machine's start and the idle wait after it."""
    found = chunks.quick_contacts(list(chunks.QUICK), cuda_combos, chunks.Costs())
    first = [c for p in found.first + found.after for c in p.todo]
    assert {(c.workload, c.mode, c.framework) for c in first if c.benchmark.startswith("recording.GradStep_")} == {
        (w, m, f) for w in ("mlp", "transformer") for m in ("eager", "compiled") for f in ("torch", "jax")}
    assert all(c.dtype == "float32" and dict(c.params)["precision"] == "highest" for c in first)
    assert found.first[0].chunk.name == "gradstep" and found.first[0].estimate.rounds >= 3
    assert found.first_end_s <= chunks.QUICK_BUDGET_S <= chunks.COMMAND_LIMIT_S * (1 - 0.15)
    for kind in chunks.machine.DEVICE_KINDS.values():
        assert kind.start_s + found.first_end_s + chunks.IDLE_S <= chunks.LEASE_S


def test_the_leases_hold_calls_while_start_calls_and_idle_waits_fit() -> None:
    """A lease takes a call only while its machine start, every call to its planned end and the idle wait after
    each fit in LEASE_S; the next call starts a machine of its own, whose start it pays again."""
    room = chunks.LEASE_S - 100 - chunks.IDLE_S
    assert chunks.leases([room], 100) == [[0]]
    assert chunks.leases([room + 1], 100) == [[0]]  # a call longer than a lease still gets one of its own
    assert chunks.leases([300, room - 300 - chunks.IDLE_S, 1], 100) == [[0, 1], [2]]
    assert chunks.leases([300, room - 300 - chunks.IDLE_S + 1], 100) == [[0], [1]]
    kind = chunks.machine.DEVICE_KINDS["nvidia-h100-x1"]
    lines = chunks.lease_lines(kind, [400, 400], chunks.Costs())
    assert "gpu-nvidia-h100-80gb-hbm3" in lines[0] and "assumed for an H100" in lines[0] and "2 leases" in lines[0]
    assert lines[1].endswith(f"= {kind.start_s + 400 + chunks.IDLE_S:.0f} s of {chunks.LEASE_S}")


def test_both_device_kinds_are_named_as_their_results_are_filed() -> None:
    """The device tool's two kinds, each named as `machine.record` names the GPU it reports."""
    from tape_vs_trace.results import machine

    for kind in machine.DEVICE_KINDS.values():
        named = machine.record(cpuinfo="model name\t: Intel Xeon\n", gpu={"gpu": kind.gpu})["machine"]
        assert named == kind.machine
    assert {k.machine for k in machine.DEVICE_KINDS.values()} == {"gpu-nvidia-h100-80gb-hbm3", "gpu-nvidia-h200"}


def test_a_chunk_generates_each_input_once_and_reads_it_back_after(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The input cache (TVT_INPUT_CACHE, which gpu_bench.sh sets): a chunk's first process that sets up an input
    generates it, every later one reads its file; the pre-flight's `inputs` is such a read and serves both."""
    combos = [_combo(f, "time", fresh=False) for f in ("torch", "jax")]
    chunk = chunks.Chunk("c", (rows("bench.*"),), rounds=3)
    d = chunks.Costs()
    read = chunks.estimate(chunk, combos, d)
    assert read.processes == 6 and "torch inputs_cached mlp" in read.assumed
    monkeypatch.setitem(chunks.DEFAULTS, "inputs_cached", chunks.DEFAULTS["inputs"])
    generated = chunks.estimate(chunk, combos, d).seconds  # as if every process generated its inputs
    monkeypatch.undo()
    assert generated - read.seconds == pytest.approx(5 * (d.get("inputs", "jax", "mlp") - d.get("inputs_cached", "jax",
                                                                                                 "mlp")))
    assert d.get("inputs_cached", "jax", "mlp") < d.get("inputs", "jax", "mlp")
    measured = chunks.Costs.load(_cost_file(tmp_path, {"torch": {"inputs": {"mlp": {"seconds": 0.3}}}}))
    assumed: set[str] = set()
    assert measured.get("inputs_cached", "torch", "mlp", assumed) == 0.3 and not assumed


def test_a_cost_missing_from_the_file_is_its_default_marked_assumed(tmp_path: Path) -> None:
    costs = chunks.Costs.load(_cost_file(tmp_path, {"torch": {"startup": {"seconds": 6}}}))
    assumed: set[str] = set()
    assert costs.get("startup", "torch", assumed=assumed) == 6 and not assumed
    assert costs.get("compile", "torch", "transformer", assumed) == chunks.DEFAULTS["compile"][("torch", "transformer")]
    assert costs.get("compile", "torch", "gmm", assumed) == chunks.DEFAULTS["compile"][("torch", "*")]
    assert costs.get("eager_step", "jax", "", assumed) == chunks.DEFAULTS["eager_step"][("*", "")]
    assert assumed == {"torch compile transformer", "torch compile gmm", "jax eager_step"}
    assert chunks.Costs().describe().startswith("estimated from the stated defaults")


def test_the_plan_runs_the_cited_set_first_and_names_what_does_not_fit(tmp_path: Path, cuda_combos: list) -> None:
    # Everything costs a second but PyTorch's compile of the transformer, which outlasts any contact.
    fw = {"startup": {"seconds": 1}, **{phase: {w: {"seconds": 1} for w in ("mlp", "transformer", "swiglu", "lstm")}
                                        for phase in ("inputs", "eager_build", "compile")},
          **{phase: {w: {"seconds": 0.01} for w in ("mlp", "transformer", "swiglu", "lstm")}
             for phase in ("eager_step", "compiled_step")}}
    torch = json.loads(json.dumps(fw))
    torch["compile"]["transformer"] = {"seconds": 400}
    costs = chunks.Costs.load(_cost_file(tmp_path, {"torch": torch, "jax": fw}, discovery=1))
    planned = chunks.plan(list(chunks.QUICK), cuda_combos, costs, "worker", budget_s=420, spent_s=100)
    # the order stays the profile's; a chunk too long for what a contact has left is planned in parts
    assert list(dict.fromkeys(p.chunk.name.split(".")[0] for p in planned)) == [c.name for c in chunks.QUICK]
    left_out = [p for p in planned if p.cumulative_s is None and not p.empty]
    never = [p for p in left_out if p.estimate.seconds > 420 - 100]  # a part that fits in no contact
    assert never and all(any("('torch', 'transformer'" in c.name and "'compiled'" in c.name for c in p.todo)
                         for p in never)  # each one needs PyTorch's 400 s compile
    fitting = [p for p in planned if p.cumulative_s is not None]
    assert fitting[0].cumulative_s == pytest.approx(100 + fitting[0].estimate.seconds)
    assert all(a.cumulative_s < b.cumulative_s <= 420 for a, b in zip(fitting, fitting[1:], strict=False))
    text = "\n".join(chunks.format_plan("plan", planned, costs, 420, 100, "(set-up and pre-flight)"))
    assert f"not run (over the budget): {', '.join(p.chunk.name for p in left_out)}" in text
    assert text.count("does not fit") == len(left_out) and "costs measured by the pre-flight" in text
    assert all(p.cumulative_s is None and "selects nothing on this grid" in text for p in planned if p.empty)


def test_every_part_of_the_quick_profile_fits_one_contact_by_design(cuda_combos: list) -> None:
    """Planned from the stated defaults, every part of the quick profile that the first contact leaves fits in what a
    later contact has after its set-up and pre-flight, in 3 rounds at least: consecutive contacts complete it."""
    found = chunks.quick_contacts(list(chunks.QUICK), cuda_combos, chunks.Costs())
    room = chunks.QUICK_BUDGET_S - chunks.SETUP_S - chunks.PREFLIGHT_S
    assert all(p.estimate.seconds <= room for p in found.rest if p.todo)
    assert all(p.estimate.rounds >= 3 for p in found.first + found.after + found.rest
               if p.todo and any(c.kind == "time" for c in p.todo))
    assert not found.never and sorted(p.chunk.name for taken in found.later for p in taken) == sorted(
        p.chunk.name for p in found.rest if p.todo)
    run = {c.name for p in found.first + found.after + found.rest for c in p.todo}
    assert run == {c.name for chunk in chunks.QUICK for c in chunks.select(chunk, cuda_combos) if not c.skipped}


def test_the_estimate_says_estimated_without_a_cost_file() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_chunks.py"), "estimate", "--summary",
                           "--runner", "asv"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TVT_DEVICE": "cuda"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("estimated from the stated defaults (an H200's): the full suite under asv run "
                                  "takes about ")
    assert done.stdout.count("\n") == 1 and "scripts/gpu_bench.sh OUTDIR quick" in done.stdout
    quick = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_chunks.py"), "estimate", "--profile",
                            "quick"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "TVT_DEVICE": "cuda"})
    assert "assumed: every cost" in quick.stdout and "(set-up and pre-flight, assumed)" in quick.stdout


def test_the_estimate_says_measured_with_a_cost_file(tmp_path: Path) -> None:
    path = _cost_file(tmp_path, {"torch": {"startup": {"seconds": 6}}})
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_chunks.py"), "estimate", "--summary",
                           "--costs", str(path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TVT_DEVICE": "cuda"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"estimated from this machine's pre-flight ({path}): the full suite under "
                                  "tape-vs-trace run takes about ")


@pytest.mark.parametrize(("content", "message"), [
    (None, "error: cannot read cost file {path}: No such file or directory"),
    ("{", "error: cost file {path} is not JSON: "),
    ("[1, 2]", "error: cost file {path} has no 'frameworks' object"),
    ('{"frameworks": {"torch": {"startup": {"seconds": -1}}}}', "error: cost file {path}: frameworks.torch.startup is"),
    ('{"frameworks": {"jax": {"compile": {"mlp": 3}}}}', "error: cost file {path}: frameworks.jax.compile is"),
])
def test_a_bad_cost_file_is_one_line(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "costs.json"
    if content is not None:
        path.write_text(content)
    for command in (["estimate"], ["plan", "quick"]):
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_chunks.py"), *command, "--costs",
                               str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith(message.format(path=path)) and done.stderr.count("\n") == 1, done.stderr


def test_full_profile_runs_every_benchmark_once(cuda_combos: list, cuda_grid: list[str]) -> None:
    full = chunks.profile("full", cuda_combos)
    covered = [c.name for chunk in full for c in chunks.select(chunk, cuda_combos)]
    assert sorted(covered) == sorted(cuda_grid)
    assert full[0].name.startswith("harness") and all(c.rounds == 0 for c in full)
    with pytest.raises(ValueError, match="valid choices"):
        chunks.profile("medium", cuda_combos)


# The fakes save results as asv does (one file per machine, commit and environment), which scrub-results renames.
_SAVE = r"""
def save(folder, key):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "machine.json").write_text("{}")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    path = folder / f"{commit[:8]}-existing-py_fake_python.json"
    data = json.loads(path.read_text()) if path.exists() else {
        "commit_hash": commit, "env_name": "existing-py_fake_python", "python": "3.12", "date": 0,
        "params": {"machine": folder.name}, "requirements": {}, "result_columns": ["result", "params", "version"],
        "results": {}, "durations": {}, "version": 2}
    data["results"][key] = [[1.0], [["'torch'"]], "1"]
    path.write_text(json.dumps(data))
"""
FAKE_ASV = r"""#!/usr/bin/env python3
# A stand-in for asv run: records what OUTDIR held when it started, then saves one result for its -b regex when it
# ends (FAKE_HANG's regex hangs first).
import json, os, pathlib, subprocess, sys, time
""" + _SAVE + r"""
args = sys.argv[1:]
regex, machine = args[args.index("-b") + 1], args[args.index("--machine") + 1]
out = pathlib.Path(os.environ["FAKE_OUT"])
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"runner": "asv", "regex": regex, "outdir": sorted(p.name for p in out.iterdir()),
                          "attributes": [args[i + 1] for i, a in enumerate(args) if a == "-a"]}) + "\n")
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
if regex == os.environ.get("FAKE_HANG"):
    time.sleep(60)
save(pathlib.Path("results") / machine, f"bench.{regex}")
"""
FAKE_TVT = r"""#!/usr/bin/env python3
# A stand-in for tape-vs-trace. `run`: records what OUTDIR held when it started and its arguments, then saves a
# result after every round (--rounds, else FAKE_ROUNDS) for its -b regex; FAKE_HANG's regex hangs in its second
# round. `paired`: logs its arguments (after the chunks' lines), writes a CSV to --out.
import json, os, pathlib, subprocess, sys, time
""" + _SAVE + r"""
args = sys.argv[1:]
out = pathlib.Path(os.environ["FAKE_OUT"])

def log(entry):
    with open(os.environ["FAKE_LOG"], "a") as fh:
        fh.write(json.dumps(entry) + "\n")

if args[0] == "paired":
    log({"tape-vs-trace": args})
    time.sleep(float(os.environ.get("FAKE_PAIRED_SLEEP", "0")))
    folder = pathlib.Path(args[args.index("--out") + 1])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gpu-nvidia-h200-abcdef12.csv").write_text("experiment,point\nremat,plain\n")
    sys.exit(0)
regex, machine = args[args.index("-b") + 1], args[args.index("--machine") + 1]
rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else int(os.environ.get("FAKE_ROUNDS", "1"))
log({"runner": "worker", "regex": regex, "outdir": sorted(p.name for p in out.iterdir()), "args": args})
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
for r in range(rounds):
    if r and regex == os.environ.get("FAKE_HANG"):
        time.sleep(60)
    save(pathlib.Path(args[args.index("--results") + 1]) / machine, f"bench.{regex}.round{r + 1}")
"""
FAKE_SMI = """#!/bin/sh
case "$1" in --query-gpu*) echo "NVIDIA H200, 143771 MiB, 580.65.06, 1980 MHz, 345 MHz, 9.0";;
*) echo "| Driver Version: 580.65.06   CUDA Version: 13.0 |";; esac
"""


def _gpu_script_copy(tmp_path: Path) -> tuple[Path, dict]:
    """The scripts in a git repository of their own (results land there, not here), fake asv, tape-vs-trace and
    nvidia-smi; no pre-flight (the tests that want one set TVT_COSTS or TVT_PREFLIGHT)."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "scripts", repo / "scripts")
    shutil.copy(ROOT / "Makefile", repo / "Makefile")  # its RECORDED_SOURCES: what the script refuses uncommitted
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
           "TVT_SETUP": "0", "TVT_CALIBRATE": "0", "TVT_PREFLIGHT": "0",
           "TVT_PEAKCHECK": "0", "FAKE_OUT": str(out), "FAKE_LOG": str(tmp_path / "asv.log")}
    return repo, env


def _run_gpu_script(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(repo / "scripts" / "gpu_bench.sh"), env["FAKE_OUT"], *args],
                          capture_output=True, text=True, env=env, timeout=600)


def _tarball(tmp_path: Path) -> list[str]:
    """The files in OUTDIR's results.tar.gz."""
    import tarfile

    with tarfile.open(tmp_path / "out" / "results.tar.gz") as tar:
        return sorted(m.name for m in tar.getmembers() if m.isfile())


def _brought_back(tmp_path: Path, repo: Path, machine: str = "gpu-nvidia-h200") -> dict:
    """This commit's result file as OUTDIR's tarball holds it."""
    import tarfile

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    with tarfile.open(tmp_path / "out" / "results.tar.gz") as tar:
        return json.load(tar.extractfile(f"results/{machine}/{commit[:8]}-existing-venv.json"))


def _calls(tmp_path: Path, chunks_only: bool = False) -> list[dict]:
    """What the fakes logged, in order; `chunks_only`: the runs of chunks alone (no paired step)."""
    found = [json.loads(line) for line in (tmp_path / "asv.log").read_text().splitlines()]
    return [c for c in found if "regex" in c] if chunks_only else found


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["worker", "asv"])
def test_gpu_script_copies_results_after_every_chunk_and_survives_a_timeout(tmp_path: Path, runner: str) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_GPU_BENCHMARKS="alpha beta gamma", TVT_CHUNK_TIMEOUT_S="3", FAKE_HANG="beta", FAKE_ROUNDS="2",
               TVT_RUNNER=runner)
    run = _run_gpu_script(repo, env, "full")
    assert run.returncode == 124, run.stdout[-2000:]
    calls = _calls(tmp_path, chunks_only=True)
    assert [c["regex"] for c in calls] == ["alpha", "beta", "gamma"] and {c["runner"] for c in calls} == {runner}
    assert calls[0]["outdir"] == ["log.txt"]
    assert calls[1]["outdir"] == calls[2]["outdir"] == ["log.txt", "results.tar.gz"]
    saved = _brought_back(tmp_path, repo)
    log = (tmp_path / "out" / "log.txt").read_text()
    if runner == "worker":  # beta was killed in its second round: only that round is lost
        assert sorted(saved["results"]) == ["bench.alpha.round1", "bench.alpha.round2", "bench.beta.round1",
                                            "bench.gamma.round1", "bench.gamma.round2"]
        assert "chunk beta timed out after 3s: the round in progress is lost" in log
        assert calls[0]["args"] == ["run", "-b", "alpha", "--machine", "gpu-nvidia-h200", "--results", "results",
                                    "--worker-timeout", "3"]
    else:  # asv saves when a run ends: beta is lost
        assert sorted(saved["results"]) == ["bench.alpha", "bench.gamma"]
        assert "chunk beta timed out after 3s: its results are lost" in log
    assert f"machine: gpu-nvidia-h200, profile: full, runner: {runner}" in log
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
    started = [c["regex"] for c in _calls(tmp_path, chunks_only=True)]
    assert started[0] == "one" and len(started) < 3
    assert f"time budget reached: not run: {' '.join(['one', 'two', 'three'][len(started):])}" in run.stdout
    # The CUDA-graph pairing reaches the log and the machine name the results are saved under.
    assert "CUDA graphs: torch_compile_mode reduce-overhead, xla_command_buffers on (XLA default)" in run.stdout
    assert "results/gpu-nvidia-h200-torch-reduce-overhead/machine.json" in _tarball(tmp_path)


@pytest.mark.slow
def test_gpu_quick_profile_runs_what_its_plan_fits_in_three_rounds(tmp_path: Path, cuda_combos: list) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    # The defaults, but PyTorch's compiles outlast a contact: the parts with them are left out, the rest run.
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"frameworks": {"torch": {"compile": {w: {"seconds": 400} for w in
                                                                       ("mlp", "transformer")}}}}))
    env.update(TVT_COSTS=str(costs))
    run = _run_gpu_script(repo, env, "quick")
    assert run.returncode == 0, run.stdout[-2000:]
    calls = _calls(tmp_path, chunks_only=True)
    ran = {c.name for call in calls for c in cuda_combos if re.search(call["regex"], c.name)}
    assert ran and not any(c.framework == "torch" and c.mode == "compiled" for c in cuda_combos if c.name in ran)
    assert all(c["args"][3:5] == ["--rounds", "3"] for c in calls)
    assert "plan of the quick profile under tape-vs-trace run" in run.stdout
    assert f"costs measured by the pre-flight ({costs}" in run.stdout
    not_run = next(line for line in run.stdout.splitlines() if line.startswith("time budget reached: not run: "))
    assert not_run.endswith("(the next contact resumes there)") and "gradstep." in not_run
    assert "== paired (timeout " in run.stdout  # what ran is divided into the paired comparisons
    # OUTDIR: at most 8 flat files
    brought = list((tmp_path / "out").iterdir())
    assert all(p.is_file() for p in brought) and len(brought) <= 8, brought


@pytest.mark.slow
def test_gpu_script_plans_from_its_pre_flight(tmp_path: Path) -> None:
    # On this CPU machine TVT_DEVICE=cuda fails every framework's start-up at once: the file says so, the plan uses
    # the defaults for what it did not time, and the run goes on.
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_PREFLIGHT="1", TVT_PREFLIGHT_S="20", TVT_BUDGET_S="150")
    run = _run_gpu_script(repo, env, "quick")
    assert run.returncode == 0, run.stdout[-2000:]
    costs = json.loads((tmp_path / "out" / "preflight.json").read_text())
    assert costs["device"] == "cuda" and costs["wall_s"] < 20
    assert (repo / ".asv" / "preflight.json").read_text() == (tmp_path / "out" / "preflight.json").read_text()
    assert f"costs measured by the pre-flight ({tmp_path / 'out' / 'preflight.json'}" in run.stdout


@pytest.mark.slow
def test_a_first_contact_runs_what_the_defaults_fit_before_its_pre_flight(tmp_path: Path) -> None:
    """No results at this commit and no cost file: the chunks the stated defaults fit (the gradient steps) run first,
    the pre-flight after them (its phases would repeat their first round), then the plan from it."""
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_PREFLIGHT="1", TVT_PREFLIGHT_S="5")
    run = _run_gpu_script(repo, env, "quick")
    assert run.returncode == 0, run.stdout[-2000:]
    assert "first contact at this commit: the chunks the stated defaults fit run first, then the pre-flight" \
        in run.stdout
    calls = _calls(tmp_path, chunks_only=True)
    assert "GradStep_transformer" in calls[0]["regex"] and "'compiled'" in calls[0]["regex"]
    assert "preflight.json" not in calls[0]["outdir"] and "preflight.json" in calls[-1]["outdir"]
    assert run.stdout.index("assumed: every cost") < run.stdout.index("== chunk gradstep ") < run.stdout.index(
        f"costs measured by the pre-flight ({tmp_path / 'out' / 'preflight.json'}")


@pytest.mark.slow
def test_gpu_script_refuses_a_bad_runner_or_cost_file_in_one_line(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    run = _run_gpu_script(repo, {**env, "TVT_RUNNER": "slurm"}, "quick")
    assert run.returncode == 1 and run.stdout.strip() == "error: unknown TVT_RUNNER 'slurm'; valid choices: worker, asv"
    run = _run_gpu_script(repo, {**env, "TVT_COSTS": str(tmp_path / "missing.json")}, "quick")
    assert run.returncode == 1 and "Traceback" not in run.stdout
    assert run.stdout.strip().splitlines()[-1].startswith("error: cannot read cost file")
    assert not (tmp_path / "asv.log").exists()


@pytest.mark.slow
def test_gpu_script_divides_the_chunks_samples_into_the_paired_comparisons_after_them(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_GPU_BENCHMARKS="alpha")
    run = _run_gpu_script(repo, env, "full")
    assert run.returncode == 0, run.stdout[-2000:]
    calls = _calls(tmp_path)
    assert calls[0]["regex"] == "alpha"
    assert calls[-1] == {"tape-vs-trace": ["paired", "--results", "results", "--out", ".asv/paired"]}
    assert "results/paired/gpu-nvidia-h200-abcdef12.csv" in _tarball(tmp_path)
    assert "== paired (timeout 3600s)" in run.stdout


@pytest.mark.slow
def test_gpu_paired_step_has_its_own_timeout(tmp_path: Path) -> None:
    # A division that overruns is killed, the run says so and fails; the chunks' results are kept.
    repo, env = _gpu_script_copy(tmp_path)
    env.update(TVT_GPU_BENCHMARKS="alpha", TVT_PAIRED_TIMEOUT_S="2", FAKE_PAIRED_SLEEP="30")
    run = _run_gpu_script(repo, env, "full")
    assert run.returncode == 124, run.stdout[-2000:]
    assert "paired timed out after 2s" in run.stdout
    assert not any(n.startswith("results/paired/") and n.endswith(".csv") for n in _tarball(tmp_path))
    assert _brought_back(tmp_path, repo)["results"]


@pytest.mark.slow
def test_gpu_script_refuses_uncommitted_measured_code(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    (repo / "scripts" / "gpu_chunks.py").write_text("# changed\n")
    run = _run_gpu_script(repo, env, "quick")
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    sources = re.search(r"^RECORDED_SOURCES\s*:=(.*)$", text, flags=re.M).group(1).split()  # the Makefile's one list
    assert run.returncode == 1 and run.stdout.strip().splitlines()[-1] == (
        f"error: commit {' '.join(sources)} first: results are recorded under HEAD")
    assert not (tmp_path / "asv.log").exists()
    (repo / "Makefile").write_text("all:\n")  # no list: refused, not run unchecked
    run = _run_gpu_script(repo, env, "quick")
    assert run.returncode == 1 and run.stdout.strip().splitlines()[-1] == (
        "error: the Makefile defines no RECORDED_SOURCES")


@pytest.mark.slow
def test_a_failed_copy_does_not_stop_the_next_chunks(tmp_path: Path) -> None:
    repo, env = _gpu_script_copy(tmp_path)
    fail_once = tmp_path / "bin" / "tar"  # the first copy's tar fails, the others run the real one
    fail_once.write_text(f"#!/bin/sh\nif [ ! -e {tmp_path}/tar-failed ]; then touch {tmp_path}/tar-failed; exit 3; fi\n"
                         f"exec {shutil.which('tar')} \"$@\"\n")
    fail_once.chmod(0o755)
    env.update(TVT_GPU_BENCHMARKS="alpha beta", TVT_CURVE="0")
    run = _run_gpu_script(repo, env, "full")
    assert run.returncode == 0, run.stdout[-2000:]
    assert [c["regex"] for c in _calls(tmp_path, chunks_only=True)] == ["alpha", "beta"]
    assert run.stdout.count("warning: copying the results to") == 1
    assert sorted(_brought_back(tmp_path, repo)["results"]) == ["bench.alpha.round1", "bench.beta.round1"]


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


def device_copy(source: Path, dest: Path, carried: tuple[str, ...] = ()) -> Path:
    """What the device tool sends of `source`: its tracked files and the untracked ones git does not ignore, and the
    `carried` paths (ignored ones a call names), without .git."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=source, capture_output=True,
                           text=True, check=True).stdout.split()
    for name in files:
        if (source / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, dest / name)
    for name in carried:
        shutil.copytree(source / name, dest / name, symlinks=True)
    return dest


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
    copy = device_copy(ROOT, tmp_path / "copy")
    # An index that cannot answer: any attempt to reach one fails instead of downloading.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHON": str(tmp_path / "A" / "bin" / "python"),
           "DEVICE": "cpu", "TVT_WHEELS": str(tmp_path / "no-wheels"), "PIP_INDEX_URL": "http://127.0.0.1:9/",
           "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}
    return copy, env


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=cwd,
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    """A small repository (the Makefile's list of measured paths, gpu_commit.sh, one measured file, an ignored
    folder), committed, with `scripts/gpu_commit.sh prepare` run in it (wheels present: nothing fetched)."""
    src = tmp_path / "src"
    (src / "scripts").mkdir(parents=True)
    (src / "implementations").mkdir()
    (src / ".whl").mkdir()
    (src / ".whl" / "asv-0.6.6-py3-none-any.whl").write_text("w")
    shutil.copy2(ROOT / "scripts" / "gpu_commit.sh", src / "scripts" / "gpu_commit.sh")
    (src / "Makefile").write_text("RECORDED_SOURCES := Makefile implementations \\\n\tscripts\n")
    (src / "implementations" / "step.py").write_text("STEP = 1\n")
    (src / ".gitignore").write_text(".whl/\n.gpu-contact/\n")
    _git(src, "init", "-q", "-b", "main")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "measured", "--date", "2026-01-02T03:04:05+00:00")
    done = subprocess.run(["bash", "scripts/gpu_commit.sh", "prepare"], cwd=src, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "carry: .gpu-contact .whl"
    return src


def _restore(copy: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/gpu_commit.sh", "restore"], cwd=copy, capture_output=True, text=True)


def test_a_copy_without_git_is_filed_under_the_prepared_commit(prepared: Path, tmp_path: Path) -> None:
    copy = device_copy(prepared, tmp_path / "device", (".gpu-contact", ".whl"))
    assert not (copy / ".git").exists()
    done = _restore(copy)
    assert done.returncode == 0, done.stdout + done.stderr
    head = _git(prepared, "rev-parse", "HEAD")
    assert _git(copy, "rev-parse", "HEAD") == head and _git(copy, "show", "-s", "--format=%cI", "HEAD") == \
        _git(prepared, "show", "-s", "--format=%cI", "HEAD")
    assert _git(copy, "rev-parse", "main") == head  # asv.conf.json's branch
    assert f"commit {head[:8]}" in done.stdout
    # Results unpacked into the tree are no measured code; a second restore (a warm machine's next call) agrees.
    (copy / "results").mkdir()
    (copy / "results" / "r.json").write_text("{}")
    assert _restore(copy).returncode == 0 and _git(copy, "rev-parse", "HEAD") == head


def test_a_contact_refuses_code_other_than_the_prepared_commits(prepared: Path, tmp_path: Path) -> None:
    copy = device_copy(prepared, tmp_path / "device", (".gpu-contact",))
    (copy / "implementations" / "step.py").write_text("STEP = 2\n")
    done = _restore(copy)
    assert done.returncode == 1
    assert done.stdout.strip().splitlines()[-1].startswith("error: the measured code differs from commit ")
    assert "implementations/step.py" in done.stdout


def test_a_contact_without_git_and_without_a_carried_commit_refuses_to_run(prepared: Path, tmp_path: Path) -> None:
    copy = device_copy(prepared, tmp_path / "device")
    done = _restore(copy)
    assert done.returncode == 1 and not (copy / ".git").exists()
    [line] = done.stdout.strip().splitlines()
    assert line.startswith("error: no .git and no carried commit: run scripts/gpu_bench.sh prepare")


def test_the_gpu_script_refuses_a_copy_without_a_commit_before_any_set_up(tmp_path: Path) -> None:
    copy = device_copy(ROOT, tmp_path / "device")
    done = subprocess.run(["bash", "scripts/gpu_bench.sh", str(tmp_path / "out"), "quick"], cwd=copy,
                          capture_output=True, text=True, env={**os.environ, "TVT_DEVICE": "cpu"}, timeout=60)
    assert done.returncode == 1 and not (copy / ".venv").exists() and not (copy / ".git").exists()
    assert "error: no .git and no carried commit" in done.stdout


def test_a_prepared_commit_of_another_head_leaves_a_repository_of_ones_own_alone(prepared: Path) -> None:
    head = _git(prepared, "rev-parse", "HEAD")
    (prepared / "implementations" / "step.py").write_text("STEP = 3\n")
    _git(prepared, "commit", "-q", "-am", "next")
    done = _restore(prepared)
    assert done.returncode == 0 and "not this repository's HEAD" in done.stdout
    assert _git(prepared, "rev-parse", "HEAD") != head  # its own HEAD, not the stale carried one


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
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.side.gpucheck", "--measure", framework, "mlp",
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
    assert line.split()[4:8] == ["1,050", "1,180", "1,182", "32"] and "workspace" in header  # after the program


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
    from implementations.torch import compile_probe, steps

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
    with compile_probe.first_compiled_call(fn, *args):
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


def _fake_wheel(folder: Path, dist: str, module: str, version: str = "0.0.1") -> None:
    """A minimal pure-Python wheel of `dist` whose module says where it was installed from."""
    import base64
    import hashlib
    import zipfile

    info = f"{module}-{version}.dist-info"
    files = {f"{module}/__init__.py": "FROM_LOCAL_WHEEL = True\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip('=')},"
              f"{len(text.encode())}" for name, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    folder.mkdir(exist_ok=True)
    with zipfile.ZipFile(folder / f"{module}-{version}-py3-none-any.whl", "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


def _pins() -> list[tuple[str, str]]:
    """requirements/h200.txt's (distribution, version) pairs."""
    lines = (ROOT / "requirements" / "h200.txt").read_text().splitlines()
    return [tuple(line.split("==")) for line in lines if line and not line.startswith("#")]


def test_offline_setup_installs_the_pinned_wheels_from_local_wheels_only(tmp_path: Path) -> None:
    """A parent without asv: the set-up installs requirements/h200.txt's pins from TVT_WHEELS with pip --no-index
    --no-deps (the index it is given cannot answer), and checks the imports; with a wheel missing it stops in one
    line."""
    pins = _pins()
    assert {d for d, _ in pins} >= {"asv", "asv-runner", "json5", "importlib-metadata"}
    copy, env = _offline_machine(tmp_path, also_missing=("asv", "json5", "importlib_metadata"))
    wheels = tmp_path / "wheels"
    for dist, version in pins[1:]:  # all but asv
        _fake_wheel(wheels, dist, dist.replace("-", "_").lower(), version)
    missing = subprocess.run(["bash", "scripts/setup_offline.sh"], cwd=copy, capture_output=True, text=True,
                             env={**env, "TVT_WHEELS": str(wheels)}, timeout=180)
    assert missing.returncode == 1 and "Traceback" not in missing.stdout + missing.stderr
    assert "error: asv and its dependencies are missing and not installable from the wheels in" in missing.stdout
    _fake_wheel(wheels, *pins[0][:1], "asv", pins[0][1])
    setup = subprocess.run(["bash", "scripts/setup_offline.sh"], cwd=copy, capture_output=True, text=True,
                           env={**env, "TVT_WHEELS": str(wheels)}, timeout=180)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    venv_python = copy / ".venv" / "bin" / "python"
    probe = subprocess.run([str(venv_python), "-c", "import asv, asv_runner, json5; print(asv.__file__, "
                            "asv.FROM_LOCAL_WHEEL, asv_runner.FROM_LOCAL_WHEEL, json5.FROM_LOCAL_WHEEL)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    path, *flags = probe.stdout.split()
    assert path.startswith(str(copy / ".venv")) and flags == ["True", "True", "True"]


# --- resumable contacts: what this commit's result file holds is not run again ---------------------------------------


def _result_file(path: Path, commit: str, results: dict, record: dict | None = None) -> Path:
    """An asv result file (the columns the runners write) holding `results`: name -> (params, values, samples),
    with the runner's `record` where given."""
    columns = ["result", "params", "version", "samples"]
    path.write_text(json.dumps({"commit_hash": commit, "date": 0, "params": {"machine": "m"}, "python": "3.11",
                                "requirements": {}, "env_name": "existing-venv", "version": 2,
                                "result_columns": columns, "results": {
        name: [values, params, "1", samples] for name, (params, values, samples) in results.items()},
                                **({"tape_vs_trace": record} if record else {})}))
    return path


def test_a_contact_runs_only_what_this_commits_results_lack(tmp_path: Path, cuda_combos: list) -> None:
    resume = _load_script("gpu_resume")
    eager = chunks.Chunk("eager", (rows("recording.GradStep_*.time_step", workload=profiles.CITED_WORKLOADS,
                                        mode="eager", **profiles.F32),), profiles.QUICK_ROUNDS)
    live = [c for c in chunks.select(eager, cuda_combos) if not c.skipped]
    by_bench: dict[str, list] = {}
    for c in live:
        by_bench.setdefault(c.benchmark, []).append(c)
    results = {}
    for bench, combos in by_bench.items():
        params = [[repr(v)] for _, v in combos[0].params]
        params[0] = [repr(c.framework) for c in combos]  # framework first: one combination per framework
        full = 3 * combos[0].repeat
        # torch: measured in 3 rounds; jax: the transformer's in 2 (cut short), the mlp's failed
        short = bench.endswith("GradStep_transformer.time_step")
        results[bench] = (params, [0.1, None if not short else 0.1],
                          [[0.1] * full, None if not short else [0.1] * (full - combos[0].repeat)])
    held = resume.read(_result_file(tmp_path / "r.json", "abcdef12" * 5, results), "abcdef12" * 5)
    planned = chunks.plan([eager], cuda_combos, chunks.Costs(), "worker", held=held)
    # The jax mlp failed once (a file with no record of failures holds its own): it is tried again.
    jax_mlp = [c.name for c in live if c.framework == "jax" and c.workload == "mlp"]
    assert [c.name for c in planned[0].todo] == [c.name for c in live if c.framework == "jax"]
    assert (planned[0].done, planned[0].failed) == (2, 0) and [n for n, _ in planned[0].retried] == jax_mlp
    text = "\n".join(chunks.format_plan("plan", planned, chunks.Costs(), 0, 0, ""))
    assert "2 of 4 held" in text and f"retried after a failure at this commit: {jax_mlp[0]}" in text
    # Failed at two contacts, both errors in the record: left out, and both errors printed.
    mlp = next(c for c in live if c.name == jax_mlp[0])
    failures = {f"{mlp.benchmark}-1": [{"run": "a", "error": "CUDA out of memory"},
                                      {"run": "b", "error": "XlaRuntimeError: INTERNAL"}]}
    held = resume.read(_result_file(tmp_path / "r.json", "abcdef12" * 5, results, {"failures": failures}),
                       "abcdef12" * 5)
    planned = chunks.plan([eager], cuda_combos, chunks.Costs(), "worker", held=held)
    assert (planned[0].done, planned[0].failed) == (3, 1)
    text = "\n".join(chunks.format_plan("plan", planned, chunks.Costs(), 0, 0, ""))
    assert "3 of 4 held" in text and "1 failed twice" not in text  # the chunk still has its transformer to run
    assert (f"failed twice at this commit, not run again: {jax_mlp[0]}: CUDA out of memory | XlaRuntimeError: "
            "INTERNAL") in text
    finished = chunks.plan([eager], cuda_combos, chunks.Costs(), "worker", held={
        c.name: resume.State(samples=99, measured=True) for c in live})
    assert finished[0].finished and not finished[0].todo
    assert "done at this commit (4 combinations)" in "\n".join(
        chunks.format_plan("plan", finished, chunks.Costs(), 0, 0, ""))
    with pytest.raises(resume.ResultsError, match="is of commit abcdef12, not 12345678"):
        resume.read(tmp_path / "r.json", "12345678" * 5)
    assert resume.read(tmp_path / "missing.json", "abcdef12") == {}


def test_the_gpu_fixture_has_the_fields_a_real_gpu_record_has(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/data/gpu_fixture (synthetic) is read as a GPU machine's results are: its machine record has the fields
    machine.record gives on a GPU machine (the device is the GPU's model; the CUDA-graph pairing is keyed), and its
    result file the GPU's fingerprint and the run's graph settings, as scrub-results stores them."""
    from tape_vs_trace.results import machine

    monkeypatch.delenv("TVT_DEVICE", raising=False)
    fixture = ROOT / "tests" / "data" / "gpu_fixture" / "gpu-nvidia-h200"
    record = json.loads((fixture / "machine.json").read_text())
    gpu = {"gpu": "NVIDIA H200", "driver_version": "580.159.04"}
    real = machine.record(cpuinfo="model name\t: Intel Xeon\ncpu family\t: 6\nmodel\t\t: 207\n", gpu=gpu)
    assert set(record) - {"version"} == set(real) and record["device"] == real["device"] == "NVIDIA H200"
    data = json.loads((fixture / "93acfd55-existing-venv.json").read_text())
    assert set(data["params"]) == set(real) | {"python"}
    ours = data["tape_vs_trace"]
    assert {"driver", "fingerprint", "graph_settings"} <= set(ours) and {"gpu", "cuda"} <= set(ours["fingerprint"])
    assert ours["graph_settings"] == {k: real[k] for k in ("torch_compile_mode", "xla_command_buffers")}


def test_the_docs_h200_arithmetic_is_the_plans(cuda_combos: list) -> None:
    """The README's and docs/gpu.md's contact count for the quick profile, estimated from the stated defaults, is
    what gpu_chunks.py computes; so are the first contact they name and its device time."""
    found = chunks.quick_contacts(list(chunks.QUICK), cuda_combos, chunks.Costs())
    assert not found.never and [p.chunk.name for p in found.first + found.after] == ["gradstep"]
    count = 1 + len(found.later)
    end = math.ceil(found.first_end_s)
    lease = f"{end + 120 + chunks.IDLE_S} s of a {chunks.LEASE_S} s lease"
    for page in (ROOT / "README.md", ROOT / "docs" / "gpu.md"):
        text = " ".join(page.read_text().split())
        assert f"{count} contacts complete the quick profile" in text or f"{count} contacts complete it" in text
        assert "the first committing the float32 gradient steps of the mlp and the transformer, eager and compiled" \
            in text
        assert lease in text and f"{chunks.QUICK_BUDGET_S} s" in text
    gpu = " ".join((ROOT / "docs" / "gpu.md").read_text().split())
    assert f"ending at about {end} s" in gpu
    assert all(f"{share} for {label}" in gpu for share, label in (
        (chunks.WARM_COMPILE_SHARE["torch"], "PyTorch"), (chunks.WARM_COMPILE_SHARE["jax"], "JAX")))


@pytest.fixture(scope="module")
def contact_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout with 2 MiB tracked, 1 MiB carried wheels, 1 MiB ignored and not carried, and a .git holding the
    tracked MiBs' history: a contact sends 3 MiB of it."""
    root = tmp_path_factory.mktemp("contact")
    (root / "results").mkdir()
    (root / "results" / "run.bin").write_bytes(os.urandom(2 << 20))
    (root / ".whl").mkdir()
    (root / ".whl" / "pkg.whl").write_bytes(os.urandom(1 << 20))
    (root / "scratch.bin").write_bytes(os.urandom(1 << 20))
    (root / ".gitignore").write_text("/.whl/\n/scratch.bin\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(git + ["add", "-A"], cwd=root, check=True)
    subprocess.run(git + ["commit", "-qm", "tree"], cwd=root, check=True)
    return root


@pytest.mark.parametrize("budget, code, word", [("2.9", 1, "over"), ("3.1", 0, "within")])
def test_contact_size_counts_the_tree_and_carried_wheels_against_its_budget(contact_tree: Path, budget: str, code: int,
                                                                           word: str) -> None:
    """scripts/contact_size.py counts what the device tool sends (tracked and untracked-not-ignored files, carried
    paths), not .git or ignored files left behind, and exits 1 over the budget; the checkout's own size grows with
    every results commit, so the 48 MiB budget is checked before a contact, not pinned here."""
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "contact_size.py"), "--root", str(contact_tree),
                          "--budget-mib", budget], capture_output=True, text=True, timeout=120)
    assert run.returncode == code and f"a contact sends 3.0 MiB: {word} the {budget} MiB budget" in run.stdout, \
        run.stdout + run.stderr
    assert "results" in run.stdout and "carried .whl" in run.stdout and ".git" not in run.stdout.split("a contact")[0]
