"""The saved-bytes breakdown (`tape-vs-trace saved-all`, results/saved/<machine>-<commit8>.csv.gz): which producing
ops make the bytes each framework keeps for the backward pass. The report reads the newest file per machine, names
in each saved-bytes finding the ops that make the difference, and draws one figure per workload.

The asv value (`track_saved_bytes`) is what the findings quote; the breakdown only explains it. Both leave out
arguments (inputs, parameters, the loss's cotangent), so the breakdown's non-argument total is the asv value when
both come from the same code; a finding says so where they differ. `tidy` lays the breakdown out as summary.csv's
rows, one per case, framework and producing op (rowkey.RowKey.of keys them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from implementations import frameworks, metrics, workloads
from tape_vs_trace.report import fmt
from tape_vs_trace.report.load import COLUMNS, Warn, program_label
from tape_vs_trace.results import side_tables
from tape_vs_trace.results.schema import SAVED_FIELDS, SAVED_LOOP

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn, not with this module
    from matplotlib.figure import Figure

SPEC = side_tables.SPECS["saved"]
FOLDER = SPEC.name
TOP = 3  # ops named per side of a finding
FIGURE_OPS = 9  # ops drawn by name in a figure; the rest are "other ops"
# A file from before the program column ran each framework's own default form of a loop (JAX's lax.scan, PyTorch's
# Python loop): its JAX and PyTorch bars of a loop workload are not like rows.
EARLIER_LOOPS = {"jax": "scan", "torch": "unrolled"}
# How a figure names a case, in words.
BACKWARDS = {"plain": "autodiff backward", "custom": "custom backward"}
LOOPS = {"unrolled": "unrolled loop", "scan": "scan loop"}


def _read(path: Path) -> pd.DataFrame:
    """One breakdown file, checked; ValueError (with the reason) for anything that is not one."""
    # A file from before the program column holds the programs its commit ran, which named none.
    table = side_tables.read_csv(path, tuple(f for f in SAVED_FIELDS if f != "program"))
    named = "program" in table.columns
    if not named:
        table = table.assign(program="")
    table = table.assign(formulation=[_loop(w, fw, named) for w, fw in zip(table.workload, table.framework)])
    nbytes = pd.to_numeric(table.nbytes, errors="coerce")
    if nbytes.isna().any() or (nbytes < 0).any() or (nbytes % 1 != 0).any():
        raise ValueError("nbytes is not a byte count on every row")
    if not table.is_argument.isin(["True", "False"]).all():
        raise ValueError("is_argument is not True/False on every row")
    return table.assign(nbytes=nbytes.astype("int64"), is_argument=table.is_argument == "True")


def _loop(workload: str, framework: str, named_programs: bool) -> str:
    """The form of the loop a breakdown row ran: '' where the workload has none (or is no longer in the suite)."""
    if workload not in workloads.WORKLOADS or not workloads.spec(workload).formulations:
        return ""
    return SAVED_LOOP if named_programs else EARLIER_LOOPS.get(framework, "")


def load(results: Path, table: pd.DataFrame, warn: Warn) -> dict[str, pd.DataFrame]:
    """Per machine, its newest readable breakdown: the one of the commit the report shows for that machine if
    there is one, else the one of the latest commit date in the asv results, else the latest written. An unreadable
    file is skipped, and a machine without one named, with a warning; with no results/saved at all (results from
    before `saved-all`) the report is silent about it and its findings name no ops."""
    folder = results / FOLDER
    if not folder.is_dir():
        return {}
    dates = dict(zip(table.commit, table.date))
    shown = {m: rows.sort_values(["date", "commit"]).commit.iloc[-1] for m, rows in table.groupby("machine")}
    out = {}
    found = side_tables.files(folder, SPEC.what, _read, warn)  # gzip since saved-all compressed them
    for machine, (path, data) in side_tables.newest(found, shown, dates).items():
        if machine in shown and data.commit.iloc[0] != shown[machine]:
            warn(f"{path.name}: the saved-bytes breakdown is of commit {data.commit.iloc[0][:8]}, the results of "
                 f"{shown[machine][:8]}; its ops explain that commit's saved bytes")
        data.attrs.update(file=f"{FOLDER}/{path.name}", date=dates.get(data.commit.iloc[0], ""))  # for tidy
        out[machine] = data
    for machine in sorted(set(shown) - set(out)):
        warn(f"no saved-bytes breakdown for machine {machine} in {folder} (`tape-vs-trace saved-all` writes it): "
             "its saved-bytes findings name no ops")
    return out


BENCHMARK = "saved.breakdown"  # summary.csv's benchmark of these rows (no asv benchmark measures them)
METRIC = "track_saved_op_bytes"
CASE = ("workload", "size", "variant", "dtype", "program", "formulation")  # what one bar of a figure measured


def tidy(machine: str, table: pd.DataFrame) -> pd.DataFrame:
    """One machine's breakdown in summary.csv's columns: per case, framework and producing op the bytes the op made
    (arguments left out), one exact row each, so a case's rows sum to its non-argument total; the parameters are the
    case's (CASE; the loop's form where it has one), the device (saved-all runs on the CPU) and the op."""
    meaning = metrics.METRICS[METRIC]
    ops = table[~table.is_argument].groupby([*CASE, "framework", "op", "commit"], sort=False).nbytes.sum()
    rows = []
    for (*case, framework, op, commit), nbytes in ops.items():
        params = {k: v for k, v in zip(CASE, case) if k != "formulation" or v} | {"device": "cpu", "op": op}
        value = float(nbytes)
        rows.append({c: "" for c in COLUMNS} | {
            "pillar": "saved", "workload": params["workload"], "size": params["size"], "dtype": params["dtype"],
            "variant": "/".join(v for v in (params["variant"], params.get("formulation", ""), op) if v),
            "program": params["program"], "framework": framework, "metric": METRIC, "unit": meaning.unit,
            "value": value, "spread": 0.0, "q25": value, "q75": value, "ci_low": value, "ci_high": value,
            "basis": "exact", "sampled": False, "comparable": meaning.comparable,
            "params": json.dumps(params, separators=(",", ":")), "benchmark": BENCHMARK, "commit": commit,
            "date": table.attrs.get("date", ""), "machine": machine, "device": "cpu", "status": "ok", "type": "saved",
            "file": table.attrs.get("file", f"{FOLDER}/{machine}-{commit[:8]}.csv.gz")})
    return pd.DataFrame(rows, columns=COLUMNS)


def _key(op: str) -> str:
    """PyTorch names its ops "aten.mul", JAX "mul": the same name once the namespace is gone."""
    return op.removeprefix("aten.")


def _case(b: pd.DataFrame, workload: str, size: str, variant: str, dtype: str, framework: str,
          program: str) -> pd.Series:
    return ((b.workload == workload) & (b["size"] == size) & (b.variant == (variant or "plain")) & (b.dtype == dtype)
            & (b.framework == framework) & (_programs(b) == program))


def _programs(b: pd.DataFrame) -> pd.Series:
    """The breakdown's program column; "" throughout for a table from before it."""
    return b["program"] if "program" in b.columns else pd.Series("", index=b.index)


def by_op(breakdown: pd.DataFrame, workload: str, size: str, variant: str, dtype: str, framework: str,
          program: str = "") -> pd.Series:
    """Saved bytes (arguments left out) per producing op of one case and framework; empty if not in the file."""
    b = breakdown
    return b[_case(b, workload, size, variant, dtype, framework, program) & ~b.is_argument].groupby("op").nbytes.sum()


def has(breakdown: pd.DataFrame | None, workload: str, size: str, variant: str, dtype: str, framework: str,
        program: str = "") -> bool:
    return breakdown is not None and bool(_case(breakdown, workload, size, variant, dtype, framework, program).any())


def _names(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Both sides regrouped by op, trivially equal names (aten.mul and mul) merged under the shorter one."""
    both = {_key(op) for op in a.index} & {_key(op) for op in b.index}

    def rename(s: pd.Series) -> pd.Series:
        return s.groupby([_key(op) if _key(op) in both else op for op in s.index]).sum()

    return rename(a), rename(b)


def difference(label_a: str, a: pd.Series, label_b: str, b: pd.Series, top: int = TOP) -> str:
    """'JAX keeps +1 MiB of mul, ...; PyTorch keeps +... of aten.silu': per side, the `top` ops by how many more
    bytes that side keeps of them than the other."""
    a, b = _names(a, b)
    diff = a.reindex(a.index.union(b.index), fill_value=0) - b.reindex(a.index.union(b.index), fill_value=0)
    parts = []
    for label, side in ((label_a, diff[diff > 0]), (label_b, -diff[diff < 0])):
        if len(side):
            side = side.sort_index().sort_values(ascending=False, kind="stable").head(top)
            parts.append(f"{label} keeps " + ", ".join(f"+{fmt.value(v, 'bytes')} of {op}" for op, v in side.items()))
    return "; ".join(parts) or "the same bytes per op on both sides"


def note(a: pd.Series, b: pd.Series, value_a: float, value_b: float, commit: str) -> str:
    """Said where the breakdown's totals are not the asv values it explains; in bytes, since MiB at 4 digits can
    print two different totals alike."""
    if a.sum() == value_a and b.sum() == value_b:
        return ""
    return (f" (the breakdown, of commit {commit[:8]}, totals {int(a.sum()):,} B and {int(b.sum()):,} B, not the "
            f"{int(value_a):,} B and {int(value_b):,} B above)")


def case_label(variant: str, formulation: str, program: str) -> str:
    """A figure's case in words, a line each: the backward, the loop's form, the style and the attention."""
    parts = [BACKWARDS.get(variant, variant), LOOPS.get(formulation, formulation), *program_label(program).split(", ")]
    return "\n".join(p for p in parts if p)


def _figure_rows(breakdown: pd.DataFrame, workload: str) -> list[dict]:
    """Per (case, framework): bytes per op, arguments left out, the FIGURE_OPS largest ops by name. A case is a
    variant, loop form and program: only like rows share one."""
    sel = breakdown[(breakdown.workload == workload) & ~breakdown.is_argument]
    shared = {k for k, n in sel.groupby(sel.op.map(_key)).framework.nunique().items() if n > 1}
    sel = sel.assign(op=[_key(op) if _key(op) in shared else op for op in sel.op])
    named = set(sel.groupby("op").nbytes.sum().sort_values(ascending=False).head(FIGURE_OPS).index)
    sel = sel.assign(op=sel.op.where(sel.op.isin(named), "other ops"))
    loops = sel["formulation"] if "formulation" in sel.columns else pd.Series("", index=sel.index)
    sel = sel.assign(case=[case_label(v, f, p) for v, f, p in zip(sel.variant, loops, _programs(sel))])
    grouped = sel.groupby(["case", "framework", "op"], sort=False).nbytes.sum()
    return [{"case": case, "framework": fw, "op": op, "bytes": int(v), "is_argument": op == "other ops"}
            for (case, fw, op), v in grouped.items() if fw in frameworks.NAMES]


def saved_figure(rows: Iterable[Mapping], path: Path, title: str = "") -> Figure:
    """Saved MiB (binary, as every memory figure of the report) stacked by producing op, one bar per framework;
    rows as ``rows_by_op`` makes them, optionally with a "case" key. A case is one group of bars, named under it:
    only a case's bars stand side by side, so a case must name everything that makes two bars unlike (the loop's
    form, the program). A framework without the case leaves its place empty and says so. Arguments and 'other ops'
    are drawn grey. 7.5 inches wide with 9 pt text: readable at page width. Returns the Figure."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows = list(rows)
    cases = list(dict.fromkeys(r.get("case", "") for r in rows))
    names = [name for name in frameworks.NAMES if any(r["framework"] == name for r in rows)]
    ops = list(dict.fromkeys(r["op"] for r in sorted(rows, key=lambda r: (r["is_argument"], r["op"]))))
    colors = {op: "#bbbbbb" if op in ("argument", "other ops") else colormaps["tab20"](i % 20)
              for i, op in enumerate(ops)}
    fig = Figure(figsize=(7.5, 4.5), dpi=130)
    ax = fig.subplots()
    ticks, labels, drawn = [], [], set()
    for c, case in enumerate(cases):
        for f, name in enumerate(names):
            x = c * (len(names) + 1) + f
            mine = [r for r in rows if r.get("case", "") == case and r["framework"] == name]
            if not mine:  # not measured in this case's form: an empty place, not a zero
                ax.text(x, 0.02, f"{frameworks.label(name)}: not measured", rotation=90, ha="center", va="bottom",
                        fontsize=9, color="0.45", transform=ax.get_xaxis_transform())
                continue
            bottom = 0.0
            for op in ops:
                mib = sum(r["bytes"] for r in mine if r["op"] == op) / fmt.MIB
                if mib:
                    ax.bar(x, mib, bottom=bottom, color=colors[op], edgecolor=frameworks.FRAMEWORKS[name].color)
                    drawn.add(op)
                    bottom += mib
            ticks.append(x)
            labels.append(frameworks.label(name))
        if c:
            ax.axvline(c * (len(names) + 1) - 1, color="0.6", linewidth=0.8)
    # One entry per op, in stacking order, without a framework's edge colour (the tick labels name the framework).
    ax.legend(handles=[Patch(facecolor=colors[op], label=op) for op in ops if op in drawn], fontsize=9,
              loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_xticks(ticks, labels, fontsize=9)
    if any(cases):  # each case named once, under its group of bars
        ax.set_xticks([c * (len(names) + 1) + (len(names) - 1) / 2 for c in range(len(cases))], cases, minor=True,
                      fontsize=9)
        ax.tick_params(axis="x", which="minor", length=0, pad=18)
    ax.set_xlim(-0.75, len(cases) * (len(names) + 1) - 1.25)
    ax.tick_params(labelsize=9)
    ax.set_ylabel("saved for backward (MiB)", fontsize=9)
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    return fig


def draw(breakdown: pd.DataFrame | None, out: Path) -> list[str]:
    """One figure per workload of the breakdown, saved_<workload>.png (saved_figure); returns their file
    names."""
    if breakdown is None:
        return []
    names = []
    for workload in dict.fromkeys(breakdown.workload):
        rows = _figure_rows(breakdown, workload)
        if not rows:
            continue
        sizes = ", ".join(dict.fromkeys(breakdown[breakdown.workload == workload]["size"]))
        name = f"saved_{workload}.png"
        saved_figure(rows, out / name, f"{workload} {sizes}: saved for the backward pass by producing op\n(inputs "
                                       f"and parameters left out; commit {breakdown.commit.iloc[0][:8]}, on the CPU)")
        names.append(name)
    return names
