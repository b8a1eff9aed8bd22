"""Rematerialization policies: each changes what is saved, none changes the math, and XLA keeps the recompute.

The policies are matched by name between implementations/torch/common.py and implementations/jax/common.py (the
table in the latter's docstring). Saved bytes come from each framework's probe on steps.loss_fn, the function the
benchmarks differentiate.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.jax import probe as jax_probe
from implementations.jax import steps as jax_steps
from implementations.torch import common as torch_common
from implementations.torch import probe as torch_probe
from implementations.torch import steps as torch_steps
from tests.helpers import assert_close

NEW_VARIANTS = ("remat_full", "remat_dots", "remat_names", "remat_every2")
SIDES = {"torch": (torch_common, torch_probe, torch_steps), "jax": (jax_common, jax_probe, jax_steps)}
# Matmuls per transformer block: qkv, q @ k^T, weights @ v, the output projection, gate, up, down.
BLOCK_MATMULS = 7


def _extra_bytes(framework: str, workload: str, size: str | None, variant: str, layout: str | None = None) -> int:
    common, probe, steps = SIDES[framework]
    inputs = workloads.make_inputs(workload, size, "float32")
    fn, args = steps.loss_fn(inputs, variant)
    if layout is not None:
        args = common.prepare(inputs, layout=layout)
    return probe.saved_bytes(fn, *args).extra_bytes


def _jax_dots(fn, *args) -> int:
    """dot instructions in the compiled executable (a loop body is printed, and counted, once)."""
    return jax.jit(fn).lower(*args).compile().as_text().count(" dot(")


def _jax_step_dots(inputs: workloads.Inputs, variant: str, layout: str) -> int:
    """dots of the compiled value-and-gradients step of `variant` on parameters in `layout`."""
    module = jax_common.load(inputs.workload)
    seed = jax_common.cotangent(inputs)

    def loss(params, data):
        return (module.forward(params, data, inputs.static, variant) * seed).sum()

    return _jax_dots(jax.value_and_grad(loss, argnums=(0, 1)), *jax_common.prepare(inputs, layout=layout))


# --- what XLA keeps of the recompute ------------------------------------------------------------------------------


@pytest.mark.parametrize(("variant", "dots"), [("plain", 6), ("remat_full", 7), ("remat_dots", 6)])
def test_jax_mlp_compiled_step_keeps_the_recompute(variant: str, dots: int) -> None:
    # The benchmark's step (value and gradients): 2 forward and 4 backward matmuls. remat_full recomputes x @ w1 in
    # the backward and XLA:CPU keeps it (a 7th dot, +33.5 MFLOP); remat_dots saves that product, so nothing is
    # recomputed. Because the whole step is one program, keeping the recompute costs memory instead of saving it.
    grad, args = jax_steps.grad_fn(workloads.make_inputs("mlp", "64x256x1024"), variant)
    assert _jax_dots(grad, *args) == dots


def test_jax_mlp_compiled_remat_raises_temp_memory() -> None:
    inputs = workloads.make_inputs("mlp", "64x256x1024")
    temp = {}
    for variant in ("plain", "remat_full"):
        grad, args = jax_steps.grad_fn(inputs, variant)
        temp[variant] = jax.jit(grad).lower(*args).compile().memory_analysis().temp_size_in_bytes
    # One straight-line program has nothing to free between forward and backward: the recomputed [64, 1024]
    # activation is one more buffer (524,288 -> 786,432 B on XLA:CPU).
    assert temp["remat_full"] == temp["plain"] + 64 * 1024 * 4


def test_jax_transformer_scan_keeps_the_whole_recompute() -> None:
    inputs = workloads.make_inputs("transformer", dtype="float32")
    dots = {v: _jax_step_dots(inputs, v, "stacked") for v in ("plain", "remat_full", "remat_dots")}
    # One scan body: 7 forward and 14 backward matmuls; remat_full recomputes all but the down projection (whose
    # output no backward needs), remat_dots none.
    assert dots["plain"] == 3 * BLOCK_MATMULS
    assert dots["remat_full"] == dots["plain"] + BLOCK_MATMULS - 1
    assert dots["remat_dots"] == dots["plain"]


def test_jax_transformer_unrolled_keeps_part_of_the_recompute() -> None:
    inputs = workloads.make_inputs("transformer", dtype="float32")
    layers = len(inputs.params["w_qkv"])
    dots = {v: _jax_step_dots(inputs, v, "layers") for v in ("plain", "remat_full")}
    assert dots["plain"] == 3 * BLOCK_MATMULS * layers
    # Straight-line code: XLA:CPU merges part of the recompute with the forward (8 of the 12 recomputed matmuls
    # stay at 2 layers with XLA of jax 0.10.2), but not all of it, so remat still costs flops there.
    assert dots["plain"] < dots["remat_full"] <= dots["plain"] + (BLOCK_MATMULS - 1) * layers


# --- what each policy saves ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", list(SIDES))
def test_policies_order_saved_bytes(framework: str) -> None:
    saved = {v: _extra_bytes(framework, "transformer", None, v) for v in ("plain", *NEW_VARIANTS)}
    assert saved["plain"] > saved["remat_dots"] > saved["remat_full"] > 0
    assert saved["plain"] > saved["remat_names"] > saved["remat_full"]
    # Names keep two activations per block, dots all seven matmul outputs (two of them as large as the names').
    assert saved["remat_dots"] > saved["remat_names"]


@pytest.mark.parametrize("framework", list(SIDES))
def test_checkpointing_groups_of_layers_saves_fewer_inputs(framework: str) -> None:
    # Per-layer layout on both sides: a group of 2 layers keeps one input per group instead of one per layer.
    inputs = workloads.make_inputs("transformer", dtype="float32")
    x_bytes = inputs.data["x"].nbytes
    full = _extra_bytes(framework, "transformer", None, "remat_full", "layers")
    every2 = _extra_bytes(framework, "transformer", None, "remat_every2", "layers")
    assert full - every2 == x_bytes * len(inputs.params["w_qkv"]) // 2


@pytest.mark.parametrize("variant", NEW_VARIANTS)
def test_frameworks_save_the_same_tensors(variant: str) -> None:
    # Like for like: both run the layers as a Python loop over per-layer parameters.
    inputs = workloads.make_inputs("transformer", "L4-B4-S64-D128", "float32")
    torch_bytes = _extra_bytes("torch", "transformer", inputs.size, variant, "layers")
    jax_bytes = _extra_bytes("jax", "transformer", inputs.size, variant, "layers")
    activation = inputs.data["x"].nbytes  # one [batch, seq, width] array
    if variant == "remat_dots":
        # Known difference: PyTorch's selective checkpoint caches every saved op's output, the down projection's
        # too, which no backward needs; JAX keeps only residuals that the backward reads. One activation per layer.
        assert torch_bytes == jax_bytes + activation * len(inputs.params["w_qkv"])
    else:
        assert torch_bytes == jax_bytes


def test_jax_scan_stacks_a_copy_of_the_input() -> None:
    # Known difference of the scan form: the stacked carries include the first layer's input, a copy of x.
    inputs = workloads.make_inputs("transformer", "L4-B4-S64-D128", "float32")
    scan = _extra_bytes("jax", "transformer", inputs.size, "remat_full")
    loop = _extra_bytes("jax", "transformer", inputs.size, "remat_full", "layers")
    assert scan == loop + inputs.data["x"].nbytes


def test_jax_scan_groups_copy_the_parameters() -> None:
    # Known difference of the grouped scan form, op by op: the [layers / k, k, ...] re-layout of the parameters is
    # a copy the scan keeps, so its saved bytes count the parameters once more than the loop form's.
    inputs = workloads.make_inputs("transformer", "L4-B4-S64-D128", "float32")
    scan = _extra_bytes("jax", "transformer", inputs.size, "remat_every2")
    loop = _extra_bytes("jax", "transformer", inputs.size, "remat_every2", "layers")
    assert scan == loop + inputs.data["x"].nbytes + sum(a.nbytes for a in inputs.params.values())


# --- the math does not change -------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", NEW_VARIANTS)
@pytest.mark.parametrize("framework", list(SIDES))
def test_policy_keeps_outputs_and_gradients(framework: str, variant: str) -> None:
    common = SIDES[framework][0]
    inputs = workloads.make_inputs("transformer", dtype="float64")
    plain, policy = common.value_and_grad(inputs, "plain"), common.value_and_grad(inputs, variant)
    for name, expected, actual in zip(("output", "params", "data"), plain, policy):
        for key, value in (expected.items() if isinstance(expected, dict) else [(name, expected)]):
            got = actual[key] if isinstance(actual, dict) else actual
            assert_close(f"{variant} {key}", np.asarray(got), np.asarray(value), 1e-10)


@pytest.mark.parametrize("framework", list(SIDES))
def test_offload_refuses_the_cpu(framework: str) -> None:
    common = SIDES[framework][0]
    if framework == "jax" and jax.default_backend() == "gpu":
        pytest.skip("runs on a GPU")
    inputs = workloads.make_inputs("transformer", dtype="float32")
    with pytest.raises(ValueError, match="remat_offload needs a CUDA device"):
        common.value_and_grad(inputs, "remat_offload")


@pytest.mark.parametrize("framework", list(SIDES))
@pytest.mark.parametrize("variant", ["remat_every3", "remat_everyx"])
def test_bad_group_is_refused(framework: str, variant: str) -> None:
    common = SIDES[framework][0]
    inputs = workloads.make_inputs("transformer", dtype="float32")
    params, data = common.prepare(inputs)
    with pytest.raises(ValueError, match="remat_every"):
        common.load("transformer").forward(params, data, inputs.static, variant)
