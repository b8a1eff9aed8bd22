"""Saved bytes by producing op (``saved_breakdown``), pre-existing tensors out of the extra bytes, and the
``tape-vs-trace saved`` command."""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.jax import probe as jax_probe
from implementations.jax import steps as jax_steps
from implementations.torch import common as torch_common
from implementations.torch import probe as torch_probe
from implementations.torch import steps as torch_steps
from tape_vs_trace import cli
from tape_vs_trace.report import breakdown
from tape_vs_trace.side import saved
from tests.report.helpers import off_the_page, overlapping, saved_groups

SIDES = {"torch": (torch_steps, torch_probe), "jax": (jax_steps, jax_probe)}
CASES = [(w, v) for w in workloads.WORKLOADS for v in workloads.variants(w)]


@pytest.mark.parametrize("framework", SIDES)
@pytest.mark.parametrize(("workload", "variant"), CASES)
def test_breakdown_adds_up_to_saved_bytes(framework: str, workload: str, variant: str) -> None:
    steps, probe = SIDES[framework]
    fn, args = steps.loss_fn(workloads.make_inputs(workload, None, "float32"), variant)
    records = probe.saved_breakdown(fn, *args)
    total = probe.saved_bytes(fn, *args)
    assert len(records) == total.count
    assert sum(r.nbytes for r in records) == total.total_bytes
    assert sum(r.nbytes for r in records if not r.is_argument) == total.extra_bytes
    for r in records:
        assert dataclasses.is_dataclass(r) and r.__dataclass_params__.frozen
        assert isinstance(r.op, str) and isinstance(r.shape, tuple) and isinstance(r.dtype, str)
        assert r.is_argument == (r.op == "argument")
        assert r.nbytes > 0


def test_torch_breakdown_of_the_seed_mlp():
    # DESIGN.md's five tensors: x, w1, the matmul output (saved by silu), silu's output and w2.
    inputs = workloads.make_inputs("mlp", "64x256x1024", "float32")
    module = torch_common.load("mlp")
    params, data = torch_common.prepare(inputs)
    records = torch_probe.saved_breakdown(lambda p, d: module.forward(p, d, {}, "plain"), params, data)
    assert sorted((r.op, r.shape) for r in records) == [
        ("argument", (64, 256)), ("argument", (256, 1024)), ("argument", (1024, 256)),
        ("aten.mm", (64, 1024)), ("aten.silu", (64, 1024))]
    assert sum(r.nbytes for r in records) == 2_686_976
    assert {r.dtype for r in records} == {"float32"}


def test_jax_breakdown_of_the_seed_mlp_in_the_default_style():
    # jax.nn.silu is x * logistic(x): besides x @ w1 it keeps the sigmoid and two products of its derivative.
    inputs = workloads.make_inputs("mlp", "64x256x1024", "float32")
    module = jax_common.load("mlp")
    params, data = jax_common.prepare(inputs)
    records = jax_probe.saved_breakdown(lambda p, d: module.forward(p, d, {"style": "default"}, "plain"), params,
                                        data)
    assert sorted(r.op for r in records) == ["argument"] * 3 + ["dot_general", "logistic", "mul", "mul"]
    assert all(r.shape == (64, 1024) for r in records if not r.is_argument)


@pytest.mark.parametrize("framework", SIDES)
def test_the_matched_mlp_keeps_pytorchs_five_tensors_on_both_sides(framework: str) -> None:
    # Beyond the arguments, two [64, 1024] arrays on both sides: silu's output (for w2's matmul) and one for silu's
    # backward (PyTorch's x @ w1, JAX's matched silu's derivative).
    steps, probe = SIDES[framework]
    fn, args = steps.loss_fn(workloads.program_of(workloads.make_inputs("mlp", "64x256x1024", "float32"), "matched"),
                             "plain")
    records = probe.saved_breakdown(fn, *args)
    assert sorted(r.shape for r in records if not r.is_argument) == [(64, 1024), (64, 1024)]
    assert probe.saved_bytes(fn, *args).extra_bytes == 2 * 64 * 1024 * 4


@pytest.mark.parametrize("framework", SIDES)
def test_extra_bytes_leave_out_the_closed_over_cotangent(framework: str) -> None:
    # The loss closes over its [64, 256] output cotangent; checkpointing keeps only the block's inputs, so nothing
    # beyond what existed before the call is saved. Before the fix both sides reported 65,536 B here.
    steps, probe = SIDES[framework]
    fn, args = steps.loss_fn(workloads.make_inputs("mlp", "64x256x1024", "float32"), "remat_full")
    records = probe.saved_breakdown(fn, *args)
    # x and the cotangent, both there before the call.
    assert [r.is_argument for r in records if r.shape == (64, 256)] == [True, True]
    assert probe.saved_bytes(fn, *args).extra_bytes == 0


# --- the command ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["saved", "nope"], ["saved", "mlp", "--size", "huge"],
                                  ["saved", "mlp", "--variant", "custom"], ["saved", "chain", "--dtype", "bfloat16"]])
def test_saved_command_rejects_bad_input(argv, capsys):
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "valid choices" in err and "Traceback" not in err


@pytest.mark.slow
def test_saved_command_csv_matches_the_probes(capsys):
    assert cli.main(["saved", "mlp", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for framework, (steps, probe) in SIDES.items():
        fn, args = steps.loss_fn(workloads.make_inputs("mlp", None, "float32"), "plain")
        expected = probe.saved_bytes(fn, *args)
        mine = [r for r in rows if r["framework"] == framework]
        assert sum(int(r["bytes"]) for r in mine) == expected.total_bytes
        assert sum(int(r["bytes"]) for r in mine if r["is_argument"] == "False") == expected.extra_bytes
        assert sum(int(r["count"]) for r in mine) == expected.count


def test_saved_text_puts_the_frameworks_side_by_side():
    rows = [*saved.rows_by_op("torch", [{"op": "aten.mm", "nbytes": 8, "is_argument": False},
                                        {"op": "argument", "nbytes": 4, "is_argument": True}]),
            *saved.rows_by_op("jax", [{"op": "dot_general", "nbytes": 8, "is_argument": False},
                                      {"op": "dot_general", "nbytes": 8, "is_argument": False}])]
    lines = saved.format_text(rows, "title").splitlines()
    assert lines[1].split() == ["op", "PyTorch", "JAX"]
    assert lines[-2].split() == ["total", "12", "B", "(2)", "16", "B", "(2)"]
    assert lines[-1].split()[-6:] == ["8", "B", "(1)", "16", "B", "(2)"]


def test_saved_figure_writes_a_png(tmp_path):
    rows = [dict(r, case="mlp") for r in saved.rows_by_op("torch", [{"op": "aten.mm", "nbytes": 8,
                                                                       "is_argument": False}])]
    fig = breakdown.saved_figure(rows, tmp_path / "saved.png")
    assert (tmp_path / "saved.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [ax.get_ylabel() for ax in fig.axes] == ["saved for backward (MiB)"]


def test_saved_figure_puts_side_by_side_only_the_bars_of_one_case(tmp_path):
    def case(framework: str, name: str, nbytes: int) -> list[dict]:
        rows = saved.rows_by_op(framework, [{"op": "mm", "nbytes": nbytes, "is_argument": False}])
        return [dict(r, case=name) for r in rows]

    loop, scan = "autodiff backward\nunrolled loop", "autodiff backward\nscan loop"
    rows = case("torch", loop, 2 ** 20) + case("jax", loop, 2 ** 21) + case("jax", scan, 3 * 2 ** 20)
    fig = breakdown.saved_figure(rows, tmp_path / "saved.png", "title")
    [ax] = fig.axes
    assert saved_groups(ax) == {loop: ["PyTorch", "JAX"], scan: ["JAX"]}
    assert [t.get_text() for t in ax.texts] == ["PyTorch: not measured"]  # its place in the scan group stays empty
    assert sorted(bar.get_height() for bar in ax.patches) == [1.0, 2.0, 3.0]
    assert not overlapping(fig) and not off_the_page(fig)
