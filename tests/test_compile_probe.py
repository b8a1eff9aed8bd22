"""first_compiled_call: both frameworks pay their one-time compiler set-up before the call to time, that call is
the step's first (its compile), and the cache argument turns the on-disk caches off ("cold") or serves the timed
compile from them ("warm")."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import pytest
import torch

from implementations import workloads
from implementations.jax import compile_probe as jax_probe
from implementations.torch import compile_probe as torch_probe
from implementations.torch import steps as torch_steps


def _logged(monkeypatch, probe, log: list[str]) -> None:
    warm_up = probe.warm_up_compiler

    def logged(device):
        log.append("warm-up")
        warm_up(device)

    monkeypatch.setattr(probe, "warm_up_compiler", logged)


@pytest.mark.parametrize(("cache", "traces"), [("cold", 0), ("warm", 1)])
def test_jax_first_compiled_call_comes_after_the_warm_up(monkeypatch, cache: str, traces: int) -> None:
    log: list[str] = []
    _logged(monkeypatch, jax_probe, log)

    def step(a):
        log.append("step traced")
        return jnp.sin(a).sum()

    with jax_probe.first_compiled_call(step, jnp.ones(8, dtype=jnp.float32), cache=cache) as first_call:
        # "warm" traced the step once already, to fill the cache; "cold" has not traced it
        assert log == ["warm-up"] + ["step traced"] * traces
        assert float(first_call()) == pytest.approx(8 * math.sin(1.0))
        assert log[-1] == "step traced" and len(log) == 2 + traces
        with pytest.raises(RuntimeError, match="would not compile"):
            first_call()


def test_jax_compile_cache_is_off_cold_and_serves_warm():
    events: list[str] = []

    def listen(name: str, **_) -> None:
        events.append(name)

    jax.monitoring.register_event_listener(listen)
    try:
        _check_jax_caches(events)
    finally:
        jax.monitoring.unregister_event_listener(listen)


def _check_jax_caches(events: list[str]) -> None:
    before = {flag: getattr(jax.config, flag) for flag in jax_probe.CACHE_FLAGS}
    x = jnp.arange(8, dtype=jnp.float32)
    hits = "/jax/compilation_cache/cache_hits"
    with jax_probe.first_compiled_call(lambda a: jnp.cos(a) * 3, x, cache="cold") as first_call:
        first_call()
    assert hits not in events and "/jax/compilation_cache/task_disabled_cache" in events
    events.clear()
    with jax_probe.first_compiled_call(lambda a: jnp.cos(a) * 3, x, cache="warm") as first_call:
        assert hits not in events
        first_call()
    assert events.count(hits) == 1
    # The caller's cache settings are back.
    assert {flag: getattr(jax.config, flag) for flag in jax_probe.CACHE_FLAGS} == before


@pytest.mark.parametrize("probe", [torch_probe, jax_probe])
def test_first_compiled_call_rejects_an_unknown_cache(probe):
    with pytest.raises(ValueError, match="valid choices: cold, warm"), \
            probe.first_compiled_call(lambda a: a, jnp.ones(2) if probe is jax_probe else torch.ones(2), cache="hot"):
        pass


@pytest.mark.slow
def test_torch_first_compiled_call_warm_up_and_caches(monkeypatch):
    # About a minute on a 2-core CPU, most of it Inductor's one-time set-up in the process.
    from torch._dynamo.utils import counters

    log: list[str] = []
    _logged(monkeypatch, torch_probe, log)
    compile_ = torch.compile

    def logged_compile(*args, **kwargs):
        log.append("compile")
        return compile_(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", logged_compile)
    fn, args = torch_steps.grad_fn(workloads.make_inputs("mlp", "tiny", "float32"), "plain")
    for cache in ("cold", "warm"):
        log.clear()
        counters.clear()
        with torch_probe.first_compiled_call(fn, *args, cache=cache) as first_call:
            # The warm-up's own torch.compile, then the step's (twice when warm: filling the cache, then timed);
            # nothing of the timed one has compiled yet.
            assert log == ["warm-up", "compile", "compile"] + ["compile"] * (cache == "warm")
            before = counters["inductor"]["fxgraph_cache_hit"]
            loss, grads = first_call()
            assert torch.isfinite(loss) and len(grads) == len(torch_steps.leaves(args))
            with pytest.raises(RuntimeError, match="would not compile"):
                first_call()
        hits = counters["inductor"]["fxgraph_cache_hit"] - before
        assert hits == 0 if cache == "cold" else hits > 0


def test_jax_compiled_costs_differentiate_every_argument() -> None:
    # x @ w: the forward product and one product per gradient (x and w), 2*4*8*16 flops each; x and w are the
    # residuals, both arguments, so nothing extra is saved.
    x, w = jnp.ones((4, 8), dtype=jnp.float32), jnp.ones((8, 16), dtype=jnp.float32)
    costs = jax_probe.compiled_costs(lambda a, b: (a @ b).sum(), x, w)
    assert costs.matmul_flops == 3 * 2 * 4 * 8 * 16 and costs.saved_bytes == 0
    assert costs.method == "jax.vjp residuals and matmuls of the differentiated jaxpr (before XLA)"
