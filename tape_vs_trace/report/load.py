"""asv results folder -> one tidy table, one row per (result file, benchmark, parameter combination).

What a metric means (unit, sampled or exact, comparable across frameworks) comes from implementations.metrics, how
peak memory is measured from implementations.frameworks: nothing is guessed from a unit string.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from implementations import frameworks, metrics, pillars, workloads
from tape_vs_trace.progress import Step, quiet
from tape_vs_trace.report import roofline, stats


def variant_name(pillar: str, params: dict) -> str:
    """The row's variant: the values of its pillar's axes, joined with "/" in the registry's order ("plain/eager");
    a pillar the registry does not know joins every parameter beyond the standard ones. A workload without a loop
    names no formulation (workloads.formulation_in): "eager" for the mlp, "eager/unrolled" for the transformer."""
    known = pillars.PILLARS.get(pillar)
    axes = known.axes if known else [k for k in params if k not in pillars.BASE_PARAMS + pillars.PROGRAM_PARAMS]
    return "/".join(str(params[k]) for k in axes
                    if k in params and not (k == "formulation" and workloads.formulation_in(params[k]) is None))


def program_name(params: dict) -> str:
    """The row's program (workloads.STYLES, ATTENTIONS): its style and attention joined with "/" ("matched/fused"),
    as far as it has them; "" for a workload without either axis."""
    return "/".join(str(params[k]) for k in pillars.PROGRAM_PARAMS if k in params)


def program_label(program: str) -> str:
    """A program as a reader reads it: "matched style, fused attention"."""
    words = ("style", "attention")
    return ", ".join(f"{v} {w}" for v, w in zip(program.split("/"), words) if v) if program else ""


COLUMNS = ["pillar", "workload", "size", "variant", "program", "framework", "metric", "unit", "value", "spread", "q25",
           "q75", "ci_low", "ci_high", "processes", "samples", "basis", "method", "process_medians", "sampled",
           "comparable", "type", "params", "benchmark", "benchmark_version", "commit", "date", "run_date", "env",
           "machine", "device", "torch_version", "jax_version", "dtype", "precision", "memory_method", "status", "file"]

Warn = Callable[[str], None]


class ReportError(Exception):
    """Nothing can be reported; the message is one line for the user."""


@dataclass
class Results:
    """The tidy table plus what the provenance header needs beyond it."""

    table: pd.DataFrame
    machines: dict[str, dict] = field(default_factory=dict)  # machine name -> machine.json
    details: dict[tuple[str, str], dict] = field(default_factory=dict)  # (machine, commit) -> "tape_vs_trace" key
    python: dict[tuple[str, str], str] = field(default_factory=dict)  # (machine, commit) -> interpreter
    skipped: pd.DataFrame = field(default_factory=pd.DataFrame)  # asv's NaN: combinations the benchmark skipped
    benchmarks: dict = field(default_factory=dict)  # benchmarks.json
    saved: dict[str, pd.DataFrame] = field(default_factory=dict)  # machine -> saved-bytes breakdown (results/saved)
    paired: dict[str, pd.DataFrame] = field(default_factory=dict)  # machine -> paired results (results/paired)
    distributed: dict[str, pd.DataFrame] = field(default_factory=dict)  # machine -> results/distributed
    files: int = 0


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot be read ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a JSON object")
    return data


def literal(text: str):
    """asv stores parameter values as their repr ("'torch'"); the report wants the value."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _utc(ms: float | None) -> str:
    return "" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class Meanings:
    """The registry's meaning of each metric; a name the registry does not know (an old result) is sampled when asv
    timed it and exact otherwise, never comparable, and warned about once."""

    def __init__(self, warn: Warn):
        self.warn, self.unknown = warn, set()

    def __call__(self, metric: str, kind: str) -> tuple[bool, bool]:
        if metric in metrics.METRICS:
            m = metrics.METRICS[metric]
            return m.sampled, m.comparable
        if metric not in self.unknown:
            self.unknown.add(metric)
            self.warn(f"metric {metric} is not in implementations.metrics: read as "
                      f"{'sampled' if kind == 'time' else 'exact'} (asv type {kind or '?'}), no ratio")
        return kind == "time", False


def machine_folders(results: Path) -> list[Path]:
    """Every folder of `results` that asv made for a machine (it holds machine.json); report/ never does."""
    return [d for d in sorted(results.iterdir())
            if d.is_dir() and d.name != "report" and (d / "machine.json").is_file()]


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
    benchmarks_json = results / "benchmarks.json"
    if not benchmarks_json.is_file():
        raise ReportError(f"{benchmarks_json} is missing: asv writes it beside the machine folders, and the report "
                          "needs its parameter names, units, rounds and repeat")
    benchmarks = _read_json(benchmarks_json)
    meanings = Meanings(warn)
    out = Results(pd.DataFrame(columns=COLUMNS), benchmarks=benchmarks)
    rows: list[dict] = []
    skipped: list[dict] = []
    stale = Stale()
    seen = 0
    for folder in machines:
        try:
            machine = _read_json(folder / "machine.json")
        except ReportError as exc:
            warn(f"skipped machine folder {folder.name}: {exc}")
            continue
        paths = [p for p in sorted(folder.glob("*.json")) if p.name != "machine.json"]
        step(f"reading the {len(paths)} result file(s) of {folder.name}")
        for path in paths:
            seen += 1
            try:
                data = _read_json(path)
                new, skips = _result_rows(data, benchmarks, machine, folder.name, meanings, warn, path, stale)
            except ReportError as exc:
                warn(f"skipped {exc}")
                continue
            except (KeyError, TypeError, IndexError, ValueError) as exc:
                warn(f"skipped {path}: not an asv result file ({exc.__class__.__name__}: {exc})")
                continue
            out.files += 1
            rows.extend(new)
            skipped.extend(skips)
            key = (folder.name, data["commit_hash"])
            out.machines[folder.name] = machine
            # asv's `existing` environment records the interpreter's path as its python: keep no machine path.
            python = str(data.get("python", ""))
            out.python[key] = "/".join(Path(python).parts[-3:]) if "/" in python else python
            if isinstance(data.get("tape_vs_trace"), dict):
                out.details[key] = data["tape_vs_trace"]
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


def read_side_csv(path: Path, fields: tuple[str, ...]) -> pd.DataFrame:
    """A CSV written beside the asv results (results/saved, results/paired), as strings, checked for what every such
    file must have: its columns, at least one row, one commit. ValueError with the reason otherwise."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in fields if c not in table.columns]
    if missing:
        raise ValueError(f"no column {', '.join(missing)}")
    if table.empty:
        raise ValueError("no rows")
    if table.commit.nunique() != 1:
        raise ValueError("rows of several commits")
    return table


SIDE_FILE = re.compile(r"(.+)-([0-9a-f]{8})")  # <machine>-<commit8>.csv


def side_files(folder: Path, what: str, read: Callable[[Path], pd.DataFrame],
               warn: Warn) -> Iterator[tuple[str, Path, pd.DataFrame]]:
    """(machine, path, table) of every readable <machine>-<commit8>.csv in `folder`, in name order; a file named
    otherwise or unreadable by `read` is skipped with a one-line warning that names `what` it holds."""
    for path in sorted(folder.glob("*.csv")):
        name = SIDE_FILE.fullmatch(path.stem)
        if name is None:
            warn(f"skipped the {what} {path}: not named <machine>-<commit8>.csv")
            continue
        try:
            data = read(path)
        except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            warn(f"skipped the {what} {path}: {exc}")
            continue
        yield name.group(1), path, data


def _file_columns(data: dict, machine: dict, machine_name: str, path: Path) -> dict:
    """The columns every row of one result file shares: its commit, run, environment, machine and versions."""
    run = data.get("params") or {}
    # An asv environment with a version matrix (asv.matrix.conf.json) records the versions it installed; the
    # machine record has those of .venv.
    requirements = data.get("requirements") or {}
    versions = {fw: str(requirements.get(fw) or machine.get(fw) or run.get(fw) or "") for fw in frameworks.NAMES}
    return {"commit": str(data["commit_hash"]), "date": _utc(data["date"]), "env": str(data.get("env_name", "")),
            "machine": machine_name, "device": str(machine.get("device") or run.get("device") or ""),
            "torch_version": versions["torch"], "jax_version": versions["jax"], "file": path.name}


@dataclass
class Stale:
    """What result files ("machine/file") hold that the report cannot use: results of benchmarks the suite has
    dropped or re-parametrised since they ran (skipped), and steps without a roofline (roofline.derive's line per
    file). Every cite and report reads every older file, so by default this is one line, not one per file."""

    gone: dict[str, list[str]] = field(default_factory=dict)
    reshaped: dict[str, list[str]] = field(default_factory=dict)
    no_roofline: list[str] = field(default_factory=list)

    def lines(self, results: Path, verbose: bool) -> list[str]:
        """The warnings about the results folder `results`: one line summing up, or (`verbose`) one per file."""
        gone = {f: names for f, names in self.gone.items() if names}
        files = sorted(set(gone) | set(self.reshaped))
        if verbose:
            return [f"{results.as_posix()}/{line}" for line in [
                *(_skipped(f, gone.get(f, []), self.reshaped.get(f, [])) for f in files), *self.no_roofline]]
        parts = []
        if files:
            names = {n for v in [*gone.values(), *self.reshaped.values()] for n in v}
            parts.append(f"{len(files)} older result file(s) in {results} hold {len(names)} benchmark(s) no longer in "
                         "the suite or with other parameters (skipped)")
        if self.no_roofline:
            parts.append(f"{len(self.no_roofline)} result file(s){'' if files else f' in {results}'} give no "
                         f"{roofline.METRIC} (no calibration or matmul flops count recorded)")
        return ["; ".join(parts) + "; --verbose lists them by file"] if parts else []


def _skipped(file: str, gone: list[str], reshaped: list[str]) -> str:
    """The verbose line of one result file's skipped benchmarks."""
    parts = [f"{len(gone)} benchmark(s) no longer in the suite ({', '.join(sorted(gone))})"] if gone else []
    if reshaped:
        parts.append(f"{len(reshaped)} with other parameters than benchmarks.json lists "
                     f"({', '.join(sorted(reshaped))})")
    return f"{file}: skipped " + "; ".join(parts)


def _result_rows(data: dict, benchmarks: dict, machine: dict, machine_name: str, meanings: Meanings, warn: Warn,
                 path: Path, stale: Stale | None = None) -> tuple[list[dict], list[dict]]:
    """The rows of one asv result file (format version 2: positional columns named by result_columns), and the
    combinations asv skipped (NaN)."""
    columns = {name: i for i, name in enumerate(data["result_columns"])}
    shared = _file_columns(data, machine, machine_name, path)
    rows, skips = [], []
    stale = stale if stale is not None else Stale()
    stale.gone[f"{machine_name}/{path.name}"] = [name for name in data["results"] if name not in benchmarks]
    for name, entry in data["results"].items():
        if name.split(".")[1].split("_")[0] in pillars.PAIRED_FAMILIES:
            continue  # the paired section reports these, divided pass by pass (results/paired)
        if name in benchmarks:
            def column(key: str, entry=entry):
                i = columns.get(key)
                return entry[i] if i is not None and i < len(entry) else None

            found, skipped = _benchmark_rows(name, benchmarks[name], column, shared, meanings, warn, stale)
            rows += found
            skips += skipped
    return rows, skips


def _benchmark_rows(name: str, meta: dict, column: Callable[[str], object], shared: dict, meanings: Meanings,
                    warn: Warn, stale: Stale | None = None) -> tuple[list[dict], list[dict]]:
    """The rows of one benchmark of a result file, one per parameter combination, and the combinations skipped."""
    names = meta.get("param_names", [])
    params = column("params") or []
    if len(names) != len(params):
        if stale is None:
            warn(f"{shared['file']}: {name} has {len(params)} parameters, benchmarks.json names {len(names)}; skipped")
        else:
            stale.reshaped.setdefault(f"{shared['machine']}/{shared['file']}", []).append(name)
        return [], []
    combos = list(itertools.product(*params)) if params else [()]
    n = len(combos)
    values = column("result")
    values = values if isinstance(values, list) else [values] * n
    q25s, q75s = column("stats_q_25") or [None] * n, column("stats_q_75") or [None] * n
    all_samples = column("samples") or [None] * n
    pillar, cls, metric = name.split(".")[0], name.split(".")[1], name.split(".")[-1]
    kind = meta.get("type", "")
    sampled, comparable = meanings(metric, kind)
    split = stats.Split(meta.get("rounds") or 1, meta.get("repeat"))
    rows, skips = [], []
    for combo, value, q25, q75, samples in zip(combos, values, q25s, q75s, all_samples):
        p = {k: literal(v) for k, v in zip(names, combo)}
        framework = str(p.get("framework", ""))
        device_kind = str(p.get("device") or ("cpu" if shared["device"] == "cpu" else "cuda"))
        row = shared | {
            "pillar": pillar,
            "workload": str(p.get("workload") or (cls.rsplit("_", 1)[1] if "_" in cls else cls.lower())),
            "size": str(p.get("size", "")),
            "variant": variant_name(pillar, p),
            "program": program_name(p),
            "framework": framework, "metric": metric, "unit": meta.get("unit", ""),
            "sampled": sampled, "comparable": comparable, "type": kind,
            "params": json.dumps(p, separators=(",", ":")), "benchmark": name,
            "benchmark_version": str(column("version") or meta.get("version") or ""),
            "run_date": _utc(column("started_at")),
            "dtype": str(p.get("dtype", "")), "precision": str(p.get("precision", "")),
            "method": "",  # how a derived row was computed (the roofline); measured rows: asv's columns
            "memory_method": _memory_method(framework, device_kind, metric),
        }
        if isinstance(value, float) and math.isnan(value):
            skips.append(row | {"status": "not run"})  # asv: the benchmark raised NotImplementedError
            continue
        row.update(stats.summarise(value, q25, q75, samples, sampled, split))
        if sampled and kind != "time" and row["status"] == "ok":
            # a track_ benchmark returns one number per process and asv runs it once: no spread to show
            row.update(basis="one process", processes=1, samples=1)
        rows.append(row)
    return rows, skips


def _memory_method(framework: str, device: str, metric: str) -> str:
    """How a memory row was measured ('' for other metrics): the peak's method, or the workspace's inside it."""
    read = {"track_peak_bytes": frameworks.memory_method, "track_workspace_bytes": frameworks.workspace_method}
    if metric not in read:
        return ""
    return read[metric](framework, device) if framework in frameworks.FRAMEWORKS else "unknown"
