"""asv results folder -> one tidy table, one row per (result file, benchmark, parameter combination), and the
readers of the CSV files beside it (results/saved, paired, distributed).

Each result file's rows are report.rows': what a metric means (unit, sampled or exact, comparable across frameworks)
comes from implementations.metrics, how peak memory is measured from implementations.frameworks: nothing is guessed
from a unit string.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from implementations import metrics
from tape_vs_trace.progress import Step, quiet
from tape_vs_trace.report import roofline
from tape_vs_trace.report.rows import Meanings, Stale, Warn, program_label, program_name, result_rows
from tape_vs_trace.results import asv_files
from tape_vs_trace.results.asv_files import literal
from tape_vs_trace.results.folder import ResultsFolder

# read through this module by the report, cite and the side readers (the rows themselves are report.rows')
__all__ = ["COLUMNS", "Meanings", "ReportError", "Results", "Warn", "literal", "load_results", "machine_folders",
           "program_label", "program_name"]

COLUMNS = ["pillar", "workload", "size", "variant", "program", "framework", "metric", "unit", "value", "spread", "q25",
           "q75", "ci_low", "ci_high", "processes", "samples", "basis", "method", "process_medians", "sampled",
           "comparable", "type", "params", "benchmark", "benchmark_version", "commit", "date", "run_date", "env",
           "machine", "device", "torch_version", "jax_version", "dtype", "precision", "memory_method", "status", "file"]


class ReportError(Exception):
    """Nothing can be reported; the message is one line for the user."""


@dataclass
class Results:
    """The tidy table plus what the provenance header needs beyond it."""

    table: pd.DataFrame
    machines: dict[str, dict] = field(default_factory=dict)  # machine name -> machine.json
    details: dict[tuple[str, str], dict] = field(default_factory=dict)  # (machine, commit) -> "tape_vs_trace" key
    python: dict[tuple[str, str], str] = field(default_factory=dict)  # (machine, commit) -> interpreter
    skipped: pd.DataFrame = field(default_factory=pd.DataFrame)  # combinations skipped or not run (no value)
    benchmarks: dict = field(default_factory=dict)  # benchmarks.json
    saved: dict[str, pd.DataFrame] = field(default_factory=dict)  # machine -> saved-bytes breakdown (results/saved)
    paired: dict[str, pd.DataFrame] = field(default_factory=dict)  # machine -> paired results (results/paired)
    distributed: dict[str, pd.DataFrame] = field(default_factory=dict)  # machine -> results/distributed
    files: int = 0


def _read(read: Callable[..., dict], *args: object) -> dict:
    try:
        return read(*args)
    except asv_files.ResultFileError as exc:
        raise ReportError(str(exc)) from None


def machine_folders(results: Path) -> list[Path]:
    """Every folder of `results` that asv made for a machine (it holds machine.json); report/ never does."""
    return ResultsFolder(results).record_folders()


def load_results(results: Path, warn: Warn, verbose: bool = False, step: Step = quiet) -> Results:
    """Read every machine folder and result file of an asv results folder into one tidy table. What older result
    files hold that the suite no longer has is one warning (`verbose`: one per file); `step` hears each machine."""
    if not results.exists():
        raise ReportError(f"results folder {results} does not exist")
    if not results.is_dir():
        raise ReportError(f"{results} is not a folder")
    machines = machine_folders(results)
    if not machines:
        raise ReportError(f"no asv results in {results}: no machine folder with a machine.json (run `make bench`)")
    folder = ResultsFolder(results)
    if not folder.has_benchmarks():
        raise ReportError(f"{folder.benchmarks_path} is missing: asv writes it beside the machine folders, and the "
                          "report needs its parameter names, units, rounds and repeat")
    benchmarks = _read(folder.benchmarks)
    meanings = Meanings(warn)
    out = Results(pd.DataFrame(columns=COLUMNS), benchmarks=benchmarks)
    rows: list[dict] = []
    skipped: list[dict] = []
    stale = Stale()
    seen = 0
    for folder in machines:
        try:
            machine = _read(ResultsFolder(results).read_machine_record, folder)
        except ReportError as exc:
            warn(f"skipped machine folder {folder.name}: {exc}")
            continue
        paths = list(asv_files.result_files(folder))
        step(f"reading the {len(paths)} result file(s) of {folder.name}")
        for path in paths:
            seen += 1
            try:
                file = asv_files.read(path)
                new, skips = result_rows(file, benchmarks, machine, folder.name, meanings, stale)
            except asv_files.ResultFileError as exc:
                warn(f"skipped {exc}")
                continue
            except (KeyError, TypeError, IndexError, ValueError) as exc:
                warn(f"skipped {path}: not an asv result file ({exc.__class__.__name__}: {exc})")
                continue
            out.files += 1
            rows.extend(new)
            skipped.extend(skips)
            key = (folder.name, file.commit)
            out.machines[folder.name] = machine
            # asv's `existing` environment records the interpreter's path as its python: keep no machine path.
            python = file.python
            out.python[key] = "/".join(Path(python).parts[-3:]) if "/" in python else python
            if file.details is not None:
                out.details[key] = file.details
    if not rows:
        found = f"{seen} result file(s), none readable" if seen else "no result files"
        raise ReportError(f"no benchmark results in {results} ({found})")
    rows.extend(_derived(out, pd.DataFrame(rows, columns=COLUMNS), stale.no_roofline.append))
    for line in stale.lines(results, verbose):
        warn(line)
    out.table = pd.DataFrame(rows, columns=COLUMNS).astype({"processes": "Int64", "samples": "Int64"})
    out.skipped = pd.DataFrame(skipped, columns=COLUMNS)
    return out


def _derived(out: Results, table: pd.DataFrame, warn: Warn) -> list[dict]:
    """The rows the report derives from measured ones (the roofline), each under a benchmark name of its own whose
    parameters are its source's (benchmarks.json's entry copied, with `derived_from`: cite and the dashboard anchor
    read them)."""
    rows = roofline.derive(table, out.details, warn)
    for workload in roofline.WORKLOADS:
        source = out.benchmarks.get(roofline.source(workload))
        if source is not None and any(r["benchmark"] == roofline.name(workload) for r in rows):
            out.benchmarks[roofline.name(workload)] = {**source, "name": roofline.name(workload), "type": "derived",
                                                       "unit": metrics.get(roofline.METRIC).unit,
                                                       "derived_from": roofline.source(workload)}
    return rows
