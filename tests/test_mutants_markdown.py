"""summary.md's small builders (tape_vs_trace.report.markdown) on hand-built rows, the expected lines written out by
hand: found by mutation testing (`make mutate`), where the end-to-end report tests never compared these lines whole."""

from __future__ import annotations

from tape_vs_trace.report import markdown


def test_kv_is_a_two_column_table_sorted_by_key_with_blank_lines() -> None:
    assert markdown._kv("Host fingerprint", {"b": 2, "a": "x"}) == [
        "Host fingerprint:", "", "| | |", "|---|---|", "| a | x |", "| b | 2 |", ""]


NAN = float("nan")


def ok(**values) -> dict:
    return {"status": "ok", "value": 0.012, "ci_low": 0.010, "ci_high": 0.014, "basis": "process medians",
            "spread": 0.002} | values


def test_a_cell_is_its_value_with_the_interval_only_where_sampled() -> None:
    assert markdown._cell(None, 1e-3, True) == "not run"
    assert markdown._cell({"status": "failed"}, 1e-3, True) == "failed"
    assert markdown._cell(ok(), 1e-3, True) == "12 [10–14]"
    assert markdown._cell(ok(), 1e-3, False) == "12"
    assert markdown._cell(ok(basis="exact"), 1e-3, True) == "12"  # an exact value has no interval
    assert markdown._cell(ok(ci_low=NAN, ci_high=NAN), 1e-3, True) == "12"


def test_a_spread_is_shown_only_for_a_result_that_ran() -> None:
    assert markdown._spread(ok(), 1e-3) == "2"
    assert markdown._spread(None, 1e-3) == "n/a"
    assert markdown._spread(ok(status="failed"), 1e-3) == "n/a"
    assert markdown._spread(ok(spread=NAN), 1e-3) == "n/a"


def test_a_case_names_its_non_empty_parts() -> None:
    assert markdown._case({"workload": "mlp", "size": "", "variant": "eager"}) == "mlp eager"
    assert markdown._case({"workload": "lstm", "size": "S", "variant": "compiled/scan"}) == "lstm S compiled/scan"
