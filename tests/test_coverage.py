"""Coverage guard: every workload has both implementations, and the two sides mirror each other."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import implementations.jax
import implementations.torch
from implementations import workloads

# Public helpers that exist on one side only, with the reason.
ONE_SIDED = {
    # autograd.grad takes a flat list of tensors; JAX walks pytrees with jax.tree instead.
    "common": {"leaves", "unflatten"},
}


def _modules(package) -> set[str]:
    return {m.name for m in pkgutil.iter_modules(package.__path__)}


def _public_functions(module) -> set[str]:
    return {
        name for name, value in vars(module).items()
        if not name.startswith("_") and callable(value) and not inspect.isclass(value)
        and getattr(value, "__module__", None) == module.__name__
    }


def test_same_module_names() -> None:
    assert _modules(implementations.torch) == _modules(implementations.jax)


@pytest.mark.parametrize("workload", list(workloads.WORKLOADS))
def test_every_workload_has_both_implementations(workload: str) -> None:
    for package in ("implementations.torch", "implementations.jax"):
        module = importlib.import_module(f"{package}.{workload}")
        assert callable(getattr(module, "forward", None)), f"{package}.{workload} has no forward()"
        assert list(inspect.signature(module.forward).parameters) == ["params", "data", "static", "variant"]


@pytest.mark.parametrize("name", sorted(_modules(implementations.torch)))
def test_mirrored_functions(name: str) -> None:
    torch_module = importlib.import_module(f"implementations.torch.{name}")
    jax_module = importlib.import_module(f"implementations.jax.{name}")
    exempt = ONE_SIDED.get(name, set())
    assert _public_functions(torch_module) - exempt == _public_functions(jax_module) - exempt
    for function in _public_functions(torch_module) - exempt:
        torch_sig = inspect.signature(getattr(torch_module, function))
        jax_sig = inspect.signature(getattr(jax_module, function))
        assert list(torch_sig.parameters) == list(jax_sig.parameters), f"{name}.{function} signatures differ"
