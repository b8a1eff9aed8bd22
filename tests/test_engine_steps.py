"""The engine-pillar steps (`steps.engine_step`, timed by benchmarks/engine.py and the paired runner) return the
gradients of the step they stand for: each feature changes the engine's bookkeeping, never the arithmetic. Float64 at
the tiny mlp size, against the framework's own gradient of the same loss."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch

from implementations import workloads
from implementations.jax import steps as jax_steps
from implementations.torch import steps as torch_steps
from implementations.torch.common import leaves
from tests.helpers import TOLERANCES, assert_close

# float64, one framework against itself: a micro-batch sum differs from the whole batch's gradient by rounding alone.
SAME_FRAMEWORK_TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def inputs() -> workloads.Inputs:
    return workloads.make_inputs("mlp", "tiny", "float64")


def _close(got, want) -> None:
    got, want = list(got), list(want)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(f"gradient {i}", np.asarray(g), np.asarray(w), SAME_FRAMEWORK_TOLERANCE)


def _torch_reference(inputs: workloads.Inputs) -> list[torch.Tensor]:
    loss, (params, data) = torch_steps.loss_fn(inputs, "plain", "cpu")
    return list(torch.autograd.grad(loss(params, data), leaves(params)))


@pytest.mark.parametrize("feature", ["no_hooks", "hooks", "zero_grad_none", "zero_grad_zeros",
                                     "accumulate_grad_attr", "accumulate_tree_add"])
def test_torch_engine_features_give_the_steps_gradients(inputs, feature: str) -> None:
    # the step has run twice already (its warm-up): .grad zeroed or reset each time, never accumulated across calls
    got = torch_steps.engine_step(inputs, "plain", feature)()
    _close(got, _torch_reference(inputs))


def test_torch_retained_graph_runs_the_backward_with_two_cotangents(inputs) -> None:
    first, second = torch_steps.engine_step(inputs, "plain", "retain_graph_twice")()
    want = _torch_reference(inputs)
    _close(first, want)
    _close(second, [2 * w for w in want])


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_jax_engine_features_give_the_steps_gradients(inputs, mode: str) -> None:
    loss, (params, data) = jax_steps.loss_fn(inputs, "plain", "cpu")
    value, want = jax.value_and_grad(loss)(params, data)
    want = jax.tree.leaves(want)
    _close(jax.tree.leaves(jax_steps.engine_step(inputs, "plain", "accumulate_tree_add", mode)()), want)
    got_value, got = jax_steps.engine_step(inputs, "plain", "no_hooks", mode)()
    assert_close("loss", np.asarray(got_value), np.asarray(value), SAME_FRAMEWORK_TOLERANCE)
    _close(jax.tree.leaves(got), want)
    (first,), (second,) = jax_steps.engine_step(inputs, "plain", "retain_graph_twice", mode)()
    _close(jax.tree.leaves(first), want)
    _close(jax.tree.leaves(second), [2 * w for w in want])


def test_both_frameworks_accumulate_the_same_gradients(inputs) -> None:
    """The micro-batch sum of both sides, leaf by leaf (the parameters in the same order on both sides)."""
    torch_sum = torch_steps.engine_step(inputs, "plain", "accumulate_tree_add")()
    jax_sum = jax.tree.leaves(jax_steps.engine_step(inputs, "plain", "accumulate_tree_add", "eager")())
    _, (params, _) = jax_steps.loss_fn(inputs, "plain", "cpu")
    order = [p for p, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
    assert len(order) == len(torch_sum) == len(jax_sum)
    by_name = {jax.tree_util.keystr(p): g for p, g in zip(order, jax_sum)}
    _, (tparams, _) = torch_steps.loss_fn(inputs, "plain", "cpu")
    names = [f"[{k!r}]" for k in tparams]
    if len(names) == len(torch_sum):  # a flat dict of tensors: match by key
        for name, g in zip(names, torch_sum):
            assert_close(name, np.asarray(by_name[name]), g.numpy(), TOLERANCES["float64"])
    else:
        pytest.fail(f"unexpected parameter tree: {names}")


@pytest.mark.parametrize("steps", [torch_steps, jax_steps], ids=["torch", "jax"])
def test_a_batch_that_does_not_split_evenly_is_refused_on_both_sides(steps) -> None:
    # torch's chunk would make 3 micro-batches of 2 from 6 rows, JAX's split raises: the two steps would differ
    inputs = workloads.make_inputs("mlp", "tiny", "float64")
    rows = steps.MICRO_BATCHES + 2
    data = {"x": np.zeros((rows, 3))}  # only its batch axis is read before the refusal
    with pytest.raises(ValueError, match=f"a batch of {rows} does not split into {steps.MICRO_BATCHES} equal"):
        steps._micro_batch_losses(inputs, "plain", {}, data, "cpu")
