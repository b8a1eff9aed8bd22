"""The programs (implementations/workloads.py STYLES and ATTENTIONS): each style and attention is the same math in
both frameworks, the matched style keeps the same residuals on both sides, the default style keeps what each
framework's obvious code keeps, and fused attention is counted, kept by remat and pinned to its backend alike."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import pytest

from implementations import frameworks, workloads
from tests.helpers import assert_close

PROGRAMS = {"mlp": [("default", None), ("matched", None)], "swiglu": [("default", None), ("matched", None)],
            "transformer": [(s, a) for s in workloads.STYLES for a in workloads.ATTENTIONS]}
LOOP = {"transformer": "unrolled"}
# JAX's fused attention on a CPU is XLA's composite, which takes its softmax in float32 whatever the dtype
# (jax._src.nn.functions._dot_product_attention_core): in float64 it agrees to float32's precision, no better.
FUSED_JAX_TOLERANCE = 1e-5


def _fw(name: str, float64: bool = False) -> frameworks.Loaded:
    return frameworks.load(name, float64=float64)


def _inputs(workload: str, style: str, attention: str | None, dtype: str = "float64",
            size: str | None = None) -> workloads.Inputs:
    return workloads.program_of(workloads.make_inputs(workload, size, dtype), style, attention)


def _flat(result) -> list[np.ndarray]:
    out, grad_params, grad_data = result
    # a per-layer list (the loop form's holding) stacked, as the spec lays the parameters out
    return [np.asarray(out)] + [np.asarray(tree[k]) for tree in (grad_params, grad_data) for k in sorted(tree)]


@functools.cache  # both tests below compare each program's float64 values: computed once per process
def _values(framework: str, workload: str, style: str, attention: str | None) -> tuple[np.ndarray, ...]:
    result = _fw(framework, True).common.value_and_grad(_inputs(workload, style, attention), "plain", "cpu",
                                                        LOOP.get(workload))
    return tuple(a.copy() for a in _flat(result))


@pytest.mark.parametrize(("workload", "style", "attention"),
                         [(w, s, a) for w, programs in PROGRAMS.items() for s, a in programs])
def test_each_program_has_the_same_outputs_and_gradients_in_both_frameworks(workload, style, attention) -> None:
    torch_side, jax_side = (_values(n, workload, style, attention) for n in ("torch", "jax"))
    tol = FUSED_JAX_TOLERANCE if attention == "fused" else 1e-12
    for a, b in zip(torch_side, jax_side, strict=True):
        assert_close(f"{workload} {style} {attention}", b, a, tol)


@pytest.mark.parametrize("framework", frameworks.NAMES)
@pytest.mark.parametrize("workload", sorted(PROGRAMS))
def test_every_program_of_a_framework_is_the_same_math(framework: str, workload: str) -> None:
    # A style or attention that changed the function (a wrong mask, a layer norm without its epsilon) turns red.
    results = {p: _values(framework, workload, *p) for p in PROGRAMS[workload]}
    first = results[PROGRAMS[workload][0]]
    for program, values in results.items():
        tol = FUSED_JAX_TOLERANCE if framework == "jax" and program[1] == "fused" else 1e-12
        for a, b in zip(first, values, strict=True):
            assert_close(f"{framework} {workload} {program}", b, a, tol)


# The transformer's bytes kept for the backward beyond its arguments, at the tiny size (2 layers, batch 2, seq 4,
# width 8, ffn 16; float32), and the producing ops that make them: pinned, so that a change of one style's residuals
# on one side turns red. PyTorch: F.layer_norm keeps x, mean and rstd; the default's masked_fill keeps the inverted
# boolean mask (bitwise_not), which the matched additive bias does not; the fused kernel keeps q, k, v, its output
# and logsumexp. JAX's default: jax.nn.standardize's composite, jnp.where's broadcast mask, softmax's exp and
# jax.nn.silu's logistic and products; matched: the custom rules keep what PyTorch keeps, plus one 4-byte literal
# per layer; its fused attention is XLA's composite, whose mask (broadcast_in_dim) remains.
TRANSFORMER_SAVED = {
    ("torch", "default", "written"): 8736,
    ("torch", "matched", "written"): 8704,
    ("torch", "default", "fused"): 8320,
    ("torch", "matched", "fused"): 8320,
    ("jax", "default", "written"): 14856,
    ("jax", "matched", "written"): 8712,
    ("jax", "default", "fused"): 14856,
    ("jax", "matched", "fused"): 9352,
}


def _saved(framework: str, style: str, attention: str | None, workload: str = "transformer",
           variant: str = "plain") -> tuple[int, Counter]:
    nbytes, ops = _saved_once(framework, style, attention, workload, variant)
    return nbytes, Counter(dict(ops))


@functools.cache  # several tests read one program's count: a count is exact, the same on every call
def _saved_once(framework: str, style: str, attention: str | None, workload: str,
                variant: str) -> tuple[int, tuple[tuple[str, int], ...]]:
    fw = _fw(framework)
    fn, args = fw.steps.loss_fn(_inputs(workload, style, attention, "float32"), variant, "cpu", LOOP.get(workload))
    records = fw.probe.saved_breakdown(fn, *args)
    ops = Counter(r.op for r in records if not r.is_argument)
    return fw.probe.saved_bytes(fn, *args).extra_bytes, tuple(ops.items())


@pytest.mark.parametrize(("framework", "style", "attention"), list(TRANSFORMER_SAVED))
def test_each_programs_saved_residuals_are_pinned(framework: str, style: str, attention: str) -> None:
    nbytes, ops = _saved(framework, style, attention)
    assert nbytes == TRANSFORMER_SAVED[framework, style, attention]
    if framework == "torch":
        assert ("aten.bitwise_not" in ops) == (style == "default" and attention == "written")
        assert ("aten._scaled_dot_product_flash_attention_for_cpu" in ops) == (attention == "fused")
    else:
        default_ops = {"logistic", "exp", "integer_pow", "sub"}  # silu's, softmax's and standardize's residuals
        assert (default_ops <= set(ops)) == (style == "default")
        assert not (default_ops & set(ops)) or style == "default"


def test_the_matched_program_keeps_the_same_bytes_on_both_sides_but_one_literal_per_layer() -> None:
    torch_bytes, jax_bytes = (TRANSFORMER_SAVED[fw, "matched", "written"] for fw in frameworks.NAMES)
    layers = workloads.spec("transformer").sizes["tiny"]["layers"]
    assert jax_bytes - torch_bytes == 4 * layers
    assert _saved("jax", "matched", "written")[1]["literal"] == layers


@pytest.mark.parametrize("workload", ["mlp", "swiglu"])
def test_the_matched_silu_keeps_as_much_as_pytorchs_and_the_default_more(workload: str) -> None:
    torch_default, torch_matched, jax_default, jax_matched = (
        _saved(fw, style, None, workload)[0] for fw in frameworks.NAMES for style in workloads.STYLES)
    assert torch_default == torch_matched == jax_matched < jax_default


@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_fused_attention_counts_the_written_forms_matmul_flops(framework: str) -> None:
    fw = _fw(framework)
    counts = {}
    for attention in workloads.ATTENTIONS:
        fn, args = fw.steps.grad_fn(_inputs("transformer", "matched", attention, "float32"), "plain", "cpu",
                                    "unrolled")
        counts[attention] = fw.probe.flops(fn, *args)
    assert counts["fused"] == counts["written"] > 0


def test_the_fused_attention_formula_is_the_written_forms_matmuls() -> None:
    # [2 x 3 heads, 5 queries, 7 keys, head 4, value 6]: scores 2*6*5*7*4, weighted sum 2*6*5*7*6; backward twice.
    assert workloads.fused_attention_flops(6, 5, 7, 4, 6, backward=False) == 2 * 6 * 5 * 7 * (4 + 6)
    assert workloads.fused_attention_flops(6, 5, 7, 4, 6, backward=True) == 4 * 6 * 5 * 7 * (4 + 6)


@pytest.mark.parametrize(("primitive", "backward"), [("dot_product_attention_fwd_wrapper", False),
                                                     ("dot_product_attention_bwd_wrapper", True)])
def test_jax_counts_cudnns_attention_primitives_by_the_same_formula(primitive: str, backward: bool) -> None:
    # No CUDA here: an equation of the shape the cuDNN path binds ([batch 2, seq 5, heads 3, head 4] queries, 7 keys
    # and values), counted as PyTorch's kernels are.
    from types import SimpleNamespace

    from implementations.jax import probe

    shapes = [(2, 5, 3, 4), (2, 7, 3, 4), (2, 7, 3, 4), (0,)]
    eqn = SimpleNamespace(primitive=SimpleNamespace(name=primitive),
                          invars=[SimpleNamespace(aval=SimpleNamespace(shape=s)) for s in shapes])
    assert probe._eqn_flops(eqn) == workloads.fused_attention_flops(6, 5, 7, 4, 4, backward)


@pytest.mark.parametrize("variant", ["remat_full", "remat_names", "remat_dots"])
@pytest.mark.parametrize("framework", frameworks.NAMES)
def test_the_remat_policies_see_the_fused_attention(framework: str, variant: str) -> None:
    plain, _ = _saved(framework, "matched", "fused")
    kept, ops = _saved(framework, "matched", "fused", variant=variant)
    assert kept < plain
    if variant == "remat_dots" and framework == "torch":  # the kernel's output is kept as a matmul's is
        assert "aten._scaled_dot_product_flash_attention_for_cpu" in ops
    if variant != "remat_dots":  # name- and block-based policies keep the same on both sides
        other = "jax" if framework == "torch" else "torch"
        assert kept == _saved(other, "matched", "fused", variant=variant)[0]


@pytest.mark.parametrize(("framework", "backend"), [("torch", "efficient"), ("jax", "cudnn")])
def test_a_pinned_backend_that_cannot_run_raises_instead_of_falling_back(monkeypatch, framework, backend) -> None:
    # Neither backend runs on a CPU: pinned, the call must fail rather than run another kernel.
    fw = _fw(framework)
    module = fw.common.load("transformer")
    monkeypatch.setattr(module, "attention_backend", lambda *_: backend)
    fn, args = fw.steps.loss_fn(_inputs("transformer", "matched", "fused", "float32"), "plain", "cpu", "unrolled")
    with pytest.raises(Exception):  # noqa: B017 - each framework raises its own error type
        fn(*args)


def test_the_pinned_backends_follow_the_device_and_dtype() -> None:
    backend = workloads.attention_backend
    assert [backend(fw, "cpu", "float32") for fw in ("torch", "jax")] == ["flash", "xla"]
    assert [backend(fw, "cuda", "bfloat16") for fw in ("torch", "jax")] == ["flash", "cudnn"]
    assert [backend(fw, "cuda", "float32") for fw in ("torch", "jax")] == ["efficient", "xla"]


def test_a_program_the_workload_lacks_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="valid choices: default, matched"):
        workloads.program_of(workloads.make_inputs("mlp"), "careful")
    with pytest.raises(ValueError, match="no attention axis"):
        workloads.program_of(workloads.make_inputs("mlp"), "matched", "fused")
    assert workloads.program_of(workloads.make_inputs("chain")).static == workloads.make_inputs("chain").static
