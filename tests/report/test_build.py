"""The report as a whole (tape_vs_trace.report.build, `tape-vs-trace report`), built from real asv output
(tests/data/asv_fixture, see its README): every file is written, every number in summary.md is the one in
summary.csv, figures are real PNGs, a failed benchmark reads "failed", and bad input gets one line on stderr, never a
traceback, and leaves the results folder untouched; an --out that holds the results is refused."""

from __future__ import annotations

import itertools
import json
import math
import re
import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from implementations import metrics, pillars
from tape_vs_trace import cli, report
from tape_vs_trace.report import build, figures
from tests.report.helpers import FIXTURE, PROGRESS_LINE, messages, report_text, unrendered

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

SCALES = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "MiB": 2.0 ** 20, "GFLOP": 1e9}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def result_file(results: Path) -> Path:
    [path] = [p for p in results.glob("*/*.json") if p.name != "machine.json"]
    return path


def run(capsys, results: Path, out: Path) -> tuple[int, str, list[str]]:
    """`tape-vs-trace report`'s exit code, stdout and stderr's lines; its callers read text and which files exist,
    so each figure is an empty file."""
    with unrendered():
        code = cli.main(["report", "--results", str(results), "--out", str(out)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err.splitlines()


def read_csv(path: Path) -> pd.DataFrame:
    table = pd.read_csv(path, keep_default_na=False)
    for column in ("value", "spread", "q25", "q75"):
        table[column] = pd.to_numeric(table[column], errors="coerce")
    return table


def md_rows(text: str) -> list[dict]:
    """Every row of every per-metric table of summary.md: metric, unit divisor, case, cells."""
    rows, metric, divisor = [], None, 1.0
    for line in text.splitlines():
        heading = re.match(r"\*\*.*\*\* \(`(\w+)`,", line)
        if line.startswith("#"):  # a new section: the provenance's tables are no metric's
            metric = None
        elif heading:
            metric = heading.group(1)
        elif line.startswith("| case |"):
            unit = re.match(r"\| case \| PyTorch \(([^)]*)\)", line).group(1)
            divisor = SCALES.get(unit, 1.0)
        elif line.startswith("| ") and metric and not line.startswith("| case") and "---" not in line:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            sampled = metrics.METRICS[metric].sampled
            torch_cell, jax_cell = (cells[1], cells[3]) if sampled else (cells[1], cells[2])
            rows.append({"metric": metric, "divisor": divisor, "case": cells[0], "torch": torch_cell,
                         "jax": jax_cell, "ratio": cells[-1]})
    return rows


def parse_number(cell: str, divisor: float) -> float:
    match = re.fullmatch(r"(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)( \[.*\])?", cell)
    assert match, cell
    return float(match.group(1).replace(",", "")) * divisor


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


TRANSFORMS_FIXTURE = FIXTURE.parent / "transforms_fixture"  # real, scrubbed asv output of the transforms pillar


def test_transforms_fixture_gives_both_frameworks_rows_and_a_figure(tmp_path: Path) -> None:
    out = tmp_path / "report"
    before = snapshot(TRANSFORMS_FIXTURE)
    assert cli.main(["report", "--results", str(TRANSFORMS_FIXTURE), "--out", str(out)]) == 0
    assert snapshot(TRANSFORMS_FIXTURE) == before
    table = read_csv(out / "summary.csv")
    assert set(table.pillar) == {"transforms"} and set(table.framework) == {"torch", "jax"}
    assert (table.status == "ok").all() and table.value.notna().all()
    data = (out / "transforms.png").read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 20_000
    assert "/work" not in "".join(p.read_text() for p in TRANSFORMS_FIXTURE.rglob("*.json"))


def test_fixture_is_real_scrubbed_asv_output() -> None:
    data = json.loads(result_file(FIXTURE).read_text())
    assert data["env_name"] == "existing-venv" and data["version"] == 2
    assert "/work" not in "".join(p.read_text() for p in FIXTURE.rglob("*.json"))
    assert sum(p.stat().st_size for p in FIXTURE.rglob("*") if p.is_file()) < 200_000


def test_report_writes_all_files(built: Path) -> None:
    assert sorted(p.name for p in built.iterdir() if p.is_file()) == sorted(report.OUTPUTS)
    assert [p.relative_to(built).as_posix() for p in built.glob("*/summary.md")] == ["cpu-amd-epyc-2c/summary.md"]


def test_table_is_tidy(built: Path) -> None:
    table = read_csv(built / "summary.csv")
    assert set(report.COLUMNS) <= set(table.columns)
    assert {"ci_low", "ci_high", "processes", "samples", "benchmark_version", "run_date"} <= set(table.columns)
    # every pillar but transforms, newer than this fixture: its own real output is TRANSFORMS_FIXTURE's
    assert set(table.pillar) == set(pillars.PILLARS) - {"transforms"}, "the fixture covers every older pillar"
    assert set(table.framework) == {"torch", "jax"}
    assert (table.status == "ok").all() and table.value.notna().all()
    assert not table.workload.str.contains("'").any() and not table.variant.str.contains("'").any()
    assert json.loads(table.params.iloc[0])["framework"] in ("torch", "jax")
    peak = table.metric == "track_peak_bytes"
    assert peak.any() and table[peak].memory_method.str.startswith(("torch ", "jax ")).all()
    assert (table[~peak].memory_method == "").all()
    # the fixture was recorded without samples: asv's quartiles, no interval, said so
    sampled = table.metric.map(lambda m: metrics.METRICS[m].sampled)
    timed = table[sampled & (table.type == "time")]
    assert len(timed) and (timed.spread == timed.q75 - timed.q25).all()
    assert (table[sampled].ci_low == "").all() and table[sampled].basis.str.contains("no samples").all()
    exact = table[~sampled]
    assert (exact.spread == 0).all() and (pd.to_numeric(exact.ci_low) == exact.value).all()
    assert (pd.to_numeric(exact.ci_high) == exact.value).all()
    assert table.commit.nunique() == 1 and (table.machine == "cpu-amd-epyc-2c").all()
    assert (table.torch_version != "").all() and (table.jax_version != "").all()
    assert (table.run_date.str.endswith("UTC")).all() and (table.benchmark_version.astype(str) != "").all()
    # asv's NaN (skipped: JAX has no hooks) is not a result row; summary.md lists it as not run
    assert not ((table.framework == "jax") & (table.variant == "hooks")).any()
    # the fixture's parameters are an older EngineStep's: today's skip rule cannot read them, and the line says so
    text = report_text(built)
    assert "| JAX 0.10.2 (no skip rule of this checkout names it) |" in text
    assert "`EngineStep_mlp.time_step` mlp 64x256x1024 hooks" in text


def test_markdown_numbers_are_the_table_numbers(built: Path) -> None:
    table = read_csv(built / "summary.csv")
    text = report_text(built)
    index = {(r.metric, " ".join(v for v in (r.workload, r.size, r.variant) if v), r.framework): r
             for r in table.itertuples()}
    compared = ratios = 0
    for md in md_rows(text):
        values = {}
        for framework in ("torch", "jax"):
            row = index.get((md["metric"], md["case"], framework))
            if md[framework] == "not run":
                assert row is None, md
                continue
            assert row is not None and row.status == "ok", md
            assert math.isclose(parse_number(md[framework], md["divisor"]), row.value, rel_tol=5.01e-4), md
            values[framework] = row
            compared += 1
        match = re.match(r"([\d.]+)× \((exact|no interval: no samples recorded)\)", md["ratio"])
        if match:
            t, j = values["torch"], values["jax"]
            assert t.memory_method == j.memory_method and metrics.METRICS[md["metric"]].comparable
            assert math.isclose(float(match.group(1)), j.value / t.value, rel_tol=5.01e-3)
            ratios += 1
        elif md["metric"] == "track_peak_bytes" and len(values) == 2:
            assert md["ratio"] == "— (different memory methods)", "CPU peaks are measured differently"
        elif md["metric"] == "track_graph_size":
            assert md["ratio"] == "— (counts different things)"
    assert compared == len(table) and ratios > 10
    assert "commit" in text and table.commit.iloc[0] in text and table.torch_version.iloc[0] in text


def test_findings_are_computed_from_the_table(built: Path) -> None:
    table = read_csv(built / "summary.csv")
    text = report_text(built)

    def value(pillar, metric, workload, size, variant, framework) -> float:
        sel = table[(table.pillar == pillar) & (table.metric == metric) & (table.workload == workload)
                    & (table["size"] == size) & (table.variant == variant) & (table.framework == framework)]
        [v] = sel.value
        return v

    checked = 0
    for policy, cases in re.findall(r"- \*\*(remat_full|remat_dots)\*\* against plain, peak memory: (.*)\.", text):
        for label, workload, size, sign, pct in re.findall(r"(PyTorch|JAX) (\w+) (\S+) ([+−])([\d.]+) %", cases):
            fw = {"PyTorch": "torch", "JAX": "jax"}[label]
            change = value("remat", "track_peak_bytes", workload, size, policy, fw) / \
                value("remat", "track_peak_bytes", workload, size, "plain", fw) - 1
            assert sign == ("−" if change < 0 else "+")
            assert abs(float(pct) - abs(change) * 100) <= 0.051
            checked += 1
    assert checked
    [saved] = re.findall(r"- \*\*saved for backward, JAX's jax.vjp[^:]*: (.*)\.", text)
    for workload, size, sign, pct in re.findall(r"(\w+) (\S+) ([+−])([\d.]+) %", saved):
        change = value("recording", "track_saved_bytes", workload, size, "", "jax") / \
            value("recording", "track_saved_bytes", workload, size, "", "torch") - 1
        assert sign == ("−" if change < 0 else "+") and abs(float(pct) - abs(change) * 100) <= 0.051
    # no samples in the fixture: timing findings claim no difference
    [step] = [line for line in text.splitlines() if line.startswith("- **record** against no_grad, forward time")]
    assert "%" not in step and "no interval" in step


def test_figures_are_png_images(built: Path) -> None:
    for name in (n for n in figures.FIGURES if n != "transforms.png"):  # that pillar: test_transforms_fixture_...
        data = (built / name).read_bytes()
        assert data[:8] == PNG_SIGNATURE, name
        width, height = struct.unpack(">II", data[16:24])
        assert width >= 600 and height >= 300 and len(data) > 20_000, (name, width, height, len(data))
        assert f"](../{name})" in report_text(built)  # from the machine's page, a folder below


def test_figure_fonts_are_readable_at_page_width(results: Path, tmp_path: Path, monkeypatch) -> None:
    """Every text of every figure is at least 9 pt at the saved size, and figures are at most 7.5 inches wide."""
    seen = []
    save = __import__("matplotlib.figure", fromlist=["Figure"]).Figure.savefig

    def check(fig, path, *args, **kwargs):
        saved = save(fig, path, *args, **kwargs)  # drawn: tick labels have their text now
        assert fig.get_figwidth() <= 7.5
        sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and
                                                       hasattr(a, "get_text") and a.get_text())]
        seen.append(min(sizes))
        return saved

    monkeypatch.setattr("matplotlib.figure.Figure.savefig", check)
    report.write_report(results, tmp_path / "out", lambda _: None)
    assert len(seen) == len(figures.FIGURES) + 2 and min(seen) >= 9  # the pillar figures, the headline, the strip


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
    [warning] = messages(err)
    assert warning.startswith("warning:") and "failed" in warning
    table = read_csv(tmp_path / "out" / "summary.csv")
    [row] = table[(table.benchmark == name) & (table.framework == "torch") & (table.variant == "plain")].itertuples()
    assert row.status == "failed" and math.isnan(row.value)
    [cells] = [r for r in md_rows(report_text(tmp_path / "out"))
               if r["case"] == "mlp 64x256x1024 plain" and r["metric"] == "track_peak_bytes"]
    assert cells["torch"] == "failed" and cells["jax"] not in ("failed", "not run") and cells["ratio"] == "— (failed)"


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
    [warning] = messages(err)
    assert warning.startswith("warning: skipped") and corrupt.name in warning and "not valid JSON" in warning
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


def test_one_framework_gives_no_ratios(results: Path, tmp_path: Path, capsys) -> None:
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
    [warning] = messages(err)
    assert warning.startswith("warning:") and "JAX only" in warning
    table = read_csv(tmp_path / "out" / "summary.csv")
    assert set(table.framework) == {"jax"} and len(table) > 20
    rows = md_rows(report_text(tmp_path / "out"))
    assert rows and all(r["torch"] == "not run" and r["ratio"] == "— (PyTorch not run: no skip rule of this checkout "
                        "names why)" for r in rows)
    assert all(r["jax"] not in ("not run", "failed") for r in rows)


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


def test_out_under_a_regular_file_is_one_line(results: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    code, _, err = run(capsys, results, tmp_path / "notes.txt" / "report")
    assert code == 1 and len(err) == 1 and err[0].startswith("error: --out") and "is a file" in err[0]
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_failed_build_leaves_the_old_report(results: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    assert run(capsys, results, out)[0] == 0
    old = snapshot(out)

    def boom(*args, **kwargs):
        raise RuntimeError("figure failed")

    monkeypatch.setattr(figures, "difference_figure", boom)
    with pytest.raises(RuntimeError, match="figure failed"), unrendered():
        report.write_report(results, out, lambda _: None)
    assert snapshot(out) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "results"], "no temporary folder left behind"


def test_readme_block_is_replaced(results: Path, tmp_path: Path, capsys) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# title\n\nbefore\n<!-- report:start -->\nold block\n<!-- report:end -->\nafter\n")
    with unrendered():  # the test reads the text and which files exist
        code = cli.main(["report", "--results", str(results), "--out", str(tmp_path / "docs" / "report"),
                         "--readme", str(readme)])
    captured = capsys.readouterr()
    assert code == 0 and "Traceback" not in captured.err and captured.out.count("\n") == 1
    # progress on stderr, a line as each step starts (the heartbeat is tests/test_progress.py's), the README's last
    steps = [PROGRESS_LINE.sub("", line) for line in captured.err.splitlines() if PROGRESS_LINE.match(line)]
    [machine] = [p.name for p in results.iterdir() if (p / "machine.json").is_file()]
    assert steps[0] == f"reading the 1 result file(s) of {machine}"
    assert f"drawing the figures of {machine} (1 of 1): one per pillar" in steps
    assert steps[-2:] == ["drawing the headline chart and writing summary.md: tables and findings",
                          f"rewriting the results block of {readme} (between its report markers)"]
    text = readme.read_text()
    assert text.startswith("# title\n\nbefore\n<!-- report:start -->") and text.endswith("<!-- report:end -->\nafter\n")
    assert "old block" not in text and "(docs/report/summary.md)" in text
    assert "](docs/report/headline.png)" in text and (tmp_path / "docs" / "report" / "headline.png").is_file()
    table = read_csv(tmp_path / "docs" / "report" / "summary.csv")
    assert f"(`{table.commit.iloc[0][:8]}`)" in text and "## Each framework at its fastest" in text


def test_readme_without_markers_builds_nothing(results: Path, tmp_path: Path, capsys) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    code = cli.main(["report", "--results", str(results), "--out", str(tmp_path / "out"), "--readme", str(readme)])
    err = capsys.readouterr().err.splitlines()
    assert code == 1 and len(err) == 1 and "report:start" in err[0]
    assert not (tmp_path / "out").exists() and readme.read_text() == "# no markers\n"


def test_console_command_outside_the_checkout(tmp_path: Path) -> None:
    """The module runs from any directory; bad input exits 1 with one line and no traceback."""
    proc = subprocess.run([sys.executable, "-m", "tape_vs_trace.cli", "report", "--results", "missing"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_an_out_folder_holding_the_results_is_refused(tmp_path) -> None:
    (tmp_path / "results").mkdir()
    with pytest.raises(build.ReportError, match="contains the results folder"):
        build.check_out(tmp_path / "results", tmp_path)
