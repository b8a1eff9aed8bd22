"""Between-process statistics and the ratio rule, against numbers worked out by hand from a small synthetic asv
results folder (benchmarks.json, a machine folder, result files in asv's format 2 with --record-samples).

Intervals are Student-t intervals on the logarithms of the per-process medians (n - 1 degrees of freedom), and
Welch's t interval on the difference of mean logarithms for a ratio; each expected value below shows its arithmetic
(the t quantiles from any table: t(0.975, 2) = 4.3027)."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from tape_vs_trace import cli
from tape_vs_trace.report import stats

MS = 1e-3
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
FW = ["'torch'", "'jax'"]
TAIL = [["'float32'"], ["'highest'"], ["'cpu'"]]
# Per-process medians (ms) of the timed benchmarks: GradStep by (framework, mode), RematStep by (framework, variant).
GRAD = {("torch", "eager"): [1.15, 2.15, 1.55], ("torch", "compiled"): [1.0, 1.2, 1.4],
        ("jax", "eager"): [3.0, 3.2, 3.4], ("jax", "compiled"): [1.1, 1.3, 0.9]}
REMAT = {("torch", "plain"): [2.0, 2.1, 2.2], ("torch", "remat_full"): [3.0, 3.1, 3.3],
         ("jax", "plain"): [2.0, 2.4, 2.2], ("jax", "remat_full"): [2.1, 2.3, 2.5]}


def chunk(median: float) -> list[float]:
    """Four samples of one process whose median is `median` (one outlier, which the median ignores)."""
    return [median * MS, median * MS, median * 0.99 * MS, median * 5 * MS]


def bench(name: str, kind: str, unit: str, names: list[str], params: list[list[str]], **extra) -> dict:
    return {"name": name, "type": kind, "unit": unit, "param_names": names, "params": params, "version": "3",
            "code": "", "timeout": 600, **extra}


def entry(params: list[list[str]], results: list, samples: list | None = None) -> list:
    n = len(results)
    return [results, params, "3", 1700000000000, 1.0, [None] * n, [None] * n, [None] * n, [None] * n, [1] * n,
            [4] * n, samples, None]


def timed(params: list[list[str]], medians: dict) -> list:
    """A time benchmark's entry: asv's own result (the pooled median) and 3 processes x 4 samples per combo."""
    results, samples = [], []
    for combo in itertools.product(*params):
        key = (combo[0].strip("'"), combo[3].strip("'"))
        s = [x for m in medians[key] for x in chunk(m)]
        samples.append(s)
        results.append(float(pd.Series(s).median()))
    return entry(params, results, samples)


def write_results(root: Path, fingerprint: dict | None = None) -> Path:
    names = ["framework", "workload", "size", "mode", "dtype", "precision", "device"]
    vnames = ["framework", "workload", "size", "variant", "dtype", "precision", "device"]
    grad = [FW, ["'mlp'"], ["'s'"], ["'eager'", "'compiled'"], *TAIL]
    remat = [FW, ["'mlp'"], ["'s'"], ["'plain'", "'remat_full'"], *TAIL]
    remat_step = [*remat[:4], ["'compiled'"], *TAIL]  # the remat step has a mode: its rows read "plain/compiled"
    snames = [*vnames[:4], "mode", *vnames[4:]]
    fwd = [FW, ["'mlp'"], ["'s'"], ["'no_grad'", "'record'"], *TAIL]
    cost = [FW, ["'mlp'"], ["'s'"], *TAIL]
    benchmarks = {
        "recording.GradStep_mlp.time_step": bench("recording.GradStep_mlp.time_step", "time", "seconds", names, grad,
                                                  rounds=3, repeat=4),
        "remat.RematStep_mlp.time_step": bench("remat.RematStep_mlp.time_step", "time", "seconds", snames,
                                               remat_step, rounds=3, repeat=4),
        "inference.Forward_mlp.time_forward": bench("inference.Forward_mlp.time_forward", "time", "seconds", names,
                                                    fwd, rounds=1, repeat=4),
        "remat.RematCost_mlp.track_peak_bytes": bench("remat.RematCost_mlp.track_peak_bytes", "track", "bytes",
                                                      vnames, remat),
        "recording.GraphCost_mlp.track_saved_bytes": bench("recording.GraphCost_mlp.track_saved_bytes", "track",
                                                           "bytes", names[:3] + names[4:], cost),
        "recording.GraphCost_mlp.track_graph_size": bench("recording.GraphCost_mlp.track_graph_size", "track",
                                                          "count", names[:3] + names[4:], cost),
        "harness.Overhead_mlp.track_mystery": bench("harness.Overhead_mlp.track_mystery", "track", "widgets",
                                                    names[:3] + names[4:], cost),
        "version": 2,
    }
    results = {
        "recording.GradStep_mlp.time_step": timed(grad, GRAD),
        "remat.RematStep_mlp.time_step": timed(remat_step, REMAT),
        # one process each; JAX's record mode was skipped (asv's NaN) and PyTorch's record failed (None)
        "inference.Forward_mlp.time_forward": entry(fwd, [1e-3, None, 2e-3, math.nan],
                                                    [chunk(1.0), None, chunk(2.0), None]),
        "remat.RematCost_mlp.track_peak_bytes": entry(remat, [4 * 2 ** 20, 2 ** 20, 6 * 2 ** 20, 3 * 2 ** 20]),
        "recording.GraphCost_mlp.track_saved_bytes": entry(cost, [2 ** 20, 3 * 2 ** 19]),
        "recording.GraphCost_mlp.track_graph_size": entry(cost, [8, 22]),
        "harness.Overhead_mlp.track_mystery": entry(cost, [5, 7]),
    }
    machine = {"machine": "box", "cpu": "Test CPU 9000", "num_cpu": "4", "ram": "8 GB", "os": "Linux",
               "arch": "x86_64", "device": "cpu", "torch": "2.9", "jax": "0.10", "version": 1}
    (root / "box").mkdir(parents=True)
    (root / "benchmarks.json").write_text(json.dumps(benchmarks))
    (root / "box" / "machine.json").write_text(json.dumps(machine))
    data = {"commit_hash": "abc123" + "0" * 34, "env_name": "existing-venv", "date": 1700000000000,
            "params": {"machine": "box", "device": "cpu"}, "python": "3.11", "requirements": {}, "env_vars": {},
            "result_columns": COLUMNS, "results": results, "durations": {}, "version": 2,
            "tape_vs_trace": {"kernel": "6.1", "fingerprint": fingerprint or {"cpu_model": "Test CPU 9000"},
                              "calibration": {"matmul_gflops": 123.0}}}
    (root / "box" / "abc12300-existing-venv.json").write_text(json.dumps(data, allow_nan=True))
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[pd.DataFrame, str, list[str]]:
    root = write_results(tmp_path_factory.mktemp("synthetic") / "results")
    out = root.parent / "report"
    warnings = []
    from tape_vs_trace import report

    report.write_report(root, out, warnings.append)
    table = pd.read_csv(out / "summary.csv", keep_default_na=False)
    return table, (out / "summary.md").read_text(), warnings


def row(table: pd.DataFrame, benchmark: str, framework: str, variant: str) -> pd.Series:
    [r] = [r for _, r in table.iterrows() if r.benchmark.endswith(benchmark) and r.framework == framework
           and r.variant == variant]
    return r


def md_table(text: str, metric: str) -> dict[str, list[str]]:
    """The rows (by case) of the table whose heading names `metric`."""
    block = text.split(f"(`{metric}`,", 1)[1]
    rows = {}
    for line in block.splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] not in ("case", "---"):
            rows[cells[0]] = cells
    return rows


def test_value_iqr_and_interval_come_from_per_process_medians(built) -> None:
    table, text, _ = built
    r = row(table, "GradStep_mlp.time_step", "torch", "eager")
    # per-process medians 1.15, 2.15, 1.55 ms: median 1.55, not asv's pooled median of the 12 samples (1.84 ms)
    assert math.isclose(float(r.value), 1.55 * MS) and int(r.processes) == 3 and int(r.samples) == 12
    assert math.isclose(float(r.q25), 1.35 * MS) and math.isclose(float(r.q75), 1.85 * MS)
    assert math.isclose(float(r.spread), 0.5 * MS)
    # t interval on the logs: mean(ln) 0.44783, sd 0.31296, sem 0.18069, t(0.975, 2) = 4.3027, half-width 0.77744:
    # exp(0.44783 -+ 0.77744) = [0.7192, 3.405] ms
    assert math.isclose(float(r.ci_low), 0.7192 * MS, rel_tol=1e-4) and math.isclose(float(r.ci_high), 3.405 * MS,
                                                                                          rel_tol=1e-4)
    assert r.benchmark_version == 3 or r.benchmark_version == "3"
    assert r.run_date.startswith("2023-11-14")
    cells = md_table(text, "time_step")["mlp s eager"]
    assert cells[1] == "1.55 [0.7192–3.405]" and cells[2] == "0.5"


def test_ratio_interval_is_welch_t_on_logs(built) -> None:
    _, text, _ = built
    rows = md_table(text, "time_step")
    # 3.2 / 1.55 = 2.065; logs: JAX mean 1.16215, var/n 0.0013, PyTorch mean 0.44783, var/n 0.032648; Welch dof
    # 2.160, t = 4.0116, half-width 0.73684: exp(0.71432 -+ 0.73684) = [0.975, 4.28]: the noisy PyTorch processes
    # leave 1 inside
    assert rows["mlp s eager"][-1] == "no difference measurable on this machine (2.06×, 95 % interval 0.975–4.28)"
    # 1.1 / 1.2 = 0.917; Welch dof 3.969, t = 2.7851: [0.613, 1.37]: holds 1
    assert rows["mlp s compiled"][-1] == "no difference measurable on this machine (0.917×, 95 % interval 0.613–1.37)"


def test_exact_metrics_are_their_own_interval(built) -> None:
    table, text, _ = built
    r = row(table, "track_saved_bytes", "jax", "")
    assert float(r.ci_low) == float(r.ci_high) == float(r.value) == 3 * 2 ** 19 and r.basis == "exact"
    assert md_table(text, "track_saved_bytes")["mlp s"][1:] == ["1", "1.5", "1.5× (exact)"]


def test_one_process_and_failed_and_skipped(built) -> None:
    table, text, _ = built
    r = row(table, "time_forward", "jax", "no_grad")
    assert int(r.processes) == 1 and r.ci_low == "" and r.basis == "one process"
    rows = md_table(text, "time_forward")
    assert rows["mlp s no_grad"][-1] == "2× (no interval: one process)"
    assert rows["mlp s record"][1] == "failed" and rows["mlp s record"][3] == "not run"
    assert rows["mlp s record"][-1] == "— (only one framework ran)"
    assert "`inference.Forward_mlp.time_forward` mlp s record: not implemented for JAX (PyTorch ran it)" in text


def test_refusals_in_the_tables(built) -> None:
    _, text, warnings = built
    assert {r[-1] for r in md_table(text, "track_peak_bytes").values()} == {"— (different memory methods)"}
    assert md_table(text, "track_graph_size")["mlp s"][-1] == "— (counts different things)"
    assert md_table(text, "track_mystery")["mlp s"][-1] == "— (counts different things)"
    assert [w for w in warnings if "track_mystery" in w] == [
        "metric track_mystery is not in implementations.metrics: read as exact (asv type track), no ratio"]


def test_findings_state_differences_only_outside_the_interval(built, tmp_path: Path) -> None:
    _, text, _ = built
    # The step-time rule of a variant against its baseline, on the synthetic remat steps (the suite's own remat
    # step times now come from `tape-vs-trace paired`, so no rule of findings.RULES reads them)
    from tape_vs_trace.report import findings, load
    from tape_vs_trace.report.select import Cells

    table = load.load_results(write_results(tmp_path / "results"), lambda _: None).table
    rule = findings.Change("remat", "time_step", "plain/compiled", "remat_full/compiled", "remat_full, compiled")
    remat = "; ".join(findings._cases(rule, Cells(table)))
    # PyTorch: 3.1 / 2.1 = 1.476, Welch dof 3.999, t = 2.7767: [1.338, 1.664]: a cost of 47.6 %
    assert "PyTorch mlp s +47.6 % (2.1 ms → 3.1 ms; ratio 95 % interval 1.34–1.66×)" in remat
    # JAX: 2.3 / 2.2, Welch dof 3.992, t = 2.7786: [0.854, 1.28] holds 1
    assert "JAX mlp s no difference measurable on this machine (2.2 ms → 2.3 ms; ratio 95 % interval 0.854–1.28×)" \
        in remat
    [peak] = [line for line in text.splitlines() if line.startswith("- **remat_full** against plain, peak memory")]
    assert "PyTorch mlp s −75.0 % (4 MiB → 1 MiB)" in peak and "JAX mlp s −50.0 % (6 MiB → 3 MiB)" in peak


def test_provenance_prints_fingerprint_calibration_and_samples(built) -> None:
    _, text, _ = built
    assert "| cpu_model | Test CPU 9000 |" in text and "| matmul_gflops | 123.0 |" in text
    assert "| `recording.GradStep_mlp.time_step` | 3 | 12 | processes |" in text
    assert "| run date | 2023-11-14 22:13:20 UTC to 2023-11-14 22:13:20 UTC |" in text
    assert "different hosts" not in text


def test_different_fingerprints_say_different_hosts(tmp_path: Path, capsys) -> None:
    """Two runs under one machine name on different CPUs: flagged, and their step times shown in calibrated units
    (float32 matmul flops of each host's own rate), never divided as seconds."""
    root = write_results(tmp_path / "results")
    mine_path = root / "box" / "abc12300-existing-venv.json"
    mine = json.loads(mine_path.read_text())
    mine["tape_vs_trace"].update(fingerprint={"cpu": {"model_name": "Test CPU 9000"}},
                                 calibration={"matmul_flops_per_s": {"float32": 1e11}})
    mine_path.write_text(json.dumps(mine))
    other = json.loads(json.dumps(mine))
    other["commit_hash"], other["date"] = "def456" + "0" * 34, 1600000000000
    other["tape_vs_trace"].update(fingerprint={"cpu": {"model_name": "Another CPU"}},
                                  calibration={"matmul_flops_per_s": {"float32": 2e11}})
    (root / "box" / "def45600-existing-venv.json").write_text(json.dumps(other))
    assert cli.main(["report", "--results", str(root), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "Commit `def45600` of machine box ran on a different host" in text and "model_name" in text
    # PyTorch eager 1.55 ms in both files: 1.55e-3 s x 1e11 flop/s here, x 2e11 flop/s on the other host
    [line] = [x for x in text.splitlines() if "GradStep_mlp.time_step" in x and "framework=torch" in x
              and "mode=eager" in x and x.count("|") == 5]
    assert line.endswith("| 1.55e+08 | 3.1e+08 |")


def like(**change) -> tuple[dict, dict]:
    base = {"machine": "m", "commit": "c", "benchmark": "b", "benchmark_version": "1", "metric": "time_step",
            "status": "ok", "comparable": True, "sampled": True, "memory_method": "", "basis": "processes"}
    t = base | {"framework": "torch", "value": 2.0, "params": '{"framework":"torch","mode":"eager"}',
                "process_medians": "[1.9, 2.0, 2.1]"}
    j = base | {"framework": "jax", "value": 4.0, "params": '{"framework":"jax","mode":"eager"}',
                "process_medians": "[4.0, 4.0, 4.0]"}
    return t, j | change


@pytest.mark.parametrize(("change", "reason"), [
    ({"params": '{"framework":"jax","mode":"compiled"}'}, "not like rows"),
    ({"benchmark_version": "2"}, "not like rows"),
    ({"status": "failed"}, "failed"),
    ({"comparable": False}, "counts different things"),
    ({"memory_method": "jax compiled.memory_analysis"}, "different memory methods"),
])
def test_ratio_rule_refuses_unlike_rows(change: dict, reason: str) -> None:
    assert stats.compare(*like()).formed
    t, j = like(**change)
    c = stats.compare(t, j)
    assert c.reason == reason and math.isnan(c.ratio)
    assert stats.compare(t, None).reason == "only one framework ran"


def test_no_ratio_between_unlike_formulations() -> None:
    """JAX's LSTM runs in lax.scan, PyTorch's in a Python loop over steps: no ratio, and the reason."""
    t, j = like(benchmark="remat.RematCost_lstm.track_peak_bytes")
    t["benchmark"] = j["benchmark"]
    assert stats.compare(t, j).reason == "scan against loop"
    t["benchmark"] = j["benchmark"] = "remat.RematCost_mlp.track_peak_bytes"
    assert stats.compare(t, j).formed


def test_ratio_rule_on_like_rows() -> None:
    c = stats.compare(*like())
    # logs: PyTorch mean 0.69231, var/n 0.000835; JAX ln 4 exactly (var 0); Welch dof 2, t = 4.3027, half-width
    # 0.12434: exp(0.69398 -+ 0.12434) = [1.768, 2.267]
    assert c.ratio == 2.0 and c.differs is True
    assert math.isclose(c.low, 1.768, rel_tol=1e-3) and math.isclose(c.high, 2.267, rel_tol=1e-3)
    assert stats.compare(*like(process_medians="", basis="asv: no samples")).note == "no samples recorded"


def test_split_refuses_what_it_cannot_assign() -> None:
    assert stats.Split(2, 3).chunks([1, 2, 3, 4, 5, 6])[0] == [[1, 2, 3], [4, 5, 6]]
    assert stats.Split(2, 4).chunks([1, 2, 3, 4, 5, 6])[0] is None
    assert stats.Split(2, [1, 10, 5.0]).chunks([1, 2, 3])[0] is None
    assert re.search("not a fixed count", stats.Split(2, 0).chunks([1.0])[1])


def test_benchmarks_gone_from_the_suite_are_one_warning_per_file(tmp_path: Path) -> None:
    # Results of benchmarks later removed from the suite (remat.RematStep_* of version 3, say) are skipped with one
    # line per result file naming them all, not one line per benchmark on every command.
    from tape_vs_trace.report.load import load_results

    root = write_results(tmp_path)
    path = root / "box" / "abc12300-existing-venv.json"
    data = json.loads(path.read_text())
    results = data["results"]
    results["remat.RematStep_transformer.time_step"] = results["recording.GradStep_mlp.time_step"]
    results["remat.RematCost_transformer.track_flops"] = results["recording.GraphCost_mlp.track_graph_size"]
    path.write_text(json.dumps(data, allow_nan=True))
    warnings: list[str] = []
    loaded = load_results(root, warn=warnings.append)
    gone = [w for w in warnings if "not in benchmarks.json" in w]
    assert gone == ["abc12300-existing-venv.json: 2 benchmark(s) not in benchmarks.json (no longer in the suite), "
                    "skipped: remat.RematStep_transformer.time_step, remat.RematCost_transformer.track_flops"]
    assert not loaded.table.benchmark.str.contains("transformer").any()


@pytest.mark.parametrize(("comparison", "differs", "reaches"), [
    # between processes (the default resolution, 10 %): the interval must exclude every change up to 10 %
    (stats.Comparison(1.05, 1.02, 1.08), False, True),
    (stats.Comparison(0.95, 0.93, 0.97), False, True),
    (stats.Comparison(1.25, 1.05, 1.4), False, True),  # a large ratio whose interval reaches 1.05: not stated
    (stats.Comparison(1.2, 1.11, 1.3), True, False),
    (stats.Comparison(0.8, 0.7, 0.9), True, False),  # 0.9 < 1 / 1.1 = 0.90909
    (stats.Comparison(0.85, 0.7, 0.91), False, True),  # 0.91 > 0.90909
    (stats.Comparison(1.2, 1.1, 1.3), False, True),  # an interval ending at exactly 1.1 reaches the band
    (stats.Comparison(1.5, 0.9, 2.5), False, True),  # the interval holds 1
    # paired, within one process (3 %)
    (stats.Comparison(1.05, 1.04, 1.06, resolution=stats.WITHIN_PROCESS), True, False),
    (stats.Comparison(1.07, 1.01, 1.13, resolution=stats.WITHIN_PROCESS), False, True),
    (stats.Comparison(0.96, 0.95, 0.97, resolution=stats.WITHIN_PROCESS), True, False),  # 0.97 < 1 / 1.03 = 0.9709
    # exact values: any difference is one
    (stats.Comparison(1.01, 1.01, 1.01), True, None),
    (stats.Comparison(1.0, 1.0, 1.0), False, None),
    (stats.Comparison(1.05, note="one process"), None, None),
])
def test_a_sampled_ratio_differs_only_when_its_interval_clears_the_resolution(comparison, differs, reaches) -> None:
    assert comparison.differs is differs
    assert comparison.reaches_resolution is reaches


def test_a_ratio_within_its_resolution_says_why_it_is_no_difference() -> None:
    from tape_vs_trace.report import fmt

    assert fmt.ratio(stats.Comparison(1.15, 1.02, 1.3)) == (
        "no difference measurable on this machine (1.15×, 95 % interval 1.02–1.3; the interval reaches within the "
        "10 % a rerun moves such a ratio)")
    assert fmt.ratio(stats.Comparison(1.05, 0.98, 1.08)) == (
        "no difference measurable on this machine (1.05×, 95 % interval 0.98–1.08)")
    assert fmt.ratio(stats.Comparison(1.05, 1.04, 1.06, resolution=0.03)) == "1.05× [1.04–1.06]"


def test_paired_ratios_have_the_within_process_resolution() -> None:
    from tape_vs_trace.report import paired

    row = {"ratio": 1.05, "ratio_ci_low": 1.035, "ratio_ci_high": 1.06}
    assert paired.paired_ratio(row).resolution == stats.WITHIN_PROCESS and paired.paired_ratio(row).differs
    assert paired.costs(paired.paired_ratio({"ratio": 1.02, "ratio_ci_low": 1.01, "ratio_ci_high": 1.03}),
                        "remat", "plain") == (
        "remat against plain: no difference measurable on this machine (ratio 1.02, 95 % interval 1.01–1.03; "
        "the interval reaches within the 3 % a rerun moves such a ratio)")
