"""compile_growth: the fit recovers a known growth exponent (its interval covers it), the CompilePhases rows become
points, fitted lines, findings in words and the figure."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from implementations import workloads
from tape_vs_trace import report
from tape_vs_trace.report import compile_growth, front
from tape_vs_trace.report.load import load_results
from tests.report import helpers

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


def test_findings_say_how_each_line_grows_where_its_time_goes_and_what_scan_buys(table) -> None:
    text = "\n".join(compile_growth.findings(compile_growth.points(table)))
    depths = ", ".join(map(str, workloads.depth_series("chain", "cuda")))
    assert f"chain, JAX unrolled, m: the first call grows as depth^1.50 (95 % interval [1.50, 1.50]) over depths " \
           f"{depths}; " in text
    assert "xla_compile 80%" in text
    assert "chain, PyTorch regional, m: the first call grows as depth^" in text
    deepest = max(workloads.depth_series("chain", "cuda"))
    ratio = 0.01 * deepest ** 1.5 / (0.2 * deepest ** 0.1)
    assert f"scan compiles the depth-{deepest} step {ratio:.1f}x faster than unrolled" in text
    # exact power laws: the fitted ratio is the measured one and its interval has no width
    assert f"unrolled/scan from the fitted lines {ratio:.2f}, 95 % interval [{ratio:.2f}, {ratio:.2f}])" in text
    assert "regional compiles" in text


def test_a_slower_block_once_form_reads_slower() -> None:
    rows = [_row("jax", form, "first_call", size, seconds) for form, seconds in (("unrolled", 1.0), ("scan", 2.0))
            for size in ("d8-4x64", "d16-4x64")]
    text = "\n".join(compile_growth.findings(compile_growth.points(pd.DataFrame(rows))))
    assert "scan compiles the depth-16 step 2.0x slower than unrolled (2.00 s against 1.00 s; unrolled/scan from " \
           "the fitted lines 0.50, no interval: fewer than three depths)" in text
    assert "grows as depth^0.00 (no interval: 2 depths)" in text


@pytest.mark.parametrize("seed", range(5))
def test_the_fitted_ratio_s_interval_covers_a_known_ratio_under_noise(seed: int) -> None:
    # 10 % noise on two lines whose ratio at depth 32 is 4: the 95 % interval covers it
    rng = np.random.default_rng(seed)
    depths = [8, 16, 32, 64, 128]
    unrolled = [0.01 * d ** 1.5 * math.exp(rng.normal(0, 0.1)) for d in depths]
    scan = [0.01 * 32 ** 1.5 / 4 * (d / 32) ** 0.2 * math.exp(rng.normal(0, 0.1)) for d in depths]
    ratio, low, high = compile_growth.fitted_ratio((depths, unrolled), (depths, scan), 32)
    assert low < 4.0 < high and low < ratio < high
    assert high / low < 2


def test_a_machine_without_the_series_gets_one_line() -> None:
    assert compile_growth.section(pd.DataFrame([_row("jax", "unrolled", "first_call", "d8-4x64", 1.0)
                                                | {"metric": "time_step"}])) == [compile_growth.NOT_RUN]
    warm = pd.DataFrame([_row("jax", "unrolled", "first_call", "d8-4x64", 1.0, cache="warm")])
    assert compile_growth.section(warm) == [compile_growth.NOT_RUN]


def test_the_figure_is_drawn_where_there_are_rows(table, tmp_path) -> None:
    assert compile_growth.draw(table, tmp_path) == [compile_growth.FIGURE]
    assert (tmp_path / compile_growth.FIGURE).stat().st_size > 0
    assert compile_growth.draw(table[table.metric != compile_growth.METRIC], tmp_path / "none") == []


def _with_the_series(root: Path) -> Path:
    """helpers.write_results' folder with the chain's CPU series: first call and one phase, one process a point."""
    names = ["framework", "workload", "size", "formulation", "cache", "phase", "dtype", "precision", "device"]
    series = workloads.depth_series("chain", "cpu")
    params = [helpers.FW, ["'chain'"], [f"'{s}'" for s in series.values()], ["'unrolled'", "'scan'", "'regional'"],
              ["'cold'"], ["'first_call'", "'inductor'", "'xla_compile'"], *helpers.TAIL]
    seconds = {("torch", "unrolled"): 0.5, ("torch", "regional"): 2.0, ("jax", "unrolled"): 0.02, ("jax", "scan"): 0.3}
    values = []
    for fw, _, size, form, _, phase, *_ in itertools.product(*params):
        base = seconds.get((fw.strip("'"), form.strip("'")))
        own = phase == "'first_call'" or phase == ("'inductor'" if fw == "'torch'" else "'xla_compile'")
        depth = workloads.depth_of("chain", size.strip("'"))
        values.append(base * depth ** (0.1 if form != "'unrolled'" else 1.2) * (1 if phase == "'first_call'" else 0.8)
                      if base and own else math.nan)
    name = "recording.CompilePhases_chain.time_compile_phase"
    benchmarks = json.loads((root / "benchmarks.json").read_text())
    benchmarks[name] = helpers.bench(name, "time", "seconds", names, params, rounds=1, repeat=1)
    (root / "benchmarks.json").write_text(json.dumps(benchmarks))
    path = root / "box" / "abc12300-existing-venv.json"
    data = json.loads(path.read_text())
    data["results"][name] = helpers.entry(params, values, [None if v != v else [v] for v in values])
    path.write_text(json.dumps(data, allow_nan=True))
    return root


def test_the_page_shows_the_growth_figure_and_the_front_its_exponents_with_intervals(tmp_path: Path) -> None:
    root = _with_the_series(helpers.write_results(tmp_path / "results"))
    with helpers.unrendered():  # the test reads the text and which files exist
        report.write_report(root, tmp_path / "report", lambda line: None)
    front, page = (tmp_path / "report" / "summary.md").read_text(), (tmp_path / "report" / "box" / "summary.md")
    text = page.read_text()
    assert f"![compile growth](../{compile_growth.FIGURE})" in text
    assert "- chain, PyTorch unrolled, box: the first call grows as depth^1.20 (95 % interval [1.20, 1.20])" in text
    assert "- chain, JAX scan, box: the first call grows as depth^0.10" in text
    assert "- chain, PyTorch, box: regional compiles the depth-32 step" in text
    assert "unrolled/scan from the fitted lines" in text and compile_growth.NOT_RUN not in text
    # the front: one row per machine and workload, each framework's formulations with exponent and interval
    assert "| box | chain at depth 32 | regional 2.83 s, depth^0.10 [0.10, 0.10]; unrolled 32.00 s, depth^1.20 " \
           "[1.20, 1.20] | scan 0.42 s, depth^0.10 [0.10, 0.10]; unrolled 1.28 s, depth^1.20 [1.20, 1.20] |" in front
    assert "; one process a point." in front
    assert (tmp_path / "report" / compile_growth.FIGURE).is_file()


def test_the_newest_series_with_two_depths_is_the_one_shown_and_its_commit_named(tmp_path: Path) -> None:
    root = _with_the_series(helpers.write_results(tmp_path / "results"))
    data = load_results(root, lambda line: None)
    table = data.table
    newer = table[table.metric == compile_growth.METRIC].assign(commit="f" * 40, date="2099-01-01 00:00:00 UTC")
    newer = newer[newer["size"] == newer["size"].iloc[0]]  # one depth only: not a series
    both = pd.concat([table, newer])
    assert set(front.newest_series(both).commit) == set(table.commit)
    assert set(front.newest_series(newer).commit) == {"f" * 40}


def test_both_pages_say_in_one_line_where_the_series_has_not_run(synthetic_report) -> None:
    _, text, _ = synthetic_report
    front, _, page = text.partition("[Back to the summary]")
    assert "## Compile time" not in front and f"- {compile_growth.NOT_RUN}" in page
    assert "![compile growth]" not in text
