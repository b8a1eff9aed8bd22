"""This run's record for `make bench`'s result files (host fingerprint, calibration, interpreter version); the
scrubbing, merging and writing of the files is results.merge's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tape_vs_trace.results import machine, merge

ENV_NAME = merge.ENV_NAME


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


def scrub_results(results: Path) -> list[Path]:
    """The result files under `results` scrubbed, fresh ones given this run's record and merged into the commit's
    file (merge.scrub); the files written."""
    return merge.scrub(results, _python_version, run_details)
