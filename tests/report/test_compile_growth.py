"""compile_growth: the fit recovers a known growth exponent (its interval covers it), the CompilePhases rows become
points, fitted lines, findings in words and the figure."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from implementations import workloads
from tape_vs_trace.report import compile_growth

DEPTHS = [8, 16, 32, 64, 128, 256, 512]


def test_the_fit_recovers_a_known_exponent_from_exact_points() -> None:
    fit = compile_growth.growth_exponent(DEPTHS, [0.02 * d ** 1.7 for d in DEPTHS])
    assert fit.exponent == pytest.approx(1.7, abs=1e-9)
    assert fit.low == pytest.approx(1.7, abs=1e-6) and fit.high == pytest.approx(1.7, abs=1e-6)
    assert fit.points == len(DEPTHS)


@pytest.mark.parametrize("seed", range(5))
def test_the_interval_covers_a_known_exponent_under_noise(seed: int) -> None:
    # 10 % multiplicative noise, as between processes: the 95 % interval covers the true exponent and is not wide
    rng = np.random.default_rng(seed)
    seconds = [0.5 * d ** 1.3 * math.exp(rng.normal(0, 0.1)) for d in DEPTHS]
    fit = compile_growth.growth_exponent(DEPTHS, seconds)
    assert fit.low < 1.3 < fit.high
    assert fit.high - fit.low < 0.3


def test_two_points_give_an_exponent_without_an_interval() -> None:
    fit = compile_growth.growth_exponent([4, 8], [1.0, 4.0])
    assert fit.exponent == pytest.approx(2.0)
    assert math.isnan(fit.low) and math.isnan(fit.high)
    assert "no interval" in fit.text()


@pytest.mark.parametrize(("depths", "seconds", "why"), [([8, 8], [1.0, 2.0], "two distinct depths"),
                                                         ([8, 16], [1.0, 0.0], "positive")])
def test_the_fit_refuses_what_it_cannot_fit(depths, seconds, why) -> None:
    with pytest.raises(ValueError, match=why):
        compile_growth.growth_exponent(depths, seconds)


def _row(framework: str, formulation: str, phase: str, size: str, seconds: float, cache: str = "cold") -> dict:
    params = {"framework": framework, "workload": "chain", "size": size, "formulation": formulation,
              "cache": cache, "phase": phase}
    return {"machine": "m", "workload": "chain", "size": size, "framework": framework,
            "metric": compile_growth.METRIC, "status": "ok", "params": json.dumps(params), "value": seconds,
            "ci_low": seconds, "ci_high": seconds}


@pytest.fixture
def table() -> pd.DataFrame:
    rows = []
    for depth, size in workloads.depth_series("chain", "cuda").items():
        rows += [_row("jax", "unrolled", "first_call", size, 0.01 * depth ** 1.5),
                 _row("jax", "unrolled", "xla_compile", size, 0.008 * depth ** 1.5),
                 _row("jax", "scan", "first_call", size, 0.2 * depth ** 0.1),
                 _row("torch", "unrolled", "first_call", size, 0.1 * depth),
                 _row("torch", "regional", "first_call", size, 2.0 + 0.001 * depth)]
    rows.append(_row("jax", "unrolled", "first_call", "d8-4x64", 0.01, cache="warm"))
    rows.append(_row("jax", "unrolled", "first_call", "d50-4x64", 1.0) | {"metric": "time_step"})  # not a phase
    return pd.DataFrame(rows)


def test_points_are_the_compile_phase_rows_with_their_depths(table) -> None:
    pts = compile_growth.points(table)
    assert len(pts) == len(table) - 1
    assert set(pts.depth) == set(workloads.depth_series("chain", "cuda"))


def test_each_cold_line_gets_its_exponent(table) -> None:
    fits = compile_growth.fits(compile_growth.points(table)).set_index(["framework", "formulation", "phase"])
    assert fits.loc[("jax", "unrolled", "first_call"), "exponent"] == pytest.approx(1.5)
    assert fits.loc[("jax", "unrolled", "xla_compile"), "exponent"] == pytest.approx(1.5)
    assert fits.loc[("torch", "unrolled", "first_call"), "exponent"] == pytest.approx(1.0)
    assert len(fits) == 5  # the warm point is on no line


def test_findings_say_where_the_time_goes_how_it_grows_and_what_scan_buys(table) -> None:
    text = "\n".join(compile_growth.findings(compile_growth.points(table)))
    assert "chain, JAX unrolled, m: first call" in text and "xla_compile 80%" in text
    assert "grows as depth^1.50" in text
    deepest = max(workloads.depth_series("chain", "cuda"))
    ratio = 0.01 * deepest ** 1.5 / (0.2 * deepest ** 0.1)
    assert f"scan compiles the depth-{deepest} step {ratio:.1f}x faster than unrolled" in text
    # the regional form is the slower one at the shallowest depths only; at the deepest it is faster
    assert "regional compiles" in text


def test_a_slower_block_once_form_reads_slower() -> None:
    rows = [_row("jax", form, "first_call", size, seconds) for form, seconds in (("unrolled", 1.0), ("scan", 2.0))
            for size in ("d8-4x64", "d16-4x64")]
    text = "\n".join(compile_growth.findings(compile_growth.points(pd.DataFrame(rows))))
    assert "scan compiles the depth-16 step 2.0x slower than unrolled (2.00 s against 1.00 s)" in text


def test_the_figure_is_drawn_where_there_are_rows(table, tmp_path) -> None:
    assert compile_growth.draw(table, tmp_path) == [compile_growth.FIGURE]
    assert (tmp_path / compile_growth.FIGURE).stat().st_size > 0
    assert compile_growth.draw(table[table.metric != compile_growth.METRIC], tmp_path / "none") == []
