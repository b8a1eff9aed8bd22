"""The distributed steps (implementations.<framework>.distributed): over N ranks each form gives the loss and
gradients of the single-device full-batch step in float64; the reduction averages (a sum over ranks would give N
times the gradient); a rank that fails or hangs ends the step in one line and leaves no process behind; the
collectives' bytes match the analytic count of an all-reduce of every gradient. The GPU form's choices (the
backends' profiler events, which steps get a peak and by what method, the record's note) are checked here on a CPU.

Every step starts worker processes (torch: one per rank, each importing torch): the default set runs each
framework's forms once on the mlp at 2 ranks, the rest is marked slow."""

from __future__ import annotations

import functools
import importlib
import os
import re
import signal
import subprocess
import sys
import time
import types
import uuid
from pathlib import Path

import numpy as np
import pytest

from implementations import frameworks, rank_processes, workloads
from implementations.rank_processes import DistributedResult, RankFailed, RankTimeout
from tests.helpers import StepResult, grad_fn_result

RTOL, ATOL = 1e-10, 1e-12  # float64: the sharded sums differ from the full batch's in the last bits only
FAST = [("torch", "mlp", "ddp", "eager"), ("torch", "mlp", "fsdp", "eager"), ("jax", "mlp", "ddp", "compiled"),
        ("jax", "mlp", "shard_map", "compiled"), ("jax", "mlp", "fsdp", "compiled")]
# The mode each framework's step is compared in first: PyTorch's tape, JAX's jitted program.
FIRST_MODE = {"torch": "eager", "jax": "compiled"}
# N=4 needs a batch that splits in 4: the transformer's test size has 2 sequences.
FOUR_RANK_SIZE = {"mlp": "tiny", "transformer": "L4-B4-S64-D128"}
ROOT = Path(__file__).resolve().parents[1]


def _module(framework: str):
    return importlib.import_module(f"implementations.{framework}.distributed")


@functools.cache
def _distributed(framework: str, workload: str, form: str, mode: str, ranks: int = 2,
                 size: str | None = None) -> DistributedResult:
    inputs = workloads.make_inputs(workload, size, "float64")
    return _module(framework).distributed_step(inputs, form, mode, ranks)


@functools.cache
def _single(framework: str, workload: str, size: str | None = None) -> StepResult:
    return grad_fn_result(framework, workloads.make_inputs(workload, size, "float64"), "plain")


def _assert_matches(result: DistributedResult, expected: StepResult) -> None:
    np.testing.assert_allclose(result.loss, expected.value, rtol=RTOL, atol=ATOL, err_msg="loss")
    assert set(result.grad_params) == set(expected.grad_params)
    for name, grad in expected.grad_params.items():
        np.testing.assert_allclose(result.grad_params[name], grad, rtol=RTOL, atol=ATOL, err_msg=f"d/d {name}")


def _slow_unless_fast(case: tuple) -> pytest.param:
    marks = () if case in FAST else (pytest.mark.slow,)
    return pytest.param(*case, marks=marks, id="-".join(case))


def _two_rank_cases() -> list:
    cases = [(fw, w, form, FIRST_MODE[fw]) for fw in ("torch", "jax") for w in ("mlp", "transformer")
             for form in rank_processes.FORMS]
    # the other mode of each framework, on the mlp: torch.compile of each form, JAX op by op
    cases += [(fw, "mlp", form, "compiled" if fw == "torch" else "eager") for fw in ("torch", "jax")
              for form in rank_processes.FORMS]
    return [_slow_unless_fast(case) for case in cases]


@pytest.mark.parametrize(("framework", "workload", "form", "mode"), _two_rank_cases())
def test_two_ranks_give_the_full_batch_step(framework: str, workload: str, form: str, mode: str) -> None:
    result = _distributed(framework, workload, form, mode)
    _assert_matches(result, _single(framework, workload))
    record = result.record
    assert (record["framework"], record["form"], record["mode"], record["ranks"]) == (framework, form, mode, 2)
    assert record["mesh_shape"] == {rank_processes.MESH_AXIS: 2} and record["note"] == rank_processes.CPU_NOTE
    if framework == "torch" and mode == "compiled":
        assert record["compiled_regions"] > 0, "torch.compile's graphs did not run"


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["torch", "jax"])
@pytest.mark.parametrize("workload", list(FOUR_RANK_SIZE))
@pytest.mark.parametrize("form", rank_processes.FORMS)
def test_four_ranks_give_the_full_batch_step(framework: str, workload: str, form: str) -> None:
    size = FOUR_RANK_SIZE[workload]
    result = _distributed(framework, workload, form, FIRST_MODE[framework], 4, size)
    _assert_matches(result, _single(framework, workload, size))
    assert result.record["ranks"] == 4


@pytest.mark.parametrize(("framework", "workload", "form", "mode"), [_slow_unless_fast(case) for case in FAST])
def test_the_reduction_averages(framework: str, workload: str, form: str, mode: str) -> None:
    # A reduction that sums where it should average gives N times the gradient, one that averages a sum 1/N of it.
    result, expected = _distributed(framework, workload, form, mode), _single(framework, workload)
    record, ranks = result.record, result.record["ranks"]
    for name, grad in expected.grad_params.items():
        for wrong in (ranks * grad, grad / ranks):
            assert not np.allclose(result.grad_params[name], wrong, rtol=1e-3), f"d/d {name} is off by N"
        np.testing.assert_allclose(result.grad_params[name], grad, rtol=RTOL, atol=ATOL, err_msg=f"d/d {name}")
    # Averaging forms scale each rank's loss by N; a global program (JAX's jitted ddp and fsdp) sums partials.
    averaged = record["gradient_reduction"].startswith("mean")
    assert record["local_loss_scale"] == (ranks if averaged else 1)
    assert averaged == (framework == "torch" or form == "shard_map")


def _all_reduce_only(record: dict) -> None:
    itemsize = np.dtype(record["dtype"]).itemsize
    # every gradient once, and the loss: one element
    assert record["collectives"]["all-reduce"]["bytes"] == record["gradient_bytes"] + itemsize
    assert record["analytic_bytes"] == record["gradient_bytes"] + itemsize
    assert record["gradient_bytes"] == workloads.parameter_count(
        workloads.make_inputs(record["workload"], record["size"], record["dtype"])) * itemsize
    others = {k: v for k, v in record["collectives"].items() if k != "all-reduce" and v["count"]}
    assert not others, others


@pytest.mark.parametrize(("framework", "form", "mode"), [("jax", "ddp", "compiled"), ("jax", "shard_map", "compiled"),
                                                         ("torch", "ddp", "eager")])
def test_data_parallel_bytes_are_an_all_reduce_of_every_gradient(framework: str, form: str, mode: str) -> None:
    record = _distributed(framework, "mlp", form, mode).record
    _all_reduce_only(record)
    if form == "ddp" and framework == "torch":
        assert sum(record["ddp_bucket_bytes"]) == record["gradient_bytes"]
        assert record["bucket_cap_mb"] == 25.0


@pytest.mark.slow
@pytest.mark.parametrize("form", ["ddp", "shard_map"])
def test_a_scanned_transformer_counts_its_per_layer_all_reduces_once_per_layer(form: str) -> None:
    # lax.scan puts each layer's all-reduce in the loop body: counted once per iteration, the sum is the same.
    record = _distributed("jax", "transformer", form, "compiled").record
    _all_reduce_only(record)


def test_fsdp_shards_every_parameter_and_gathers_it() -> None:
    for framework in ("torch", "jax"):
        record = _distributed(framework, "mlp", "fsdp", FIRST_MODE[framework]).record
        assert record["parameter_sharding"] == {"w1": 0, "w2": 0}
        assert record["collectives"]["all-gather"]["count"] > 0
    # FSDP2 gathers each rank's shard: half the parameters' bytes from each of 2 ranks
    torch_record = _distributed("torch", "mlp", "fsdp", "eager").record
    assert torch_record["collectives"]["all-gather"]["bytes"] == torch_record["gradient_bytes"] // 2
    # once, with the reduce-scatter of every gradient and the loss's all-reduce: the analytic count
    assert sum(c["bytes"] for c in torch_record["collectives"].values()) == torch_record["analytic_bytes"]


def test_the_analytic_count_of_each_form() -> None:
    gradient, item = 1024, 4
    assert rank_processes.analytic_bytes("ddp", 2, gradient, item) == gradient + item
    assert rank_processes.analytic_bytes("shard_map", 4, gradient, item) == gradient + item
    assert rank_processes.analytic_bytes("fsdp", 4, gradient, item) == gradient // 4 + gradient + item
    assert {rank_processes.analytic_bytes(f, 1, gradient, item) for f in rank_processes.FORMS} == {0}


def test_timed_steps_time_only_the_repeats_each_after_an_alignment() -> None:
    calls: list[str] = []

    def note(name: str):
        return lambda *_: calls.append(name) or name

    out, first_s, samples = rank_processes.timed_steps(note("first"), note("call"), 2, 3, note("align"),
                                                       lambda out: calls.append("sync") or out)
    assert out == "call" and first_s >= 0 and len(samples) == 3
    assert calls == ["align", "first", "sync", *["call", "sync"] * 2, *["align", "call", "sync"] * 3]


@pytest.mark.parametrize(("framework", "mode", "method"), [
    ("torch", "eager", "torch live-storage tracking (TorchDispatchMode), the largest rank's"),
    ("jax", "compiled", "jax compiled.memory_analysis (output+temp-alias; arguments are the baseline); of the "
                        "sharded executable, per device")])
def test_a_timed_request_times_its_repeats_apart_from_the_first_call(framework: str, mode: str,
                                                                      method: str) -> None:
    result = _module(framework).distributed_step(workloads.make_inputs("mlp", dtype="float64"), "ddp", mode, 2,
                                                 warmup=1, repeat=2)
    record = result.record
    assert (record["warmup"], record["repeat"], len(record["step_times_s"])) == (1, 2, 2)
    assert record["first_call_s"] > 0 and all(t > 0 for t in record["step_times_s"])
    assert record["peak_bytes"] > 0 and record["peak_method"] == method
    _all_reduce_only(record)  # the profile of a call of its own counts one step's collectives
    _assert_matches(result, _single(framework, "mlp"))


def test_the_one_step_request_takes_no_torch_peak() -> None:
    record = _distributed("torch", "mlp", "fsdp", "eager").record
    assert record["peak_bytes"] is None and record["peak_method"] == "not measured: the request timed no step"
    assert record["step_times_s"] == [] and record["first_call_s"] > 0


@pytest.mark.slow
def test_a_timed_compiled_torch_step_has_no_cpu_peak_and_says_why() -> None:
    from implementations.torch import distributed

    record = distributed.distributed_step(workloads.make_inputs("mlp", dtype="float64"), "ddp", "compiled", 2,
                                          repeat=1).record
    assert record["peak_bytes"] is None and record["peak_method"] == f"not measured: {distributed.NO_PEAK}"
    assert len(record["step_times_s"]) == 1 and record["compiled_regions"] > 0


_HLO = """HloModule m

%body (p: (s32[], f32[4,4])) -> (s32[], f32[4,4]) {
  %p = (s32[], f32[4,4]{1,0}) parameter(0)
  %g = f32[4,4]{1,0} get-tuple-element(%p), index=1
  %ar = f32[4,4]{1,0} all-reduce(%g), replica_groups={}, to_apply=%add
  ROOT %t = (s32[], f32[4,4]{1,0}) tuple(%i, %ar)
}

ENTRY %main (a: f32[2,4]) -> f32[4,4] {
  %a = f32[2,4]{1,0} parameter(0)
  %ag = f32[4,4]{1,0} all-gather(%a), dimensions={0}
  %w = (s32[], f32[4,4]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
  %s = (f32[4,4]{1,0}, f32[2,4]{1,0}) all-reduce-start(%ag, %a), to_apply=%add
  ROOT %d = (f32[4,4]{1,0}, f32[2,4]{1,0}) all-reduce-done(%s)
}
"""


def test_hlo_collectives_count_loop_iterations_and_async_pairs_once() -> None:
    from implementations.jax.distributed import collectives_of_hlo

    counts = collectives_of_hlo(_HLO)
    # the loop's all-reduce 3 times, 64 bytes each; the async pair once, with its two operands (64 + 32 bytes)
    assert counts["all-reduce"] == {"count": 4, "bytes": 3 * 64 + 96}
    assert counts["all-gather"] == {"count": 1, "bytes": 32}
    with pytest.raises(ValueError, match="unknown trip count"):
        collectives_of_hlo(_HLO.replace('backend_config={"known_trip_count":{"n":"3"}}', ""))
    branch = _HLO.replace("while(%init), condition=%cond, body=%body", "conditional(%i), branch_computations={%body}")
    with pytest.raises(ValueError, match="a conditional's branch"):
        collectives_of_hlo(branch)


def test_both_frameworks_record_the_same_settings() -> None:
    torch_record, jax_record = (_distributed(fw, "mlp", "ddp", FIRST_MODE[fw]).record for fw in ("torch", "jax"))
    assert set(torch_record) == set(jax_record)
    assert (torch_record["backend"].split()[0], jax_record["backend"].split(" (")[0]) == ("gloo", "XLA CPU")
    assert torch_record["bucket_cap_mb"] == 25.0 and jax_record["bucket_cap_mb"] is None
    assert torch_record["compile_cache"].startswith("cold") and jax_record["compile_cache"].startswith("cold")
    assert torch_record["device"] == jax_record["device"] == "cpu"


def _event(name: str, start: int, shapes: tuple = ()) -> types.SimpleNamespace:
    """A profiler event as torch.profiler's events() gives it: name, start time and the recorded input shapes."""
    return types.SimpleNamespace(name=name, time_range=types.SimpleNamespace(start=start), input_shapes=list(shapes))


# What each backend's work is named in a profile (ProcessGroupGloo's and ProcessGroupNCCL's profiling titles).
_WORKS = {"gloo": ("gloo:all_reduce", "gloo:all_gather", "gloo:reduce_scatter"),
          "nccl": ("nccl:all_reduce", "nccl:_allgather_base", "nccl:_reduce_scatter_base")}


@pytest.mark.parametrize("backend", list(_WORKS))
def test_each_c10d_collective_takes_the_bytes_of_its_backends_work(backend: str) -> None:
    from implementations.torch.distributed import _collectives

    all_reduce, all_gather, reduce_scatter = _WORKS[backend]
    # c10d's calls and the backend's works interleave (gloo's on its worker thread); the k-th call is the k-th work
    events = [_event("c10d::_allgather_base_", 0), _event("c10d::_reduce_scatter_base_", 1),
              _event(all_gather, 2, [[2, 4]]), _event("aten::mm", 3, [[4, 4], [4, 4]]),
              _event(reduce_scatter, 4, [[4, 4]]), _event("c10d::allreduce_", 5), _event(all_reduce, 6, [[1]])]
    if backend == "nccl":
        events.append(_event("nccl:coalesced", 7))  # closes a coalesced group: no call of its own
    counts = _collectives(events, 4, backend)
    assert counts["all-gather"] == {"count": 1, "bytes": 32} and counts["reduce-scatter"] == {"count": 1, "bytes": 64}
    assert counts["all-reduce"] == {"count": 1, "bytes": 4}
    other = "nccl" if backend == "gloo" else "gloo"
    with pytest.raises(RuntimeError, match=f"^3 c10d collectives but 0 {other} works in the step's profile$"):
        _collectives(events, 4, other)  # another backend's works are not this one's


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_on_gpus_every_timed_step_gets_a_peak_in_either_mode(framework: str) -> None:
    unmeasured = _module(framework).peak_unmeasured
    assert [unmeasured("cuda", mode, True) for mode in rank_processes.MODES] == [None, None]
    assert {unmeasured("cuda", mode, False) for mode in rank_processes.MODES} == {"the request timed no step"}


def test_cpu_peaks_are_taken_where_they_were() -> None:
    torch_side, jax_side = _module("torch"), _module("jax")
    # PyTorch: the live-storage tracker, eager and timed only; JAX: XLA's buffer plan, compiled, timed or not
    assert [torch_side.peak_unmeasured("cpu", "eager", t) for t in (True, False)] == [
        None, "the request timed no step"]
    assert {torch_side.peak_unmeasured("cpu", "compiled", t) for t in (True, False)} == {torch_side.NO_PEAK}
    assert {jax_side.peak_unmeasured("cpu", "compiled", t) for t in (True, False)} == {None}
    assert {jax_side.peak_unmeasured("cpu", "eager", t) for t in (True, False)} == {jax_side.NO_PEAK}


def test_the_gpu_peak_methods_are_one_text_but_for_each_allocators_counters() -> None:
    fields = re.escape(rank_processes.GPU_PEAK_METHOD)
    for name, group in (("counter", ".+?"), ("in_use", ".+?"), ("caveat", ".*")):
        fields = fields.replace(re.escape("{" + name + "}"), f"(?P<{name}>{group})")
    torch_parts, jax_parts = (re.fullmatch(fields, _module(fw).GPU_PEAK).groupdict() for fw in ("torch", "jax"))
    assert torch_parts == {"counter": "torch.cuda.max_memory_allocated after torch.cuda.reset_peak_memory_stats",
                           "in_use": "torch.cuda.memory_allocated", "caveat": ""}
    assert (jax_parts["counter"], jax_parts["in_use"]) == ("jax peak_bytes_in_use", "bytes_in_use")
    # JAX's mark cannot be reset: the text says whose mark it is
    assert all(words in jax_parts["caveat"] for words in ("high-water mark", "cannot be reset", "fresh per launch"))
    assert "after the timed ones" in rank_processes.GPU_PEAK_METHOD and "per device" in rank_processes.GPU_PEAK_METHOD
    # and the report may divide them (the same kind of method), but not by a CPU row's or JAX's fallback's
    assert frameworks.same_memory_method(_module("torch").GPU_PEAK, _module("jax").GPU_PEAK)
    assert not frameworks.same_memory_method(_module("torch").GPU_PEAK, frameworks.memory_method("jax", "cpu"))


@pytest.mark.parametrize(("device", "note"), [("cpu", rank_processes.CPU_NOTE), ("cuda", rank_processes.GPU_NOTE)])
def test_the_record_says_where_the_ranks_ran(device: str, note: str) -> None:
    inputs = workloads.make_inputs("mlp", dtype="float64")
    request = rank_processes.request(inputs, "ddp", "eager", 2, "plain", None, 25.0, 60.0, device=device)
    record = rank_processes.base_record("torch", request, rank_processes.BACKENDS["torch"][device])
    assert (record["device"], record["note"], record["backend"]) == (
        device, note, {"cpu": "gloo", "cuda": "nccl"}[device])


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_bad_requests_raise_before_any_process_starts(framework: str) -> None:
    step = _module(framework).distributed_step
    mlp, transformer = workloads.make_inputs("mlp", dtype="float64"), workloads.make_inputs("transformer")
    with pytest.raises(ValueError, match="valid choices: ddp, shard_map, fsdp"):
        step(mlp, "pipeline", "eager")
    with pytest.raises(ValueError, match="valid choices: eager, compiled"):
        step(mlp, "ddp", "traced")
    with pytest.raises(ValueError, match="does not split into 4 equal parts"):
        step(transformer, "ddp", "eager", 4)
    with pytest.raises(ValueError, match="no batch axis"):
        step(workloads.make_inputs("gmm"), "ddp", "eager")
    with pytest.raises(ValueError, match="needs a CUDA device"):
        step(transformer, "ddp", "eager", variant="remat_offload")
    for bad in ({"warmup": -1}, {"repeat": 1.5}):
        with pytest.raises(ValueError, match="must be a non-negative integer"):
            step(mlp, "ddp", "eager", **bad)
    with pytest.raises(ValueError, match="unknown rank device 'tpu'; valid choices: cpu, cuda"):
        step(mlp, "ddp", "eager", device="tpu")
    rank_processes.check(transformer, "ddp", "eager", 2, "remat_offload", device="cuda")  # a GPU runs it


def test_torch_compile_of_remat_names_is_refused_with_its_reason() -> None:
    from implementations.torch import distributed

    with pytest.raises(NotImplementedError, match="cannot see named"):
        distributed.distributed_step(workloads.make_inputs("transformer"), "ddp", "compiled", variant="remat_names")
    assert all(_module("jax").unsupported(f, m, "remat_names") is None
               for f in rank_processes.FORMS for m in rank_processes.MODES)


@pytest.fixture
def tagged(monkeypatch: pytest.MonkeyPatch) -> str:
    """A tag in the environment that every worker inherits: how a test finds the processes a step left behind."""
    tag = uuid.uuid4().hex
    monkeypatch.setenv("TVT_TEST_TAG", tag)
    return tag


def _processes_tagged(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if f"TVT_TEST_TAG={tag}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue  # gone, or not ours
    return found


def _one_line(error: BaseException) -> str:
    message = str(error)
    assert "\n" not in message and "Traceback" not in message, message
    return message


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds leftover processes through /proc")
def test_a_failing_rank_ends_the_step_in_one_line_and_leaves_no_process(tagged: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rank_processes.INJECT_ENV, "raise:1")
    with pytest.raises(RankFailed) as failure:
        _module("torch").distributed_step(workloads.make_inputs("mlp", dtype="float64"), "ddp", "eager", 2)
    assert _one_line(failure.value) == ("torch rank 1 of 2 failed: RuntimeError: injected failure in worker 1 "
                                        f"({rank_processes.INJECT_ENV})")
    assert _processes_tagged(tagged) == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds leftover processes through /proc")
def test_a_hanging_process_is_killed_at_its_timeout(tagged: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rank_processes.INJECT_ENV, "hang:0")
    start = time.monotonic()
    with pytest.raises(RankTimeout) as timeout:
        _module("jax").distributed_step(workloads.make_inputs("mlp", dtype="float64"), "ddp", "compiled", 2,
                                        timeout_s=3)
    assert _one_line(timeout.value) == "jax process of 2 devices still running after 3 s: killed"
    assert time.monotonic() - start < 3 + 5
    assert _processes_tagged(tagged) == []


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds leftover processes through /proc")
def test_a_hanging_rank_is_killed_with_the_rank_waiting_for_it(tagged: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rank_processes.INJECT_ENV, "hang:1")
    with pytest.raises(RankTimeout) as timeout:
        _module("torch").distributed_step(workloads.make_inputs("mlp", dtype="float64"), "ddp", "eager", 2,
                                          timeout_s=20)
    message = _one_line(timeout.value)  # rank 0 waits for rank 1 at the rendezvous: both are still running
    assert "torch rank 1 of 2" in message and message.endswith("still running after 20 s: killed"), message
    assert _processes_tagged(tagged) == []


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds leftover processes through /proc")
def test_ranks_stop_by_themselves_when_their_parent_is_gone(tagged: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rank_processes.INJECT_ENV, "hang:1")
    driver = subprocess.Popen(
        [sys.executable, *(["-S"] if sys.flags.no_site else []), "-c",
         "from implementations import workloads; from implementations.torch import distributed; "
         "distributed.distributed_step(workloads.make_inputs('mlp', dtype='float64'), 'ddp', 'eager', 2)"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT),
                                                                               os.environ.get("PYTHONPATH"))))})
    deadline = time.monotonic() + 60
    while len(_processes_tagged(tagged)) < 3 and time.monotonic() < deadline:  # the driver and its 2 ranks
        time.sleep(0.2)
    assert len(_processes_tagged(tagged)) == 3
    driver.send_signal(signal.SIGKILL)  # no clean-up runs: the ranks must notice on their own
    driver.wait()
    deadline = time.monotonic() + 10
    while _processes_tagged(tagged) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_tagged(tagged) == []
