"""compile_phases: each framework's phases of a first call add up to the call within the stated tolerance, the
timers they read exist, a warm cache compiles faster than a cold one, the block-once formulations compute what the
unrolled ones do, and the CompilePhases rows report the phase they name; depths come from the spec only."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from benchmarks import recording
from benchmarks.common import Skip
from implementations import first_call, frameworks, workloads
from tests.helpers import TOLERANCES, assert_close

SIDES = [pytest.param("jax", id="jax"), pytest.param("torch", id="torch", marks=pytest.mark.slow)]


def _phases(framework: str, float64: bool = False):
    frameworks.load(framework, float64=float64)
    return importlib.import_module(f"implementations.{framework}.compile_phases")


def _measured(framework: str, formulation: str = "unrolled", cache: str = "cold", size: str = "tiny") -> dict:
    phases = _phases(framework)
    with phases.first_call(workloads.make_inputs("chain", size), formulation, cache=cache) as measure:
        return measure()


@pytest.mark.parametrize("framework", SIDES)
def test_the_phases_add_up_to_the_first_call(framework: str) -> None:
    phases = _phases(framework)
    seconds = _measured(framework)
    assert set(seconds) == {*phases.PHASES, "first_call", "unattributed"}
    assert all(seconds[p] > 0 for p in phases.PHASES), seconds
    total = sum(seconds[p] for p in phases.PHASES)
    assert abs(seconds["first_call"] - total) <= first_call.TOLERANCE * seconds["first_call"] + first_call.ABSOLUTE_S
    assert seconds["unattributed"] == pytest.approx(seconds["first_call"] - total)


def test_every_jax_event_the_phases_read_is_recorded() -> None:
    # A JAX that renames or drops one of its monitoring events must fail here, not report a phase of 0 s.
    phases = _phases("jax")
    with phases._event_spans() as spans, phases.first_call(workloads.make_inputs("chain"), "scan") as measure:
        measure()
    assert all(spans[event] for event in phases.EVENTS.values()), spans


@pytest.mark.slow
def test_every_torch_timer_the_phases_read_is_recorded() -> None:
    # A PyTorch that renames one of its dynamo_timed regions must fail here, not report a phase of 0 s.
    phases = _phases("torch")
    from torch._dynamo.utils import compilation_time_metrics

    with phases.first_call(workloads.make_inputs("chain"), "unrolled") as measure:
        measure()
        assert {key for key in phases.TIMERS.values() if compilation_time_metrics.get(key)} == \
            set(phases.TIMERS.values())


@pytest.mark.parametrize("framework", SIDES)
def test_a_warm_cache_compiles_faster_than_a_cold_one(framework: str) -> None:
    compile_phase = {"jax": "xla_compile", "torch": "inductor"}[framework]
    cold, warm = _measured(framework, cache="cold"), _measured(framework, cache="warm")
    assert warm[compile_phase] < cold[compile_phase]
    assert warm["first_call"] < cold["first_call"]


def test_measure_compiles_once() -> None:
    with _phases("jax").first_call(workloads.make_inputs("chain")) as measure:
        measure()
        with pytest.raises(RuntimeError, match="would not compile"):
            measure()


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_an_unknown_formulation_or_cache_is_refused(framework: str) -> None:
    phases = _phases(framework)
    with pytest.raises(ValueError, match="valid choices: unrolled"):
        phases.grad_step(workloads.make_inputs("chain"), "loop")
    with pytest.raises(ValueError, match="valid choices: cold, warm"), \
            phases.first_call(workloads.make_inputs("chain"), cache="hot"):
        pass


@pytest.mark.parametrize(("framework", "formulation", "workload"), [
    ("jax", "scan", "chain"), ("jax", "scan", "transformer"),
    pytest.param("torch", "regional", "chain", marks=pytest.mark.slow),
    pytest.param("torch", "regional", "transformer", marks=pytest.mark.slow)])
def test_the_block_once_formulation_computes_what_unrolled_does(framework: str, formulation: str,
                                                                 workload: str) -> None:
    phases, inputs = _phases(framework, float64=True), workloads.make_inputs(workload, dtype="float64")
    once, unrolled = phases.grad_step(inputs, formulation)(), phases.grad_step(inputs, "unrolled")()
    flat = [np.asarray(a) for a in _leaves(once)], [np.asarray(a) for a in _leaves(unrolled)]
    assert len(flat[0]) == len(flat[1]) > 1
    for i, (a, b) in enumerate(zip(*flat)):  # the suite's float64 bound, its absolute term scaled to each array
        assert_close(f"leaf {i} of {formulation} against unrolled", a, b, TOLERANCES["float64"])


def _leaves(tree) -> list:
    """Arrays in a fixed order; a list of per-layer arrays (the unrolled holding) stacked as the scan holds it."""
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree) for leaf in _leaves(tree[key])]
    if isinstance(tree, list):
        return [np.stack([np.asarray(_array(item)) for item in tree])]
    if isinstance(tree, tuple):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [_array(tree)]


def _array(value):
    return value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_recording_names_each_frameworks_phases_and_formulations(framework: str) -> None:
    phases = importlib.import_module(f"implementations.{framework}.compile_phases")
    assert recording.COMPILE_PHASES[framework] == phases.PHASES
    assert recording.COMPILE_FORMULATIONS[framework] == phases.FORMULATIONS


def test_a_depth_outside_the_spec_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError) as refused:
        workloads.size_at_depth("chain", 1000)
    assert "\n" not in str(refused.value)
    assert str(refused.value).endswith("valid choices: " + ", ".join(map(str, workloads.depth_series("chain"))))
    assert workloads.size_at_depth("chain", 8) == "d8-4x64"


def test_every_depth_series_is_geometric_and_from_the_spec() -> None:
    for workload in workloads.runs("CompilePhases", "cpu"):
        for device in frameworks.DEVICES:
            depths = list(workloads.depth_series(workload, device))
            assert len(depths) >= 3 and depths == sorted(depths)
            assert len({b / a for a, b in zip(depths, depths[1:])}) == 1, depths


def _case(cls, **chosen) -> tuple:
    return tuple(chosen.get(name, values[0]) for name, values in zip(cls.param_names, cls.params))


def test_compile_phases_rows_skip_what_a_framework_lacks() -> None:
    cls = recording.CompilePhases_chain
    bench = cls()
    for chosen, why in (({"framework": "torch", "formulation": "scan"}, "no scan"),
                        ({"framework": "jax", "phase": "inductor"}, "not a phase of jax"),
                        ({"framework": "jax", "cache": "warm", "size": cls.params[2][-1]}, "shallowest")):
        with pytest.raises(Skip, match=why):
            bench.setup(*_case(cls, **chosen))


def test_a_compile_phases_row_reports_its_phase() -> None:
    cls = recording.CompilePhases_chain
    params = _case(cls, framework="jax", formulation="scan", phase="xla_compile")
    bench = cls()
    bench.setup(*params)
    try:
        before = cls.timer()
        bench.time_compile_phase(*params)
        assert 0 < cls.timer() - before < 60
    finally:
        bench.teardown(*params)


def test_the_phase_rows_of_one_point_share_its_compile_and_another_point_compiles_anew(monkeypatch) -> None:
    # The worker runner sets up a point's phase rows in one process; under asv each row sets up (and compiles) alone.
    cls = recording.CompilePhases_chain
    module = _phases("jax")
    compiles: list[int] = []
    real = module.first_call
    monkeypatch.setattr(module, "first_call", lambda *a, **k: compiles.append(1) or real(*a, **k))
    point = {"framework": "jax", "formulation": "scan"}
    rows = [(cls(), _case(cls, **point, phase=phase)) for phase in ("first_call", "trace", "xla_compile")]
    seen = {}
    for bench, params in rows:
        bench.setup(*params)
        before = cls.timer()
        bench.time_compile_phase(*params)
        seen[params] = cls.timer() - before
    assert len(compiles) == 1
    first, trace, xla = seen.values()
    assert 0 < trace + xla < first
    other = cls(), _case(cls, **point, size=cls.params[2][1])
    other[0].setup(*other[1])
    try:
        assert len(compiles) == 2
    finally:
        other[0].teardown(*other[1])
        for bench, params in rows:
            bench.teardown(*params)
