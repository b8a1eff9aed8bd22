"""One asv result file -> the report's rows: each benchmark's parameter combinations, named (pillar, workload,
size, variant, program), summarised (report.stats) and marked with their memory method; the combinations asv
skipped apart, and what an older file holds that the suite no longer has (Stale)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from implementations import frameworks, metrics, pillars, workloads
from tape_vs_trace.report import roofline, stats
from tape_vs_trace.results import asv_files

Warn = Callable[[str], None]


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


def _file_columns(file: asv_files.ResultFile, machine: dict, machine_name: str) -> dict:
    """The columns every row of one result file shares: its commit, run, environment, machine and versions."""
    run = file.run
    # An asv environment with a version matrix (asv.matrix.conf.json) records the versions it installed; the
    # machine record has those of .venv.
    versions = {fw: str(file.requirements.get(fw) or machine.get(fw) or run.get(fw) or "") for fw in frameworks.NAMES}
    return {"commit": file.commit, "date": _utc(file.date), "env": file.env,
            "machine": machine_name, "device": str(machine.get("device") or run.get("device") or ""),
            "torch_version": versions["torch"], "jax_version": versions["jax"], "file": file.path.name}


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


def result_rows(file: asv_files.ResultFile, benchmarks: dict, machine: dict, machine_name: str,
                meanings: Meanings, stale: Stale | None = None) -> tuple[list[dict], list[dict]]:
    """The rows of one asv result file (asv_files), and the combinations not run or skipped (asv's NaN)."""
    shared = _file_columns(file, machine, machine_name)
    rows, skips = [], []
    stale = stale if stale is not None else Stale()
    where = f"{machine_name}/{file.path.name}"
    stale.gone[where] = [name for name in file.benchmarks if name not in benchmarks]
    for name in file.benchmarks:
        if name.split(".")[1].split("_")[0] in pillars.PAIRED_FAMILIES:
            continue  # the paired section reports these, divided pass by pass (results/paired)
        if name not in benchmarks:
            continue
        if len(benchmarks[name].get("param_names", [])) != len(file.grid(name)):
            stale.reshaped.setdefault(where, []).append(name)
            continue
        found, skipped = _benchmark_rows(file, name, benchmarks[name], shared, meanings)
        rows += found
        skips += skipped
    return rows, skips


def _benchmark_rows(file: asv_files.ResultFile, name: str, meta: dict, shared: dict,
                    meanings: Meanings) -> tuple[list[dict], list[dict]]:
    """The rows of one benchmark of a result file, one per parameter combination, and the combinations not run."""
    pillar, cls, metric = name.split(".")[0], name.split(".")[1], name.split(".")[-1]
    kind = meta.get("type", "")
    sampled, comparable = meanings(metric, kind)
    version, run_date = str(file.version(name) or meta.get("version") or ""), _utc(file.started_at(name))
    rows, skips = [], []
    for combination in file.combinations(name, meta):
        p = combination.params
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
            "benchmark_version": version, "run_date": run_date,
            "dtype": str(p.get("dtype", "")), "precision": str(p.get("precision", "")),
            "method": "",  # how a derived row was computed (the roofline); measured rows: asv's columns
            "memory_method": _memory_method(framework, device_kind, metric),
        }
        if combination.outcome in (asv_files.SKIPPED, asv_files.NOT_RUN):
            skips.append(row | {"status": "not run"})  # no value: the run skipped it or did not choose it
            continue
        row.update(stats.summarise(combination.value, combination.q25, combination.q75, combination.samples, sampled,
                                   combination.split))
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
