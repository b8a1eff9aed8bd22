"""The runnable steps: what a timed call does is the step and nothing else (no compile), and the compiled forms
compute what the eager forms compute."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from benchmarks import common as bench_common
from benchmarks import inference, recording
from implementations import workloads
from implementations.jax import steps as jax_steps
from implementations.torch import steps as torch_steps
from tests.helpers import assert_close

_COMPILES: list[str] = []


def _listen(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _COMPILES.append(event)


jax.monitoring.register_event_duration_secs_listener(_listen)


def _compiles_in_warm_call(step) -> int:
    _COMPILES.clear()
    step()
    return len(_COMPILES)


@pytest.mark.parametrize("workload", ["transformer", "lstm", "mlp", "chain"])
def test_warm_eager_jax_step_does_not_compile(workload: str) -> None:
    """The eager (op-by-op) JAX step the suite times compiles nothing once warm: its time is dispatch and compute."""
    inputs = workloads.make_inputs(workload)
    formulation = bench_common.formulations(workload)[0]  # 'unrolled' where the workload has a loop
    step = jax_steps.grad_step(inputs, bench_common.FORMULATIONS[formulation], "eager")
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


def test_jax_compiled_step_equals_eager() -> None:
    inputs = workloads.make_inputs("mlp", dtype="float64")
    (eager_loss, eager_grads), (jit_loss, jit_grads) = (
        jax_steps.grad_step(inputs, "plain", mode)() for mode in ("eager", "compiled"))
    assert_close("loss", np.asarray(jit_loss), np.asarray(eager_loss), 1e-12)
    for a, b in zip(jax.tree.leaves(jit_grads), jax.tree.leaves(eager_grads)):
        assert_close("grad", np.asarray(a), np.asarray(b), 1e-12)


def test_benchmark_classes_never_share_a_memoised_step() -> None:
    grad, forward = recording.GradStep_mlp(), inference.Forward_mlp()
    grad.setup("jax", "mlp", "tiny", "compiled", "plain", "float32", "highest", "cpu")
    forward.setup("jax", "mlp", "tiny", "compiled", "float32", "highest", "cpu")
    assert grad.step is not forward.step


def test_second_setup_is_a_lookup() -> None:
    """asv-runner re-runs setup before every timed call: the second call must not rebuild or reconfigure."""
    bench = recording.GradStep_mlp()
    params = ("jax", "mlp", "tiny", "compiled", "plain", "float32", "highest", "cpu")
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
    assert calls == [] and again.step is step and again.case is case
