"""asv result-file surgery for `make bench`: machine paths out, this run's host record in, and a second run of the
same commit merged into the first without losing a value or its provenance."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tape_vs_trace import host_check, machine

ENV_NAME = "existing-venv"


def _python_version(value: str) -> str:
    """'3.11' for an interpreter path asv recorded (asking that interpreter), the value itself otherwise."""
    if "/" not in value:
        return value
    try:
        return subprocess.run([value, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _calibration() -> dict | None:
    """This run's calibration: the file named by TVT_CALIBRATION (what make bench gives scrub-results), else
    .asv/calibration.json; None when there is none or it is unreadable (the record then says so)."""
    path = Path(os.environ.get("TVT_CALIBRATION") or ".asv/calibration.json")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_details() -> dict:
    """The "tape_vs_trace" entry of a fresh result file: the host's fingerprint and the run's calibration."""
    info = machine.details()
    info["calibration"] = _calibration()
    return info


def _failed(value: object) -> bool:
    return value is None


def _merge_entry(previous: list, entry: list, columns: list[str]) -> list | None:
    """`entry` with the old values put back where it failed (null) and `previous` measured; None where there is
    nothing to put back or the two entries' positions mean different things."""
    # Elementwise only for the same parameter grid and benchmark version: otherwise positions mean other things.
    if previous[1:3] != entry[1:3] or not isinstance(entry[0], list) or not isinstance(previous[0], list):
        return None
    keep = [_failed(a) and not _failed(b) for a, b in zip(entry[0], previous[0])]
    if not any(keep):
        return None
    combined = list(entry)
    for i, (column, value) in enumerate(zip(columns, entry)):
        if isinstance(value, list) and column not in ("params",) and i < len(previous) \
                and isinstance(previous[i], list) and len(value) == len(keep) == len(previous[i]):
            combined[i] = [p if k else v for v, p, k in zip(value, previous[i], keep)]
    return combined


def merge_results(old: dict, new: dict) -> tuple[dict, list[str]]:
    """`new` (a later run of the same commit and environment) laid over `old`: a benchmark the new run measured
    takes the new values; one it did not run keeps the old ones; where the new run failed a parameter combination
    (null) that the old run measured, the old value stays. Returns the merged data and the benchmarks whose values
    (some or all) still come from `old`."""
    merged = dict(new)
    merged["results"] = dict(old.get("results", {}))
    merged["durations"] = {**old.get("durations", {}), **new.get("durations", {})}
    kept_old = [name for name in merged["results"] if name not in new.get("results", {})]
    columns = new.get("result_columns", [])
    same_columns = columns == old.get("result_columns")
    for name, entry in new.get("results", {}).items():
        previous = merged["results"].get(name)
        combined = None
        if previous is not None and same_columns and len(columns) >= 3:
            combined = _merge_entry(previous, entry, columns)
        merged["results"][name] = entry if combined is None else combined
        if combined is not None:
            kept_old.append(name)
    return merged, sorted(kept_old)


def _merge_into(target: Path, data: dict) -> dict:
    """`data` merged into the result file `target` already holds, the older run's record kept where its values
    are."""
    old = json.loads(target.read_text())
    data, kept = merge_results(old, data)
    earlier = old.get("tape_vs_trace", {})
    runs = earlier.pop("earlier_runs", [])
    ours = data["tape_vs_trace"]
    # Chunks of one run (gpu_bench.sh scrubs after each) share a record: keep one, not one per chunk.
    same_run = earlier.get("calibration") == ours.get("calibration") and host_check.same_host(earlier, ours)[0]
    if kept and not same_run:
        runs.append({**earlier, "benchmarks_kept": kept})
    data["tape_vs_trace"]["earlier_runs"] = runs
    data["tape_vs_trace"]["runner_of"] = {**earlier.get("runner_of", {}), **ours.get("runner_of", {})}
    return data


def scrub_results(results: Path) -> list[Path]:
    """Remove the machine's paths from asv result files, and record the machine details that are no series key.

    asv names an `existing` environment `existing-py_<path of python>`, in the result file's name and in its JSON,
    and records the interpreter's path as `python`: committed results must not carry the path of the machine that
    produced them. The environment becomes `existing-venv` and `python` the interpreter's version. Files renamed
    now come from a run on this machine: they also get its fingerprint and the run's calibration under
    "tape_vs_trace", which asv ignores and the report prints.

    Safe to run twice and after a second run of the same commit: a fresh file whose scrubbed name exists already
    is merged into it (`merge_results`); an older run's record (another fingerprint or calibration) moves to
    "tape_vs_trace"["earlier_runs"] with the benchmarks whose values still come from it, so no saved value is lost
    and none loses its provenance.
    """
    changed = []
    for path in sorted(p for p in results.glob("*/*.json") if p.name != "machine.json"):
        data = json.loads(path.read_text())
        fresh = "-existing-py_" in path.name
        if not fresh and "/" not in str(data.get("python", "")):
            continue
        data["env_name"] = ENV_NAME if fresh else data["env_name"]
        data["python"] = _python_version(str(data.get("python", "")))
        data.setdefault("params", {})["python"] = data["python"]
        if fresh:
            ours = data.get("tape_vs_trace", {})
            # Which runner measured each benchmark: tape-vs-trace run says so in its file; asv run's files say nothing.
            runner = ours.pop("runner", "asv")
            data["tape_vs_trace"] = {**ours, **run_details(),
                                     "runner_of": {name: runner for name in data.get("results", {})}}
        target = path.with_name(f"{path.name.split('-existing-py_', 1)[0]}-{ENV_NAME}.json") if fresh else path
        if fresh and target.exists():
            data = _merge_into(target, data)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
        os.replace(tmp, target)
        if target != path:
            path.unlink()
        changed.append(target)
    return changed
