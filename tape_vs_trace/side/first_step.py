"""`tape-vs-trace first-step`: the time to a first gradient step as a user starting a script waits for it, each
point in fresh processes (implementations.first_step is the child), both frameworks, as data beside the asv results
(OUT/<machine>-<commit8>.csv, one row per process, read by report.first_step).

A point is (framework, workload, size, mode, cache): the compiled step with an empty cache (fresh folders: a new
machine or a new version) and with the warm persistent cache an earlier process left (the second run of the same
script), and the eager step (PyTorch's tape, JAX op by op). Both frameworks' caches are set alike, by the suite's
one setting (TVT_COMPILE_CACHE: Inductor's FX-graph and AOTAutograd caches, JAX's persistent compilation cache with
every executable written): each process pair gets a fresh folder, its cold process fills it, its warm process reads
it. A warm point that would read an empty folder, or that reads no entry, is an error, not a row.

The wall time is the parent's: from the spawn to the child's line saying its first step returned, on the clock the
child shares (CLOCK_MONOTONIC). The interpreter's start is the child's first reading less the spawn; the other parts
are the child's own timings. What they leave of the wall time is `unattributed_s`, held to TOLERANCE.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from implementations import frameworks, workloads
from implementations.first_step import ABSOLUTE_S, DONE, PARTS, TOLERANCE
from tape_vs_trace.results import compile_caches, host_load
from tape_vs_trace.results.schema import FIRST_STEP_FIELDS as FIELDS

ROOT = Path(__file__).resolve().parents[2]
# The points of a process round, in the order they run: a warm point reads the folder its cold point filled.
POINTS: tuple[tuple[str, str], ...] = (("compiled", "cold"), ("compiled", "warm"), ("eager", "cold"))
# Workloads and depths per profile: the cited profile (make bench) the chain at depth 8, the example; the
# full profile every depth of the compile-time series of the chain and the transformer.
PROFILES: dict[str, dict[str, tuple[int, ...] | None]] = {"cited": {"chain": (8,)},
                                                           "full": {"chain": None, "transformer": None}}
PROCESSES = 3
TIMEOUT_S = 600.0
# Inherited settings that would point a framework's cache elsewhere than the point's folder.
_CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR",
                    "TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCHINDUCTOR_FX_GRAPH_CACHE",
                    "TORCHINDUCTOR_AUTOGRAD_CACHE")


class FirstStepError(Exception):
    """Bad input, a failed child, or a warm point without a cache to read: one line for the user."""


def plan(profile: str = "cited", names: tuple[str, ...] = frameworks.NAMES,
         device: str = "cpu") -> list[tuple[str, str, str, str, str]]:
    """The (framework, workload, size, mode, cache) points of `profile` for the frameworks `names`, in run order."""
    if profile not in PROFILES:
        raise FirstStepError(f"unknown profile {profile!r}; valid choices: {', '.join(PROFILES)}")
    unknown = [n for n in names if n not in frameworks.NAMES]
    if unknown or not names:
        raise FirstStepError(f"unknown framework {','.join(unknown) or '(none)'}; valid choices: "
                             f"{', '.join(frameworks.NAMES)}")
    sizes = []
    for workload, depths in PROFILES[profile].items():
        series = workloads.depth_series(workload, device)
        sizes += [(workload, series[d]) for d in (depths or series)]
    return [(fw, w, size, mode, cache) for w, size in sizes for fw in names for mode, cache in POINTS]


def _environment(cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CACHE_VARIABLES}
    env[frameworks.COMPILE_CACHE_ENV] = str(cache_dir)
    return env


def child(framework: str, mode: str, workload: str, size: str, device: str, cache_dir: Path,
          timeout: float = TIMEOUT_S) -> dict:
    """One fresh process's record (implementations.first_step) with the parent's readings: `wall_s` (spawn to the
    child's DONE line), `interpreter_s` (spawn to the child's first reading) and the host's load meanwhile."""
    argv = [sys.executable, "-m", "implementations.first_step", framework, mode, workload, size, device]
    with tempfile.TemporaryFile("w+") as err:
        before = host_load.cpu_ticks()
        spawned = time.monotonic()
        proc = subprocess.Popen(argv, cwd=ROOT, env=_environment(cache_dir), stdout=subprocess.PIPE, stderr=err,
                                text=True)
        line = proc.stdout.readline()
        done = time.monotonic()
        try:
            proc.wait(timeout=timeout)  # the record is one short line: the pipe holds it until read
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise FirstStepError(f"{framework} {mode} {workload} {size}: no record after {timeout:.0f} s") from None
        host = host_load.shares(before, host_load.cpu_ticks()) or {}
        rest = proc.stdout.read()  # through the same buffer as the first line, which may hold the record already
        proc.stdout.close()
        err.seek(0)
        lines = [x for x in err.read().splitlines() if x.strip()]
    if proc.returncode or line.strip() != DONE:
        why = lines[-1] if lines else f"exit status {proc.returncode}"
        raise FirstStepError(f"{framework} {mode} {workload} {size}: the child failed: {why}")
    record = json.loads(rest.strip().splitlines()[-1])
    return {**record, "wall_s": done - spawned, "interpreter_s": record["started"] - spawned, "host": host}


def row(record: dict, point: tuple[str, str, str, str, str], process: int, entries_before: int) -> dict:
    """One process's CSV row: the parts, the compile (the phases' sum) and the rest of the first step, and what
    the parts leave of the wall time."""
    framework, workload, size, mode, cache = point
    seconds = record["seconds"]
    compile_s = sum(record["phases"].values())
    settings = {**record["cache_settings"], "dir": "a fresh folder per cold and warm pair (TVT_COMPILE_CACHE)"}
    out = {"framework": framework, "mode": mode, "workload": workload, "size": size, "cache": cache,
           "process": process, "wall_s": record["wall_s"], "interpreter_s": record["interpreter_s"],
           **{f"{part}_s": seconds[part] for part in PARTS}, "compile_s": compile_s,
           "first_execution_s": seconds["first_step"] - compile_s,
           "unattributed_s": record["wall_s"] - record["interpreter_s"] - sum(seconds[p] for p in PARTS),
           "steady_step_s": record["steady_step_s"], "phases": json.dumps(record["phases"]),
           "cache_hits": record["cache_reads"]["hits"], "cache_misses": record["cache_reads"]["misses"],
           "cache_entries_before": entries_before, "cache_settings": json.dumps(settings),
           "start": json.dumps(record["start"]), "host_busy": record["host"].get("busy", ""),
           "host_steal": record["host"].get("steal", "")}
    return {**out, "status": check(out)}


def check(values: dict) -> str:
    """"ok" when the parts add up to the wall time within TOLERANCE, else what they leave unattributed."""
    parts = values["interpreter_s"] + sum(values[f"{part}_s"] for part in PARTS)
    left = values["wall_s"] - parts
    if abs(left) > TOLERANCE * values["wall_s"] + ABSOLUTE_S:
        return f"parts {parts:.3f} s of a wall time of {values['wall_s']:.3f} s: {left:+.3f} s unattributed"
    return "ok"


def _entries(cache_dir: Path, framework: str) -> int:
    return compile_caches.framework_state(cache_dir / frameworks.get(framework).name, framework)["entries"]


def measure_point(point: tuple[str, str, str, str, str], cache_dir: Path, process: int, device: str = "cpu",
                  timeout: float = TIMEOUT_S) -> dict:
    """One process of `point` with its caches in `cache_dir`; a warm point must find entries there before it
    starts and read at least one."""
    framework, workload, size, mode, cache = point
    entries = _entries(cache_dir, framework)
    if cache == "warm" and not entries:
        raise FirstStepError(f"{framework} {mode} {workload} {size}: the warm point's cache folder holds no entry: "
                             "it would measure a cold compile")
    record = child(framework, mode, workload, size, device, cache_dir, timeout)
    read_from = Path(record["cache_settings"]["dir"]).resolve()
    if not read_from.is_relative_to(cache_dir.resolve()):
        raise FirstStepError(f"{framework} {mode} {workload} {size}: the framework's cache was not the point's "
                             "folder: a cache of another process could have served it")
    if cache == "warm" and not record["cache_reads"]["hits"]:
        raise FirstStepError(f"{framework} {mode} {workload} {size}: the warm point read no cache entry "
                             f"({record['cache_reads']['misses']:.0f} misses): it measured a cold compile")
    return row(record, point, process, entries)


def _versions() -> str:
    found = {}
    for dist in ("torch", "jax", "jaxlib"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    return json.dumps(found)


def measure(points: list[tuple[str, str, str, str, str]], processes: int = PROCESSES, device: str = "cpu",
            say=print) -> list[dict]:
    """`processes` rounds of every point, the frameworks' order turned each round; a round's cold and warm
    compiled points of one framework and workload share a fresh folder, every other point has a fresh one."""
    if processes < 2:
        raise FirstStepError(f"--processes {processes}: at least 2 (the interval is between processes)")
    rows = []
    for i in range(processes):
        turned = points if i % 2 == 0 else sorted(points, key=lambda p: (p[1], p[2], -frameworks.NAMES.index(p[0])))
        folders: dict[tuple[str, str, str], Path] = {}
        with tempfile.TemporaryDirectory(prefix="tvt-first-step-") as scratch:
            for n, point in enumerate(turned):
                framework, workload, size, mode, cache = point
                key = (framework, workload, size) if mode == "compiled" else (*point[:3], f"{mode}-{n}")
                folder = folders.setdefault(key, Path(scratch) / f"{len(folders)}")
                folder.mkdir(exist_ok=True)
                found = measure_point(point, folder, i, device)
                say(f"[first-step] process {i + 1} of {processes}: {framework} {mode} {workload} {size} {cache}: "
                    f"{found['wall_s']:.2f} s ({found['status']})")
                rows.append(found)
    return rows


def _kept(path: Path, new: list[dict]) -> list[dict]:
    """The rows of an earlier run of this commit whose points the new rows do not measure again (a full profile
    after the cited one keeps the cited points it does not repeat); none from a file of other columns."""
    if not path.is_file():
        return []
    with path.open(newline="") as fh:
        old = list(csv.DictReader(fh))
    if not old or list(old[0]) != list(FIELDS):
        return []
    measured = {point_of(r) for r in new}
    return [r for r in old if point_of(r) not in measured]


def point_of(values: dict) -> tuple[str, str, str, str, str]:
    """The point a CSV row measured, as plan() names it: (framework, workload, size, mode, cache)."""
    return (str(values["framework"]), str(values["workload"]), str(values["size"]), str(values["mode"]),
            str(values["cache"]))


def write(rows: list[dict], out: Path, machine_name: str, commit: str, device: str) -> Path:
    """OUT/<machine>-<commit8>.csv, written to a temporary file first so a failure leaves any old file whole."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FirstStepError(f"cannot create {out}: {exc.strerror or exc}") from None
    path = out / f"{machine_name}-{commit[:8]}.csv"
    tmp = path.with_suffix(".csv.tmp")
    versions, written = _versions(), datetime.now(UTC).isoformat(timespec="seconds")
    new = [{**r, "machine": machine_name, "commit": commit, "device": device, "versions": versions,
            "written": written} for r in rows]
    try:
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows([*_kept(path, new), *new])
        tmp.replace(path)
    except OSError as exc:
        if tmp.is_file():
            tmp.unlink()
        raise FirstStepError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def run(out: Path, profile: str = "cited", processes: int = PROCESSES, names: tuple[str, ...] = frameworks.NAMES,
        say=print) -> Path:
    """Measure `profile`'s points in `processes` rounds on this machine and write the CSV; returns its path."""
    from tape_vs_trace.results import machine

    device = frameworks.detect_device()
    points = plan(profile, names, device)
    if processes < 2:
        raise FirstStepError(f"--processes {processes}: at least 2 (the interval is between processes)")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if not commit:
        raise FirstStepError(f"cannot name the commit: git rev-parse HEAD failed in {ROOT}")
    machine_name = machine.record()["machine"]
    say(f"[first-step] {len(points)} points x {processes} processes on {machine_name} ({profile} profile)")
    return write(measure(points, processes, device, say), out, machine_name, commit, device)
