"""The runnable steps (implementations/*/steps.py): what a timed call does is the step and nothing else (no compile),
the compiled forms compute what the eager forms compute, the forward steps return the forward in every mode, every
PyTorch step synchronizes its own device, and the memory budget reaches torch's partitioner."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch
import torch._functorch.config

from benchmarks import common as bench_common
from benchmarks import inference, recording
from implementations import workloads
from implementations.jax import steps as jax_steps
from implementations.torch import steps as torch_steps
from tests.helpers import TOLERANCES, assert_close

_COMPILES: list[str] = []


def _listen(event: str, *_, **__) -> None:
    # a compile the session's persistent cache serves (tests/conftest.py) is a compile the step asked for all the same
    if event in ("/jax/core/compile/backend_compile_duration", "/jax/compilation_cache/cache_hits"):
        _COMPILES.append(event)


jax.monitoring.register_event_duration_secs_listener(_listen)
jax.monitoring.register_event_listener(_listen)


def _compiles_in_warm_call(step) -> int:
    _COMPILES.clear()
    step()
    return len(_COMPILES)


@pytest.mark.parametrize("workload", ["transformer", "lstm", "mlp", "chain"])
def test_warm_eager_jax_step_does_not_compile(workload: str) -> None:
    """The eager (op-by-op) JAX step the suite times compiles nothing once warm: its time is dispatch and compute."""
    inputs = workloads.make_inputs(workload)
    formulation = (bench_common.formulations(workload) or [None])[0]  # 'unrolled' where the workload has a loop
    step = jax_steps.grad_step(inputs, "plain", "eager", formulation=formulation)
    assert _compiles_in_warm_call(step) == 0


@pytest.mark.slow
def test_eager_scan_would_compile_every_call() -> None:
    """Why the eager modes run 'unrolled': an un-jitted lax.scan is compiled by XLA anew on every call."""
    step = jax_steps.grad_step(workloads.make_inputs("transformer"), "plain", "eager")
    assert _compiles_in_warm_call(step) > 0


@pytest.mark.slow
def test_torch_compiled_step_equals_eager() -> None:
    inputs = workloads.make_inputs("mlp", dtype="float32")
    (eager_loss, eager_grads), (compiled_loss, compiled_grads) = (
        torch_steps.grad_step(inputs, "plain", mode)() for mode in ("eager", "compiled"))
    assert_close("loss", compiled_loss.numpy(), eager_loss.numpy(), 2e-5)
    for i, (c, e) in enumerate(zip(compiled_grads, eager_grads)):
        assert_close(f"grad {i}", c.numpy(), e.numpy(), 2e-5)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["plain", "custom"])
def test_torch_compiled_gmm_step_runs_its_own_graph_and_equals_eager(variant: str) -> None:
    """The compiled gmm step the CPU suite times (its benchmark size) is one Dynamo graph of its own variant, with
    no graph break and no fallback to eager, and returns eager's loss and gradients."""
    from torch._dynamo.utils import counters

    inputs = workloads.make_inputs("gmm", workloads.spec("gmm").runs("CustomStep", "cpu")[0], "float32")
    eager_loss, eager_grads = torch_steps.grad_step(inputs, variant, "eager")()
    torch._dynamo.reset()
    counters.clear()
    compiled_loss, compiled_grads = torch_steps.grad_step(inputs, variant, "compiled")()
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"], dict(counters)
    torch._dynamo.reset()
    assert_close("loss", compiled_loss.numpy(), eager_loss.numpy(), TOLERANCES["float32"])
    for name, c, e in zip(("alphas", "means", "icf", "x"), compiled_grads, eager_grads):
        assert_close(f"grad {name}", c.numpy(), e.numpy(), TOLERANCES["float32"])


def test_jax_compiled_step_equals_eager() -> None:
    inputs = workloads.make_inputs("mlp", dtype="float64")
    (eager_loss, eager_grads), (jit_loss, jit_grads) = (
        jax_steps.grad_step(inputs, "plain", mode)() for mode in ("eager", "compiled"))
    assert_close("loss", np.asarray(jit_loss), np.asarray(eager_loss), 1e-12)
    for a, b in zip(jax.tree.leaves(jit_grads), jax.tree.leaves(eager_grads)):
        assert_close("grad", np.asarray(a), np.asarray(b), 1e-12)


def test_benchmark_classes_never_share_a_memoised_step() -> None:
    grad, forward = recording.GradStep_mlp(), inference.Forward_mlp()
    grad.setup("jax", "mlp", "tiny", "compiled", "matched", "float32", "highest", "cpu")
    forward.setup("jax", "mlp", "tiny", "compiled", "matched", "float32", "highest", "cpu")
    assert grad.step is not forward.step


def test_second_setup_is_a_lookup() -> None:
    """asv-runner re-runs setup before every timed call: the second call must not rebuild; it only sets its
    combination's process-wide settings again (another combination may have set others in between)."""
    bench = recording.GradStep_mlp()
    params = ("jax", "mlp", "tiny", "compiled", "matched", "float32", "highest", "cpu")
    bench.setup(*params)
    step, case = bench.step, bench.case
    calls = []
    original = bench_common.frameworks.load
    bench_common.frameworks.load = lambda *a, **k: calls.append(a) or original(*a, **k)
    try:
        recording.GradStep_mlp().setup(*params)
    finally:
        bench_common.frameworks.load = original
    again = recording.GradStep_mlp()
    again.setup(*params)
    assert calls == [("jax", "highest", False)] and again.step is step and again.case is case


# --- forward steps -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mlp64() -> workloads.Inputs:
    return workloads.make_inputs("mlp", "tiny", "float64")


@pytest.mark.parametrize("mode", ["record", "no_grad", "inference_mode"])
def test_torch_forward_step_returns_the_forward(mlp64, mode: str) -> None:
    fn, (params, data) = torch_steps.forward_fn(mlp64, "plain", "no_grad")
    want = fn(params, data)
    got = torch_steps.forward_step(mlp64, "plain", mode)()
    assert isinstance(got, torch.Tensor) and got.shape == want.shape
    assert_close(f"forward_step {mode}", got.detach().numpy(), want.numpy(), 1e-14)
    assert got.requires_grad is (mode == "record")  # only the recording forward builds a tape


@pytest.mark.parametrize("mode", ["record", "no_grad", "compiled"])
def test_jax_forward_step_returns_the_forward(mlp64, mode: str) -> None:
    fn, (params, data) = jax_steps.forward_fn(mlp64, "plain", "no_grad")
    want = np.asarray(fn(params, data))
    got = jax_steps.forward_step(mlp64, "plain", mode)()
    if mode == "record":  # jax.vjp: (output, the backward function)
        got, vjp = got
        assert callable(vjp)
    assert_close(f"forward_step {mode}", np.asarray(got), want, 1e-12)
    assert isinstance(got, jax.Array)


# --- the memory budget and the compiled graph's guard --------------------------------------------------------------


@pytest.mark.parametrize("budget", [0.0, 0.25, 1.0])
def test_the_memory_budget_is_the_partitioners_while_compiling(budget: float) -> None:
    before = torch._functorch.config.activation_memory_budget
    with torch_steps._memory_budget(budget):
        assert torch._functorch.config.activation_memory_budget == budget
    assert torch._functorch.config.activation_memory_budget == before
    with torch_steps._memory_budget(None):  # None: the default, left alone
        assert torch._functorch.config.activation_memory_budget == before


def test_grad_step_builds_the_asked_variant_and_guards_the_compiled_graph_on_its_budget(mlp64, monkeypatch) -> None:
    """The step's loss is the variant's, in the formulation asked for; a compiled step is guarded on its own budget
    (the curve's points each compile their own graph: test_remat.py's slow budget tests show the graphs)."""
    built, guarded = [], []
    real_loss_fn, real_guarded = torch_steps.loss_fn, torch_steps._guarded
    monkeypatch.setattr(torch_steps, "loss_fn", lambda *a: built.append(a) or real_loss_fn(*a))
    monkeypatch.setattr(torch_steps, "_guarded", lambda loss, budget: guarded.append(budget) or real_guarded(loss,
                                                                                                          budget))
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)  # no compile: only what is handed to it matters
    torch_steps.grad_step(mlp64, "remat_full", "eager", "cpu", formulation=None)
    torch_steps.grad_step(mlp64, "plain", "compiled", "cpu", formulation=None, budget=0.25)
    assert built == [(mlp64, "remat_full", "cpu", None), (mlp64, "plain", "cpu", None)]
    assert guarded == [0.25]


# --- device synchronization (recorded on a CPU: on CUDA a step that syncs another device is mistimed) --------------


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list:
    """The device of every sync a torch step makes (None: the step left it to sync's default)."""
    seen: list = []

    def recording_sync(result, device=None):
        seen.append(device)
        return result

    monkeypatch.setattr(torch_steps, "sync", recording_sync)
    return seen


@pytest.fixture(scope="module")
def mlp32() -> workloads.Inputs:
    return workloads.make_inputs("mlp", "tiny", "float32")


def _every_sync_names(seen: list, device: str) -> None:
    assert seen and set(seen) == {device}, seen


def test_the_grad_step_syncs_its_device(synced: list, mlp32: workloads.Inputs) -> None:
    torch_steps.grad_step(mlp32, "plain", "eager", "cpu")()
    _every_sync_names(synced, "cpu")


@pytest.mark.parametrize("mode", ["record", "no_grad", "inference_mode"])
def test_every_forward_step_syncs_its_device(mode: str, synced: list, mlp32: workloads.Inputs) -> None:
    torch_steps.forward_step(mlp32, "plain", mode, "cpu")()
    _every_sync_names(synced, "cpu")


@pytest.mark.parametrize("feature", torch_steps.ENGINE_FEATURES)
def test_every_engine_step_syncs_its_device(feature: str, synced: list, mlp32: workloads.Inputs) -> None:
    torch_steps.engine_step(mlp32, "plain", feature, "eager", "cpu")()
    _every_sync_names(synced, "cpu")


def test_jax_engine_step_compiled_jits_and_eager_does_not(mlp64, monkeypatch) -> None:
    jitted = []
    real_jit = jax_steps.jax.jit
    monkeypatch.setattr(jax_steps.jax, "jit", lambda fn, *a, **k: jitted.append(fn) or real_jit(fn, *a, **k))
    jax_steps.engine_step(mlp64, "plain", "no_hooks", "eager")
    assert jitted == []
    jax_steps.engine_step(mlp64, "plain", "no_hooks", "compiled")
    assert len(jitted) == 1


def test_jax_recording_forward_keeps_residuals_but_not_its_arguments(mlp64) -> None:
    fn, (params, data) = jax_steps.forward_fn(mlp64, "plain", "record")
    out, kept = fn(params, data)
    arguments = jax.tree.leaves((params, data))
    assert kept and not any(r is a for r in kept for a in arguments)
    assert np.asarray(out).shape == mlp64.cotangent.shape
