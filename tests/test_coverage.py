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
    # The collectives of a compiled XLA program's text; PyTorch's are counted from the step's profile as they run.
    "distributed": {"collectives_of_hlo"},
    # PyTorch's tensors are walked out of nested arguments and a CUDA stream needs its own synchronize (the compile
    # and calibration probes share these); a JAX array blocks with block_until_ready.
    "probe": {"tensors", "sync"},
    # Inductor's caches are switched cold or warm in a fresh folder; JAX's persistent cache is pointed at a folder.
    "compile_probe": {"compile_caches", "persistent_cache"},
}
# Defaults that differ on purpose, (module, function, parameter): the reason.
DIFFERENT_DEFAULTS = {
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
        signature = inspect.signature(module.forward).parameters
        assert list(signature) == ["params", "data", "static", "variant", "formulation"]
        assert signature["formulation"].default is None  # each side's common.formulation_of decides


@pytest.mark.parametrize("name", sorted(_modules(implementations.torch)))
def test_mirrored_functions(name: str) -> None:
    torch_module = importlib.import_module(f"implementations.torch.{name}")
    jax_module = importlib.import_module(f"implementations.jax.{name}")
    exempt = ONE_SIDED.get(name, set())
    assert _public_functions(torch_module) - exempt == _public_functions(jax_module) - exempt
    for function in sorted(_public_functions(torch_module) - exempt):
        torch_params = _parameters(name, function, getattr(torch_module, function))
        jax_params = _parameters(name, function, getattr(jax_module, function))
        differ = [(t, j) for t, j in zip(torch_params, jax_params) if t != j]
        assert torch_params == jax_params, f"{name}.{function} (name, kind, default) differ, torch vs jax: {differ}"


def _parameters(module: str, function: str, fn) -> list[tuple[str, str, object]]:
    # Names, kinds and defaults: a caller that leans on a default gets the same call on both sides.
    return [(p.name, p.kind.name, DIFFERENT_DEFAULTS.get((module, function, p.name), p.default))
            for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize(("name", "function", "parameter"), list(DIFFERENT_DEFAULTS))
def test_different_defaults_still_differ(name: str, function: str, parameter: str) -> None:
    # An exemption that no longer names a real difference would hide the next drift of that parameter.
    torch_fn, jax_fn = (getattr(importlib.import_module(f"implementations.{fw}.{name}"), function)
                        for fw in ("torch", "jax"))
    torch_default, jax_default = (inspect.signature(fn).parameters[parameter].default for fn in (torch_fn, jax_fn))
    assert torch_default != jax_default
