"""The inputs are append-only: a workload's arrays depend on its own name, size and seed, so adding a workload changes
no other's. The input file cache that GPU runs use (TVT_INPUT_CACHE) serves exactly the generated arrays, and a second
process reads them instead of generating them again."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

import numpy as np
import pytest
from scipy.special import multigammaln

from implementations import input_generators, workloads


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

    monkeypatch.setattr(input_generators, "normal", no_generation)
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
    before, pinned = _test_size_digests(), _pinned()
    toy = dataclasses.replace(workloads.WORKLOADS["mlp"], name="aaa_toy")
    monkeypatch.setattr(workloads, "WORKLOADS", {"aaa_toy": toy, **workloads.WORKLOADS})
    after = _test_size_digests()
    assert after.pop("aaa_toy") != before["mlp"]  # same generator, other name: other inputs
    assert after == before == pinned


def test_a_cache_file_of_the_sorted_index_seeding_is_not_read(tmp_path) -> None:
    # The name an earlier commit wrote (no "byname"): its arrays, other numbers under the same dimensions, are ignored.
    dims = "-".join(f"{k}{v}" for k, v in sorted(workloads.spec("mlp").sizes["tiny"].items()))
    workloads.make_inputs("mlp", "tiny", "float32", seed=1, cache_dir=tmp_path)
    (written,) = tmp_path.glob("*.npz")
    written.rename(tmp_path / f"mlp-{dims}-float32-seed0.npz")
    cached = workloads.make_inputs("mlp", "tiny", "float32", cache_dir=tmp_path)
    _same_bits(cached.params["w1"], workloads.make_inputs("mlp", "tiny", "float32").params["w1"])


# --- the workload specs' contract: pinned generators, the GMM constant, index helpers, the cache's file names ------


def _pinned() -> dict[str, str]:
    """Each spec's pin of its test size's inputs (WorkloadSpec.inputs_digest)."""
    return {name: s.inputs_digest for name, s in workloads.WORKLOADS.items()}


def _digest(inputs: workloads.Inputs) -> str:
    h = hashlib.sha256()
    for group in (inputs.params, inputs.data):
        for name in sorted(group):
            h.update(name.encode())
            h.update(str(group[name].shape).encode())
            h.update(group[name].tobytes())
    h.update(inputs.cotangent.tobytes())
    h.update(json.dumps(inputs.static, sort_keys=True).encode())
    return h.hexdigest()[:16]


def test_every_workload_is_pinned() -> None:
    assert all(len(d) == 16 and int(d, 16) >= 0 for d in _pinned().values()), _pinned()


@pytest.mark.parametrize("workload", list(workloads.WORKLOADS))
def test_generators_never_change(workload: str) -> None:
    pinned = workloads.spec(workload).inputs_digest
    assert _digest(workloads.make_inputs(workload, "tiny", "float64")) == pinned
    assert _digest(workloads.make_inputs(workload, "tiny", "float64", seed=1)) != pinned


def test_default_size_is_the_test_size_and_scalar_outputs_get_a_unit_cotangent() -> None:
    assert workloads.make_inputs("gmm").size == "tiny"
    assert workloads.make_inputs("gmm").cotangent.shape == () and workloads.make_inputs("gmm").cotangent == 1.0
    assert workloads.make_inputs("mlp").cotangent.shape == (4, 8)


def test_unhashable_workload_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"unknown workload \[\]; valid choices: mlp, linear_gelu"):
        workloads.spec([])


def test_gmm_constant_against_scipy_multigammaln() -> None:
    d, k, n, gamma, m = 3, 4, 7, 0.5, 2
    p = d + m + 1
    prior = p * d * math.log(gamma / math.sqrt(2)) - multigammaln(p / 2, d)
    expected = -n * d / 2 * math.log(2 * math.pi) - k * prior
    assert workloads.gmm_constant(d, k, n, gamma, m) == pytest.approx(expected, rel=1e-12)


def test_lower_triangle_is_column_by_column() -> None:
    rows, cols = workloads.lower_triangle_indices(4)
    assert list(zip(rows.tolist(), cols.tolist())) == [(1, 0), (2, 0), (3, 0), (2, 1), (3, 1), (3, 2)]
    assert rows.dtype == cols.dtype == np.int64
    assert workloads.lower_triangle_indices(1)[0].size == 0


def test_no_lower_triangle_still_indexes() -> None:
    # d = 1 has no strict lower triangle; the empty index arrays must still be integers (an empty float array is
    # refused as an index), so indexing with them works for d = 1 as for any other d.
    rows, cols = workloads.lower_triangle_indices(1)
    assert rows.dtype == cols.dtype == np.int64
    assert np.ones((1, 1))[rows, cols].shape == (0,)


def test_parameter_count() -> None:
    assert workloads.parameter_count(workloads.make_inputs("mlp", "tiny")) == 8 * 16 + 16 * 8


def test_cache_file_names_the_dimensions_and_seed_in_a_new_folder(tmp_path) -> None:
    folder = tmp_path / "a" / "b"  # created with its parents
    workloads.make_inputs("mlp", "tiny", "float32", seed=3, cache_dir=folder)
    assert [p.name for p in folder.iterdir()] == ["mlp-batch4-hidden16-width8-float32-seed3-byname.npz"]
    cached = workloads.make_inputs("mlp", "tiny", "float32", seed=3, cache_dir=folder)
    assert _digest(cached) == _digest(workloads.make_inputs("mlp", "tiny", "float32", seed=3))


def test_host_offload_is_a_cuda_only_variant() -> None:
    # The transformer's variants as its spec lists them; the CPU (the default device) cannot offload to host memory.
    everything = ("plain", "remat_full", "remat_dots", "remat_names", "remat_offload", "remat_every2")
    assert workloads.variants("transformer", "cuda") == everything
    assert workloads.variants("transformer") == workloads.variants("transformer", "cpu")
    assert workloads.variants("transformer", "cpu") == tuple(v for v in everything if v != "remat_offload")
    mlp = ("plain", "remat_full", "remat_dots")
    assert workloads.variants("mlp", "cpu") == workloads.variants("mlp", "cuda") == mlp


@pytest.mark.parametrize(("dtype", "stored"), [("float64", np.float64), ("bfloat16", np.uint16)])
def test_cache_of_a_named_size_stores_plain_numpy_and_reads_back_the_same_case(tmp_path, dtype, stored) -> None:
    # A size other than the test size (the cache must not fall back to it), float64 and bfloat16,
    # which the file keeps as its bits so that plain numpy can read it.
    direct = workloads.make_inputs("mlp", "64x256x1024", dtype)
    workloads.make_inputs("mlp", "64x256x1024", dtype, cache_dir=tmp_path)
    [path] = tmp_path.iterdir()
    assert path.name == f"mlp-batch64-hidden1024-width256-{dtype}-seed0-byname.npz"
    with np.load(path) as archive:
        assert archive["d:x"].dtype == stored and archive["d:x"].shape == (64, 256)
    cached = workloads.make_inputs("mlp", "64x256x1024", dtype, cache_dir=tmp_path)  # read from the file
    assert (cached.workload, cached.size, cached.dtype) == ("mlp", "64x256x1024", dtype)
    assert cached.static == {}
    assert _digest(cached) == _digest(direct)
