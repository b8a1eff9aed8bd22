"""`tape-vs-trace cite distributed`: one citable block per distributed row, on hand-made CSVs (PyTorch's launch
medians 1, 2, 4 ms, JAX's 2, 4, 8 ms: a ratio of 2 whose Welch interval on the logs is exp(ln 2 ± t(0.975, 4) x ln 2
x sqrt(2/3)) = [0.4155, 9.625]), and on the committed results/distributed file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tape_vs_trace import cli
from tape_vs_trace.report import distributed_results
from tape_vs_trace.results.side_tables import files as side_files
from tape_vs_trace.results.side_tables import newest
from tape_vs_trace.side.distributed_run import FIELDS

ROOT = Path(__file__).resolve().parents[2]
MACHINE = "box"
NEW, OLD = "abc12300" + "0" * 32, "def45600" + "0" * 32
TORCH_PEAK = "torch live-storage tracking (TorchDispatchMode), the largest rank's"
JAX_PEAK = "jax compiled.memory_analysis, per device"


def row(framework: str, **changes: object) -> dict:
    torch = framework == "torch"
    base = {
        "framework": framework, "workload": "mlp", "size": "64x256x1024", "dtype": "float32", "variant": "plain",
        "form": "ddp", "mode": "eager", "ranks": 2, "status": "ok", "reason": "",
        "time_s": 0.002 if torch else 0.004, "time_ci_low": 0.0005 if torch else 0.001,
        "time_ci_high": 0.008 if torch else 0.016, "launches": 3, "repeat": 5, "warmup": 1,
        "launch_medians": "0.001;0.002;0.004" if torch else "0.002;0.004;0.008",
        "compile_s": 0.5, "compile_ci_low": 0.4, "compile_ci_high": 0.6, "compile_launches": "0.4;0.5;0.6",
        "compile_cache": "cold: a fresh cache", "peak_bytes": 2 * 2 ** 20 if torch else 3 * 2 ** 20,
        "peak_method": TORCH_PEAK if torch else JAX_PEAK, "comm_bytes": 2097156, "analytic_bytes": 2097156,
        "gradient_bytes": 2097152, "collectives": "all-reduce 2x 2097156 B", "collectives_method": "rank 0's profile",
        "backend": "gloo (loopback, one process per rank)" if torch else "XLA CPU (2 devices of one process)",
        "bucket_cap_mb": "25.0" if torch else "", "mesh_shape": "ranks=2", "threads_per_rank": "1" if torch else "",
        "timing": "the slowest rank's wall time", "note": "on a CPU host the ranks share its cores",
        "device": "cpu", "framework_version": "2.9" if torch else "0.10", "commit": NEW,
        "commit_date": "2026-12-01T00:00:00+00:00", "machine": MACHINE,
    }
    return base | changes


def write(folder: Path, rows: list[dict]) -> Path:
    path = folder / "distributed" / f"{rows[0]['machine']}-{rows[0]['commit'][:8]}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    (root / MACHINE).mkdir(parents=True)
    (root / MACHINE / "machine.json").write_text(json.dumps({"machine": MACHINE, "cpu": "Test CPU 9000"}))
    write(root, [row("torch"), row("jax"), row("torch", ranks=1), row("jax", ranks=1, status="failed",
                                                                        reason="launch 1 timed out after 600 s"),
                 row("torch", workload="transformer", size="L1")])
    # an older commit, a day before, whose PyTorch time was 9 ms: only commit= may pick it
    write(root, [row("torch", commit=OLD, commit_date="2026-11-30T00:00:00+00:00", time_s=0.009)])
    return root


def cite(capsys, results: Path, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["cite", "distributed", *argv, "--results", str(results)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_one_row_carries_value_interval_settings_and_provenance(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "framework=torch", "workload=mlp", "ranks=2")
    assert rc == 0
    assert out.startswith("distributed mlp 64x256x1024, ddp eager, N=2 — PyTorch\n")
    assert "2 ms per step, the slowest rank's, 95 % interval 500 µs–8 ms" in out
    assert "median of per-launch medians (3 launches, fresh rank processes each, 5 timed steps each" in out
    assert "500 ms, 95 % interval 400 ms–600 ms (compile and warm-up" in out
    assert f"2 MiB (2,097,152 bytes) per device, exact; {TORCH_PEAK}" in out
    assert "per step per rank: 2 MiB, equal to the analytic count; all-reduce 2x 2097156 B" in out
    assert ("N=2, backend gloo (loopback, one process per rank), DDP bucket 25.0 MB, mesh ranks=2, 1 thread(s) per "
            "rank, float32, variant plain") in out
    assert "note       on a CPU host the ranks share its cores" in out
    assert "abc12300 (commit date 2026-12-01T00:00:00+00:00)" in out and "box, device cpu, CPU Test CPU 9000" in out
    assert "software   torch 2.9" in out and "distributed/box-abc12300.csv" in out
    assert "JAX/PyTorch" not in out  # one framework asked for: no ratio


def test_both_frameworks_print_the_sections_ratios(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "workload=mlp", "ranks=2")
    assert rc == 0 and "— PyTorch" in out and "— JAX" in out
    assert ("JAX/PyTorch step time: 2× [0.416–9.63] (no difference measurable) "
            "(95 % Welch t interval over per-launch medians, log scale)") in out
    assert "JAX/PyTorch peak: — (different memory methods)" in out
    rc, out, _ = cite(capsys, results, "workload=mlp", "ranks=2", "--format", "json")
    objs = json.loads(out)
    assert [o["framework"] for o in objs] == ["torch", "jax"]
    ratio = objs[0]["ratio"]["step_time"]
    assert ratio["of"] == "jax/torch" and ratio["ratio"] == pytest.approx(2.0)
    assert (ratio["ci_low"], ratio["ci_high"]) == (pytest.approx(0.4155, rel=1e-3), pytest.approx(9.625, rel=1e-3))
    assert objs[0]["ratio"]["peak_bytes"]["refused"] == "different memory methods"
    assert (objs[1]["value"], objs[1]["ci_low"], objs[1]["launches"], objs[1]["ranks"]) == (0.004, 0.001, 3, 2)
    assert objs[0]["bucket_cap_mb"] == "25.0" and objs[1]["backend"] == "XLA CPU (2 devices of one process)"


def test_ratios_are_refused_for_a_failed_or_missing_framework(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "workload=mlp", "ranks=1")
    assert rc == 0 and "value      failed: launch 1 timed out after 600 s" in out
    assert "JAX/PyTorch step time: — (failed)" in out
    rc, out, _ = cite(capsys, results, "workload=transformer")
    assert rc == 0 and "JAX/PyTorch step time: — (only one framework ran)" in out


def test_latest_commit_by_default_and_commit_picks_an_older_one(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "framework=torch", "workload=mlp", "ranks=2", "commit=def4")
    assert rc == 0 and "9 ms per step" in out and "def45600" in out
    rc, out, _ = cite(capsys, results, "framework=torch", "workload=mlp", "ranks=2", "--format", "markdown")
    assert rc == 0 and "**distributed mlp 64x256x1024, ddp eager, N=2 — PyTorch**" in out and "- value: 2 ms" in out


@pytest.mark.parametrize(("argv", "names"), [
    ([], ["5 distributed rows left on box", "workload takes mlp, transformer", "ranks takes 1, 2"]),
    (["ranks=8"], ["ranks takes: 1, 2"]),
    (["colour=red"], ["no column 'colour'", "keys: framework, workload"]),
    (["commit=ffff"], ["commit takes: abc12300"]),
    (["workload"], ["not key=value"]),
])
def test_ambiguous_or_empty_queries_fail_with_one_line(results, capsys, argv, names) -> None:
    rc, out, err = cite(capsys, results, *argv)
    assert rc == 1 and out == "" and len(err.splitlines()) == 1 and err.startswith("error: ")
    assert all(n in err for n in names) and "Traceback" not in err


def test_no_distributed_folder_or_no_readable_file_is_one_line(tmp_path, capsys) -> None:
    rc, _, err = cite(capsys, tmp_path)
    assert rc == 1 and err.startswith("error: no distributed results") and len(err.splitlines()) == 1
    (tmp_path / "distributed").mkdir()
    (tmp_path / "distributed" / "box-abc12300.csv").write_text("not,a\ndistributed,file\n")
    rc, _, err = cite(capsys, tmp_path)
    lines = err.splitlines()
    assert rc == 1 and lines[0].startswith("warning: skipped the distributed results") and len(lines) == 2
    assert lines[1].startswith("error: no readable distributed results") and "Traceback" not in err


def test_committed_distributed_results(capsys) -> None:
    """The committed file that cite reads (a machine's newest commit): a like pair of the mlp's ddp eager step at
    N=2, its values as the CSV holds them."""
    found = newest(side_files(ROOT / "results" / "distributed", "distributed results",
                                                  distributed_results.read, lambda _: None))
    path = found[sorted(found)[0]][0]
    with path.open() as f:
        rows = [r for r in csv.DictReader(f) if (r["workload"], r["form"], r["mode"], r["ranks"]) ==
                ("mlp", "ddp", "eager", "2")]
    assert sorted(r["framework"] for r in rows) == ["jax", "torch"]
    rc = cli.main(["cite", "distributed", "workload=mlp", "form=ddp", "mode=eager", "ranks=2", "machine=" +
                   rows[0]["machine"], "--results", str(ROOT / "results"), "--format", "json"])
    objs = json.loads(capsys.readouterr().out)
    assert rc == 0 and [o["framework"] for o in objs] == ["torch", "jax"]
    by_fw = {r["framework"]: r for r in rows}
    for obj in objs:
        assert obj["value"] == pytest.approx(float(by_fw[obj["framework"]]["time_s"]))
        assert obj["commit"] == by_fw[obj["framework"]]["commit"] and obj["note"]
    assert objs[0]["ratio"]["step_time"]["ratio"] == pytest.approx(float(by_fw["jax"]["time_s"]) /
                                                                    float(by_fw["torch"]["time_s"]))


def test_the_block_names_the_dashboard_page_of_its_workload(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "framework=jax", "workload=mlp", "ranks=2")
    assert rc == 0 and "dashboard  distributed.html#box-mlp" in out
