"""summary.md's tables (report/tables.py): the GEMM-library workspace inside a CUDA peak shown apart from it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from implementations import frameworks
from tests.report.helpers import FIXTURE, md_table, unrendered

GPU_FIXTURE = FIXTURE.parent / "gpu_fixture" / "gpu-nvidia-h200"  # synthetic CUDA results, never cited
PEAK, WORKSPACE = "remat.RematCost_mlp.track_peak_bytes", "remat.RematCost_mlp.track_workspace_bytes"


def _with_gpu_machine(results: Path) -> None:
    """The GPU fixture's machine beside the CPU fixture's, and the workspace row in benchmarks.json as a CUDA
    discovery lists it (the CPU fixture's discovery predates the row): the peak's entry under the row's name."""
    shutil.copytree(GPU_FIXTURE, results / "gpu-nvidia-h200")
    path = results / "benchmarks.json"
    declared = json.loads(path.read_text())
    declared[WORKSPACE] = declared[PEAK] | {"name": WORKSPACE}
    path.write_text(json.dumps(declared))


def test_cuda_workspaces_get_a_table_of_their_own_beside_the_peaks(results: Path, tmp_path: Path) -> None:
    """A CUDA results folder (synthetic) with a peak and its workspace per case: summary.md keeps the peaks' table as
    it was, and shows the workspaces in a table of their own, each framework's read method named, no ratio (a
    library setting, read differently on the two sides); the peaks' line points to it."""
    from tape_vs_trace import report

    _with_gpu_machine(results)
    with unrendered():  # the test reads the text
        report.write_report(results, tmp_path / "report", lambda line: None)
    gpu = (tmp_path / "report" / "gpu-nvidia-h200" / "tables.md").read_text()  # the machine's page of every table
    peaks, workspaces = md_table(gpu, "track_peak_bytes"), md_table(gpu, "track_workspace_bytes")
    assert len(peaks) == 3 and all(r[-1] == "— (unlike modes: PyTorch eager, JAX compiled)" for r in peaks.values())
    assert len(workspaces) == 3 and all(r[-1] == "— (counts different things)" for r in workspaces.values())
    assert all(r[2:4] == ["64", "32"] for r in workspaces.values()), workspaces  # MiB, the fixture's made-up values
    read_by = next(line for line in gpu.splitlines() if line.startswith("GEMM-library workspace measured by: "))
    assert all(frameworks.workspace_method(fw, "cuda") in read_by for fw in frameworks.NAMES)
    assert "the GEMM-library workspace table (`track_workspace_bytes`) shows it apart" in gpu


def test_a_cpu_workspace_row_is_not_run_for_the_reason_its_method_gives() -> None:
    """A CPU's workspace rows are asv's n/a: the report's reason is the method's skip rule (the class runs the
    combination's peak), and the peak of the same combination has none."""
    from tape_vs_trace.report import skips

    params = json.dumps({"framework": "torch", "workload": "mlp", "size": "64x256x1024", "variant": "plain",
                         "dtype": "float32", "precision": "highest", "device": "cpu"})
    assert skips.reason(WORKSPACE, params).startswith("no GEMM-library workspace is read on cpu")
    assert skips.reason(PEAK, params) is None
