"""What a machine's result file for this commit already holds, combination by combination, so that a GPU contact
runs only what is missing (scripts/gpu_chunks.py plan --results FILE), read through tape_vs_trace.results.asv_files.

A combination counts as done when its file holds a value for it (a count) or samples of at least the rounds its
chunk asks for (a time: `rounds x repeat` samples; fewer are still to run, and the runner's --extend adds only the
rounds missing). One that failed at this commit is tried once more (a first GPU run's failure may be a one-off: an
out-of-memory beside another process, a compiler crash) and done after its second failure, both errors kept in the
file's record ("failures") and named in the plan. One skipped or not run (asv's NaN) is still to run.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tape_vs_trace.results import asv_files  # noqa: E402


class ResultsError(Exception):
    """A result file that cannot be read: one line on stderr."""


RETRIES = 1  # a combination that failed is run again this many times before it is left out at this commit


@dataclass(frozen=True)
class State:
    failed: bool = False
    samples: int = 0  # samples held (a time); a count's value counts as one
    measured: bool = False
    errors: tuple[str, ...] = ()  # every run's error, oldest first, where it failed


def _errors(details: dict | None, combo: str) -> tuple[str, ...]:
    entries = ((details or {}).get("failures") or {}).get(combo, [])
    return tuple(map(str, (e.get("error", "") for e in entries)))


def read(path: Path | None, commit: str | None = None) -> dict[str, State]:
    """asv name `module.Class.method(param, ...)` -> State of every combination the file at `path` holds a value,
    samples or a failure for; {} where there is no file. A file of another commit than `commit` is an error."""
    if path is None or not Path(path).exists():
        return {}
    try:
        file = asv_files.read(Path(path))
        found: dict[str, State] = {}
        for name in file.benchmarks:
            for c in file.combinations(name):
                if c.outcome == asv_files.FAILED:
                    # A file of before the record of failures holds one failure: its own.
                    found[c.name] = State(failed=True, errors=_errors(file.details, f"{name}-{c.index}") or ("",))
                elif c.measured:
                    found[c.name] = State(samples=len(c.samples) if isinstance(c.samples, list) else 1, measured=True)
    except asv_files.ResultFileError as exc:
        raise ResultsError(f"result file {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ResultsError(f"result file {path} is not an asv result file ({type(exc).__name__}: {exc})") from None
    if commit and not file.commit.startswith(commit):
        raise ResultsError(f"result file {path} is of commit {file.commit[:8]}, not {commit[:8]}")
    return found


def done(state: State | None, kind: str, samples_wanted: int) -> bool:
    """Whether a combination in `state` needs no run: failed here more than RETRIES times, or measured with the
    samples wanted."""
    if state is None:
        return False
    if state.failed:
        return len(state.errors) > RETRIES
    return state.measured and (kind != "time" or state.samples >= samples_wanted)
