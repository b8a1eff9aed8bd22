"""The input file cache that GPU runs use (TVT_INPUT_CACHE): it serves exactly the generated arrays, and a second
process reads them instead of generating them again."""

from __future__ import annotations

import numpy as np
import pytest

from implementations import workloads


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
