"""The findings (tape_vs_trace.report.findings): one case's sentence for each kind of change, written out by hand,
the side-by-side and no-ratio rules, and a variant against its baseline stated only outside the interval."""

from __future__ import annotations

from pathlib import Path

import pytest

from implementations import pillars
from tape_vs_trace.report import findings, stats
from tape_vs_trace.report.stats import Comparison
from tape_vs_trace.results.rowkey import RowKey
from tests.report.helpers import MIB, write_results


def secs(value: float) -> dict:
    return {"value": value, "unit": "seconds"}


def mib(value: float) -> dict:
    return {"value": value * MIB, "unit": "bytes"}


@pytest.mark.parametrize(("c", "a", "b", "text"), [
    (Comparison(1.0, 1.0, 1.0), mib(1), mib(1), "unchanged (1 MiB)"),
    (stats.exact(13 * MIB, 13 * MIB + 16, "track_saved_bytes"), mib(13) | {"framework": "torch"},
     mib(13) | {"framework": "jax"}, "equal (JAX +16 B) (13 MiB)"),
    (Comparison(1.5, 1.5, 1.5), mib(2), mib(3), "+50.0 % (2 MiB → 3 MiB)"),
    (Comparison(0.5, 0.5, 0.5), mib(2), mib(1), "−50.0 % (2 MiB → 1 MiB)"),
    (Comparison(1.2, note="one process"), secs(0.01), secs(0.012), "10 ms → 12 ms (1.2×, no interval)"),
    (Comparison(1.05, 0.95, 1.1), secs(0.01), secs(0.0105),
     "no difference measurable on this machine (10 ms → 10.5 ms; ratio 95 % interval 0.95–1.1×)"),
    (Comparison(1.2, 1.12, 1.3), secs(0.01), secs(0.012), "+20.0 % (10 ms → 12 ms; ratio 95 % interval 1.12–1.3×)"),
    (Comparison(0.8, 0.7, 0.9), secs(0.01), secs(0.008), "−20.0 % (10 ms → 8 ms; ratio 95 % interval 0.7–0.9×)"),
])
def test_a_change_reads_as_a_signed_percent_or_no_difference_with_both_values(c: Comparison, a: dict, b: dict,
                                                                               text: str) -> None:
    assert findings.describe(c, a, b) == text


class FakeCells:
    """One case (mlp, s) of one pillar and metric; `get` returns the framework's row or None."""

    def __init__(self, rows: dict[str, dict | None]):
        self.rows = rows

    def cases(self, pillar: str, metric: str) -> list[tuple[str, str, str]]:
        return [("mlp", "s", "")]

    def get(self, pillar: str, metric: str, w: str, s: str, program: str, variant: str, fw: str) -> dict | None:
        return self.rows.get(fw)


def _count(framework: str, value: float) -> dict:
    return {"framework": framework, "value": value, "status": "ok"}


def test_side_rule_puts_both_values_side_by_side_only_when_both_ran() -> None:
    rule = pillars.Side("track_graph_size", "", "nodes and equations")
    both = FakeCells({"torch": _count("torch", 120.0), "jax": _count("jax", 340.0)})
    assert findings._cases("recording", rule, both) == ["mlp s: PyTorch 120, JAX 340"]
    assert findings._cases("recording", rule, FakeCells({"torch": _count("torch", 120.0), "jax": None})) == []


def test_across_rule_names_why_there_is_no_ratio() -> None:
    base = {"machine": "m", "commit": "c", "benchmark": "b", "benchmark_version": "1", "metric": "track_saved_bytes",
            "status": "ok", "sampled": False, "memory_method": "", "basis": "exact", "process_medians": "",
            "comparable": False}
    t = base | {"framework": "torch", "value": 2.0, "params": '{"framework":"torch"}'}
    j = base | {"framework": "jax", "value": 4.0, "params": '{"framework":"jax"}'}
    rule = pillars.Across("track_saved_bytes", "", "residuals against tape")
    cases = findings._cases("recording", rule, FakeCells({"torch": t, "jax": j}))
    assert cases == ["mlp s: no ratio (counts different things)"]


def test_findings_state_differences_only_outside_the_interval(synthetic_report, tmp_path: Path) -> None:
    _, text, _ = synthetic_report
    # The step-time rule of a variant against its baseline, on the synthetic remat steps (the suite's own remat
    # step times now come from `tape-vs-trace paired`, so no rule of the pillar registry reads them)
    from tape_vs_trace.report import findings, load
    from tape_vs_trace.report.select import Cells

    table = load.load_results(write_results(tmp_path / "results"), lambda _: None).table
    rule = pillars.Change("time_step", "plain", "remat_full", "remat_full")
    remat = "; ".join(findings._cases("remat", rule, Cells(table)))
    # PyTorch: geometric means 3.131 / 2.098 = 1.492 (the centre of the interval), Welch dof 3.999, t = 2.7767:
    # [1.338, 1.664]: a cost of 49.2 %
    assert "PyTorch mlp s +49.2 % (2.098 ms → 3.131 ms; ratio 95 % interval 1.34–1.66×)" in remat
    # JAX: 2.294 / 2.194, Welch dof 3.992, t = 2.7786: [0.854, 1.28] holds 1
    assert "JAX mlp s no difference measurable on this machine (2.194 ms → 2.294 ms; ratio 95 % interval " \
        "0.854–1.28×)" in remat
    [peak] = [line for line in text.splitlines() if line.startswith("- **remat_full** against plain, peak memory")]
    assert "PyTorch mlp s −75.0 % (4 MiB → 1 MiB)" in peak and "JAX mlp s −50.0 % (6 MiB → 3 MiB)" in peak


# One question, two methods: the asv rows across processes and the paired runner's call-by-call ratio of the same two
# combinations (the custom backward of PyTorch's swiglu, eager, on a CPU: an experiment of experiments.py).
CUSTOM = "custom_backward.CustomStep_swiglu.time_step"


def custom_row(variant: str, commit: str = "c1") -> dict:
    params = {"framework": "torch", "workload": "swiglu", "size": "64x256x1024", "variant": variant, "mode": "eager",
              "style": "matched", "dtype": "float32", "precision": "highest", "device": "cpu"}
    import json
    return {"benchmark": CUSTOM, "params": json.dumps(params), "commit": commit, **secs(0.01)}


def paired_table(ratio: float, low: float, high: float, commit: str = "c1"):
    import pandas as pd
    rows = [{"group": "paired", "experiment": "the custom backward, eager swiglu torch eager", "point": point,
             "baseline": "plain/eager", "ratio": r, "ratio_ci_low": lo, "ratio_ci_high": hi, "time_s": t,
             "commit": commit}
            for point, r, lo, hi, t in (("plain/eager", 1.0, 1.0, 1.0, 0.01385),
                                        ("custom/eager", ratio, low, high, 0.01604))]
    return pd.DataFrame(rows)


def test_the_paired_lookup_divides_only_an_experiments_own_baseline_and_point() -> None:
    paired = findings.Paired(paired_table(1.15, 1.12, 1.18), "cpu")
    assert paired.ratio(custom_row("plain"), custom_row("custom")) == Comparison(1.15, 1.12, 1.18, resolution=0.03)
    assert paired.ratio(custom_row("custom"), custom_row("plain")) is None  # the baseline is the divisor
    assert paired.ratio(custom_row("plain", "c2"), custom_row("custom", "c2")) is None  # another run's samples
    assert findings.Paired(None, "cpu").ratio(custom_row("plain"), custom_row("custom")) is None


def test_an_asv_combination_is_matched_by_its_row_key_whatever_the_order_or_type_of_its_values() -> None:
    key = findings._key(CUSTOM, {"framework": "torch", "workload": "swiglu", "budget": 2})
    assert isinstance(key, RowKey) and (key.framework, key.workload, key.axis("budget")) == ("torch", "swiglu", "2")
    assert key == findings._key(CUSTOM, {"budget": "2", "workload": "swiglu", "framework": "torch"})
    assert key != findings._key(CUSTOM, {"framework": "jax", "workload": "swiglu", "budget": 2})


def test_one_question_gets_one_verdict_from_the_narrower_interval_with_that_estimators_own_times() -> None:
    """asv's medians (10 → 11.5 ms) beside the paired estimate's +15.9 % would be two estimators in one sentence:
    the paired verdict prints the paired table's times (its baseline and point)."""
    a, b, times = secs(0.01), secs(0.0115), (secs(0.01385), secs(0.01604))
    asv, paired = Comparison(1.25, 0.95, 1.6), Comparison(1.159, 1.12, 1.18, resolution=0.03)
    assert findings.one_verdict(asv, paired, a, b, times) == (
        "+15.9 % (13.85 ms → 16.04 ms; ratio 95 % interval 1.12–1.18×), paired call by call in one process; "
        "cross-check across processes: 1.25× [0.95–1.6] (no difference measurable)")
    # the asv interval narrower: it states the verdict with asv's times, the paired ratio is the cross-check
    assert findings.one_verdict(Comparison(1.15, 1.13, 1.17), Comparison(1.2, 1.0, 1.4, resolution=0.03), a, b,
                                times).startswith("+15.0 % (10 ms → 11.5 ms; ratio 95 % interval 1.13–1.17×), across "
                                                  "processes; cross-check paired")


class VariantCells(FakeCells):
    """One case of one framework (PyTorch), its rows by variant."""

    def get(self, pillar: str, metric: str, w: str, s: str, program: str, variant: str, fw: str) -> dict | None:
        return self.rows.get(variant) if fw == "torch" else None


def test_a_paired_finding_reads_the_paired_tables_times() -> None:
    """The custom backward's eager step, answered by asv rows (10 → 11.5 ms, one process each) and by the paired
    experiment (13.85 → 16.04 ms, +15.9 %): the finding prints the paired estimate with its own times."""
    paired = findings.Paired(paired_table(1.159, 1.12, 1.18), "cpu")
    assert paired.times(custom_row("plain"), custom_row("custom")) == (secs(0.01385), secs(0.01604))
    asv = {"machine": "m", "framework": "torch", "metric": "time_step", "memory_method": "", "status": "ok",
           "sampled": True, "basis": "one process", "process_medians": ""}
    cells = VariantCells({"plain/eager": custom_row("plain") | asv,
                          "custom/eager": custom_row("custom") | asv | secs(0.0115)})
    rule = next(r for p, r in pillars.findings() if p == "custom_backward" and r.metric == "time_step")
    [case] = findings._cases("custom_backward", rule, cells, paired=paired)
    assert "+15.9 % (13.85 ms → 16.04 ms" in case and "11.5 ms" not in case.split("cross-check")[0], case


def test_two_methods_whose_intervals_miss_each_other_state_no_finding() -> None:
    text = findings.one_verdict(Comparison(1.5, 1.3, 1.7), Comparison(1.1, 1.08, 1.12, resolution=0.03), secs(1),
                                secs(1.5), (secs(1), secs(1.1)))
    assert text.startswith("the two methods disagree beyond their intervals") and text.endswith("no finding")
    assert "+" not in text.split("(")[0]


def test_rules_refused_for_one_reason_are_one_line_not_one_per_rule(monkeypatch) -> None:
    """A CPU's peaks of eleven transforms are refused for one reason: one bullet names them all, once."""
    base = {"machine": "m", "commit": "c", "benchmark": "b", "benchmark_version": "1", "metric": "track_peak_bytes",
            "status": "ok", "sampled": False, "basis": "exact", "process_medians": "", "comparable": True}
    t = base | {"framework": "torch", "value": 2.0, "params": '{"framework":"torch"}', "memory_method": "tracker"}
    j = base | {"framework": "jax", "value": 4.0, "params": '{"framework":"jax"}', "memory_method": "buffer plan"}
    rules = [("transforms", pillars.Across("track_peak_bytes", "", name)) for name in ("grad", "jvp", "hvp")]
    monkeypatch.setattr(pillars, "findings", lambda: rules)
    assert findings.findings(FakeCells({"torch": t, "jax": j})) == {"transforms": [
        "**peak memory, grad, jvp, hvp** (JAX/PyTorch): mlp s: no ratio (different memory methods)."]}


def test_a_large_change_reads_as_a_factor_not_a_percentage() -> None:
    """256 B → 64.25 KiB is 257×, not +25600.0 %; a fall stays a percentage (at most −100 %)."""
    assert findings.describe(Comparison(257.0, 257.0, 257.0), mib(0.000244140625), mib(0.0627441)) == \
        "257× (0.0002441 MiB → 0.06274 MiB)"
    assert findings.describe(Comparison(4.0, 3.5, 4.5), secs(0.01), secs(0.04)) == \
        "4× (10 ms → 40 ms; ratio 95 % interval 3.5–4.5×)"
    assert findings.describe(Comparison(0.05, 0.05, 0.05), mib(2), mib(0.1)) == "−95.0 % (2 MiB → 0.1 MiB)"
