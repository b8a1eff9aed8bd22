"""Structural equivalence: both frameworks hold the same parameters, with the same shapes and counts."""

from __future__ import annotations

import numpy as np
import pytest

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.torch import common as torch_common


@pytest.mark.parametrize("workload", list(workloads.WORKLOADS))
def test_same_parameters(workload: str) -> None:
    inputs = workloads.make_inputs(workload)
    torch_params, torch_data = torch_common.prepare(inputs)
    jax_params, jax_data = jax_common.prepare(inputs)
    # PyTorch keeps layer-stacked parameters as one leaf per layer (LAYER_STACKED); to_numpy stacks them back.
    torch_shapes = {k: np.shape(v) for k, v in torch_common.to_numpy(torch_params).items()}
    jax_shapes = {k: tuple(v.shape) for k, v in jax_params.items()}
    spec_shapes = {k: v.shape for k, v in inputs.params.items()}
    assert torch_shapes == jax_shapes == spec_shapes
    torch_count = sum(t.numel() for t in torch_common.leaves(torch_params))
    jax_count = sum(int(a.size) for a in jax_params.values())
    assert torch_count == jax_count == workloads.parameter_count(inputs) > 0
    assert {k: tuple(v.shape) for k, v in torch_data.items()} == {k: tuple(v.shape) for k, v in jax_data.items()}


@pytest.mark.parametrize(("workload", "dtype"), [(name, dtype) for name, spec in workloads.WORKLOADS.items()
                                                  for dtype in spec.dtypes])
def test_dtype_is_applied(workload: str, dtype: str) -> None:
    inputs = workloads.make_inputs(workload, dtype=dtype)
    torch_params, _ = torch_common.prepare(inputs)
    jax_params, _ = jax_common.prepare(inputs)
    assert {str(t.dtype) for t in torch_common.leaves(torch_params)} == {f"torch.{dtype}"}
    assert {str(a.dtype) for a in jax_params.values()} == {dtype}


def test_inputs_are_deterministic() -> None:
    first, second = workloads.make_inputs("mlp", "64x256x1024"), workloads.make_inputs("mlp", "64x256x1024")
    for name in first.params:
        np.testing.assert_array_equal(first.params[name], second.params[name])
    other_seed = workloads.make_inputs("mlp", "64x256x1024", seed=1)
    assert not np.array_equal(first.params["w1"], other_seed.params["w1"])


def test_the_unrolled_formulation_holds_the_same_per_layer_parameters_on_both_sides() -> None:
    inputs = workloads.make_inputs("transformer")
    torch_params, _ = torch_common.prepare(inputs, formulation="unrolled")
    jax_params, _ = jax_common.prepare(inputs, formulation="unrolled")

    def shapes(value):
        return [tuple(v.shape) for v in value] if isinstance(value, list) else tuple(value.shape)

    assert {k: shapes(v) for k, v in torch_params.items()} == {k: shapes(v) for k, v in jax_params.items()}
    layers = len(inputs.params["w_qkv"])
    stacked = set(jax_common.load("transformer").LAYER_STACKED)
    assert {k for k, v in jax_params.items() if isinstance(v, list) and len(v) == layers} == stacked
    scan, _ = jax_common.prepare(inputs, formulation="scan")
    assert not any(isinstance(v, list) for v in scan.values())


def test_default_formulations() -> None:
    # Each framework's natural form: PyTorch's Python loop, JAX's lax.scan; none where there is no loop.
    assert torch_common.formulation_of("transformer") == torch_common.formulation_of("lstm") == "unrolled"
    assert jax_common.formulation_of("transformer") == jax_common.formulation_of("lstm") == "scan"
    assert torch_common.formulation_of("mlp") is jax_common.formulation_of("mlp") is None
