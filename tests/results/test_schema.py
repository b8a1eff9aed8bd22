"""What the side measurements write and the report reads (tape_vs_trace.results.schema): the rate a calibration gives
the roofline."""

from __future__ import annotations

from tape_vs_trace.results import schema


def test_a_tf32_row_takes_the_tf32_rate_and_never_the_full_precision_one() -> None:
    cal = {"matmul_flops_per_s": {"float32": 5.0}}
    assert schema.roofline_rate(cal, "float32", "highest") == 5.0
    assert schema.roofline_rate(cal, "float32", "tf32") is None  # no rate: no roofline row, not a wrong one
    cal["matmul_flops_per_s"]["float32/tf32"] = 40.0
    assert schema.roofline_rate(cal, "float32", "tf32") == 40.0
    assert schema.roofline_rate(cal, "float32", "highest") == 5.0
