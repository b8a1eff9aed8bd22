"""Like-for-like formulations: per-layer parameters in the unrolled form, the layer norm's residuals, and the jitted
unrolled and scan forms of the transformer and LSTM computing the same thing."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.jax import probe as jax_probe
from implementations.jax import transformer as jax_transformer
from implementations.torch import common as torch_common
from implementations.torch import probe as torch_probe
from tests.helpers import assert_close

INDEXING = {"squeeze", "slice", "dynamic_slice", "gather", "index_in_dim"}


def _indexing_of_params(held_as: str) -> int:
    """Equations of the 'unrolled' forward that index a parameter array (a per-layer select of the stack), with the
    parameters as prepare holds them for `held_as`."""
    inputs = workloads.make_inputs("transformer", dtype="float32")
    params, data = jax_common.prepare(inputs, formulation=held_as)
    closed = jax.make_jaxpr(lambda p, d: jax_transformer.forward(p, d, inputs.static, "plain", "unrolled"))(params,
                                                                                                          data)
    param_vars = set(closed.jaxpr.invars[:len(jax.tree.leaves(params))])
    return sum(1 for eqn in closed.jaxpr.eqns
               if eqn.primitive.name in INDEXING and any(v in param_vars for v in eqn.invars))


def test_loop_form_gets_per_layer_parameters() -> None:
    inputs = workloads.make_inputs("transformer", dtype="float32")
    params, _ = jax_common.prepare(inputs, formulation="unrolled")
    for name in jax_transformer.LAYER_STACKED:
        assert isinstance(params[name], list) and len(params[name]) == len(inputs.params[name])
        np.testing.assert_array_equal(np.stack(params[name]), inputs.params[name])
    # A loop over the stack indexes it once per layer and parameter; over per-layer arrays, not at all.
    assert _indexing_of_params("scan") == len(inputs.params["w_qkv"]) * len(jax_transformer.LAYER_STACKED)
    assert _indexing_of_params("unrolled") == 0


def test_an_unknown_formulation_or_one_without_a_loop_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown formulation for transformer 'rows'; valid choices: unrolled, scan"):
        jax_common.prepare(workloads.make_inputs("transformer"), formulation="rows")
    with pytest.raises(ValueError, match="unknown formulation for mlp 'scan'; valid choices: none: it has no loop"):
        jax_common.prepare(workloads.make_inputs("mlp"), formulation="scan")
    with pytest.raises(ValueError, match="PyTorch has no scan form"):
        torch_common.prepare(workloads.make_inputs("transformer"), formulation="scan")


def _layer_norm_case():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 5, 16)), 1 + 0.1 * rng.standard_normal(16), 0.1 * rng.standard_normal(16)


def test_layer_norm_matches_torch_fused() -> None:
    x, scale, bias = _layer_norm_case()
    cot = np.random.default_rng(1).standard_normal(x.shape)
    out, vjp = jax.vjp(jax_transformer.layer_norm, *(jnp.asarray(a) for a in (x, scale, bias)))
    grads = vjp(jnp.asarray(cot))
    tensors = [torch.tensor(a, requires_grad=True) for a in (x, scale, bias)]
    expected = F.layer_norm(tensors[0], (16,), tensors[1], tensors[2], jax_transformer.LN_EPS)
    expected_grads = torch.autograd.grad(expected, tensors, torch.tensor(cot))
    # One float64 op on both sides (scaled to the array, as every bound): far tighter than TOLERANCES["float64"] holds.
    assert_close("layer_norm", np.asarray(out), expected.detach().numpy(), 1e-12)
    for name, got, want in zip(("x", "scale", "bias"), grads, expected_grads):
        assert_close(f"d/d {name}", np.asarray(got), want.numpy(), 1e-12)


def test_layer_norm_saves_what_torch_saves() -> None:
    # Beyond its arguments, both keep the per-row mean and rstd only ([3, 5, 1] each); the composite kept 3 arrays of
    # x's size.
    x, scale, bias = _layer_norm_case()
    jax_extra = jax_probe.saved_bytes(jax_transformer.layer_norm, *(jnp.asarray(a) for a in (x, scale, bias)))
    tensors = [torch.tensor(a, requires_grad=True) for a in (x, scale, bias)]
    torch_extra = torch_probe.saved_bytes(lambda a, s, b: F.layer_norm(a, (16,), s, b, 1e-5), *tensors)
    assert jax_extra.extra_bytes == torch_extra.extra_bytes == 2 * 3 * 5 * 8


def _jitted_value_and_grad(workload: str, variant: str, formulation: str):
    inputs = workloads.make_inputs(workload, dtype="float64")
    module = jax_common.load(workload)
    seed = jax_common.cotangent(inputs)

    def run(params, data):
        out, vjp = jax.vjp(lambda p, d: module.forward(p, d, inputs.static, variant, formulation), params, data)
        return out, *vjp(seed)

    out, grad_params, grad_data = jax.jit(run)(*jax_common.prepare(inputs, formulation=formulation))
    # Per-layer gradients come back as lists: stack them into the spec's layout.
    stack = {name: np.stack(value) if isinstance(value, list) else np.asarray(value)
             for name, value in grad_params.items()}
    return np.asarray(out), stack, {name: np.asarray(value) for name, value in grad_data.items()}


@pytest.mark.parametrize(("workload", "variant"), [("transformer", "plain"), ("transformer", "remat_full"),
                                                   ("transformer", "remat_every2"), ("lstm", "plain"),
                                                   ("lstm", "remat_full")])
def test_jitted_unrolled_form_equals_scan_form(workload: str, variant: str) -> None:
    # The unrolled form is what torch.compile runs; jitted, it must compute what the scan form computes.
    scan = _jitted_value_and_grad(workload, "plain", "scan")
    loop = _jitted_value_and_grad(workload, variant, "unrolled")
    assert_close("output", loop[0], scan[0], 1e-10)
    for grads_loop, grads_scan in zip(loop[1:], scan[1:]):
        assert set(grads_loop) == set(grads_scan)
        for name in grads_scan:
            assert grads_loop[name].shape == grads_scan[name].shape
            assert_close(f"d/d {name}", grads_loop[name], grads_scan[name], 1e-10)


def test_torch_scan_workloads_are_the_modules_with_a_scan_form() -> None:
    from benchmarks import recording

    assert recording.TORCH_SCAN_WORKLOADS == tuple(
        w for w, s in workloads.WORKLOADS.items() if getattr(torch_common.load(w), "SCAN_FORM", False))
    assert torch_common.formulation_of("lstm", "scan") == "scan"
