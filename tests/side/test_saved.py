"""`tape-vs-trace saved-all` (tape_vs_trace.side.saved): one process per framework for the whole list of cases writes
the saved-bytes breakdown, each case's records under its own case; a bad folder is one line."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pandas as pd
import pytest

from implementations import workloads
from implementations.jax import probe as jax_probe
from implementations.jax import steps as jax_steps
from implementations.torch import probe as torch_probe
from implementations.torch import steps as torch_steps
from tape_vs_trace import cli
from tape_vs_trace.report import breakdown
from tape_vs_trace.side import saved


@pytest.mark.slow
def test_saved_all_writes_each_case_under_its_own_name(tmp_path: Path) -> None:
    cases = [("mlp", "tiny", "plain", "float32"), ("swiglu", "tiny", "custom", "float32")]
    steps: list[str] = []
    path = saved.run_all(tmp_path / "saved", cases, machine_name="m", commit="0123456789abcdef", step=steps.append)
    assert path == tmp_path / "saved" / "m-01234567.csv.gz"
    # progress: each framework's process, then each case as that process starts it
    assert steps == [line for label in ("PyTorch", "JAX") for line in (
        f"{label}: 2 case(s) in one process (importing {label})", f"{label}: case 1 of 2, mlp tiny plain float32",
        f"{label}: case 2 of 2, swiglu tiny custom float32")]
    with gzip.open(path, "rt", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == saved.ALL_FIELDS
        rows = list(reader)
    assert {r["commit"] for r in rows} == {"0123456789abcdef"}
    # Each case's extra bytes in the file are the probe's for that case: a record filed under the wrong case (the
    # batch subprocess answering in another order) or an argument counted turns this red.
    for framework, steps, probe in (("torch", torch_steps, torch_probe), ("jax", jax_steps, jax_probe)):
        for workload, size, variant, dtype in cases:
            fn, args = steps.loss_fn(workloads.make_inputs(workload, size, dtype), variant)
            mine = [r for r in rows if (r["framework"], r["workload"], r["variant"]) == (framework, workload, variant)]
            assert mine and {r["size"] for r in mine} == {size}
            extra = sum(int(r["nbytes"]) for r in mine if r["is_argument"] == "False")
            assert extra == probe.saved_bytes(fn, *args).extra_bytes, (framework, workload)
            assert {r["tensor_dtype"] for r in mine} == {"float32"}


COMMIT = "0123456789abcdef"


def _rows(commit: str = COMMIT) -> list[dict]:
    return [dict(workload="mlp", size="tiny", variant="plain", dtype="float32", program="", framework=framework,
                 op="mul", shape="4x4", tensor_dtype="float32", nbytes=64, is_argument=False, commit=commit)
            for framework in ("torch", "jax")]


def test_saved_all_writes_gzip_with_the_same_bytes_and_drops_the_old_csv(tmp_path: Path) -> None:
    old = tmp_path / "m-01234567.csv"
    old.write_text("the uncompressed file an earlier commit wrote\n")
    path = saved.write_all(tmp_path / "m-01234567.csv.gz", _rows())
    assert path.name == "m-01234567.csv.gz" and not old.exists()
    text = gzip.decompress(path.read_bytes()).decode()
    assert text.splitlines()[0] == ",".join(saved.ALL_FIELDS) and len(text.splitlines()) == 3
    first = path.read_bytes()
    saved.write_all(path, _rows())
    assert path.read_bytes() == first  # no time or name in the gzip header


def test_report_reads_compressed_breakdowns_and_earlier_csv(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    folder.mkdir()
    saved.write_all(folder / "m-01234567.csv.gz", _rows())
    with (folder / "n-89abcdef.csv").open("w", newline="") as f:  # an uncompressed file, as committed earlier
        writer = csv.DictWriter(f, fieldnames=saved.ALL_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(_rows("89abcdef01234567"))
    table = pd.DataFrame({"machine": ["m", "n"], "commit": [COMMIT, "89abcdef01234567"], "date": ["1", "1"]})
    warnings: list[str] = []
    found = breakdown.load(tmp_path, table, warnings.append)
    assert sorted(found) == ["m", "n"] and not warnings
    assert set(found["m"].framework) == {"torch", "jax"} and found["m"].nbytes.sum() == 128


def test_saved_all_bad_folder_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "file").write_text("")
    assert cli.main(["saved-all", "--out", str(tmp_path / "file" / "saved")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
