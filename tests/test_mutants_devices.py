"""Tests prompted by the sampled mutation run (scripts/mutate_sample.py) over code whose effect shows on a GPU only:
every PyTorch step hands its device to `sync` (on CUDA, a step that synchronizes the default device, or none, is
timed before its kernels finish), and JAX's host-offload policy names the memory kinds JAX defines. Both run here on
a CPU by recording what the code passes on."""

from __future__ import annotations

import jax
import pytest

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.torch import steps as torch_steps


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
def inputs() -> workloads.Inputs:
    return workloads.make_inputs("mlp", "tiny", "float32")


def _every_sync_names(seen: list, device: str) -> None:
    assert seen and set(seen) == {device}, seen


def test_the_grad_step_syncs_its_device(synced: list, inputs: workloads.Inputs) -> None:
    torch_steps.grad_step(inputs, "plain", "eager", "cpu")()
    _every_sync_names(synced, "cpu")


@pytest.mark.parametrize("mode", ["record", "no_grad", "inference_mode"])
def test_every_forward_step_syncs_its_device(mode: str, synced: list, inputs: workloads.Inputs) -> None:
    torch_steps.forward_step(inputs, "plain", mode, "cpu")()
    _every_sync_names(synced, "cpu")


@pytest.mark.parametrize("feature", torch_steps.ENGINE_FEATURES)
def test_every_engine_step_syncs_its_device(feature: str, synced: list, inputs: workloads.Inputs) -> None:
    torch_steps.engine_step(inputs, "plain", feature, "eager", "cpu")()
    _every_sync_names(synced, "cpu")


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
