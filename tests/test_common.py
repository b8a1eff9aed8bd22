"""The framework commons (implementations/*/common.py), on both sides: remat group parsing, the float64 guard, the
unrolled formulation's per-layer parameters, bfloat16 read back, the tree helpers, `sync` waiting only for a CUDA
device, named regions restored after a call, and JAX's host-offload policy naming the memory kinds JAX defines."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import implementations.jax as jax_side
from implementations import workloads
from implementations.jax import common as jax_common
from implementations.torch import common as torch_common

COMMONS = [torch_common, jax_common]


@pytest.mark.parametrize("common", COMMONS, ids=["torch", "jax"])
def test_remat_group(common) -> None:
    assert common.remat_group("remat_every2") == 2
    assert common.remat_group("remat_every12") == 12
    assert common.remat_group("remat_every1") == 1
    assert common.remat_group("remat_full") == common.remat_group("plain") == 1
    for bad in ("remat_every0", "remat_every", "remat_every-1", "remat_everyx"):
        with pytest.raises(ValueError, match=f"bad remat group in '{bad}': expected remat_every<k> with k >= 1"):
            common.remat_group(bad)


def test_jax_refuses_float64_without_x64() -> None:
    inputs = workloads.make_inputs("mlp", "tiny", "float64")
    jax_side.configure("highest", None, float64=False)  # the autouse fixture turns it back on for the next test
    with pytest.raises(RuntimeError, match=r"float64 inputs need implementations.jax.configure"):
        jax_common.prepare(inputs)
    params, _ = jax_common.prepare(workloads.make_inputs("mlp", "tiny", "float32"))
    assert params["w1"].dtype == jnp.float32


def test_jax_unrolled_formulation_splits_only_the_stacked_parameters() -> None:
    inputs = workloads.make_inputs("transformer", "tiny")
    params, data = jax_common.prepare(inputs, formulation="unrolled")
    assert isinstance(params["w_qkv"], list) and len(params["w_qkv"]) == inputs.params["w_qkv"].shape[0]
    np.testing.assert_array_equal(np.asarray(params["w_qkv"][1]), inputs.params["w_qkv"][1])
    assert not isinstance(data["x"], list)
    stacked, _ = jax_common.prepare(inputs)
    assert not isinstance(stacked["w_qkv"], list)


def test_bfloat16_comes_back_as_float32_on_both_sides() -> None:
    inputs = workloads.make_inputs("mlp", "tiny", "bfloat16")
    t, _ = torch_common.prepare(inputs)
    j, _ = jax_common.prepare(inputs)
    for out in (torch_common.to_numpy(t)["w1"], jax_common.to_numpy(j)["w1"]):
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, inputs.params["w1"].astype(np.float32))


def test_torch_tree_helpers_round_trip() -> None:
    tree = {"a": torch.ones(2), "b": [torch.zeros(3), torch.full((1,), 5.0)]}
    flat = torch_common.leaves(tree)
    assert [t.shape[0] for t in flat] == [2, 3, 1]
    rebuilt = torch_common.unflatten([t + 1 for t in flat], tree)
    assert set(rebuilt) == {"a", "b"} and rebuilt["b"][1].item() == 6.0 and rebuilt["a"].tolist() == [2.0, 2.0]
    assert torch_common.to_numpy([torch.ones(2), torch.zeros(2)]).tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_sync_waits_for_a_cuda_device_only(monkeypatch) -> None:
    waited = []
    monkeypatch.setattr(torch.cuda, "synchronize", waited.append)
    result = object()
    assert torch_common.sync(result, "cuda:0") is result and waited == ["cuda:0"]
    assert torch_common.sync(result, "cpu") is result and waited == ["cuda:0"]  # CPU work is synchronous already


def test_named_regions_are_restored_to_the_outer_state_after_a_call() -> None:
    inner = torch_common._names_enabled(lambda: torch_common._NAMING["on"])
    outer = torch_common._names_enabled(lambda: (inner(), torch_common._NAMING["on"]))
    assert outer() == (True, True)  # the inner call hands the outer one its named() regions back
    assert torch_common._NAMING["on"] is False


def test_host_offload_moves_dots_from_device_memory_to_pinned_host(monkeypatch: pytest.MonkeyPatch) -> None:
    # JAX's memory kinds are 'device' and 'pinned_host' (jax.checkpoint_policies.offload_dot_with_no_batch_dims);
    # another name fails only on a GPU, when the policy is applied.
    asked = []

    def offload(src: str, dst: str):
        asked.append((src, dst))
        return jax.checkpoint_policies.everything_saveable

    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(jax.checkpoint_policies, "offload_dot_with_no_batch_dims", offload)
    fn = jax_common.remat(lambda x: jax.numpy.sin(x) * 2.0, "remat_offload")
    assert asked == [("device", "pinned_host")]
    assert float(jax.grad(fn)(1.0)) == pytest.approx(2.0 * float(jax.numpy.cos(1.0)), rel=1e-6)
