"""Report branches found by mutation testing (`make mutate`): the side-by-side and no-ratio findings, the derived
roofline's benchmarks.json entry, the meaning read for an unknown metric, and which rows the roofline covers."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from tape_vs_trace.report import findings, load, roofline

RATE = 1e11  # flop/s, the calibration's float32 matmul rate
FLOPS = 2e6  # GraphCost_mlp.track_flops of the one framework


class FakeCells:
    """One case (mlp, s) of one pillar and metric; `get` returns the framework's row or None."""

    def __init__(self, rows: dict[str, dict | None]):
        self.rows = rows

    def cases(self, pillar: str, metric: str) -> list[tuple[str, str]]:
        return [("mlp", "s")]

    def get(self, pillar: str, metric: str, w: str, s: str, variant: str, fw: str) -> dict | None:
        return self.rows.get(fw)


def _count(framework: str, value: float) -> dict:
    return {"framework": framework, "value": value, "status": "ok"}


def test_side_rule_puts_both_values_side_by_side_only_when_both_ran() -> None:
    rule = findings.Side("recording", "track_graph_size", "", "nodes and equations")
    both = FakeCells({"torch": _count("torch", 120.0), "jax": _count("jax", 340.0)})
    assert findings._cases(rule, both) == ["mlp s: PyTorch 120, JAX 340"]
    assert findings._cases(rule, FakeCells({"torch": _count("torch", 120.0), "jax": None})) == []


def test_across_rule_names_why_there_is_no_ratio() -> None:
    base = {"machine": "m", "commit": "c", "benchmark": "b", "benchmark_version": "1", "metric": "track_saved_bytes",
            "status": "ok", "sampled": False, "memory_method": "", "basis": "exact", "process_medians": "",
            "comparable": False}
    t = base | {"framework": "torch", "value": 2.0, "params": '{"framework":"torch"}'}
    j = base | {"framework": "jax", "value": 4.0, "params": '{"framework":"jax"}'}
    rule = findings.Across("recording", "track_saved_bytes", "", "residuals against tape")
    assert findings._cases(rule, FakeCells({"torch": t, "jax": j})) == ["mlp s: no ratio (counts different things)"]


def _derived_entries(monkeypatch: pytest.MonkeyPatch, benchmarks: dict, derived: list[dict]) -> dict:
    monkeypatch.setattr(roofline, "derive", lambda table, details, warn: derived)
    out = SimpleNamespace(benchmarks=benchmarks, details={})
    assert load._derived(out, pd.DataFrame(), lambda _: None) == derived
    return out.benchmarks


def test_derived_benchmark_entry_copies_its_source_and_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    source = {"name": roofline.source("mlp"), "type": "time", "unit": "seconds", "param_names": ["framework"]}
    entries = _derived_entries(monkeypatch, {roofline.source("mlp"): source},
                               [{"benchmark": roofline.name("mlp")}])
    assert entries[roofline.name("mlp")] == {"name": roofline.name("mlp"), "type": "derived", "unit": "ratio",
                                             "param_names": ["framework"],
                                             "derived_from": "recording.GradStep_mlp.time_step"}


def test_no_derived_entry_without_derived_rows_or_without_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    source = {"name": roofline.source("mlp"), "type": "time", "unit": "seconds"}
    assert _derived_entries(monkeypatch, {roofline.source("mlp"): source}, []) == {roofline.source("mlp"): source}
    assert _derived_entries(monkeypatch, {}, [{"benchmark": roofline.name("mlp")}]) == {}


@pytest.mark.parametrize(("kind", "word", "sampled"), [("time", "sampled", True), ("track", "exact", False)])
def test_unknown_metric_is_sampled_only_when_timed(kind: str, word: str, sampled: bool) -> None:
    warnings: list[str] = []
    meanings = load.Meanings(warnings.append)
    assert meanings("old_metric", kind) == (sampled, False)
    assert warnings == [f"metric old_metric is not in implementations.metrics: read as {word} (asv type {kind}), "
                        "no ratio"]


def _row(benchmark: str, value: float, formulation: str, **extra) -> dict:
    return {"machine": "m", "file": "f.json", "commit": "c", "benchmark": benchmark, "status": "ok",
            "framework": "torch", "workload": "mlp", "size": "s", "dtype": "float32", "precision": "highest",
            "params": json.dumps({"framework": "torch", "formulation": formulation}), "value": value,
            "q25": value, "q75": value, "process_medians": "", "samples": None} | extra


def test_a_zero_flops_count_is_no_count() -> None:
    flops = "recording.GraphCost_mlp.track_flops"
    table = pd.DataFrame([_row(flops, 0.0, "unrolled"), _row(flops, FLOPS, "plain", framework="jax")])
    assert roofline._flops(table) == {("m", "f.json", "jax", "mlp", "s", "plain"): FLOPS}


def test_a_row_outside_the_covered_formulations_does_not_stop_the_next() -> None:
    step = roofline.source("mlp")
    table = pd.DataFrame([_row(step, 0.001, "scan"), _row(step, 0.002, "unrolled"),
                          _row("recording.GraphCost_mlp.track_flops", FLOPS, "unrolled")])
    details = {("m", "c"): {"calibration": {"matmul_flops_per_s": {"float32": RATE}}}}
    warnings: list[str] = []
    [row] = roofline.derive(table, details, warnings.append)
    # 2 ms x 1e11 flop/s / 2e6 flops = 100 times the matmul-peak time
    assert row["value"] == pytest.approx(100.0) and json.loads(row["params"])["formulation"] == "unrolled"
    assert warnings == []
