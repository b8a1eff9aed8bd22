"""The one reader and writer of asv result files (format 2). A file's run (commit, date, environment, machine, the
runner's "tape_vs_trace" record) and, per benchmark, one Combination per parameter combination whose outcome is a
value: MEASURED (its value, quartiles, samples and their split into processes), SKIPPED, NOT_RUN or FAILED.
Benchmark results come through asv's own API (asv.results.Results); what asv drops on loading (the runner's record,
the interpreter, the requirements) from the file itself. `write` is the one change made to a file asv wrote.

What asv writes and what it means here: a number is measured; None is a failure; NaN is asv's n/a, a skip
(NotImplementedError) for a combination the run chose and "not run" for one it did not. The runner records its
choice ("chosen"); asv run's files do not, so their NaN cannot be told from a combination left out and reads as
not run, as the merge (results.merge) reads it. NaN is never a value. The merge reads and writes a benchmark's entry
per combination, by the same values as Combination.values, through results.entries.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tape_vs_trace.results import folder as results_folder
from tape_vs_trace.results.folder import ResultFileError, read_json  # the folder's one reader and error

MEASURED, SKIPPED, NOT_RUN, FAILED = "measured", "skipped", "not run", "failed"
OUTCOMES = (MEASURED, SKIPPED, NOT_RUN, FAILED)


def literal(text: str) -> Any:
    """asv stores parameter values as their repr ("'torch'"); the value itself (the text where it is no literal)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


@dataclass(frozen=True)
class Split:
    """How a benchmark's samples divide into processes: `rounds` processes of `repeat` samples each (benchmarks.json's
    rounds and repeat). asv records, with --record-samples, the samples of every round one after another."""

    rounds: int
    repeat: object  # an int K (fixed samples per process), or asv's (min, max, time) / 0 (a variable count)

    def chunks(self, samples: list[float]) -> tuple[list[list[float]] | None, str]:
        """Per-process sample lists, or None and why they cannot be told apart."""
        k = self.repeat
        if isinstance(k, int) and not isinstance(k, bool) and k > 0:
            if len(samples) % k:
                return None, f"{len(samples)} samples do not split into processes of {k}"
            return [samples[i:i + k] for i in range(0, len(samples), k)], ""
        if self.rounds <= 1:
            return [samples], ""
        return None, "repeat is not a fixed count, so samples cannot be assigned to processes"

    @classmethod
    def of(cls, meta: dict | None) -> Split:
        """The split benchmarks.json's entry `meta` declares (one process of any count where it declares none)."""
        meta = meta or {}
        return cls(meta.get("rounds") or 1, meta.get("repeat"))


@dataclass(frozen=True)
class Combination:
    """One parameter combination of one benchmark in one result file, and its outcome."""

    benchmark: str
    index: int  # its position in the benchmark's grid (asv's order, as the runner's "chosen" counts)
    values: tuple[str, ...]  # asv's repr of each parameter value, in the grid's order
    params: dict[str, Any]  # by benchmarks.json's parameter names, values as literals; {} without names
    outcome: str  # one of OUTCOMES
    value: float | None = None  # MEASURED only
    q25: float | None = None
    q75: float | None = None
    samples: list | None = None  # as recorded, every process's one after another
    split: Split = Split(1, None)

    @property
    def measured(self) -> bool:
        return self.outcome == MEASURED

    @property
    def name(self) -> str:
        """asv's name of the combination: "module.Class.method(value, ...)"."""
        return f"{self.benchmark}({', '.join(self.values)})" if self.values else self.benchmark

    def processes(self) -> tuple[list[list[float]] | None, str]:
        """The samples split into their processes, or None and why they cannot be."""
        samples = self.samples
        if not (isinstance(samples, list) and samples and all(isinstance(s, int | float) for s in samples)):
            return None, "no samples recorded (run without --record-samples)"
        return self.split.chunks(samples)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def outcome(value: object, chosen: bool | None) -> str:
    """The outcome of a combination whose value asv wrote as `value`; `chosen`: whether the run chose it (None where
    its file does not say). ValueError for a value that is none of asv's."""
    if value is None:
        return FAILED
    if isinstance(value, float) and math.isnan(value):
        return SKIPPED if chosen else NOT_RUN
    if _number(value) is None:
        raise ValueError(f"a result {value!r} is not a number")
    return MEASURED


def choice(details: dict | None) -> dict[str, list[int]] | None:
    """The combinations a run chose, per benchmark, from its file's "tape_vs_trace" record `details`; None where the
    file does not say (asv run's)."""
    chosen = (details or {}).get("chosen")
    return chosen if isinstance(chosen, dict) else None


def attempted(value: object) -> bool:
    """Whether a run tried the combination whose value it wrote as `value`: measured or failed (not asv's NaN)."""
    return outcome(value, None) in (MEASURED, FAILED)


@dataclass
class ResultFile:
    """One asv result file: its run's fields and its benchmarks' combinations."""

    path: Path
    results: Any  # asv.results.Results
    python: str = ""
    requirements: dict = field(default_factory=dict)
    details: dict | None = None  # the runner's "tape_vs_trace" record; None in asv run's files

    @property
    def commit(self) -> str:
        return str(self.results.commit_hash)

    @property
    def date(self) -> int:
        """The commit's date as asv records it (ms since the epoch)."""
        return self.results.date

    @property
    def env(self) -> str:
        return str(self.results.env_name or "")

    @property
    def run(self) -> dict:
        """asv's run parameters (machine, cpu, device, versions...)."""
        return self.results.params or {}

    @property
    def machine(self) -> str:
        return str(self.run.get("machine", ""))

    @property
    def benchmarks(self) -> list[str]:
        """The benchmarks the file holds, in its order."""
        return list(self.results.get_all_result_keys())

    def drawn(self, benchmarks: dict) -> set[str]:
        """The benchmarks of the file that asv publish draws: benchmarks.json (`benchmarks`) lists them, and at the
        version the file holds (asv's Results.get_result_keys)."""
        return set(self.results.get_result_keys(benchmarks))

    def version(self, name: str) -> str | None:
        return self.results.benchmark_version.get(name)

    def started_at(self, name: str) -> float | None:
        return self.results.started_at.get(name)

    def grid(self, name: str) -> list[list[str]]:
        """The parameter values (asv's reprs) of benchmark `name`, one list per parameter."""
        return self.results.get_result_params(name) or []

    def chosen(self, name: str) -> set[int] | None:
        """The combinations of `name` the run chose; None where the file does not say (asv run's)."""
        chosen = choice(self.details)
        return None if chosen is None else set(chosen.get(name) or [])

    def combinations(self, name: str, meta: dict | None = None) -> list[Combination]:
        """Every combination of benchmark `name`, named by benchmarks.json's entry `meta` (its param_names, rounds and
        repeat) where it has one with as many names as the file's grid has parameters."""
        grid = self.grid(name)
        combos = list(itertools.product(*grid))
        values = self.results.get_result_value(name, grid)
        stats = self.results.get_result_stats(name, grid)
        samples = self.results.get_result_samples(name, grid)
        names = (meta or {}).get("param_names", [])
        names = names if len(names) == len(grid) else []
        chosen, split = self.chosen(name), Split.of(meta)
        out = []
        for i, (combo, value, stat, kept) in enumerate(zip(combos, values, stats, samples)):
            state = outcome(value, None if chosen is None else i in chosen)
            stat = stat or {}
            out.append(Combination(name, i, tuple(combo), {k: literal(v) for k, v in zip(names, combo)}, state,
                                   _number(value) if state == MEASURED else None, _number(stat.get("q_25")),
                                   _number(stat.get("q_75")), kept, split))
        return out

    def records(self, benchmarks: dict) -> Iterator[Combination]:
        """Every combination of every benchmark the file holds that benchmarks.json (`benchmarks`) lists with the
        same number of parameters; the others are left out (`unlisted`)."""
        for name in self.benchmarks:
            if name in benchmarks and len(benchmarks[name].get("param_names", [])) == len(self.grid(name)):
                yield from self.combinations(name, benchmarks[name])

    def unlisted(self, benchmarks: dict) -> tuple[list[str], list[str]]:
        """The benchmarks `records` leaves out: those benchmarks.json no longer has, and those it lists with
        another number of parameters."""
        gone = [name for name in self.benchmarks if name not in benchmarks]
        reshaped = [name for name in self.benchmarks if name in benchmarks
                    and len(benchmarks[name].get("param_names", [])) != len(self.grid(name))]
        return gone, reshaped


def read(path: Path) -> ResultFile:
    """The result file at `path`; ResultFileError (one line) where it is unreadable or no asv result file."""
    from asv import util
    from asv.results import Results

    path = Path(path)
    data = read_json(path)
    try:
        results = Results.load(str(path))
    except util.UserError as exc:
        raise ResultFileError(f"{path}: not an asv result file ({str(exc).splitlines()[0]})") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ResultFileError(f"{path}: not an asv result file ({exc.__class__.__name__}: {exc})") from None
    details = data.get("tape_vs_trace")
    return ResultFile(path, results, str(data.get("python", "")), data.get("requirements") or {},
                      details if isinstance(details, dict) else None)


def write(path: Path, dest: Path | None = None, *, machine: str | None = None, record: dict | None = None) -> Path:
    """The one writer: the result file at `path` written again to `dest` (in place where None) with its run's
    machine renamed and/or the runner's "tape_vs_trace" record set, every other field as it was; the path written."""
    data = read_json(path)
    if machine is not None:
        data["params"] = {**(data.get("params") or {}), "machine": machine}
    if record is not None:
        data["tape_vs_trace"] = record
    dest = Path(path if dest is None else dest)
    dest.write_text(json.dumps(data))
    return dest


def result_files(folder: Path) -> Iterator[Path]:
    """The result files of a machine folder (every JSON file but its machine record), in name order."""
    return results_folder.result_files(folder)
