"""`tape-vs-trace distributed`: one gradient step over N ranks (implementations.<framework>.distributed), timed
inside the ranks, in several launches; one CSV row per (framework, workload, size, form, mode, ranks).

The ranks run on the machine's GPUs where `nvidia-smi -L` lists at least two (PyTorch over NCCL, JAX over its
first N GPUs), at the grid's CUDA sizes and N in GPU_RANKS up to the GPUs present; elsewhere on the CPU (gloo,
XLA:CPU), at its CPU sizes and N in RANKS.

Each launch is one call of the framework's distributed_step: fresh rank processes that run the first call
(compile and warm-up, reported apart as compile seconds), `warmup` untimed calls and `repeat` timed ones, each the
slowest rank's wall time. A row's time is the median of the per-launch medians with a 95 % Student-t interval
across launches (tape_vs_trace.results.intervals), as the suite's times are across processes. The launches of one row
run back to back. Peak bytes per device, the collectives' bytes and how the ranks ran come from the first launch's
record (they are the same in every launch). This process only launches: it imports each framework's module to
start its ranks and computes nothing with it.

A launch that fails or hangs ends its row as failed, with its one-line reason, and the run goes on. The CSV,
OUT/<machine>-<commit8>.csv, is rewritten whole after every row (a temporary file renamed over it), merged with
the rows already there for other combinations.
"""

from __future__ import annotations

import csv
import importlib
import math
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from implementations import rank_processes, workloads
from tape_vs_trace.results.rowkey import RowKey
from tape_vs_trace.results.schema import DISTRIBUTED_FIELDS as FIELDS
from tape_vs_trace.results.schema import DISTRIBUTED_KEY as KEY
from tape_vs_trace.side.distributed_plan import DTYPE, PROCESSES, REPEAT, VARIANT, WARMUP, Case, DistributedError, plan
from tape_vs_trace.side.distributed_plan import cases as cases  # the grid's rows, read through this module by its tests

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600.0  # per launch: a cold torch.compile of the transformer on each of 2 ranks sharing 2 cores


def uncommitted(root: Path = ROOT) -> str:
    """`git status --porcelain` of implementations/ in `root`: '' when what runs is what HEAD holds."""
    done = subprocess.run(["git", "status", "--porcelain", "--", "implementations"], cwd=root, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise DistributedError(f"cannot tell whether implementations/ is committed: git status failed in {root}")
    return done.stdout.strip()


def _commit(root: Path = ROOT) -> tuple[str, str]:
    """HEAD's hash and commit date (ISO 8601: the report shows a machine's newest)."""
    done = subprocess.run(["git", "show", "-s", "--format=%H %cI", "HEAD"], cwd=root, capture_output=True, text=True)
    if done.returncode != 0 or len(done.stdout.split()) != 2:
        raise DistributedError(f"cannot name the commit: git show HEAD failed in {root}")
    commit, date = done.stdout.split()
    return commit, date


def _collectives(record: dict) -> tuple[int | str, str]:
    """(bytes, 'all-reduce 2x 2097156 B; ...') of a record's collectives; ('', why) where none were counted."""
    found = record.get("collectives")
    if found is None:
        return "", ""
    parts = [f"{kind} {c['count']}x {c['bytes']} B" for kind, c in found.items() if c["count"]]
    return sum(c["bytes"] for c in found.values()), "; ".join(parts) or "none"


def row(case: Case, records: list[dict], failure: str, commit: tuple[str, str], machine_name: str) -> dict:
    """The CSV row of `case` from the records of its launches, or failed with `failure` (its one line)."""
    import numpy as np

    from tape_vs_trace.results.intervals import median_interval

    out: dict[str, Any] = {f: "" for f in FIELDS} | {
        "framework": case.framework, "workload": case.workload, "size": case.size, "dtype": DTYPE,
        "variant": VARIANT, "form": case.form, "mode": case.mode, "ranks": case.ranks, "device": case.device,
        "framework_version": _version(case.framework), "commit": commit[0], "commit_date": commit[1],
        "machine": machine_name,
        "launches": len(records)}
    if failure:
        return out | {"status": "failed", "reason": failure}
    first = records[0]
    medians = [float(np.median(r["step_times_s"])) for r in records]
    compiles = [float(r["first_call_s"]) for r in records]
    low, high = median_interval(medians)
    clow, chigh = median_interval(compiles)
    comm, detail = _collectives(first)
    return out | {
        "status": "ok", "time_s": float(np.median(medians)), "time_ci_low": low, "time_ci_high": high,
        "repeat": first["repeat"], "warmup": first["warmup"], "launch_medians": ";".join(f"{m:.6g}" for m in medians),
        "compile_s": float(np.median(compiles)), "compile_ci_low": clow, "compile_ci_high": chigh,
        "compile_launches": ";".join(f"{c:.6g}" for c in compiles), "compile_cache": first["compile_cache"],
        "peak_bytes": "" if first["peak_bytes"] is None else first["peak_bytes"], "peak_method": first["peak_method"],
        "comm_bytes": comm, "analytic_bytes": first["analytic_bytes"], "gradient_bytes": first["gradient_bytes"],
        "collectives": detail, "collectives_method": first["collectives_method"], "backend": first["backend"],
        "bucket_cap_mb": "" if first["bucket_cap_mb"] is None else first["bucket_cap_mb"],
        "mesh_shape": ",".join(f"{k}={v}" for k, v in first["mesh_shape"].items()),
        "threads_per_rank": "" if first["threads_per_rank"] is None else first["threads_per_rank"],
        "timing": first["timing"], "note": first["note"]}


def _version(framework: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(framework)
    except metadata.PackageNotFoundError:
        return ""


def measure(case: Case, processes: int, repeat: int, warmup: int, timeout_s: float) -> tuple[list[dict], str]:
    """The records of `processes` launches of `case`, or those before the first that failed and its one line."""
    module = importlib.import_module(f"implementations.{case.framework}.distributed")
    inputs = workloads.make_inputs(case.workload, case.size, DTYPE)
    records = []
    for launch in range(processes):
        try:
            result = module.distributed_step(inputs, case.form, case.mode, case.ranks, VARIANT, timeout_s=timeout_s,
                                             warmup=warmup, repeat=repeat, device=case.device)
        except Exception as error:  # noqa: BLE001 - any failure of a launch is its row's, and the run goes on
            return records, f"launch {launch + 1} of {processes}: {rank_processes.one_line(error)}"
        records.append(result.record)
    return records, ""


def read(path: Path) -> list[dict]:
    """The rows of an existing CSV of this command; a DistributedError where it is not one (it is kept, not
    overwritten)."""
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [f for f in FIELDS if f not in (reader.fieldnames or ())]
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DistributedError(f"cannot read {path} to merge with it: {exc}") from None
    if missing:
        raise DistributedError(f"cannot merge with {path}: no column {', '.join(missing)}; move it away first")
    return rows


def merge(old: list[dict], new: list[dict], log: Callable[[str], None]) -> list[dict]:
    """`old` with each row of `new` in place of the old row of its combination (KEY), or appended; a failed row
    never replaces an ok one, which is kept (and said)."""
    rows = {combination(r): r for r in old}
    for r in new:
        key = combination(r)
        if key in rows and rows[key]["status"] == "ok" and r["status"] != "ok":
            log(f"kept the earlier measurement of {' '.join(str(r[k]) for k in KEY)}: this run's failed "
                f"({r['reason']})")
            continue
        rows[key] = r
    return list(rows.values())


def combination(row: dict) -> RowKey:
    """A row's key over the schema's columns (KEY), each value as text: a row read back from the CSV holds "2" where
    this run's holds 2."""
    return RowKey.of_columns({k: str(row[k]) for k in KEY}, KEY, "distributed")


def write(rows: list[dict], path: Path) -> Path:
    """`rows` as the CSV at `path`, through a temporary file renamed over it: a failure leaves the old file whole."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp.is_file():  # a half-written file of ours
            tmp.unlink()
        raise DistributedError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _line(case: Case, r: dict) -> str:
    if r["status"] != "ok":
        return f"{case}: failed: {r['reason']}"
    interval = "" if not math.isfinite(r["time_ci_low"]) else \
        f" [{r['time_ci_low'] * 1e3:.3g}–{r['time_ci_high'] * 1e3:.3g}]"
    return (f"{case}: {r['time_s'] * 1e3:.3g} ms{interval} per step, first call {r['compile_s']:.3g} s, "
            f"{r['launches']} launches")


def run(out: Path, framework_names: str | None = None, workload_names: str | None = None, forms: str | None = None,
        modes: str | None = None, ranks: str | None = None, size: str | None = None,
        processes: int = PROCESSES, repeat: int = REPEAT, warmup: int = WARMUP, timeout_s: float = TIMEOUT_S,
        step: Callable[[str], None] = print, warn: Callable[[str], None] = print,
        device: str = "auto") -> tuple[Path, int]:
    """Measure every case of `plan` and write OUT/<machine>-<commit8>.csv after each; returns its path and how
    many rows of this run failed."""
    from tape_vs_trace.results import machine

    chosen = plan(framework_names, workload_names, forms, modes, ranks, size, processes, repeat, warmup, device)
    if timeout_s <= 0:
        raise DistributedError(f"--timeout must be positive, not {timeout_s:g}")
    dirty = uncommitted()
    if dirty:
        raise DistributedError("commit implementations/ first: results are recorded under HEAD "
                               f"({len(dirty.splitlines())} uncommitted path(s) there)")
    commit, machine_name = _commit(), machine.record()["machine"]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DistributedError(f"cannot create {out}: {exc.strerror or exc}") from None
    path = out / f"{machine_name}-{commit[0][:8]}.csv"
    rows = read(path) if path.exists() else []
    failed = 0
    for i, case in enumerate(chosen, 1):
        step(f"{i}/{len(chosen)} {case}: {processes} launches of {warmup} + {repeat} steps after the first")
        records, failure = measure(case, processes, repeat, warmup, timeout_s)
        new = row(case, records, failure, commit, machine_name)
        failed += new["status"] != "ok"
        rows = merge(rows, [new], warn)
        write(rows, path)
        step(f"{i}/{len(chosen)} {_line(case, new)}")
    return path, failed
