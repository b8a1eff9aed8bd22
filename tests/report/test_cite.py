"""`tape-vs-trace cite`: one citable block, on the synthetic results of tests/report/helpers.py (PyTorch's eager
GradStep: per-process medians 1.15, 2.15, 1.55 ms, geometric mean 1.565 ms; JAX's 3.0, 3.2, 3.4 ms, geometric mean
3.196 ms) plus an older commit whose values differ."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tape_vs_trace import cli
from tests.report.helpers import write_results

OLD = "def45600" + "0" * 32


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = write_results(tmp_path_factory.mktemp("cite") / "results")
    data = json.loads((root / "box" / "abc12300-existing-venv.json").read_text())
    # an earlier commit, run a day before, whose PyTorch plain peak was 8 MiB: only commit= may pick it
    data["commit_hash"], data["date"] = OLD, data["date"] - 86_400_000
    data["results"]["remat.RematCost_mlp.track_peak_bytes"][0][0] = 8 * 2 ** 20
    (root / "box" / "def45600-existing-venv.json").write_text(json.dumps(data, allow_nan=True))
    return root


def cite(capsys, results: Path, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["cite", *argv, "--results", str(results)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_text_block_carries_value_interval_method_and_provenance(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "GradStep_mlp.time_step", "framework=torch", "mode=eager")
    assert rc == 0
    # Student-t on the logs of 1.15, 2.15, 1.55 ms (tests/report/helpers.py): [0.7192, 3.405] ms around their
    # geometric mean
    assert "1.565 ms, 95 % interval 719.2 µs–3.405 ms" in out
    assert "geometric mean of per-process medians (3 processes, 12 samples)" in out
    assert ("recording.GradStep_mlp.time_step (framework=torch, workload=mlp, size=s, mode=eager, dtype=float32, "
            "precision=highest, device=cpu), benchmark version 3") in out
    assert "abc12300 (commit date 2023-11-14 22:13:20 UTC)" in out
    assert "box, device cpu, CPU Test CPU 9000" in out
    assert "torch 2.9, jax 0.10; float32, matmul precision highest" in out
    # asv's graph fragment: the benchmark, then machine and each parameter as p-<name>=<stored repr>
    assert ("#recording.GradStep_mlp.time_step?machine=box&p-framework='torch'&p-workload='mlp'&p-size='s'"
            "&p-mode='eager'&p-dtype='float32'&p-precision='highest'&p-device='cpu'") in out


def test_peak_names_its_memory_method_and_latest_commit_wins(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "RematCost_mlp.track_peak_bytes", "framework=torch", "variant=plain")
    assert rc == 0 and "4 MiB (4,194,304 bytes), exact" in out and "abc12300" in out
    assert "peak bytes measured by torch live-storage tracking" in out
    rc, out, _ = cite(capsys, results, "RematCost_mlp.track_peak_bytes", "framework=torch", "variant=plain",
                      "commit=def4")
    assert rc == 0 and "8 MiB (8,388,608 bytes)" in out and "def45600" in out


def test_json_has_the_citation_fields(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "GradStep_mlp.time_step", "framework=jax", "mode=eager", "--format", "json")
    assert rc == 0
    obj = json.loads(out)
    assert obj["value"] == pytest.approx(3.1958e-3, rel=1e-4) and obj["unit"] == "seconds"  # exp(1.16185) ms
    # logs of 3.0, 3.2, 3.4 ms: mean 1.16185, sd 0.062596, half-width 4.3027 x 0.062596 / sqrt(3) = 0.15550
    assert obj["ci_low"] == pytest.approx(2.7356e-3, rel=1e-4) and obj["ci_high"] == pytest.approx(3.7337e-3, rel=1e-4)
    assert obj["commit"] == "abc123" + "0" * 34 and obj["machine"] == "box"
    assert (obj["torch_version"], obj["jax_version"], obj["processes"], obj["samples"]) == ("2.9", "0.10", 3, 12)


def test_both_frameworks_print_the_ratio_with_its_interval(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "GradStep_mlp.time_step", "mode=eager")
    assert rc == 0 and "— PyTorch" in out and "— JAX" in out
    # Welch t on the logs (tests/report/helpers.py): [0.975, 4.28] holds 1
    assert "JAX/PyTorch: 2.04× [0.975–4.28] (no difference measurable)" in out
    assert "?machine=box&p-workload='mlp'" in out  # the anchor that shows both lines
    rc, out, _ = cite(capsys, results, "GradStep_mlp.time_step", "mode=eager", "--format", "json")
    objs = json.loads(out)
    assert [o["framework"] for o in objs] == ["torch", "jax"]
    assert objs[0]["ratio"]["ratio"] == pytest.approx(3.1958 / 1.5649, rel=1e-4)  # of the geometric means
    assert objs[0]["ratio"]["ci_low"] == pytest.approx(0.97512, rel=1e-4)


def test_both_frameworks_name_the_refusal(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "RematCost_mlp.track_peak_bytes", "variant=plain")
    assert rc == 0 and "JAX/PyTorch: — (different memory methods)" in out


@pytest.mark.parametrize(("argv", "names"), [
    (["time_step"], ["recording.GradStep_mlp.time_step", "remat.RematStep_mlp.time_step"]),
    (["no_such_benchmark"], ["candidates:"]),
    (["GradStep_mlp.time_step", "framework=torch"], ["mode takes compiled, eager"]),
    (["GradStep_mlp.time_step", "size=XL"], ["size takes: s"]),
    (["GradStep_mlp.time_step", "colour=red"], ["keys: framework"]),
    (["GradStep_mlp.time_step", "mode=eager", "commit=ffff"], ["commit takes: abc12300"]),
])
def test_ambiguous_or_empty_queries_fail_with_one_line(results, capsys, argv, names) -> None:
    rc, out, err = cite(capsys, results, *argv)
    # the synthetic folder's known warnings (no calibration) are not said beside an error: one line in all
    lines = err.splitlines()
    assert rc == 1 and out == "" and len(lines) == 1 and lines[0].startswith("error: ")
    assert all(n in lines[0] for n in names) and "Traceback" not in err


def test_older_files_are_one_warning_per_call_and_verbose_names_each(tmp_path, capsys) -> None:
    """Every cite reads every older file: what they hold that the suite dropped is one line, not one per file."""
    root = write_results(tmp_path / "results")
    path = root / "box" / "abc12300-existing-venv.json"
    data = json.loads(path.read_text())
    data["results"]["remat.RematStep_transformer.time_step"] = data["results"]["recording.GradStep_mlp.time_step"]
    for commit in ("abc12300", "def45600"):
        data["commit_hash"] = commit + "0" * 32
        (root / "box" / f"{commit}-existing-venv.json").write_text(json.dumps(data, allow_nan=True))
    rc, out, err = cite(capsys, root, "GradStep_mlp.time_step", "framework=torch", "mode=eager")
    assert rc == 0 and "1.565 ms" in out
    # the synthetic files record no calibration either: the same line says so
    assert [x for x in err.splitlines() if "older" in x or "time_over_matmul_peak" in x] == [
        f"warning: 2 older result file(s) in {root} hold 1 benchmark(s) no longer in the suite or with other "
        "parameters (skipped); 2 result file(s) give no time_over_matmul_peak (no calibration or matmul flops count "
        "recorded); --verbose lists them by file"]
    rc, _, err = cite(capsys, root, "GradStep_mlp.time_step", "framework=torch", "mode=eager", "--verbose")
    assert rc == 0 and [x for x in err.splitlines() if "skipped" in x] == [
        f"warning: {root.as_posix()}/box/{commit}-existing-venv.json: skipped 1 benchmark(s) no longer in the suite "
        "(remat.RematStep_transformer.time_step)" for commit in ("abc12300", "def45600")]


def test_a_scan_row_names_the_operator_each_framework_ran() -> None:
    """PyTorch's compiled LSTM scan is the prototype torch._higher_order_ops.scan, JAX's lax.scan: each record and
    the ratio line say so, so a cited 0.08× is not read as lax.scan against a stable PyTorch API."""
    import math

    from tape_vs_trace.report import cite as citing
    from tape_vs_trace.report.load import Results
    from tests.report.helpers import summary_row

    def scan_row(framework: str, value: float) -> dict:
        params = {"framework": framework, "workload": "lstm", "size": "l2-c128-b14", "mode": "compiled",
                  "formulation": "scan"}
        return summary_row(framework, value, workload="lstm") | {
            "params": json.dumps(params), "benchmark": "recording.GradStep_lstm.time_step", "q25": math.nan,
            "q75": math.nan}

    rows = [scan_row("torch", 0.016), scan_row("jax", 0.00126)]
    text = citing.render(Results(pd.DataFrame(rows)), [rows], "text")
    assert "operator   prototype torch._higher_order_ops.scan" in text and "operator   lax.scan" in text
    assert "JAX/PyTorch: 0.0788× (no interval: no samples recorded); JAX's lax.scan over PyTorch's prototype " \
           "torch._higher_order_ops.scan" in text
    unrolled = [r | {"params": r["params"].replace('"scan"', '"unrolled"')} for r in rows]
    assert "operator" not in citing.render(Results(pd.DataFrame(unrolled)), [unrolled], "text")
