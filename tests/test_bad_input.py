"""Bad input gets a ValueError that lists the valid choices, and the command line prints a subcommand's own errors
as one line."""

from __future__ import annotations

import pytest

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.torch import common as torch_common
from tape_vs_trace import cli
from tape_vs_trace.results import machine


def test_unknown_workload_lists_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown workload 'resnet'; valid choices: .*mlp.*transformer"):
        workloads.make_inputs("resnet")
    for common in (torch_common, jax_common):
        with pytest.raises(ValueError, match="valid choices: .*lstm"):
            common.load("resnet")


def test_unknown_size_lists_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown size for mlp '1x1'; valid choices: tiny, 64x256x1024"):
        workloads.make_inputs("mlp", "1x1")


def test_unknown_dtype_lists_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown dtype for mlp 'float16'; valid choices: float32, float64, bfloat16"):
        workloads.make_inputs("mlp", "tiny", "float16")
    with pytest.raises(ValueError, match=r"unknown dtype for gmm 'bfloat16'; valid choices: float32, float64$"):
        workloads.make_inputs("gmm", "tiny", "bfloat16")


def test_unknown_variant_lists_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown variant for swiglu 'fast'; valid choices: plain, custom"):
        workloads.validate("swiglu", variant="fast")


def test_valid_arguments_pass() -> None:
    workloads.validate("transformer", "tiny", "float64", "remat_dots")


def test_every_subcommand_names_error_types_that_exist() -> None:
    for command in cli.COMMANDS:
        assert all(issubclass(e, Exception) for e in cli._error_types(command.errors)), command.name


def test_a_subcommands_own_error_is_one_line_and_any_other_is_not_hidden(monkeypatch, capsys) -> None:
    def bad_mode() -> dict:
        raise ValueError("unknown TVT_TORCH_COMPILE_MODE 'x'")

    monkeypatch.setattr(machine, "record", bad_mode)
    assert cli.main(["machine"]) == 1
    assert capsys.readouterr().err == "error: unknown TVT_TORCH_COMPILE_MODE 'x'\n"
    monkeypatch.setattr(machine, "record", lambda: {}["machine"])
    with pytest.raises(KeyError):  # a bug, not bad input: its traceback stays
        cli.main(["machine"])
