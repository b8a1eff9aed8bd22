"""What a machine's result file for this commit already holds, combination by combination, so that a GPU contact
runs only what is missing (scripts/gpu_chunks.py plan --results FILE). Plain Python: it reads asv's JSON.

A combination counts as done when its file holds a value for it (a count) or samples of at least the rounds its
chunk asks for (a time: `rounds x repeat` samples); one that failed at this commit (null) is done too, and named,
as a rerun on the same code fails again. NaN is asv's "not run" (or n/a): such a combination is still to run.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path


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
        data = json.loads(Path(path).read_text())
        columns = data["result_columns"]
        found: dict[str, State] = {}
        for name, entry in data["results"].items():
            row = dict(zip(columns, entry))
            params = row.get("params") or []
            combos = list(itertools.product(*params)) if params else [()]
            values = row["result"] if isinstance(row["result"], list) else [row["result"]]
            samples = row.get("samples") or [None] * len(combos)
            for values_of, value, kept in zip(combos, values, samples):
                full = f"{name}({', '.join(values_of)})" if values_of else name
                if value is None:
                    found[full] = State(failed=True)
                elif not (isinstance(value, float) and math.isnan(value)):
                    found[full] = State(samples=len(kept) if isinstance(kept, list) else 1, measured=True)
    except OSError as exc:
        raise ResultsError(f"cannot read result file {path}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ResultsError(f"result file {path} is not an asv result file ({type(exc).__name__}: {exc})") from None
    if commit and not str(data.get("commit_hash", "")).startswith(commit):
        raise ResultsError(f"result file {path} is of commit {str(data.get('commit_hash'))[:8]}, not {commit[:8]}")
    return found


def done(state: State | None, kind: str, samples_wanted: int) -> bool:
    """Whether a combination in `state` needs no run: failed here, or measured with the samples wanted."""
    if state is None:
        return False
    if state.failed:
        return True
    return state.measured and (kind != "time" or state.samples >= samples_wanted)
