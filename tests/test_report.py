"""The report, built from real asv output (tests/data/asv_fixture, see its README): every file is written, every
number in summary.md is the one in summary.csv, figures are real PNGs, a failed benchmark reads "failed", and bad
input gets one line on stderr, never a traceback, and leaves the results folder untouched."""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tape_vs_trace import cli, report

FIXTURE = Path(__file__).parent / "data" / "asv_fixture"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCALES = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "B": 1.0, "FLOP": 1.0, "kFLOP": 1e3, "MFLOP": 1e6,
          "GFLOP": 1e9, "TFLOP": 1e12, "": 1.0}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def result_file(results: Path) -> Path:
    [path] = [p for p in results.glob("*/*.json") if p.name != "machine.json"]
    return path


def run(capsys, results: Path, out: Path) -> tuple[int, str, list[str]]:
    code = cli.main(["report", "--results", str(results), "--out", str(out)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err.splitlines()


def read_csv(path: Path) -> pd.DataFrame:
    table = pd.read_csv(path, keep_default_na=False)
    for column in ("value", "spread", "q25", "q75"):
        table[column] = pd.to_numeric(table[column], errors="coerce")
    return table


def md_rows(text: str) -> list[list[str]]:
    """The cells of every per-pillar table row of summary.md."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 12 and cells[0] != "workload":
            rows.append(cells)
    return rows


def parse_number(cell: str) -> float:
    match = re.fullmatch(r"(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)\s*(\S*)", cell)
    assert match and match.group(2) in SCALES, cell
    return float(match.group(1).replace(",", "")) * SCALES[match.group(2)]


def edit_results(path: Path, edit) -> None:
    """Rewrite an asv result file in asv's own format (NaN stays NaN, null stays null)."""
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def combos(entry: list) -> list[tuple]:
    return list(itertools.product(*entry[1])) if entry[1] else [()]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built") / "report"
    before = snapshot(FIXTURE)
    assert cli.main(["report", "--results", str(FIXTURE), "--out", str(out)]) == 0
    assert snapshot(FIXTURE) == before
    return out


@pytest.fixture
def results(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "results")
    return tmp_path / "results"


def test_fixture_is_real_scrubbed_asv_output() -> None:
    data = json.loads(result_file(FIXTURE).read_text())
    assert data["env_name"] == "existing-venv" and data["version"] == 2
    assert "/work" not in "".join(p.read_text() for p in FIXTURE.rglob("*.json"))
    assert sum(p.stat().st_size for p in FIXTURE.rglob("*") if p.is_file()) < 200_000


def test_report_writes_all_files(built: Path) -> None:
    assert sorted(p.name for p in built.iterdir()) == sorted(report.OUTPUTS)


def test_table_is_tidy(built: Path) -> None:
    table = read_csv(built / "summary.csv")
    assert set(report.COLUMNS) <= set(table.columns)
    assert set(table.pillar) == set(report.PILLARS), "the fixture covers every pillar"
    assert set(table.framework) == {"torch", "jax"}
    assert (table.status == "ok").all() and table.value.notna().all()
    assert not table.workload.str.contains("'").any() and not table.variant.str.contains("'").any()
    assert json.loads(table.params.iloc[0])["framework"] in ("torch", "jax")
    peak = table.metric == "track_peak_bytes"
    assert peak.any() and table[peak].memory_method.str.startswith(("torch ", "jax ")).all()
    assert (table[~peak].memory_method == "").all()
    timed = table.type == "time"
    assert (table[timed].spread == table[timed].q75 - table[timed].q25).all()
    assert (table[table.unit == "bytes"].spread == 0).all()
    assert table.commit.nunique() == 1 and (table.machine == "cpu-amd-epyc-2c").all()
    assert (table.torch_version != "").all() and (table.jax_version != "").all()
    # asv's NaN (skipped: JAX has no hooks) is dropped, not reported
    assert not ((table.framework == "jax") & (table.variant == "hooks")).any()


def test_markdown_numbers_are_the_table_numbers(built: Path) -> None:
    table = read_csv(built / "summary.csv")
    text = (built / "summary.md").read_text()
    index = {(r.workload, r.size, r.variant, ", ".join(v for v in (r.dtype, r.precision) if v), r.metric,
              r.framework): r for r in table.itertuples()}
    compared = ratios = 0
    for workload, size, variant, numerics, metric, _, t_cell, _, j_cell, _, ratio, _ in md_rows(text):
        values = {}
        for framework, cell in (("torch", t_cell), ("jax", j_cell)):
            row = index.get((workload, size, variant, numerics, metric, framework))
            if cell == "n/a":
                assert row is None, (workload, size, variant, metric, framework)
                continue
            assert row is not None and row.status == "ok"
            assert math.isclose(parse_number(cell), row.value, rel_tol=5.01e-4), (cell, row.value)
            values[framework] = row.value
            compared += 1
        if ratio != "n/a":
            assert math.isclose(float(ratio.rstrip("×")), values["jax"] / values["torch"], rel_tol=5.01e-3)
            ratios += 1
    assert compared == len(table) and ratios > 10
    assert "commit" in text and table.commit.iloc[0] in text and table.torch_version.iloc[0] in text


def test_findings_are_computed_from_the_table(built: Path) -> None:
    table = read_csv(built / "summary.csv")
    text = (built / "summary.md").read_text()

    def value(pillar, metric, workload, size, variant, framework) -> float:
        sel = table[(table.pillar == pillar) & (table.metric == metric) & (table.workload == workload)
                    & (table["size"] == size) & (table.variant == variant) & (table.framework == framework)]
        [v] = sel.value
        return v

    saves = re.findall(r"JAX's jax.vjp keeps ([\d.]+)× the bytes PyTorch's tape saves for (\w+) plain at (\S+) ", text)
    assert saves
    for ratio, workload, size in saves:
        expected = value("recording", "track_saved_bytes", workload, size, "", "jax") / \
            value("recording", "track_saved_bytes", workload, size, "", "torch")
        assert math.isclose(float(ratio), expected, rel_tol=5.01e-3)
    cuts = re.findall(r"(remat_full|remat_dots) (cuts|raises) (PyTorch|JAX)'s (\w+) (\S+) peak by ([\d.]+) %", text)
    assert cuts
    for policy, verb, label, workload, size, pct in cuts:
        fw = {"PyTorch": "torch", "JAX": "jax"}[label]
        change = value("remat", "track_peak_bytes", workload, size, policy, fw) / \
            value("remat", "track_peak_bytes", workload, size, "plain", fw) - 1
        assert verb == ("cuts" if change < 0 else "raises")
        assert abs(float(pct) - abs(change) * 100) <= 0.051


def test_figures_are_png_images(built: Path) -> None:
    for name in report.FIGURES:
        data = (built / name).read_bytes()
        assert data[:8] == PNG_SIGNATURE, name
        width, height = struct.unpack(">II", data[16:24])
        assert width >= 600 and height >= 300 and len(data) > 20_000, (name, width, height, len(data))
        assert f"]({name})" in (built / "summary.md").read_text()


def test_failed_benchmark_reads_failed(results: Path, tmp_path: Path, capsys) -> None:
    name = "remat.RematCost_mlp.track_peak_bytes"

    def fail_torch_plain(data: dict) -> None:
        entry = data["results"][name]
        [i] = [i for i, c in enumerate(combos(entry)) if c[0] == "'torch'" and c[3] == "'plain'"]
        entry[0][i] = None  # asv's mark of a benchmark that raised

    edit_results(result_file(results), fail_torch_plain)
    before = snapshot(results)
    code, _, err = run(capsys, results, tmp_path / "out")
    assert code == 0 and snapshot(results) == before
    assert len(err) == 1 and err[0].startswith("warning:") and "failed" in err[0]
    table = read_csv(tmp_path / "out" / "summary.csv")
    [row] = table[(table.benchmark == name) & (table.framework == "torch") & (table.variant == "plain")].itertuples()
    assert row.status == "failed" and math.isnan(row.value)
    [cells] = [r for r in md_rows((tmp_path / "out" / "summary.md").read_text())
               if r[0] == "mlp" and r[2] == "plain" and r[4] == "track_peak_bytes"]
    assert cells[6] == "failed" and cells[8] not in ("failed", "n/a") and cells[10] == "n/a"


def test_missing_results_folder(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, tmp_path / "nowhere", tmp_path / "out")
    assert code == 1 and len(err) == 1 and err[0].startswith("error:") and "does not exist" in err[0]
    assert not (tmp_path / "out").exists()


def test_empty_results_folder(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, tmp_path / "empty", tmp_path / "out")
    assert code == 1 and len(err) == 1 and err[0].startswith("error:") and "no asv results" in err[0]
    assert list((tmp_path / "empty").iterdir()) == [] and not (tmp_path / "out").exists()


def test_corrupt_file_among_good_ones_is_skipped(results: Path, tmp_path: Path, capsys) -> None:
    corrupt = result_file(results).with_name("0badc0de-existing-venv.json")
    corrupt.write_text(result_file(results).read_text()[:500])
    before = snapshot(results)
    code, _, err = run(capsys, results, tmp_path / "out")
    assert code == 0 and snapshot(results) == before
    assert len(err) == 1 and err[0].startswith("warning: skipped") and corrupt.name in err[0]
    assert "not valid JSON" in err[0]
    assert (tmp_path / "out" / "summary.md").is_file()


def test_corrupt_only_file_fails_and_keeps_the_old_report(results: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run(capsys, results, out)[0] == 0
    old = snapshot(out)
    result_file(results).write_text("{\"commit_hash\": ")
    before = snapshot(results)
    code, _, err = run(capsys, results, out)
    assert code == 1 and err[-1].startswith("error: no benchmark results") and "Traceback" not in "".join(err)
    assert snapshot(out) == old and snapshot(results) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "results"], "no temporary folder left behind"


def test_one_framework_gives_na_ratios(results: Path, tmp_path: Path, capsys) -> None:
    def drop_torch(data: dict) -> None:
        per_combo = [c for c in data["result_columns"] if c == "result" or c.startswith("stats_") or c == "samples"]
        for entry in data["results"].values():
            keep = [i for i, c in enumerate(combos(entry)) if c[0] != "'torch'"]
            for column in per_combo:
                i = data["result_columns"].index(column)
                if i < len(entry) and isinstance(entry[i], list):
                    entry[i] = [entry[i][k] for k in keep]
            entry[1][0] = [v for v in entry[1][0] if v != "'torch'"]

    edit_results(result_file(results), drop_torch)
    before = snapshot(results)
    code, _, err = run(capsys, results, tmp_path / "out")
    assert code == 0 and snapshot(results) == before
    assert len(err) == 1 and err[0].startswith("warning:") and "JAX only" in err[0]
    table = read_csv(tmp_path / "out" / "summary.csv")
    assert set(table.framework) == {"jax"} and len(table) > 20
    rows = md_rows((tmp_path / "out" / "summary.md").read_text())
    assert rows and all(r[6] == "n/a" and r[10] == "n/a" and r[11] == "n/a" for r in rows)
    assert all(r[8] not in ("n/a", "failed") for r in rows)


def test_out_may_not_be_the_results_or_inside_a_machine_folder(results: Path, capsys) -> None:
    before = snapshot(results)
    for out in (results, results / "cpu-amd-epyc-2c" / "report", results.parent):
        code, _, err = run(capsys, results, out)
        assert code == 1 and len(err) == 1 and err[0].startswith("error: --out"), (out, err)
    assert snapshot(results) == before


def test_out_that_is_not_a_report_is_not_replaced(results: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("mine")
    code, _, err = run(capsys, results, tmp_path / "docs")
    assert code == 1 and len(err) == 1 and "not a report" in err[0]
    assert (tmp_path / "docs" / "notes.txt").read_text() == "mine"


def test_console_command_outside_the_checkout(tmp_path: Path) -> None:
    """The installed command finds benchmarks/common.py from any directory; bad input exits 1 without traceback."""
    proc = subprocess.run([sys.executable, "-m", "tape_vs_trace.cli", "report", "--results", "missing"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-c", "from tape_vs_trace import report; "
                           "print(report._memory_methods()[('jax', 'cpu')])"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("jax "), proc.stderr


def test_findings_mark_overlapping_timings_as_noise() -> None:
    """A timing difference whose interquartile ranges overlap is reported as within noise, a clear one is not."""
    from tape_vs_trace.report import Cells, _noise

    def row(value: float, q25: float, q75: float, variant: str) -> dict:
        return {"pillar": "engine", "metric": "time_step", "workload": "mlp", "size": "s", "variant": variant,
                "framework": "torch", "value": value, "q25": q25, "q75": q75, "status": "ok"}

    table = pd.DataFrame([row(1.0, 0.9, 1.1, "a"), row(1.05, 1.0, 1.2, "b"), row(2.0, 1.9, 2.1, "c")])
    cells = Cells(table)
    key = ("engine", "time_step", "mlp", "s")
    assert "within noise" in _noise(cells, (*key, "a", "torch"), (*key, "b", "torch"))
    assert _noise(cells, (*key, "a", "torch"), (*key, "c", "torch")) == ""
