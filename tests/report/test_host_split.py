"""`host_split`: the runs of one machine name grouped by host for the dashboard, by the project's host rule."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tape_vs_trace.report import host_split
from tape_vs_trace.results import host_check

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "asv_fixture"
MACHINE = "cpu-amd-epyc-2c"
RECORDS = ROOT / "tests" / "data" / "host_records"
# Real machine records: two make bench runs on one AMD host (the first under load: its calibration moved) and one
# run on an Intel host, filed here under one machine name as a machine name reused on another host would be.
AMD_LOADED, AMD_QUIET = "amd-epyc-f25m17-2c-run-a-loaded.json", "amd-epyc-f25m17-2c-run-b-quiet.json"
INTEL = "intel-xeon-f6m167-2c-7b3a82c3.json"


def commits(n: int) -> list[tuple[str, int]]:
    """(hash, commit date in ms) of n commits of this repository's main branch, oldest first: asv places a result
    only at a commit of the configured branch."""
    lines = subprocess.run(["git", "-C", str(ROOT), "log", "--first-parent", "--reverse", "--format=%H %ct", "main"],
                           capture_output=True, text=True, check=True).stdout.split()
    return [(h, int(t) * 1000) for h, t in zip(lines[0:2 * n:2], lines[1:2 * n:2])]


def results_with_hosts(folder: Path, records: list[str | None], scale: list[float] | None = None) -> Path:
    """The asv fixture with one result file per record (oldest first, at consecutive commits of main), each carrying
    that record's "tape_vs_trace" entry (None: none, as a plain asv run writes) and its times times `scale`."""
    results = folder / "results"
    shutil.copytree(FIXTURE, results)
    (original,) = (results / MACHINE).glob("*-existing-venv.json")
    data = json.loads(original.read_text())
    original.unlink()
    at = data["result_columns"].index("result")
    for i, ((commit, date), record) in enumerate(zip(commits(len(records)), records)):
        run = json.loads(json.dumps(data))
        run["commit_hash"], run["date"] = commit, date
        if record is not None:
            run["tape_vs_trace"] = json.loads((RECORDS / record).read_text())["tape_vs_trace"]
        for name, row in run["results"].items():
            if scale and ".time_" in name and row[at] is not None:
                row[at] = [v * scale[i] if isinstance(v, float) else v for v in row[at]]
        (results / MACHINE / f"{commit[:8]}-existing-venv.json").write_text(json.dumps(run))
    return results


def test_another_host_is_split_and_a_loaded_run_is_not(tmp_path: Path) -> None:
    """A run on another CPU goes under `<name>@host2` with the host rule's reason; a run whose calibration moved
    under load stays with its host."""
    results = results_with_hosts(tmp_path, [INTEL, AMD_LOADED, AMD_QUIET])
    (found,) = host_split.machines(results)
    older, loaded, newest = commits(3)
    assert found.split and [h.name for h in found.hosts] == [MACHINE, f"{MACHINE}@host2"]
    assert [r.commit for r in found.hosts[0].runs] == [newest[0], loaded[0]]
    assert [r.commit for r in found.hosts[1].runs] == [older[0]]
    assert "CPU vendor differs" in found.hosts[1].reason
    assert found.verdicts[loaded[0]].startswith(host_check.SAME) and "calibration moved" in found.verdicts[loaded[0]]
    assert f"{MACHINE}@host2 ({older[0][:8]}): CPU vendor differs" in host_split.summary(found)


def test_runs_without_fingerprint_stay_under_the_name(tmp_path: Path) -> None:
    """A plain asv result says nothing of its host: it is published as asv would, and the verdict says why."""
    results = results_with_hosts(tmp_path, [None, AMD_QUIET])
    (found,) = host_split.machines(results)
    assert not found.split and len(found.hosts[0].runs) == 2
    assert "no host fingerprint" in found.verdicts[commits(2)[0][0]]


def test_stage_renames_the_other_hosts_runs_in_the_view_only(tmp_path: Path) -> None:
    results = results_with_hosts(tmp_path, [INTEL, AMD_QUIET])
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    found = host_split.machines(results)
    view = tmp_path / "view"
    moved = host_split.stage(found, results, view)
    older = commits(2)[0][0]
    assert moved == {results / MACHINE / f"{older[:8]}-existing-venv.json"}
    copy = json.loads((view / f"{MACHINE}@host2" / f"{older[:8]}-existing-venv.json").read_text())
    assert copy["params"]["machine"] == f"{MACHINE}@host2"
    assert json.loads((view / f"{MACHINE}@host2" / "machine.json").read_text())["machine"] == f"{MACHINE}@host2"
    assert before == {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}


@pytest.mark.parametrize("machine", sorted(p.parent.name for p in (ROOT / "results").glob("*/machine.json")))
def test_committed_results_hosts_follow_the_host_rule(machine: str) -> None:
    """Each published host of a committed machine holds only runs that the host rule calls one host with that
    host's newest fingerprinted run, and runs of different hosts never share a name."""
    (found,) = [m for m in host_split.machines(ROOT / "results") if m.folder.name == machine]
    anchors = [next(r for r in h.runs if r.fingerprinted) for h in found.hosts]
    for host, anchor in zip(found.hosts, anchors):
        assert all(host_check.same_host(anchor.record, r.record)[0] for r in host.runs if r.fingerprinted)
    for i, a in enumerate(anchors):
        assert not any(host_check.same_host(a.record, b.record)[0] for b in anchors[i + 1:])
