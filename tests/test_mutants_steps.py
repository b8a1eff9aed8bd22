"""Tests prompted by the sampled mutation run (scripts/mutate_sample.py) over the steps and probes: the forward steps
return the forward's output in every mode, the memory budget reaches torch's partitioner, and a CUDA tensor sends
PyTorch's peak probe to the allocator with its device."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch
import torch._functorch.config

from implementations import workloads
from implementations.jax import steps as jax_steps
from implementations.torch import probe as torch_probe
from implementations.torch import steps as torch_steps


@pytest.fixture(scope="module")
def inputs() -> workloads.Inputs:
    return workloads.make_inputs("mlp", "tiny", "float64")


@pytest.mark.parametrize("mode", ["record", "no_grad", "inference_mode"])
def test_torch_forward_step_returns_the_forward(inputs, mode: str) -> None:
    fn, (params, data) = torch_steps.forward_fn(inputs, "plain", "no_grad")
    want = fn(params, data)
    got = torch_steps.forward_step(inputs, "plain", mode)()
    assert isinstance(got, torch.Tensor) and got.shape == want.shape
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-14)
    assert got.requires_grad is (mode == "record")  # only the recording forward builds a tape


@pytest.mark.parametrize("mode", ["record", "no_grad", "compiled"])
def test_jax_forward_step_returns_the_forward(inputs, mode: str) -> None:
    fn, (params, data) = jax_steps.forward_fn(inputs, "plain", "no_grad")
    want = np.asarray(fn(params, data))
    got = jax_steps.forward_step(inputs, "plain", mode)()
    if mode == "record":  # jax.vjp: (output, the backward function)
        got, vjp = got
        assert callable(vjp)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    assert isinstance(got, jax.Array)


@pytest.mark.parametrize("budget", [0.0, 0.25, 1.0])
def test_the_memory_budget_is_the_partitioners_while_compiling(budget: float) -> None:
    before = torch._functorch.config.activation_memory_budget
    with torch_steps._memory_budget(budget):
        assert torch._functorch.config.activation_memory_budget == budget
    assert torch._functorch.config.activation_memory_budget == before
    with torch_steps._memory_budget(None):  # None: the default, left alone
        assert torch._functorch.config.activation_memory_budget == before


def test_a_cuda_tensor_sends_the_peak_probe_to_the_allocator_with_its_device(monkeypatch) -> None:
    calls = []
    cuda = torch.device("cuda", 1)
    monkeypatch.setattr(torch_probe, "_device", lambda args: cuda)
    monkeypatch.setattr(torch_probe, "_allocator_peak",
                        lambda step, args, device: calls.append((step, args, device)) or "peak")
    step = object()
    assert torch_probe.peak_bytes(step, 1, 2) == "peak"
    assert calls == [(step, (1, 2), cuda)]


def test_sync_waits_for_a_cuda_device_only(monkeypatch) -> None:
    from implementations.torch import common

    waited = []
    monkeypatch.setattr(torch.cuda, "synchronize", waited.append)
    result = object()
    assert common.sync(result, "cuda:0") is result and waited == ["cuda:0"]
    assert common.sync(result, "cpu") is result and waited == ["cuda:0"]  # CPU work is synchronous already


def test_grad_step_builds_the_asked_variant_and_guards_the_compiled_graph_on_its_budget(inputs, monkeypatch) -> None:
    """The step's loss is the variant's, in the layout asked for; a compiled step is guarded on its own budget (the
    curve's points each compile their own graph: test_remat.py's slow budget tests show the graphs)."""
    built, guarded = [], []
    real_loss_fn, real_guarded = torch_steps.loss_fn, torch_steps._guarded
    monkeypatch.setattr(torch_steps, "loss_fn", lambda *a: built.append(a) or real_loss_fn(*a))
    monkeypatch.setattr(torch_steps, "_guarded", lambda loss, budget: guarded.append(budget) or real_guarded(loss,
                                                                                                          budget))
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)  # no compile: only what is handed to it matters
    torch_steps.grad_step(inputs, "remat_full", "eager", "cpu", layout=None)
    torch_steps.grad_step(inputs, "plain", "compiled", "cpu", layout=None, budget=0.25)
    assert built == [(inputs, "remat_full", "cpu", None), (inputs, "plain", "cpu", None)]
    assert guarded == [0.25]


def test_named_regions_are_restored_to_the_outer_state_after_a_call() -> None:
    from implementations.torch import common

    inner = common._names_enabled(lambda: common._NAMING["on"])
    outer = common._names_enabled(lambda: (inner(), common._NAMING["on"]))
    assert outer() == (True, True)  # the inner call hands the outer one its named() regions back
    assert common._NAMING["on"] is False


def _breakdown(tmp_path, nbytes: str, is_argument: str):
    import csv

    from tape_vs_trace import saved

    path = tmp_path / "m-abcdef12.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=saved.ALL_FIELDS)
        writer.writeheader()
        writer.writerow(dict(workload="mlp", size="tiny", variant="plain", dtype="float32", framework="torch",
                             op="aten.mm", shape="(0, 4)", tensor_dtype="float32", nbytes=nbytes,
                             is_argument=is_argument, commit="abcdef12"))
    return path


def test_a_breakdown_row_may_hold_zero_bytes_but_not_a_bad_flag(tmp_path) -> None:
    from tape_vs_trace.report import breakdown

    table = breakdown._read(_breakdown(tmp_path, "0", "False"))  # an empty tensor is saved, with 0 bytes
    assert table.nbytes.tolist() == [0] and table.is_argument.tolist() == [False]
    with pytest.raises(ValueError, match="^nbytes is not a byte count on every row$"):
        breakdown._read(_breakdown(tmp_path, "-1", "False"))
    with pytest.raises(ValueError, match="^is_argument is not True/False on every row$"):
        breakdown._read(_breakdown(tmp_path, "8", "yes"))


class _Clock:
    """perf_counter that advances by the next of `steps` seconds per timed product (one read before, one after)."""

    def __init__(self, steps: list[float]) -> None:
        self.now, self.reads, self.steps = 0.0, 0, list(steps)

    def __call__(self) -> float:
        if self.reads % 2:
            self.now += self.steps.pop(0)
        self.reads += 1
        return self.now


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_matmul_rate_is_two_n_cubed_over_the_best_timed_product_after_the_warm_up(framework: str,
                                                                                    monkeypatch) -> None:
    from implementations.jax import probe as jax_probe

    probe = torch_probe if framework == "torch" else jax_probe
    # 6 products: the first (warm-up) is fastest and is left out; the best of the other five is 0.5 s
    monkeypatch.setattr(probe.time, "perf_counter", _Clock([0.1, 2.0, 0.5, 1.0, 3.0, 0.75]))
    assert probe.matmul_rate("float32", "cpu") == 2 * 1024**3 / 0.5  # a 1024 x 1024 product on a CPU
