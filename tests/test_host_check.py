"""The same-host check of two runs' records and calibration-normalised times."""

from __future__ import annotations

import pytest

from tape_vs_trace import host_check, machine
from tests.cpuinfo import AMD

CALIBRATION = {"matmul_flops_per_s": {"float32": 5.0e10}, "matmul_flops_per_s_jax": {"float32": 6.0e10},
               "copy_bytes_per_s": 4.0e9, "dispatch_seconds_per_op": {"torch": 5e-6, "jax": 2e-5}}


def _details(cpuinfo: str = AMD, **calibration: object) -> dict:
    fp = machine.fingerprint(cpuinfo, gpu={})
    return {"fingerprint": fp, "calibration": {**CALIBRATION, **calibration}}


def test_same_host_flags_another_cpu_or_another_speed() -> None:
    same, reason = host_check.same_host(_details(), _details())
    assert same, reason
    other_stepping = _details(AMD.replace("stepping\t: 1", "stepping\t: 2"))
    same, reason = host_check.same_host(_details(), other_stepping)
    assert not same and "stepping" in reason
    no_avx512 = _details(AMD.replace(" avx512f avx512_bf16", ""))
    assert not host_check.same_host(_details(), no_avx512)[0]
    # The issue: the same name and model string, 1.58x slower.
    slower = _details(matmul_flops_per_s={"float32": 5.0e10 / 1.58})
    same, reason = host_check.same_host(_details(), slower)
    assert not same and "float32 matmul rate (flop/s, torch) differs by 58%" in reason
    within = _details(dispatch_seconds_per_op={"torch": 5.5e-6, "jax": 2e-5})  # 10 %: noise
    assert host_check.same_host(_details(), within)[0]
    # 19 %: what two consecutive runs on one host calibrated (host_check.HOST_TOLERANCE)
    assert host_check.same_host(_details(), _details(matmul_flops_per_s={"float32": 5.0e10 * 1.19}))[0]
    slower_dispatch = _details(dispatch_seconds_per_op={"torch": 5e-6, "jax": 2.8e-5})
    assert "jax dispatch" in host_check.same_host(_details(), slower_dispatch)[1]
    same, reason = host_check.same_host({"kernel": "x"}, _details())
    assert not same and "no fingerprint" in reason


def test_normalised_times_are_labelled_counts_of_host_work() -> None:
    flops = host_check.normalised(0.002, CALIBRATION, "matmul_float32")
    assert flops.value == pytest.approx(0.002 * 5.0e10) and "calibrated" in flops.unit and "flops" in flops.unit
    ops = host_check.normalised(0.002, CALIBRATION, "dispatch_torch")
    assert ops.value == pytest.approx(400.0) and "dispatches" in ops.unit
    # Twice as fast a host, twice as fast a step: the normalised value stays.
    fast = {**CALIBRATION, "matmul_flops_per_s": {"float32": 1.0e11}}
    assert host_check.normalised(0.001, fast, "matmul_float32").value == pytest.approx(flops.value)
    with pytest.raises(ValueError, match="valid choices"):
        host_check.normalised(1.0, CALIBRATION, "seconds")
    with pytest.raises(ValueError, match="bfloat16"):
        host_check.normalised(1.0, CALIBRATION, "matmul_bfloat16")
