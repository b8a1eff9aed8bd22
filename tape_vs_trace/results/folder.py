"""A results folder as every consumer reads it: its machines and their records (`<machine>/machine.json`), the
suite's `benchmarks.json`, each machine's asv result files and the side measurements' tables. The one module that
opens these files by name (tests/test_structure.py fails on another); what a result file holds is asv_files'."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MACHINE_RECORD = "machine.json"
BENCHMARKS = "benchmarks.json"
ENV_NAME = "existing-venv"  # the environment name in every result file's name (asv's existing environment)


class ResultFileError(Exception):
    """A file of the results folder is missing, unreadable or not what it should be; the message is one line."""


def read_json(path: Path) -> dict:
    """The JSON object in the file at `path` (a result file, benchmarks.json, a machine record); ResultFileError
    (one line) where it is unreadable, no JSON or no object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path}: cannot be read ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise ResultFileError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: not a JSON object")
    return data


@dataclass(frozen=True)
class ResultsFolder:
    path: Path

    def record_folders(self) -> list[Path]:
        """Every folder that holds a machine record, readable or not, in name order."""
        return sorted(record.parent for record in Path(self.path).glob(f"*/{MACHINE_RECORD}") if record.is_file())

    def read_machine_record(self, folder: Path) -> dict:
        """The machine record in `folder`; ResultFileError (one line) where it cannot be read."""
        return read_json(Path(folder) / MACHINE_RECORD)

    def machine_folders(self) -> list[tuple[Path, str]]:
        """(folder, machine name) of every folder whose machine record names its machine, in folder order; a folder
        whose record is unreadable is skipped (asv publish skips it too, and says why)."""
        found = []
        for record in sorted(Path(self.path).glob(f"*/{MACHINE_RECORD}")):
            name = _read(record).get("machine")
            if isinstance(name, str):
                found.append((record.parent, name))
        return found

    def machines(self) -> list[str]:
        return [name for _, name in self.machine_folders()]

    def machine_record(self, machine: str) -> dict:
        """`machine`'s record ({} where there is none or it cannot be read)."""
        return _read(Path(self.path) / machine / MACHINE_RECORD)

    def write_machine_record(self, machine: str, record: dict, folder: Path | None = None) -> Path:
        """Write `record` as the machine record of `machine` (into `folder` instead of this folder's own)."""
        dest = (Path(self.path) / machine if folder is None else Path(folder)) / MACHINE_RECORD
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(record, indent=4))
        return dest

    @property
    def benchmarks_path(self) -> Path:
        return Path(self.path) / BENCHMARKS

    def has_benchmarks(self) -> bool:
        return self.benchmarks_path.is_file()

    def benchmarks(self) -> dict:
        """The suite's benchmarks.json as its JSON holds it ("version" included); ResultFileError (one line) where
        it is missing or unreadable."""
        return read_json(self.benchmarks_path)

    def write_benchmarks(self, benchmarks: dict, folder: Path | None = None) -> Path:
        """Write `benchmarks` ({name: benchmark}) as asv run does (its version added)."""
        from asv import util

        dest = (Path(self.path) if folder is None else Path(folder)) / BENCHMARKS
        dest.parent.mkdir(parents=True, exist_ok=True)
        util.write_json(str(dest), benchmarks, 2)
        return dest

    def result_file(self, machine: str, commit: str) -> Path:
        """Where `tape-vs-trace run` and `make bench` keep `commit`'s results on `machine`."""
        return Path(self.path) / machine / f"{commit[:8]}-{ENV_NAME}.json"

    def result_files(self, machine: str | None = None) -> Iterator[Path]:
        """The asv result files of `machine`'s folder (every machine's, folder by folder, without one)."""
        folders = [Path(self.path) / machine] if machine else [f for f, _ in self.machine_folders()]
        for folder in folders:
            yield from (p for p in sorted(folder.glob("*.json")) if p.name != MACHINE_RECORD)


def result_files(folder: Path) -> Iterator[Path]:
    """The result files of one machine folder (every JSON file but its machine record), in name order."""
    return (p for p in sorted(Path(folder).glob("*.json")) if p.name != MACHINE_RECORD)


def _read(path: Path) -> dict:
    try:
        return read_json(path)
    except ResultFileError:
        return {}
