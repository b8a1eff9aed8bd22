"""The report's "time to first step" section: from results/first_step (tape-vs-trace first-step), per machine, the
wait from a fresh interpreter to the first gradient step done, per framework, step and cache, with the one-time
start shown apart from the step's compile and first execution: a longer program grows the compile, not the start.

`section(results, warn)` is the markdown; `append(page, results, warn)` writes it as its own page and links it from
`page` (the front page, summary.md).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from implementations import frameworks
from implementations.first_step import ABSOLUTE_S as TOLERANCE_S
from implementations.first_step import TOLERANCE
from tape_vs_trace.report.load import Warn
from tape_vs_trace.results import side_tables
from tape_vs_trace.results.intervals import median_interval
from tape_vs_trace.results.schema import FIRST_STEP_FIELDS as FIELDS
from tape_vs_trace.results.schema import FIRST_STEP_FOLDER as FOLDER

# The columns of the table: (heading, the CSV's seconds columns it adds up).
COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("interpreter and import", ("interpreter_s", "import_s")),
    ("harness", ("harness_s",)),
    ("one-time start", ("backend_start_s", "compiler_start_s")),
    ("trace and compile", ("compile_s",)),
    ("first execution and rest", ("first_execution_s",)),
    ("whole wait", ("wall_s",)),
)
SPEC = side_tables.SPECS[FOLDER]
_NUMERIC = ("wall_s", "interpreter_s", "import_s", "harness_s", "backend_start_s", "compiler_start_s",
            "first_step_s", "compile_s", "first_execution_s", "unattributed_s", "host_busy")


def read(path: Path) -> pd.DataFrame:
    """One results/first_step CSV with its seconds as numbers; ValueError where it is not one."""
    table = side_tables.read_csv(path, FIELDS)
    for column in _NUMERIC:
        table[column] = pd.to_numeric(table[column], errors="coerce")
    return table


def load(results: Path, warn: Warn) -> dict[str, pd.DataFrame]:
    """Per machine, its newest written results/first_step file (the side tables' newest-file rule, SPEC dating a file
    by its `written` column)."""
    found = side_tables.load(SPEC, results, warn, read)
    return {machine: table for machine, (_, table) in side_tables.newest(found, dated=SPEC.dated).items()}


def estimate(values: list[float]) -> str:
    """The geometric mean of per-process seconds and its 95 % interval between processes (intervals.py)."""
    if all(v == 0 for v in values):
        return "–"
    if not all(v > 0 for v in values):  # a difference of two clocks may be a hair below 0 where it is nothing
        return f"{np.mean(values):.3f} s"
    low, high = median_interval(values)
    centre = math.exp(np.mean(np.log(values)))
    return f"{centre:.2f} s [{low:.2f}, {high:.2f}]" if math.isfinite(low) else f"{centre:.2f} s"


def _phases(rows: pd.DataFrame) -> str:
    """The compile phases' mean seconds, as the framework's own timers name them."""
    phases = pd.DataFrame([json.loads(p) for p in rows.phases]).mean()
    return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.items())


def _step(framework: str, mode: str) -> str:
    """What ran: the compiler's entry point, or which eager step."""
    return "torch.compile" if (framework, mode) == ("torch", "compiled") else (
        "jax.jit" if mode == "compiled" else "eager (tape)" if framework == "torch" else "eager (op by op)")


def table(data: pd.DataFrame) -> list[str]:
    """The markdown table of one machine's file: a row per (workload, size, framework, mode, cache)."""
    lines = ["| workload | framework | step | cache | " + " | ".join(h for h, _ in COLUMNS)
             + " | unattributed (largest) | processes | host busy | compile phases (framework's timers) |",
             "|---|---|---|---|" + "---:|" * len(COLUMNS) + "---:|---:|---:|---|"]
    ok = data[data.status == "ok"]
    keys = ["workload", "size", "framework", "mode", "cache"]
    for key, rows in ok.groupby(keys, sort=False):
        workload, size, framework, mode, cache = key
        cells = [estimate(list(rows[list(cols)].sum(axis=1))) for _, cols in COLUMNS]
        step = _step(framework, mode)
        worst = rows.unattributed_s.abs().max()
        phases = _phases(rows) if mode == "compiled" or framework == "jax" else "–"
        lines.append(f"| {workload} {size} | {frameworks.label(framework)} | {step} | {cache} | "
                     + " | ".join(cells) + f" | {worst:.3f} s | {len(rows)} | {rows.host_busy.median():.0%} | "
                     f"{phases} |")
    return lines


def section(results: Path, warn: Warn) -> str:
    """The "Time to first step" section of every machine with results/first_step; "" without any."""
    found = load(results, warn)
    if not found:
        return ""
    out = ["## Time to first step", "",
           "The wait from a fresh interpreter to the first gradient step done (the loss and every input's gradient), "
           "each point in fresh processes (`tape-vs-trace first-step`). Cold: every compile cache empty, in fresh "
           "folders (a new machine or a new version); warm: the persistent caches an earlier process left "
           "(Inductor's FX-graph and AOTAutograd caches, JAX's persistent compilation cache writing every "
           "executable; the second run of the same script). One-time start: the backend's first array and the "
           "compiler's start (PyTorch: Inductor's imports, its compile workers, the C++ toolchain's first use; XLA "
           "starts its compiler inside the first compile, in its phases). A longer program grows the compile and "
           "the first execution, not the start. Seconds: the geometric mean over processes and its 95 % interval "
           "between processes; the parts add up to the whole wait within "
           f"{TOLERANCE:.0%} plus {TOLERANCE_S * 1000:.0f} ms (the unattributed column). The host's busy share "
           "includes other work on it.", ""]
    for machine, data in sorted(found.items()):
        dropped = int((data.status != "ok").sum())
        out += [f"### {machine} (commit {data.commit.iloc[0][:8]}, {data.device.iloc[0]})", "", *table(data), ""]
        if dropped:
            out += [f"{dropped} process(es) left out: their parts did not add up to their wall time "
                    "(the file's status column says by how much).", ""]
    return "\n".join(out)


PAGE = "first_step.md"


def write(out: Path, results: Path, warn: Warn) -> bool:
    """`section` as its own page (PAGE) in `out`, which the front page links under compile time; False (no page)
    without results/first_step."""
    text = section(results, warn)
    if text:
        (out / PAGE).write_text(text + "\n", encoding="utf-8")
    return bool(text)


# the parts of the front page's cell: the one-time start apart from what a longer program grows (COLUMNS' sums)
FRONT = (("start", "one-time start"), ("compile", "trace and compile"), ("wait", "whole wait"))
SAID = ("Time to first step: a fresh interpreter to its first compiled gradient step, cold (empty compile caches) or "
        f"warm [95 % interval], and its one-time start and compile; all parts: [{PAGE}]({PAGE}).")


def front_rows(results: Path, warn: Warn) -> list[str]:
    """Rows of the front page's compile-time table: per machine's newest file and workload, each framework's
    compiled first step, cold and warm, as 'cold 14.02 s [12.10, 16.24] (start 6.01 s, compile 6.22 s); warm ...'
    (the whole wait, then its one-time start and compile; geometric means over processes); [] without
    results/first_step."""
    cells = dict(COLUMNS)
    out = []
    for machine, data in sorted(load(results, warn).items()):
        ok = data[(data.status == "ok") & (data["mode"] == "compiled")]
        for (workload, size), mine in ok.groupby(["workload", "size"], sort=False):
            said = []
            for fw in frameworks.NAMES:
                parts = []
                for cache, rows in mine[mine.framework == fw].groupby("cache", sort=True):
                    told = [f"{short} {estimate(list(rows[list(cells[column])].sum(axis=1)))}" for short, column
                            in FRONT]
                    parts.append(f"{cache} {told[-1].removeprefix('wait ')} ("
                                 + ", ".join(t.split(" [")[0] for t in told[:-1]) + ")")
                said.append("; ".join(parts) or "not run")
            out.append(f"| {machine} (`{data.commit.iloc[0][:8]}`) | time to first step, {workload} {size} | "
                       + " | ".join(said) + " |")
    return out
