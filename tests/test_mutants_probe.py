"""The PyTorch probe's walk over nested outputs and arguments (dicts, lists, tuples): found by mutation testing
(`make mutate`), where the probe tests, whose steps all take and return bare tensors, left the walk into a dict's
values unchecked."""

from __future__ import annotations

import pytest
import torch

from implementations.jax import probe as jax_probe
from implementations.torch import probe as torch_probe


def sin_square(a: torch.Tensor) -> torch.Tensor:
    # SinBackward, MulBackward and one AccumulateGrad for `a`: 3 nodes.
    return torch.sin(a * a)


def test_graph_size_finds_outputs_inside_containers() -> None:
    x = torch.ones(3, requires_grad=True)
    assert torch_probe.graph_size(sin_square, x) == 3
    assert torch_probe.graph_size(lambda a: {"loss": sin_square(a)}, x) == 3
    assert torch_probe.graph_size(lambda a: [sin_square(a)], x) == 3
    assert torch_probe.graph_size(lambda a: ({"out": (sin_square(a),)}, 1.0), x) == 3
    # Two outputs sharing the leaf: sin, mul, AccumulateGrad, plus cos for the second.
    assert torch_probe.graph_size(lambda a: {"s": sin_square(a), "c": torch.cos(a)}, x) == 4


def test_an_argument_inside_a_dict_is_named_with_its_own_shape() -> None:
    # The step saves a slice of its argument: the record is the whole storage, named by the argument's shape.
    base = torch.ones(4, 3, requires_grad=True)

    def step(params: dict) -> torch.Tensor:
        return (params["w"][:2] * params["w"][:2]).sum()

    [record] = torch_probe.saved_breakdown(step, {"w": base})
    assert record.op == "argument" and record.is_argument
    assert record.shape == (4, 3) and record.dtype == "float32" and record.nbytes == 4 * 3 * 4


HLO_WITH_WORKSPACES = """\
ENTRY %main.42 (p0: f32[64,256], p1: f32[256,1024]) -> (f32[64,1024], f32[]) {
  %custom-call.1 = (f32[64,1024]{1,0}, s8[4194304]{0}) custom-call(%p0, %p1), custom_call_target="__cublas$gemm"
  %lt.2 = (f32[64,1024], f32[64,1024], s8[33554432]{0}) custom-call(%p0, %p1), custom_call_target="__cublas$lt$matmul"
  %cudnn.3 = (f32[64,1024]{1,0}, s8[1048576]{0}) custom-call(f32[64,1024]{1,0} %x), custom_call_target="__cudnn$fusion"
  %sort.4 = (f32[64]{0}, s8[999999999]{0}) custom-call(f32[64]{0} %y), custom_call_target="__cub$DeviceRadixSort"
  %bitcast.5 = s8[777777777]{0} bitcast(f32[64,1024]{1,0} %custom-call.1)
}
"""


def test_jax_gemm_workspace_is_read_from_the_compiled_hlo(monkeypatch: pytest.MonkeyPatch) -> None:
    import jax.numpy as jnp

    probe = jax_probe

    # The cuBLASLt call's workspace (last in its tuple, after an aux output) is the largest of the library calls';
    # a sort's scratch and a plain s8 array are no GEMM workspace.
    assert probe._gemm_workspace_bytes(HLO_WITH_WORKSPACES) == 33554432
    assert probe._gemm_workspace_bytes("") == 0
    x = jnp.ones((8, 8), dtype=jnp.float32)
    assert probe.peak_bytes(lambda a: a @ a, x).workspace_bytes == 0  # XLA:CPU takes no library workspace
    monkeypatch.setattr(probe, "_gemm_workspace_bytes", lambda text: 7 if "dot" in text else -1)
    assert probe.peak_bytes(lambda a: a @ a, x).workspace_bytes == 7  # read from this step's compiled program


def test_jax_gemm_workspace_of_each_call_alone() -> None:
    # cuDNN's, a plain cuBLAS one; a library call whose result is no tuple, or a line with no assignment, has none.
    probe = jax_probe
    lines = HLO_WITH_WORKSPACES.splitlines()
    assert probe._gemm_workspace_bytes(lines[3]) == 1048576 and probe._gemm_workspace_bytes(lines[1]) == 4194304
    assert probe._gemm_workspace_bytes('  %c = s8[4096]{0} custom-call(%p0), custom_call_target="__cublas$gemm"') == 0
    # An s8 operand is no workspace: only the result tuple, before "custom-call(", is read.
    assert probe._gemm_workspace_bytes('  %c = (f32[2], s8[64]{0}) custom-call(s8[999]{0} %w), '
                                       'custom_call_target="__cublas$gemm"') == 64
    assert probe._gemm_workspace_bytes('custom-call(%p0) (f32[2], s8[64]) custom_call_target="__cublas$gemm"') == 0


def test_jax_compiled_costs_differentiate_every_argument() -> None:
    # x @ w: the forward product and one product per gradient (x and w), 2*4*8*16 flops each; x and w are the
    # residuals, both arguments, so nothing extra is saved.
    import jax.numpy as jnp

    x, w = jnp.ones((4, 8), dtype=jnp.float32), jnp.ones((8, 16), dtype=jnp.float32)
    costs = jax_probe.compiled_costs(lambda a, b: (a @ b).sum(), x, w)
    assert costs.matmul_flops == 3 * 2 * 4 * 8 * 16 and costs.saved_bytes == 0
    assert costs.method == "jax.vjp residuals and matmuls of the differentiated jaxpr (before XLA)"
