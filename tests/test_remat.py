"""Rematerialization policies: each changes what is saved, none changes the math, and XLA keeps the recompute.

The policies are matched by name between implementations/torch/common.py and implementations/jax/common.py (the
table in the latter's docstring). Saved bytes come from each framework's probe on steps.loss_fn, the function the
benchmarks differentiate.
"""

from __future__ import annotations

import collections
import dataclasses
import functools

import jax
import numpy as np
import pytest
import torch
import torch._dynamo

from implementations import workloads
from implementations.experiments import POLICIES
from implementations.jax import common as jax_common
from implementations.jax import compile_probe as jax_compile_probe
from implementations.jax import probe as jax_probe
from implementations.jax import steps as jax_steps
from implementations.torch import common as torch_common
from implementations.torch import compile_probe as torch_compile_probe
from implementations.torch import probe as torch_probe
from implementations.torch import steps as torch_steps
from tests.helpers import assert_close

NEW_VARIANTS = ("remat_full", "remat_dots", "remat_names", "remat_every2")
SIDES = {"torch": (torch_common, torch_probe, torch_steps), "jax": (jax_common, jax_probe, jax_steps)}
# Matmuls per transformer block: qkv, q @ k^T, weights @ v, the output projection, gate, up, down.
BLOCK_MATMULS = 7


def _extra_bytes(framework: str, workload: str, size: str | None, variant: str,
                 formulation: str | None = None) -> int:
    _, probe, steps = SIDES[framework]
    inputs = workloads.make_inputs(workload, size, "float32")
    fn, args = steps.loss_fn(inputs, variant, "cpu", formulation)
    return probe.saved_bytes(fn, *args).extra_bytes


def _jax_dots(fn, *args) -> int:
    """dot instructions in the compiled executable (a loop body is printed, and counted, once)."""
    return jax.jit(fn).lower(*args).compile().as_text().count(" dot(")


def _jax_step_dots(inputs: workloads.Inputs, variant: str, formulation: str) -> int:
    """dots of the compiled value-and-gradients step of `variant` in `formulation`."""
    module = jax_common.load(inputs.workload)
    seed = jax_common.cotangent(inputs)

    def loss(params, data):
        return (module.forward(params, data, inputs.static, variant, formulation) * seed).sum()

    return _jax_dots(jax.value_and_grad(loss, argnums=(0, 1)), *jax_common.prepare(inputs, formulation=formulation))


# --- what XLA keeps of the recompute ------------------------------------------------------------------------------


@pytest.mark.parametrize(("variant", "dots"), [("plain", 6), ("remat_full", 7), ("remat_dots", 6)])
def test_jax_mlp_compiled_step_keeps_the_recompute(variant: str, dots: int) -> None:
    # The benchmark's step (value and gradients): 2 forward and 4 backward matmuls. remat_full recomputes x @ w1 in
    # the backward and XLA:CPU keeps it (a 7th dot, +33.5 MFLOP); remat_dots saves that product, so nothing is
    # recomputed. Because the whole step is one program, keeping the recompute costs memory instead of saving it.
    grad, args = jax_steps.grad_fn(workloads.make_inputs("mlp", "64x256x1024"), variant)
    assert _jax_dots(grad, *args) == dots


def test_jax_mlp_compiled_remat_adds_at_most_the_recomputed_activation_to_temp_memory() -> None:
    inputs = workloads.make_inputs("mlp", "64x256x1024")
    temp = {}
    for variant in ("plain", "remat_full"):
        grad, args = jax_steps.grad_fn(inputs, variant)
        temp[variant] = jax.jit(grad).lower(*args).compile().memory_analysis().temp_size_in_bytes
    # One straight-line program has nothing to free between forward and backward: the recomputed [64, 1024]
    # activation is one more buffer in jax 0.10's XLA:CPU plan; jax 0.11's reuses one for it.
    recomputed = 64 * 1024 * 4 if tuple(int(p) for p in jax.__version__.split(".")[:2]) < (0, 11) else 0
    assert temp["plain"] > 0
    assert temp["remat_full"] == temp["plain"] + recomputed


def test_jax_transformer_scan_keeps_the_whole_recompute() -> None:
    inputs = workloads.make_inputs("transformer", dtype="float32")
    dots = {v: _jax_step_dots(inputs, v, "scan") for v in ("plain", "remat_full", "remat_dots")}
    # One scan body: 7 forward and 14 backward matmuls; remat_full recomputes all but the down projection (whose
    # output no backward needs), remat_dots none.
    assert dots["plain"] == 3 * BLOCK_MATMULS
    assert dots["remat_full"] == dots["plain"] + BLOCK_MATMULS - 1
    assert dots["remat_dots"] == dots["plain"]


def test_jax_transformer_unrolled_keeps_part_of_the_recompute() -> None:
    inputs = workloads.make_inputs("transformer", dtype="float32")
    layers = len(inputs.params["w_qkv"])
    dots = {v: _jax_step_dots(inputs, v, "unrolled") for v in ("plain", "remat_full")}
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
    # Unrolled on both sides: a group of 2 layers keeps one input per group instead of one per layer.
    inputs = workloads.make_inputs("transformer", dtype="float32")
    x_bytes = inputs.data["x"].nbytes
    full = _extra_bytes(framework, "transformer", None, "remat_full", "unrolled")
    every2 = _extra_bytes(framework, "transformer", None, "remat_every2", "unrolled")
    assert full - every2 == x_bytes * len(inputs.params["w_qkv"]) // 2


@pytest.mark.parametrize("variant", NEW_VARIANTS)
def test_frameworks_save_the_same_tensors(variant: str) -> None:
    # Like for like: both run the layers as a Python loop over per-layer parameters.
    inputs = workloads.make_inputs("transformer", "L4-B4-S64-D128", "float32")
    torch_bytes = _extra_bytes("torch", "transformer", inputs.size, variant, "unrolled")
    jax_bytes = _extra_bytes("jax", "transformer", inputs.size, variant, "unrolled")
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
    loop = _extra_bytes("jax", "transformer", inputs.size, "remat_full", "unrolled")
    assert scan == loop + inputs.data["x"].nbytes


def test_jax_scan_groups_copy_the_parameters() -> None:
    # Known difference of the grouped scan form, op by op: the [layers / k, k, ...] re-layout of the parameters is
    # a copy the scan keeps, so its saved bytes count the parameters once more than the loop form's.
    inputs = workloads.make_inputs("transformer", "L4-B4-S64-D128", "float32")
    scan = _extra_bytes("jax", "transformer", inputs.size, "remat_every2")
    loop = _extra_bytes("jax", "transformer", inputs.size, "remat_every2", "unrolled")
    assert scan == loop + inputs.data["x"].nbytes + sum(a.nbytes for a in inputs.params.values())


# --- the math does not change -------------------------------------------------------------------------------------


@functools.cache
def _plain_value_and_grad(framework: str) -> tuple:
    # every policy is compared with the same plain step: computed once a framework
    return SIDES[framework][0].value_and_grad(workloads.make_inputs("transformer", dtype="float64"), "plain")


@pytest.mark.parametrize("variant", NEW_VARIANTS)
@pytest.mark.parametrize("framework", list(SIDES))
def test_policy_keeps_outputs_and_gradients(framework: str, variant: str) -> None:
    common = SIDES[framework][0]
    inputs = workloads.make_inputs("transformer", dtype="float64")
    plain, policy = _plain_value_and_grad(framework), common.value_and_grad(inputs, variant)
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


# --- what each policy keeps, tensor by tensor (unrolled, the tiny size) -------------------------------------------
# 'op' is the aten op (PyTorch) or primitive (JAX) that produced a kept tensor; arguments are left out.

MATMUL_OPS = {"torch": {"aten.mm", "aten.bmm", "aten.addmm"}, "jax": {"dot_general"}}
ADD_OP = {"torch": "aten.add", "jax": "add"}  # a block's output (the residual add) is the next block's input


@functools.cache  # several tests read the same records; the PyTorch probe takes about a second per call here
def _kept(framework: str, variant: str, size: str = "tiny") -> tuple:
    """The non-argument records of probe.saved_breakdown on steps.loss_fn, both sides as a Python loop."""
    _, probe, steps = SIDES[framework]
    fn, args = steps.loss_fn(workloads.make_inputs("transformer", size, "float32"), variant, "cpu", "unrolled")
    return tuple(r for r in probe.saved_breakdown(fn, *args) if not r.is_argument)


def _dims(size: str = "tiny") -> dict:
    return workloads.spec("transformer").sizes[size]


@pytest.mark.parametrize("framework", list(SIDES))
def test_remat_full_keeps_only_block_inputs(framework: str) -> None:
    # The first block's input is x (an argument); every later block's input is the previous block's residual add.
    # Catches a checkpoint around each op or sub-layer instead of the block (it would keep the sub-layers' inputs).
    d = _dims()
    kept = collections.Counter((r.op, r.shape) for r in _kept(framework, "remat_full"))
    assert kept == {(ADD_OP[framework], (d["batch"], d["seq"], d["width"])): d["layers"] - 1}


@pytest.mark.parametrize("framework", list(SIDES))
def test_remat_dots_keeps_matmul_outputs_only(framework: str) -> None:
    d = _dims()
    kept = _kept(framework, "remat_dots")
    inputs = [r for r in kept if r.op == ADD_OP[framework]]
    matmuls = [r for r in kept if r.op in MATMUL_OPS[framework]]
    assert len(inputs) == d["layers"] - 1
    # Nothing but block inputs and matmul outputs: a policy that also saved softmax or silu outputs fails here.
    assert len(inputs) + len(matmuls) == len(kept), sorted({r.op for r in kept})
    # All seven matmuls of a block on PyTorch (its selective checkpoint caches every saved op's output, the down
    # projection's too); six on JAX, whose residuals are only what the backward reads. A policy that recomputes the
    # batched matmuls (dots_with_no_batch_dims_saveable, aten.bmm left out) would keep five or four.
    assert len(matmuls) == (BLOCK_MATMULS - (framework == "jax")) * d["layers"]


@pytest.mark.parametrize("framework", list(SIDES))
def test_remat_names_keeps_the_named_tensors(framework: str) -> None:
    d = _dims()
    b, s, w, f, layers = d["batch"], d["seq"], d["width"], d["ffn"], d["layers"]
    # Per block: the attention output (PyTorch: torch.matmul of [b, s, w] by [w, w] runs as one aten.mm of the
    # flattened [b * s, w] rows, its output a view of that storage) and the mlp hidden activation (aten.mul; JAX:
    # the checkpoint_name primitive 'name' wraps both). Catches named() regions that are off while the checkpoint
    # runs (nothing named would be kept: remat_full's records) and a policy that kept the matmul's input view.
    expected = ({("aten.mm", (b * s, w)): layers, ("aten.mul", (b, s, f)): layers} if framework == "torch"
                else {("name", (b, s, w)): layers, ("name", (b, s, f)): layers})
    kept = collections.Counter((r.op, r.shape) for r in _kept(framework, "remat_names"))
    assert kept == {(ADD_OP[framework], (b, s, w)): layers - 1, **expected}


@pytest.mark.parametrize("framework", list(SIDES))
def test_plain_keeps_more_than_every_policy(framework: str) -> None:
    # A policy that is ignored (remat() returning fn unchanged for it) keeps as much as plain.
    total = {v: sum(r.nbytes for r in _kept(framework, v)) for v in ("plain", *NEW_VARIANTS)}
    assert all(total["plain"] > total[v] for v in NEW_VARIANTS), total


@pytest.mark.parametrize(("variant", "size"), [("remat_full", "tiny"), ("remat_names", "tiny"),
                                               # Two groups of two: at 2 layers one group holds every layer and
                                               # neither side keeps anything, which would prove nothing.
                                               ("remat_every2", "L4-B4-S64-D128")])
def test_frameworks_keep_the_same_shapes(variant: str, size: str) -> None:
    torch_shapes = collections.Counter(r.shape for r in _kept("torch", variant, size))
    jax_shapes = collections.Counter(r.shape for r in _kept("jax", variant, size))
    assert sum(torch_shapes.values()) > 0
    if variant == "remat_names":
        # The one difference, exactly: PyTorch's kept attention output is its aten.mm storage, [b * s, w] (see
        # test_remat_names_keeps_the_named_tensors); JAX keeps the [b, s, w] value. One per layer.
        d = _dims(size)
        moved = collections.Counter({(d["batch"], d["seq"], d["width"]): d["layers"]})
        jax_shapes = jax_shapes - moved + collections.Counter({(d["batch"] * d["seq"], d["width"]): d["layers"]})
    assert torch_shapes == jax_shapes


# --- torch.compile's memory budget: recomputation counted in the partitioned graphs ---------------------------------


def test_budget_zero_recomputes_and_budget_one_does_not() -> None:
    inputs = workloads.make_inputs("transformer", "tiny", "float32")
    loss, args = torch_steps.loss_fn(inputs, "plain", "cpu", "unrolled")
    grads, grad_args = torch_steps.grad_fn(inputs, "plain", "cpu", "unrolled")
    eager_flops = torch_probe.flops(grads, *grad_args)
    costs = {b: torch_compile_probe.compiled_costs(loss, *args, budget=b) for b in (1.0, 0.5, 0.0)}
    # Budget 1 saves what the min-cut partitioner chooses and recomputes no matmul: the eager step's flops. Catches
    # compiled_costs counting one graph of the two, or counting a graph twice.
    assert costs[1.0].matmul_flops == eager_flops
    # Budget 0 recomputes matmuls in the backward. Catches a budget that never reaches the partitioner.
    assert costs[0.0].matmul_flops > costs[1.0].matmul_flops
    assert costs[1.0].saved_bytes > costs[0.5].saved_bytes > costs[0.0].saved_bytes


def test_a_checkpointed_random_op_saves_the_rng_state_counted_in_bytes() -> None:
    # torch.compile keeps the generator's state to replay a random op in the recompute, a tensor whose size the
    # graph leaves symbolic: counted at its size here, never a symbol (which no results file can hold).
    def loss(x: torch.Tensor) -> torch.Tensor:
        return torch.utils.checkpoint.checkpoint(
            lambda t: torch.nn.functional.dropout(t.sin(), 0.5, training=True).sum(), x, use_reentrant=False)

    saved = torch_compile_probe.compiled_costs(loss, torch.ones(4, 8, requires_grad=True)).saved_bytes
    assert type(saved) is int and saved == torch.get_rng_state().numel()


def test_jax_has_no_memory_budget() -> None:
    inputs = workloads.make_inputs("transformer", "tiny", "float32")
    loss, args = jax_steps.loss_fn(inputs, "plain", "cpu", "unrolled")
    with pytest.raises(ValueError, match="JAX has no activation memory budget"):
        jax_compile_probe.compiled_costs(loss, *args, budget=0.5)
    for mode in ("eager", "compiled"):
        with pytest.raises(ValueError, match="JAX has no activation memory budget") as error:
            jax_steps.grad_step(inputs, "plain", mode, budget=1.0)
        assert "\n" not in str(error.value)


@pytest.mark.parametrize(("mode", "variant", "budget", "message"), [
    ("eager", "plain", 0.5, "mode 'eager' does not compile"),
    ("compiled", "plain", 1.5, "memory budget 1.5 is outside [0, 1]"),
    ("compiled", "plain", -0.1, "memory budget -0.1 is outside [0, 1]"),
    ("compiled", "remat_names", None, "remat_names has no torch.compile form"),
])
def test_torch_grad_step_refuses_in_one_line(mode: str, variant: str, budget: float | None, message: str) -> None:
    inputs = workloads.make_inputs("transformer", "tiny", "float32")
    with pytest.raises(ValueError) as error:
        torch_steps.grad_step(inputs, variant, mode, budget=budget)
    assert message in str(error.value) and "\n" not in str(error.value)


# --- the compiled PyTorch transformer: one graph, and one graph per budget ------------------------------------------


@pytest.mark.parametrize("variant", [p for p in POLICIES if p != "remat_names"])
def test_torch_compiled_transformer_is_one_graph(variant: str) -> None:
    # named() used to set a ContextVar in every block, which TorchDynamo cannot trace: 6 graph breaks at L4, the
    # compiled step split into seven graphs per layer. This fails if named() touches the ContextVar outside a
    # remat_names block again.
    loss, args = torch_steps.loss_fn(workloads.make_inputs("transformer", "tiny", "float32"), variant, "cpu",
                                     "unrolled")
    torch._dynamo.reset()
    try:
        explained = torch._dynamo.explain(loss)(*args)
    finally:
        torch._dynamo.reset()
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons


def _budget_graphs(monkeypatch: pytest.MonkeyPatch, budgets: tuple[float, ...]) -> list[tuple[float, list[int]]]:
    """For each budget in turn: grad_step(..., 'compiled', budget=b) built and called once. Returns, per budget, the
    activation memory budget in force when TorchDynamo handed it a new graph (None: no new graph) and the indices
    of the graphs its calls ran. torch.compile is given a recording backend in place of Inductor: what is tested is
    which graph TorchDynamo runs, which does not depend on the backend, and Inductor would take minutes here."""
    compiled_under: list[float] = []
    ran: list[int] = []

    def recording_backend(graph_module: torch.fx.GraphModule, example_inputs: list) -> object:
        index = len(compiled_under)
        compiled_under.append(torch._functorch.config.activation_memory_budget)

        def run(*args: object) -> object:
            ran.append(index)
            return graph_module.forward(*args)

        return run

    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile",
                        lambda fn, mode=None, **kwargs: real_compile(fn, backend=recording_backend, **kwargs))
    inputs = workloads.make_inputs("transformer", "tiny", "float32")
    found = []
    torch._dynamo.reset()
    try:
        for budget in budgets:
            before_compiled, before_ran = len(compiled_under), len(ran)
            torch_steps.grad_step(inputs, "plain", "compiled", budget=budget)()
            new = compiled_under[before_compiled:]
            found.append((new[0] if new else None, sorted(set(ran[before_ran:]))))
    finally:
        torch._dynamo.reset()
    return found


def test_two_budgets_compile_two_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every grad_step compiles the same code object; without steps._guarded, TorchDynamo's guards pass for the
    # second budget and its step runs the graph partitioned under the first (checked: this fails without it).
    first, second = _budget_graphs(monkeypatch, (0.5, 0.0))
    assert first == (0.5, [0]) and second == (0.0, [1])


def test_every_budget_of_the_curve_runs_its_own_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    # The compiled PyTorch curve builds its budgets in one process, in this order (implementations.experiments.BUDGETS).
    from implementations.experiments import BUDGETS

    found = _budget_graphs(monkeypatch, BUDGETS)
    assert found == [(b, [i]) for i, b in enumerate(BUDGETS)]


# --- JAX's two formulations of the layer loop: the same math under every policy -----------------------------------


def _four_layer_inputs() -> workloads.Inputs:
    """The tiny transformer with 4 distinct layers (the tiny size's 2, then those of another seed), float64: two
    groups for remat_every2, so a scan that takes the groups or the layers within one in the wrong order differs."""
    first, second = (workloads.make_inputs("transformer", "tiny", "float64", seed=s) for s in (0, 1))
    return dataclasses.replace(first, params={k: np.concatenate([v, second.params[k]]) for k, v in
                                              first.params.items()})


@pytest.mark.parametrize("variant", [pytest.param(p, marks=() if p == "remat_every2" else pytest.mark.slow)
                                     for p in POLICIES])
def test_jax_scan_and_loop_agree(variant: str) -> None:
    # remat_every2 takes the scan's intricate path (a [layers / k, k, ...] re-layout, split again inside the body);
    # the others scan the stack as it is, which the parity tests' plain (scan) and unrolled (loop) forms already
    # check against PyTorch. About 5 to 9 s of XLA compiles each on this machine: those are slow.
    inputs = _four_layer_inputs()
    results = {}
    for formulation in ("unrolled", "scan"):
        fn, args = jax_steps.grad_fn(inputs, variant, "cpu", formulation)
        value, (grad_params, grad_data) = jax.jit(fn)(*args)
        grad_params = {k: np.stack(v) if isinstance(v, list) else np.asarray(v) for k, v in grad_params.items()}
        results[formulation] = {"loss": np.asarray(value), **grad_params, **{k: np.asarray(v) for k, v in
                                                                        grad_data.items()}}
    assert sorted(results["unrolled"]) == sorted(results["scan"])
    for name, expected in results["unrolled"].items():
        assert_close(f"{variant} {name}", results["scan"][name], expected, 1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("budget", [0.0, 0.5])
# torch 2.11's Inductor hands the float64 CPU flash-attention backward a float32 buffer under a memory budget and
# raises; its float32 budget steps match eager's. strict: red once the version bound is wrong.
@pytest.mark.xfail(torch.__version__ < "2.13", raises=RuntimeError, strict=True,
                   reason="torch before 2.13: expected scalar type Double but found Float")
def test_a_budget_changes_what_is_recomputed_not_the_result(budget: float) -> None:
    # The budget points of the curve are timed as the same step: a partition that recomputed the wrong values would
    # change the loss or the gradients. float64, so any difference beyond reassociation shows.
    torch._dynamo.reset()
    inputs = workloads.make_inputs("transformer", "tiny", "float64")
    eager = torch_steps.grad_step(inputs, "plain", "eager")()
    compiled = torch_steps.grad_step(inputs, "plain", "compiled", budget=budget)()
    assert_close("loss", eager[0].numpy(), compiled[0].numpy(), 1e-12)
    for i, (a, b) in enumerate(zip(eager[1], compiled[1], strict=True)):
        assert_close(f"gradient {i}", a.numpy(), b.numpy(), 1e-10)
