"""The PyTorch probe's walk over nested outputs and arguments (dicts, lists, tuples): found by mutation testing
(`make mutate`), where the probe tests, whose steps all take and return bare tensors, left the walk into a dict's
values unchecked."""

from __future__ import annotations

import time

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


def test_jax_compile_seconds_each_lie_within_the_call() -> None:
    # Every phase, the warm-up included, is a difference of clock readings inside the call: none can exceed the
    # call's own wall time (a sum of two clock readings instead of a difference would be about the machine's uptime).
    import jax.numpy as jnp

    start = time.perf_counter()
    seconds = jax_probe.compile_seconds(lambda a: jnp.sin(a).sum(), jnp.ones(8, dtype=jnp.float32))
    wall = time.perf_counter() - start
    assert 0 < seconds["startup"] + seconds["total"] <= wall
    assert all(0 < v <= wall for v in seconds.values())
