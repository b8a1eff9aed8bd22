"""scripts/gpu_bench.sh rehearsed end to end on this CPU (TVT_DEVICE=cpu), as a device machine receives it: a
repository of this checkout's files, one commit, prepared (`scripts/gpu_bench.sh prepare`: the commit and the wheels
to carry); then each contact in a fresh copy of its tracked and unignored files plus the carried paths, without
.git, the second with the first's results.tar.gz unpacked into it. Through the offline set-up from
requirements/h200.txt's wheels (fetched for this Python into .asv/, installed with no network), the pre-flight, the
plan, a budget that cuts the first contact, the second resuming: results filed under the prepared commit, nothing
the first completed run again, nothing lost, at most 8 flat files in OUTDIR, and the report and the dashboard
rendered from what came back. Slow: `make test-all`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.test_gpu_paths import _git, _offline_machine, device_copy

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".asv" / f"wheels-cp{sys.version_info[0]}{sys.version_info[1]}"
# What the H200 image lacks: requirements/h200.txt's distributions and asv's virtualenv, which it leaves out.
IMAGE_LACKS = ("asv", "json5", "importlib_metadata", "lazy_importer", "zipp", "pympler", "Pympler", "virtualenv",
               "distlib", "platformdirs", "python_discovery")
# One chunk of the quick profile that is cheap on the CPU grid: the SwiGLU's eager steps (plain and custom backward,
# both frameworks) in 3 rounds. Planned from a cost file in which each variant's build takes 130 s (JAX's 65 s after
# the first round, EAGER_WARM_SHARE), it does not fit in one contact of a 1300 s budget: the first contact measures
# one variant, the second the other, of one benchmark.
CHUNK = "custom-swiglu"
BENCHMARK = "custom_backward.CustomStep_swiglu.time_step"

def _wheels() -> Path:
    if not any(WHEELS.glob("asv-*.whl")):
        done = subprocess.run(["bash", str(ROOT / "scripts" / "download_wheels.sh"), str(WHEELS)], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHON": sys.executable,
                                   "TVT_WHEEL_PYTHON": f"{sys.version_info[0]}.{sys.version_info[1]}"})
        if done.returncode != 0:
            pytest.skip(f"cannot fetch requirements/h200.txt's wheels: {done.stdout.strip()[-300:]}")
    return WHEELS


def _contact(copy: Path, env: dict, out: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/gpu_bench.sh", str(out), "quick"], cwd=copy, capture_output=True,
                          text=True, env={**env, **extra}, timeout=900)


def _unpack(tarball: Path, into: Path) -> list[str]:
    with tarfile.open(tarball) as tar:
        names = sorted(m.name for m in tar.getmembers() if m.isfile())
        tar.extractall(into, filter="data")
    return names


def _measured(entry: list, columns: list[str]) -> dict[int, tuple]:
    """Index -> (value, samples) of the combinations an asv result entry holds a measured value for."""
    row = dict(zip(columns, entry))
    return {i: (v, row["samples"][i]) for i, v in enumerate(row["result"]) if isinstance(v, float) and v == v}


def _prepared_source(tmp_path: Path, wheels: Path) -> tuple[Path, list[str]]:
    """A repository of this checkout's tracked and unignored files in one commit, prepared as a lead prepares a
    contact (its wheels in .whl/); returns it and the paths prepare says to carry."""
    src = device_copy(ROOT, tmp_path / "src")
    shutil.copytree(wheels, src / ".whl")
    _git(src, "init", "-q", "-b", "main")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "the commit a contact measures")
    done = subprocess.run(["bash", "scripts/gpu_bench.sh", "prepare"], cwd=src, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    carry = done.stdout.strip().splitlines()[-1]
    assert carry.startswith("carry: ")
    return src, carry.split()[1:]


@pytest.mark.slow
def test_two_contacts_as_the_device_receives_them_resume_under_the_commit_and_lose_nothing(tmp_path: Path) -> None:
    wheels = _wheels()
    _, env = _offline_machine(tmp_path, also_missing=IMAGE_LACKS)
    src, carry = _prepared_source(tmp_path, wheels)
    head = _git(src, "rev-parse", "HEAD")
    env.update(TVT_DEVICE="cpu", TVT_OFFLINE="1", TVT_CALIBRATE="0", TVT_PEAKCHECK="0", TVT_CURVE="0",
               TVT_CHUNKS=CHUNK, TVT_BUDGET_S="1300")
    env.pop("TVT_WHEELS")  # the carried .whl/, as on the device
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"device": "cpu", "frameworks": {
        fw: {"eager_build": {"swiglu": {"seconds": 130}}} for fw in ("torch", "jax")}}))
    first_copy = device_copy(src, tmp_path / "device1", tuple(carry))
    assert not (first_copy / ".git").exists()
    first = _contact(first_copy, env, tmp_path / "out1", TVT_COSTS=str(costs), TVT_PLANNED_ONLY="1")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert f"commit {head[:8]}" in first.stdout and "restored from .gpu-contact/" in first.stdout
    assert f"not run (over the budget): {CHUNK}.2" in first.stdout
    assert f"== chunk {CHUNK}.1 " in first.stdout and f"== chunk {CHUNK}.2 " not in first.stdout
    machine = next(line.split(": ", 1)[1].split(",")[0] for line in first.stdout.splitlines()
                   if line.startswith("machine: "))
    brought = sorted(p.name for p in (tmp_path / "out1").iterdir())
    assert all((tmp_path / "out1" / n).is_file() for n in brought) and len(brought) <= 8, brought
    names = _unpack(tmp_path / "out1" / "results.tar.gz", tmp_path / "back1")
    [result_name] = [n for n in names if n.endswith("-existing-venv.json")]
    assert result_name == f"results/{machine}/{head[:8]}-existing-venv.json"  # filed under the prepared commit
    data = json.loads((tmp_path / "back1" / result_name).read_text())
    assert data["commit_hash"] == head
    before = _measured(data["results"][BENCHMARK], data["result_columns"])
    assert len(before) == 2  # one variant, both frameworks
    # Contact 2: a fresh device copy of the same commit, the first contact's tarball unpacked into it (not committed).
    second_copy = device_copy(src, tmp_path / "device2", tuple(carry))
    _unpack(tmp_path / "out1" / "results.tar.gz", second_copy)
    second = _contact(second_copy, env, tmp_path / "out2", TVT_PREFLIGHT_S="10")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-2000:]
    assert f"resuming: {result_name} holds this commit's earlier results" in second.stdout
    assert "2 of 4 held" in second.stdout and f"== chunk {CHUNK} " in second.stdout
    assert f"== chunk {CHUNK}.1 " not in second.stdout  # nothing the first contact completed runs again
    assert "plan of the quick profile" in second.stdout and (tmp_path / "out2" / "preflight.json").is_file()
    brought = sorted(p.name for p in (tmp_path / "out2").iterdir())
    assert all((tmp_path / "out2" / n).is_file() for n in brought) and len(brought) <= 8, brought
    # Nothing lost: one file for the commit, holding contact 1's values unchanged beside contact 2's.
    merged_dir = tmp_path / "merged"
    names = _unpack(tmp_path / "out2" / "results.tar.gz", merged_dir)
    assert result_name in names
    merged = json.loads((merged_dir / result_name).read_text())
    after = _measured(merged["results"][BENCHMARK], merged["result_columns"])
    assert {i: after.get(i) for i in before} == before
    assert len(after) == 4
    # The report and the dashboard render the merged results.
    (merged_dir / "results" / "benchmarks.json").write_text((tmp_path / "out2" / "benchmarks.json").read_text())
    tvt = str(second_copy / ".venv" / "bin" / "tape-vs-trace")
    report = subprocess.run([tvt, "report", "--results", str(merged_dir / "results"), "--out", str(tmp_path / "rep")],
                            cwd=second_copy, capture_output=True, text=True, env=env, timeout=600)
    assert report.returncode == 0, report.stdout[-2000:] + report.stderr[-2000:]
    assert machine in (tmp_path / "rep" / "summary.md").read_text()
    assert "swiglu" in (tmp_path / "rep" / machine / "summary.md").read_text()  # the machine's own page
    publish = subprocess.run([tvt, "publish", "--results", str(merged_dir / "results"), "--out",
                              str(tmp_path / "html")], cwd=second_copy, capture_output=True, text=True, env=env,
                             timeout=600)
    assert publish.returncode == 0, publish.stdout[-2000:] + publish.stderr[-2000:]
    assert (tmp_path / "html" / "index.html").is_file()
