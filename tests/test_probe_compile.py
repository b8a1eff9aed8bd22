"""compile_seconds: both frameworks pay their one-time compiler set-up before the timed compile, and the cache
argument turns the on-disk caches off ("cold") or serves the timed compile from them ("warm")."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
import torch

from implementations import workloads
from implementations.jax import probe as jax_probe
from implementations.torch import probe as torch_probe
from implementations.torch import steps as torch_steps

PHASES = {"trace", "lower", "compile", "total", "startup"}


def _logged(monkeypatch, probe, log: list[str]) -> None:
    warm_up = probe._warm_up_compiler

    def logged(device):
        log.append("warm-up")
        warm_up(device)

    monkeypatch.setattr(probe, "_warm_up_compiler", logged)


@pytest.mark.parametrize(("cache", "traces"), [("cold", 1), ("warm", 2)])
def test_jax_compile_seconds_warm_up_comes_first(monkeypatch, cache: str, traces: int) -> None:
    log: list[str] = []
    _logged(monkeypatch, jax_probe, log)

    def step(a):
        log.append("step traced")
        return jnp.sin(a).sum()

    seconds = jax_probe.compile_seconds(step, jnp.ones(8, dtype=jnp.float32), cache=cache)
    # "warm" traces the step twice: once to fill the cache, once timed.
    assert log == ["warm-up"] + ["step traced"] * traces
    assert set(seconds) == PHASES
    assert seconds["total"] == pytest.approx(seconds["trace"] + seconds["lower"] + seconds["compile"])
    assert all(value > 0 for value in seconds.values())


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
    before = {flag: getattr(jax.config, flag) for flag in jax_probe._CACHE_FLAGS}
    x = jnp.arange(8, dtype=jnp.float32)
    hits = "/jax/compilation_cache/cache_hits"
    jax_probe.compile_seconds(lambda a: jnp.cos(a) * 3, x, cache="cold")
    assert hits not in events and "/jax/compilation_cache/task_disabled_cache" in events
    events.clear()
    jax_probe.compile_seconds(lambda a: jnp.cos(a) * 3, x, cache="warm")
    assert events.count(hits) == 1
    # The caller's cache settings are back.
    assert {flag: getattr(jax.config, flag) for flag in jax_probe._CACHE_FLAGS} == before


@pytest.mark.parametrize("probe", [torch_probe, jax_probe])
def test_compile_seconds_rejects_an_unknown_cache(probe):
    with pytest.raises(ValueError, match="valid choices: cold, warm"):
        probe.compile_seconds(lambda a: a, jnp.ones(2) if probe is jax_probe else torch.ones(2), cache="hot")


@pytest.mark.slow
def test_torch_compile_seconds_warm_up_and_caches(monkeypatch):
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
    results = {}
    for cache in ("cold", "warm"):
        log.clear()
        counters.clear()
        results[cache] = torch_probe.compile_seconds(fn, *args, cache=cache)
        # The warm-up's own torch.compile, then the step's (twice when warm: filling the cache, then timed).
        assert log == ["warm-up", "compile", "compile"] + ["compile"] * (cache == "warm")
        hits = counters["inductor"]["fxgraph_cache_hit"]
        assert hits == 0 if cache == "cold" else hits > 0
    for seconds in results.values():
        assert set(seconds) == {"total", "first_call", "steady_call", "startup"}
        assert seconds["total"] > 0 and seconds["steady_call"] > 0
        assert seconds["first_call"] == pytest.approx(seconds["total"] + seconds["steady_call"])
