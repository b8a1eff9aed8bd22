"""The measurement probes: saved bytes, peak memory, graph size, flops, compile time and the host calibration, on
both frameworks.

The exact numbers are the ones DESIGN.md cites (PyTorch) and what JAX 0.10.2 gives for the same functions; where
the two differ, a comment says why. Everything runs on CPU (``prepare`` places arrays there explicitly), so a GPU
machine runs the same checks.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import types
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from jax.ad_checkpoint import print_saved_residuals

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.jax import probe as jax_probe
from implementations.torch import common as torch_common
from implementations.torch import probe as torch_probe

MLP = ("mlp", "64x256x1024")
LINEAR_GELU = ("linear_gelu", "8x4096")
F32 = 4
# One [64, 256] @ [256, 1024] matmul: 2 * 64 * 256 * 1024 flops; forward and backward of the mlp are six of them.
MLP_MATMUL_FLOPS = 2 * 64 * 256 * 1024
# What the mlp's forward+backward step returns: the output [64, 256] and the gradients of x, w1 and w2.
MLP_STEP_OUTPUT_BYTES = (64 * 256 + 64 * 256 + 256 * 1024 + 1024 * 256) * F32


def _default_program(inputs: workloads.Inputs) -> workloads.Inputs:
    """The default style where the workload has styles: the obvious program, whose residuals these counts document
    (tests/test_programs.py pins the matched ones)."""
    return workloads.program_of(inputs, "default" if workloads.spec(inputs.workload).styles else None)


def _torch_case(workload: str, size: str, variant: str):
    """(forward fn, (params, data), step fn) in PyTorch; every array is a leaf that requires grad."""
    inputs = _default_program(workloads.make_inputs(workload, size, "float32"))
    module = torch_common.load(workload)
    params, data = torch_common.prepare(inputs)
    cotangent = torch.from_numpy(np.array(inputs.cotangent))

    def fn(p, d):
        return module.forward(p, d, inputs.static, variant)

    def step(p, d):
        out = fn(p, d)
        return out, torch.autograd.grad((out * cotangent).sum(), torch_common.leaves((p, d)))

    return fn, (params, data), step


def _jax_case(workload: str, size: str, variant: str):
    """(forward fn, (params, data), step fn) in JAX, the mirror of _torch_case."""
    inputs = _default_program(workloads.make_inputs(workload, size, "float32"))
    module = jax_common.load(workload)
    params, data = jax_common.prepare(inputs)
    cotangent = jnp.asarray(inputs.cotangent)

    def fn(p, d):
        return module.forward(p, d, inputs.static, variant)

    def step(p, d):
        out, vjp_fn = jax.vjp(fn, p, d)
        return out, vjp_fn(cotangent)

    return fn, (params, data), step


# --- saved bytes ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        # x, w1, w2, x @ w1 (saved by silu) and silu's output (saved by the second matmul): DESIGN.md's numbers.
        ("plain", (5, 2_686_976, 524_288)),
        # Non-reentrant checkpoint keeps only its inputs.
        ("remat_full", (3, 2_162_688, 0)),
        # The selective-checkpoint cache keeps both matmul outputs, x @ w1 (262,144 B) and the block's output
        # (65,536 B), although the backward never reads the latter; the tape's hooks alone would report 3 / 0.
        ("remat_dots", (5, 2_490_368, 327_680)),
    ],
)
def test_torch_saved_bytes_mlp(variant, expected):
    fn, args, _ = _torch_case(*MLP, variant)
    saved = torch_probe.saved_bytes(fn, *args)
    assert (saved.count, saved.total_bytes, saved.extra_bytes) == expected


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        # JAX differentiates jax.nn.silu as x * logistic(x): besides x @ w1 and silu's output it saves the sigmoid
        # and a second [64, 1024] factor of its derivative, both computed in the forward. PyTorch's SiluBackward
        # saves only its input and recomputes the sigmoid in the backward. So 7 buffers, two more than PyTorch.
        ("plain", (7, 3_211_264, 1_048_576)),
        ("remat_full", (3, 2_162_688, 0)),
        # dots_saveable keeps x @ w1 only: the output of the second dot is not a residual of anything.
        ("remat_dots", (4, 2_424_832, 262_144)),
    ],
)
def test_jax_saved_bytes_mlp(variant, expected):
    fn, args, _ = _jax_case(*MLP, variant)
    saved = jax_probe.saved_bytes(fn, *args)
    assert (saved.count, saved.total_bytes, saved.extra_bytes) == expected


def test_jax_remat_reduces_extra_saved_bytes():
    fn_plain, args, _ = _jax_case(*MLP, "plain")
    fn_remat, _, _ = _jax_case(*MLP, "remat_full")
    assert jax_probe.saved_bytes(fn_remat, *args).extra_bytes < jax_probe.saved_bytes(fn_plain, *args).extra_bytes


def test_torch_saved_bytes_linear_gelu():
    fn, args, _ = _torch_case(*LINEAR_GELU, "plain")
    saved = torch_probe.saved_bytes(fn, *args)
    # x (131,072 B), the weight through its transposed view (67,108,864 B, not new memory) and the linear output.
    assert (saved.count, saved.total_bytes, saved.extra_bytes) == (3, 131_072 + 67_108_864 + 131_072, 131_072)


def test_jax_saved_bytes_linear_gelu():
    fn, args, _ = _jax_case(*LINEAR_GELU, "plain")
    saved = jax_probe.saved_bytes(fn, *args)
    # x, a materialised copy of weight.T (eager JAX transposes into a new buffer; PyTorch saves a view), three
    # [8, 4096] factors of the erf-GELU derivative (mul, erfc, exp outputs) and a float32 scalar literal.
    # PyTorch's GeluBackward recomputes from the linear output instead.
    extra = 67_108_864 + 3 * 131_072 + F32
    assert (saved.count, saved.total_bytes, saved.extra_bytes) == (6, 131_072 + extra, extra)


_DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}


def _print_saved_residuals_summary(fn, *args) -> tuple[int, int]:
    """(count, bytes) of the lines that JAX's public ``print_saved_residuals`` prints, e.g. 'f32[64,1024] from …'."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_saved_residuals(fn, *args)
    count = total = 0
    for line in buffer.getvalue().splitlines():
        dtype, shape = re.match(r"(\w+)\[([\d,]*)\]", line).groups()
        count += 1
        total += _DTYPE_BYTES[dtype] * math.prod(int(n) for n in shape.split(",") if n)
    return count, total


@pytest.mark.parametrize(("case", "variant"), [(MLP, "plain"), (MLP, "remat_full"), (MLP, "remat_dots"),
                                               (LINEAR_GELU, "plain")])
def test_jax_saved_bytes_agrees_with_print_saved_residuals(case, variant):
    fn, args, _ = _jax_case(*case, variant)
    saved = jax_probe.saved_bytes(fn, *args)
    assert (saved.count, saved.total_bytes) == _print_saved_residuals_summary(fn, *args)


def test_saved_bytes_counts_a_storage_once():
    # x * x saves x twice (two packed tensors in PyTorch, two leaves of the VJP in JAX): one storage, not new.
    x_torch = torch.ones(1000, requires_grad=True)
    x_jax = jnp.ones(1000, dtype=jnp.float32)
    for saved in (torch_probe.saved_bytes(lambda a: a * a, x_torch), jax_probe.saved_bytes(lambda a: a * a, x_jax)):
        assert (saved.count, saved.total_bytes, saved.extra_bytes) == (1, 4000, 0)
    # exp saves its own result: new memory.
    for saved in (torch_probe.saved_bytes(torch.exp, x_torch), jax_probe.saved_bytes(jnp.exp, x_jax)):
        assert (saved.count, saved.total_bytes, saved.extra_bytes) == (1, 4000, 4000)


def test_torch_saved_bytes_leaves_out_captured_parameters():
    # w is not an argument but a leaf that receives a gradient: a parameter, not memory of the backward pass.
    w = torch.full((1000,), 2.0, requires_grad=True)
    x = torch.ones(1000, requires_grad=True)
    saved = torch_probe.saved_bytes(lambda a: a * w, x)
    assert (saved.count, saved.total_bytes, saved.extra_bytes) == (2, 8000, 0)


def test_torch_saved_bytes_frees_the_graph():
    # exp saves its output; had the pack hook kept that tensor with its grad_fn, the node and the tensor would
    # reference each other and the storage would outlive the call.
    storages = []

    def fn(a):
        y = a.exp()
        storages.append(weakref.ref(y.untyped_storage()))
        return y * 2

    torch_probe.saved_bytes(fn, torch.ones(1000, requires_grad=True))
    assert storages[0]() is None


# --- peak bytes ----------------------------------------------------------------------------------------------------


def test_peak_bytes_leaves_out_the_arguments():
    # Only the output of a * 2 is new; the argument is the baseline.
    torch_peak = torch_probe.peak_bytes(lambda a: a * 2, torch.ones(1000))
    jax_peak = jax_probe.peak_bytes(lambda a: a * 2, jnp.ones(1000, dtype=jnp.float32))
    assert torch_peak.bytes == jax_peak.bytes == 4000
    assert torch_peak.method == "torch live-storage tracking (TorchDispatchMode)"
    assert jax_peak.method.startswith("jax compiled.memory_analysis")


@pytest.mark.parametrize("variant", ["plain", "remat_full"])
def test_torch_peak_bytes_mlp(variant):
    _, args, step = _torch_case(*MLP, variant)
    peak = torch_probe.peak_bytes(step, *args)
    assert peak.bytes >= MLP_STEP_OUTPUT_BYTES
    # The peak comes at the end of the backward: output, the three gradients, the [64, 1024] gradient of x @ w1
    # and the 4-byte loss and its seed gradient. Recomputation happens earlier, with less live, so a single block's
    # peak is the same with and without checkpointing.
    assert peak.bytes == MLP_STEP_OUTPUT_BYTES + 64 * 1024 * F32 + 2 * F32 == 2_490_376


@pytest.mark.parametrize("variant", ["plain", "remat_full"])
def test_jax_peak_bytes_mlp(variant):
    _, args, step = _jax_case(*MLP, variant)
    peak = jax_probe.peak_bytes(step, *args)
    assert peak.bytes >= MLP_STEP_OUTPUT_BYTES
    # Outputs plus XLA's 32-byte tuple of output pointers plus 524,288 B of temp (two [64, 1024] buffers). XLA:CPU
    # undoes the checkpoint in straight-line code, so remat_full gets the same program.
    assert peak.bytes == MLP_STEP_OUTPUT_BYTES + 32 + 2 * 64 * 1024 * F32 == 2_752_544


class _FakeDevice:
    """A GPU as the allocator shows it: memory_stats() returns the next scripted dict; every call is logged."""

    platform = "gpu"

    def __init__(self, stats, log):
        self.stats, self.log = list(stats), log

    def memory_stats(self):
        self.log.append("stats")
        return self.stats.pop(0)


class _FakeCompiled:
    def memory_analysis(self):
        return types.SimpleNamespace(output_size_in_bytes=300, temp_size_in_bytes=200, alias_size_in_bytes=100)


def _fake_peak(stats):
    log = []

    def run():
        log.append("run")
        return jnp.zeros(2)

    def fill(nbytes, device):
        log.append(f"ballast {nbytes}")
        return jnp.zeros(1)

    return jax_probe._measured_peak(run, _FakeDevice(stats, log), _FakeCompiled(), fill), log


def test_jax_gpu_peak_from_a_run_above_a_ballast_up_to_the_mark():
    # Compilation (the autotuner) left a high-water mark of 5,000 B with 1,200 B in use after the warm-up (its
    # outputs are held): 3,800 B of ballast lift the baseline to the mark, and the measured run's peak rises from
    # there to 9,000 B: the step's own peak is 9,000 - 5,000 = 4,000 B, however small against the autotuner's.
    peak, log = _fake_peak([{}, {"bytes_in_use": 1_200, "peak_bytes_in_use": 5_000},
                            {"bytes_in_use": 5_000, "peak_bytes_in_use": 5_000},
                            {"bytes_in_use": 5_200, "peak_bytes_in_use": 9_000}])
    assert peak == jax_probe.PeakBytes(4_000, "jax peak_bytes_in_use")
    # The gap is read after the warm-up run, the baseline after the ballast, and the peak after the measured run.
    assert log == ["stats", "run", "stats", "ballast 3800", "stats", "run", "stats"]


def test_jax_gpu_peak_without_a_gap_places_no_ballast():
    peak, log = _fake_peak([{}, {"bytes_in_use": 1_200, "peak_bytes_in_use": 1_200},
                            {"bytes_in_use": 1_200, "peak_bytes_in_use": 1_200},
                            {"bytes_in_use": 1_400, "peak_bytes_in_use": 6_000}])
    assert peak == jax_probe.PeakBytes(4_800, "jax peak_bytes_in_use")
    assert log == ["stats", "run", "stats", "stats", "run", "stats"]


def test_jax_gpu_peak_hidden_by_an_earlier_one_falls_back():
    # The measured run never rose above the mark (the ballast fell short of it): that mark is not the step's, so no
    # allocator peak is claimed; XLA's buffer assignment (output + temp - alias) is reported under its own method.
    peak, _ = _fake_peak([{}, {"bytes_in_use": 1_200, "peak_bytes_in_use": 9_000},
                          {"bytes_in_use": 1_200, "peak_bytes_in_use": 9_000},
                          {"bytes_in_use": 1_400, "peak_bytes_in_use": 9_000}])
    assert peak.bytes == 400
    assert peak.method.startswith("jax compiled.memory_analysis") and "hidden" in peak.method


def test_jax_ballast_holds_the_bytes_asked_for():
    ballast = jax_probe._ballast(3_800, jax.devices()[0])
    assert ballast.nbytes == 3_800 and ballast.dtype == jnp.uint8


def test_jax_peak_without_allocator_stats_uses_memory_analysis():
    peak, log = _fake_peak([None])
    assert peak.bytes == 400 and "hidden" not in peak.method
    assert log == ["stats"]


def test_jax_peaks_per_device_each_above_its_own_baseline():
    # The distributed step's devices: each gets ballast up to its own mark and its own peak; a device whose mark the
    # run did not raise has none (None), rather than an earlier mark passed off as the step's.
    log = []
    devices = [_FakeDevice([{}, {"bytes_in_use": 1_000, "peak_bytes_in_use": 3_000},
                            {"bytes_in_use": 3_000, "peak_bytes_in_use": 3_000},
                            {"bytes_in_use": 3_100, "peak_bytes_in_use": 7_000}], log),
               _FakeDevice([{}, {"bytes_in_use": 1_000, "peak_bytes_in_use": 9_000},
                            {"bytes_in_use": 1_000, "peak_bytes_in_use": 9_000},
                            {"bytes_in_use": 1_100, "peak_bytes_in_use": 9_000}], log)]

    def fill(nbytes, device):
        log.append(f"ballast {nbytes} on {devices.index(device)}")
        return jnp.zeros(1) if device is devices[0] else None

    peaks = jax_probe._allocator_peaks(lambda: log.append("run") or jnp.zeros(2), devices, fill)
    assert peaks == [4_000, None]
    assert log == ["stats", "stats", "run", "stats", "ballast 2000 on 0", "stats", "ballast 8000 on 1",
                   "stats", "stats", "run", "stats", "stats"]
    assert jax_probe._allocator_peaks(lambda: pytest.fail("ran"), [_FakeDevice([{}], []), _FakeDevice([None], [])]) \
        is None


# --- graph size ----------------------------------------------------------------------------------------------------


def test_graph_size_of_a_small_function():
    # PyTorch: SinBackward, MulBackward and one AccumulateGrad for x (reached twice through x * x, counted once).
    assert torch_probe.graph_size(lambda a: torch.sin(a * a), torch.ones(3, requires_grad=True)) == 3
    # JAX, forward and backward: mul, sin, cos | mul (cotangent * cos), mul and mul (both factors of x * x),
    # add_any (the two contributions to x).
    assert jax_probe.graph_size(lambda a: jnp.sin(a * a), jnp.ones(3, dtype=jnp.float32)) == 7


@pytest.mark.parametrize(("variant", "torch_nodes", "jax_equations"),
                         [("plain", 6, 18), ("remat_full", 6, 23), ("remat_dots", 6, 23)])
def test_graph_size_mlp(variant, torch_nodes, jax_equations):
    # PyTorch: two MmBackward, SiluBackward and three AccumulateGrad; non-reentrant checkpoint records the same tape.
    # JAX: the checkpoint equation wraps its own forward and the backward recomputes it, hence more equations.
    fn, args, _ = _torch_case(*MLP, variant)
    assert torch_probe.graph_size(fn, *args) == torch_nodes
    fn, args, _ = _jax_case(*MLP, variant)
    assert jax_probe.graph_size(fn, *args) == jax_equations


# --- flops (both frameworks alike, more in test_probe_flops.py) ----------------------------------------------------


@pytest.mark.parametrize("probe", [torch_probe, jax_probe])
@pytest.mark.parametrize(("variant", "matmuls"), [("plain", 6), ("remat_full", 7), ("remat_dots", 6)])
def test_flops_mlp(probe, variant, matmuls):
    # Matmuls only. remat_full recomputes x @ w1 but not the second matmul (PyTorch's non-reentrant checkpoint
    # stops once every saved tensor is back; JAX's backward needs only the first product's output). remat_dots
    # recomputes only the silu.
    case = _torch_case if probe is torch_probe else _jax_case
    _, args, step = case(*MLP, variant)
    assert probe.flops(step, *args) == matmuls * MLP_MATMUL_FLOPS


def test_torch_flop_count_prints_nothing(capsys) -> None:
    # FlopCounterMode prints its table unless told not to: a count taken inside a benchmark process would write it
    # into asv's output of every count.
    _, args, step = _torch_case(*MLP, "plain")
    assert torch_probe.matmul_flops(step, *args) == 6 * MLP_MATMUL_FLOPS
    assert capsys.readouterr().out == ""


# --- outputs and arguments inside containers (dicts, lists, tuples) ------------------------------------------------


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


# --- JAX: GEMM workspace ------------------------------------------------------------------------------------------


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


# --- PyTorch: the peak probe on CUDA goes to the allocator ---------------------------------------------------------


def test_a_cuda_tensor_sends_the_peak_probe_to_the_allocator_with_its_device(monkeypatch) -> None:
    calls = []
    cuda = torch.device("cuda", 1)
    monkeypatch.setattr(torch_probe, "device_of", lambda args: cuda)
    monkeypatch.setattr(torch_probe, "_allocator_peak",
                        lambda step, args, device: calls.append((step, args, device)) or "peak")
    step = object()
    assert torch_probe.peak_bytes(step, 1, 2) == "peak"
    assert calls == [(step, (1, 2), cuda)]
