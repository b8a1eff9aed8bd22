"""The same-host check of two runs' records and calibration-normalised times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tape_vs_trace.results import host_check, machine
from tests.cpuinfo import AMD

RECORDS = Path(__file__).parents[1] / "data" / "host_records"

CALIBRATION = {"matmul_flops_per_s": {"float32": 5.0e10}, "matmul_flops_per_s_jax": {"float32": 6.0e10},
               "copy_bytes_per_s": 4.0e9, "dispatch_seconds_per_op": {"torch": 5e-6, "jax": 2e-5}}


def _details(cpuinfo: str = AMD, **calibration: object) -> dict:
    fp = machine.fingerprint(cpuinfo, gpu={})
    return {"fingerprint": fp, "calibration": {**CALIBRATION, **calibration}}


def test_same_host_is_decided_by_the_fingerprint() -> None:
    same, reason = host_check.same_host(_details(), _details())
    assert same and reason == "same host by fingerprint", reason
    other_stepping = _details(AMD.replace("stepping\t: 1", "stepping\t: 2"))
    same, reason = host_check.same_host(_details(), other_stepping)
    assert not same and "stepping" in reason
    no_avx512 = _details(AMD.replace(" avx512f avx512_bf16", ""))
    assert not host_check.same_host(_details(), no_avx512)[0]
    more_cores = _details()
    more_cores["fingerprint"] = {**more_cores["fingerprint"], "threads": 4}
    same, reason = host_check.same_host(_details(), more_cores)
    assert not same and "cores differ" in reason
    same, reason = host_check.same_host({"kernel": "x"}, _details())
    assert not same and "no fingerprint" in reason


def test_a_moved_calibration_is_named_not_another_host() -> None:
    # The same name and model string, 1.58x slower: the fingerprint decides, the calibration is named.
    slower = _details(matmul_flops_per_s={"float32": 5.0e10 / 1.58})
    same, reason = host_check.same_host(_details(), slower)
    assert same and "float32 matmul rate (flop/s, torch) 5e+10 vs 3.165e+10, 58% apart" in reason
    assert reason.endswith("run under load?)")
    # 10 % and 19 % (two consecutive quiet runs on one host): within CALIBRATION_TOLERANCE, nothing to say
    within = _details(dispatch_seconds_per_op={"torch": 5.5e-6, "jax": 2e-5})
    assert host_check.same_host(_details(), within) == (True, "same host by fingerprint")
    assert host_check.calibration_moves(CALIBRATION, {**CALIBRATION, "matmul_flops_per_s": {"float32": 5.95e10}}) == []
    slower_dispatch = _details(dispatch_seconds_per_op={"torch": 5e-6, "jax": 2.8e-5})
    assert "jax dispatch cost (s/op) 2e-05 vs 2.8e-05, 40% apart" in host_check.same_host(_details(),
                                                                                         slower_dispatch)[1]
    bigger = _details()
    bigger["fingerprint"] = {**bigger["fingerprint"], "ram_bytes": bigger["fingerprint"]["ram_bytes"] * 2}
    same, reason = host_check.same_host(_details(), bigger)
    assert same and "memory (bytes) differs" in reason


def test_a_moved_calibration_beside_another_kernel_is_asked_about_as_other_hardware_not_load() -> None:
    # The Intel host on two days: another kernel build and a 36 % faster matmul rate, as busy in both runs.
    faster = _details(matmul_flops_per_s={"float32": 5.0e10 * 1.36})
    faster["fingerprint"] = {**faster["fingerprint"], "kernel": "6.18.44-fc-v1300"}
    before = _details()
    before["fingerprint"] = {**before["fingerprint"], "kernel": "6.18.44-fc-v1252"}
    same, reason = host_check.same_host(before, faster)
    assert same, reason
    assert "kernel differs: 6.18.44-fc-v1252 vs 6.18.44-fc-v1300" in reason
    assert reason.endswith(f"36% apart; {host_check.RESTARTED})") and "under load" not in reason
    # the same kernel: load stays the question
    faster["fingerprint"]["kernel"] = "6.18.44-fc-v1252"
    assert host_check.same_host(before, faster)[1].endswith("run under load?)")
    # another kernel and a calibration within the tolerance: the kernel is named, no cause is asked for
    same, reason = host_check.same_host(before, {**faster, "calibration": CALIBRATION,
                                                 "fingerprint": {**faster["fingerprint"], "kernel": "v1300"}})
    assert same and reason.endswith("kernel differs: 6.18.44-fc-v1252 vs v1300)") and "?" not in reason


def _record(name: str) -> dict:
    return json.loads((RECORDS / name).read_text())["tape_vs_trace"]


def test_the_amd_host_under_load_and_quiet_is_one_host() -> None:
    """The issue: two consecutive make bench runs on one AMD EPYC 2-core host, the first under load, were called two
    hosts by their calibrations (PyTorch's matmul rate 65 % apart, its dispatch cost 47 %)."""
    loaded, quiet = _record("amd-epyc-f25m17-2c-run-a-loaded.json"), _record("amd-epyc-f25m17-2c-run-b-quiet.json")
    same, reason = host_check.same_host(loaded, quiet)
    assert same, reason
    assert reason.startswith("same host by fingerprint (calibration moved by more than 30%: ")
    assert "float32 matmul rate (flop/s, torch) 1.128e+11 vs 1.857e+11, 65% apart" in reason
    assert "torch dispatch cost (s/op) 4.297e-06 vs 2.932e-06, 47% apart" in reason
    assert "jax dispatch" not in reason  # 9.44 and 9.46 us: it did not move
    intel = _record("intel-xeon-f6m167-2c-7b3a82c3.json")
    same, reason = host_check.same_host(quiet, intel)
    assert not same and "CPU vendor differs: 'AuthenticAMD' vs 'GenuineIntel'" in reason


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
