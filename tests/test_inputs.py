"""The inputs are append-only: a workload's arrays depend on its own name, size and seed, so adding a workload changes
no other's. The input file cache that GPU runs use (TVT_INPUT_CACHE) serves exactly the generated arrays, and a second
process reads them instead of generating them again."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from implementations import workloads
from tests.test_mutants_workloads import DIGESTS, _digest


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_input_cache_gives_the_generated_arrays(tmp_path, monkeypatch, dtype: str) -> None:
    fresh = workloads.make_inputs("transformer", "tiny", dtype)
    first = workloads.make_inputs("transformer", "tiny", dtype, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 1

    def no_generation(*args, **kwargs):
        raise AssertionError("generated again although the cache holds the arrays")

    monkeypatch.setattr(workloads, "_normal", no_generation)
    second = workloads.make_inputs("transformer", "tiny", dtype, cache_dir=tmp_path)
    for inputs in (first, second):
        assert inputs.static == fresh.static and inputs.dtype == dtype and inputs.size == "tiny"
        assert set(inputs.params) == set(fresh.params) and set(inputs.data) == set(fresh.data)
        for name in fresh.params:
            _same_bits(inputs.params[name], fresh.params[name])
        for name in fresh.data:
            _same_bits(inputs.data[name], fresh.data[name])
        _same_bits(inputs.cotangent, fresh.cotangent)


def test_a_corrupt_cache_file_is_regenerated(tmp_path) -> None:
    workloads.make_inputs("mlp", "tiny", "float32", cache_dir=tmp_path)
    (path,) = tmp_path.glob("*.npz")
    path.write_bytes(b"not an npz")
    again = workloads.make_inputs("mlp", "tiny", "float32", cache_dir=tmp_path)
    _same_bits(again.params["w1"], workloads.make_inputs("mlp", "tiny", "float32").params["w1"])


def _test_size_digests() -> dict[str, str]:
    return {name: _digest(workloads.make_inputs(name, "tiny", "float64")) for name in workloads.WORKLOADS}


def test_adding_a_workload_changes_no_other_inputs(monkeypatch) -> None:
    # A name that sorts first: under seeding by sorted index it would have shifted every other workload's inputs.
    before = _test_size_digests()
    toy = dataclasses.replace(workloads.WORKLOADS["mlp"], name="aaa_toy")
    monkeypatch.setattr(workloads, "WORKLOADS", {"aaa_toy": toy, **workloads.WORKLOADS})
    after = _test_size_digests()
    assert after.pop("aaa_toy") != before["mlp"]  # same generator, other name: other inputs
    assert after == before == DIGESTS


def test_a_cache_file_of_the_sorted_index_seeding_is_not_read(tmp_path) -> None:
    # The name an earlier commit wrote (no "byname"): its arrays, other numbers under the same dimensions, are ignored.
    dims = "-".join(f"{k}{v}" for k, v in sorted(workloads.spec("mlp").sizes["tiny"].items()))
    workloads.make_inputs("mlp", "tiny", "float32", seed=1, cache_dir=tmp_path)
    (written,) = tmp_path.glob("*.npz")
    written.rename(tmp_path / f"mlp-{dims}-float32-seed0.npz")
    cached = workloads.make_inputs("mlp", "tiny", "float32", cache_dir=tmp_path)
    _same_bits(cached.params["w1"], workloads.make_inputs("mlp", "tiny", "float32").params["w1"])
