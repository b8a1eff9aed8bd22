"""What a machine's result file for this commit already holds, combination by combination, so that a GPU contact
runs only what is missing (scripts/gpu_chunks.py plan --results FILE), read through tape_vs_trace.result_files.

A combination counts as done when its file holds a value for it (a count) or samples of at least the rounds its
chunk asks for (a time: `rounds x repeat` samples); one that failed at this commit is done too, and named, as a
rerun on the same code fails again. One skipped or not run (asv's NaN) is still to run.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tape_vs_trace import result_files  # noqa: E402


class ResultsError(Exception):
    """A result file that cannot be read: one line on stderr."""


@dataclass(frozen=True)
class State:
    failed: bool = False
    samples: int = 0  # samples held (a time); a count's value counts as one
    measured: bool = False


def read(path: Path | None, commit: str | None = None) -> dict[str, State]:
    """asv name `module.Class.method(param, ...)` -> State of every combination the file at `path` holds a value,
    samples or a failure for; {} where there is no file. A file of another commit than `commit` is an error."""
    if path is None or not Path(path).exists():
        return {}
    try:
        file = result_files.read(Path(path))
        found: dict[str, State] = {}
        for name in file.benchmarks:
            for c in file.combinations(name):
                if c.outcome == result_files.FAILED:
                    found[c.name] = State(failed=True)
                elif c.measured:
                    found[c.name] = State(samples=len(c.samples) if isinstance(c.samples, list) else 1, measured=True)
    except result_files.ResultFileError as exc:
        raise ResultsError(f"result file {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ResultsError(f"result file {path} is not an asv result file ({type(exc).__name__}: {exc})") from None
    if commit and not file.commit.startswith(commit):
        raise ResultsError(f"result file {path} is of commit {file.commit[:8]}, not {commit[:8]}")
    return found


def done(state: State | None, kind: str, samples_wanted: int) -> bool:
    """Whether a combination in `state` needs no run: failed here, or measured with the samples wanted."""
    if state is None:
        return False
    if state.failed:
        return True
    return state.measured and (kind != "time" or state.samples >= samples_wanted)
