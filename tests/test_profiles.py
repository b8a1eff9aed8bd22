"""tape_vs_trace.profiles' cited profile (the default CPU run of `make bench`): which remat points it times. Nothing
here runs a benchmark."""

from __future__ import annotations

import pytest

from implementations import experiments, workloads
from tape_vs_trace import profiles


@pytest.fixture(scope="module")
def combos() -> list[profiles.Combo]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TVT_DEVICE", "cpu")
        return profiles.combinations()


def _curve(chosen: list[profiles.Combo], mode: str) -> list[profiles.Combo]:
    return [c for c in chosen if c.benchmark.startswith("remat.RematCurve_") and c.mode == mode and not c.skipped]


def test_the_cited_profile_times_the_compiled_remat_curve_on_both_frameworks(combos) -> None:
    compiled = _curve(profiles.select(profiles.CITED.selection, combos), "compiled")
    points = {fw: {dict(c.params)["point"] for c in compiled if c.framework == fw} for fw in ("torch", "jax")}
    # plain, full remat, a selective policy and torch.compile's memory budgets
    assert {"plain", "remat_full", "remat_dots", "budget_0.5", "budget_0"} <= points["torch"]
    assert {"plain", "remat_full", "remat_dots"} <= points["jax"]
    # one workload at the first size of its CPU curve, the one with every policy and budget
    [(workload, size)] = {(c.workload, c.size) for c in compiled}
    assert size == workloads.runs("RematCurve", "cpu")[workload][0]
    assert _curve(profiles.select(profiles.CITED.selection, combos), "eager")  # the eager curve stays


def test_the_cited_profile_takes_each_compiled_remat_experiment_whole_or_not_at_all(combos) -> None:
    # tape-vs-trace paired draws an experiment only where every one of its points was timed
    chosen = {(c.benchmark, c.params) for c in profiles.select(profiles.CITED.selection, combos)}
    taken = 0
    for e in experiments.experiments("cpu"):
        if e.group != "remat" or e.mode != "compiled":
            continue
        wanted = set()
        for p in e.points:
            name, params = experiments.asv_combination(e, p, "cpu")
            [combo] = [c for c in combos if c.benchmark == name and dict(c.params) == params]
            wanted.add((combo.benchmark, combo.params))
        assert wanted <= chosen or not wanted & chosen, e.name
        taken += wanted <= chosen
    assert taken >= 2  # one experiment per framework at least
