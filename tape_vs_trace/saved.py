"""`tape-vs-trace saved`: what each framework keeps for the backward pass of one workload, grouped by the op that
produced it, PyTorch beside JAX; and ``saved_figure``, the same as stacked bars.

Each framework runs in its own subprocess (``python -m tape_vs_trace.saved FRAMEWORK ...`` prints its records as
JSON), so torch and jax never share a process. The function measured is the benchmarks' loss,
``sum(forward * cotangent)``, on the CPU; the records come from ``probe.saved_breakdown``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from implementations import frameworks, workloads

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("framework", "op", "count", "bytes", "is_argument")


class SavedError(Exception):
    """Bad input or a failed framework subprocess: one line for the user."""


def _records(framework: str, workload: str, size: str, variant: str, dtype: str) -> list[dict]:
    """saved_breakdown of the workload's loss in this process (the subprocess side)."""
    fw = frameworks.load(framework, "highest", float64=dtype == "float64")
    inputs = workloads.make_inputs(workload, size, dtype)
    fn, args = fw.steps.loss_fn(inputs, variant, "cpu")
    return [{"op": r.op, "shape": list(r.shape), "dtype": r.dtype, "nbytes": r.nbytes, "is_argument": r.is_argument}
            for r in fw.probe.saved_breakdown(fn, *args)]


def collect(framework: str, workload: str, size: str, variant: str, dtype: str) -> list[dict]:
    """The records of one framework, from a fresh subprocess."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.saved", framework, workload, size, variant, dtype],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SavedError(f"{frameworks.label(framework)} failed: {last}")
    return json.loads(done.stdout)


def rows_by_op(framework: str, records: Iterable[Mapping]) -> list[dict]:
    """One row per producing op: how many saved storages/residuals it made and their bytes."""
    grouped: dict[str, dict] = {}
    for r in records:
        row = grouped.setdefault(r["op"], {"framework": framework, "op": r["op"], "count": 0, "bytes": 0,
                                           "is_argument": r["is_argument"]})
        row["count"] += 1
        row["bytes"] += r["nbytes"]
    return sorted(grouped.values(), key=lambda row: (row["is_argument"], -row["bytes"], row["op"]))


def format_text(rows: list[dict], title: str) -> str:
    names = [name for name in frameworks.NAMES if any(r["framework"] == name for r in rows)]
    totals = ("total", "extra (not argument)")
    width = max([*map(len, totals), *(len(r["op"]) for r in rows)])
    lines = [title, f"{'op':<{width}}" + "".join(f"  {frameworks.label(n):>22}" for n in names)]

    def cell(count: int | None, nbytes: int | None) -> str:
        return f"  {'':>22}" if count is None else f"  {f'{nbytes:,} B ({count})':>22}"

    for op in dict.fromkeys(r["op"] for r in sorted(rows, key=lambda r: (r["is_argument"], -r["bytes"], r["op"]))):
        found = {r["framework"]: r for r in rows if r["op"] == op}
        lines.append(f"{op:<{width}}" + "".join(cell(found[n]["count"], found[n]["bytes"]) if n in found
                                                else cell(None, None) for n in names))
    for label, keep in zip(totals, (lambda r: True, lambda r: not r["is_argument"])):
        sums = [[r for r in rows if r["framework"] == n and keep(r)] for n in names]
        lines.append(f"{label:<{width}}" + "".join(cell(sum(r["count"] for r in s), sum(r["bytes"] for r in s))
                                                    for s in sums))
    return "\n".join(lines)


def format_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: r[k] for k in FIELDS} for r in rows)
    return out.getvalue()


def saved_figure(rows: Iterable[Mapping], path: Path) -> None:
    """Saved bytes stacked by producing op, one bar per framework, PyTorch beside JAX; rows as ``rows_by_op``
    makes them, optionally with a "case" key (one pair of bars per case). Arguments are drawn grey."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    rows = list(rows)
    cases = list(dict.fromkeys(r.get("case", "") for r in rows))
    names = [name for name in frameworks.NAMES if any(r["framework"] == name for r in rows)]
    ops = list(dict.fromkeys(r["op"] for r in sorted(rows, key=lambda r: (r["is_argument"], r["op"]))))
    colors = {op: "#bbbbbb" if op == "argument" else plt.get_cmap("tab20")(i % 20) for i, op in enumerate(ops)}
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(cases) * len(names)), 4.5))
    ticks, labels = [], []
    for c, case in enumerate(cases):
        for f, name in enumerate(names):
            x = c * (len(names) + 1) + f
            bottom = 0
            for op in ops:
                nbytes = sum(r["bytes"] for r in rows if r.get("case", "") == case and r["framework"] == name
                             and r["op"] == op)
                if nbytes:
                    ax.bar(x, nbytes, bottom=bottom, color=colors[op], edgecolor=frameworks.FRAMEWORKS[name].color,
                           label=op)
                    bottom += nbytes
            ticks.append(x)
            labels.append(f"{frameworks.label(name)}\n{case}".strip())
    handles = {h.get_label(): h for h in ax.patches}
    ax.legend(handles.values(), handles.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_xticks(ticks, labels, fontsize=8)
    ax.set_ylabel("bytes saved for the backward pass")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(workload: str, size: str | None, variant: str, dtype: str, fmt: str) -> str:
    """The report of `tape-vs-trace saved`; a SavedError names the valid choices for bad input."""
    try:
        spec = workloads.spec(workload)
        size = spec.test_size if size is None else size
        workloads.validate(workload, size, dtype, variant)
    except ValueError as exc:
        raise SavedError(str(exc)) from None
    rows = [row for name in frameworks.NAMES for row in rows_by_op(name, collect(name, workload, size, variant,
                                                                                     dtype))]
    if fmt == "csv":
        return format_csv(rows)
    return format_text(rows, f"saved for the backward pass of sum({workload} * cotangent), size {size}, variant "
                             f"{variant}, {dtype}; bytes (records) per producing op")


if __name__ == "__main__":
    json.dump(_records(*sys.argv[1:6]), sys.stdout)
