"""summary.md's tables: one narrow table per pillar and metric (unit in the header), PyTorch and JAX side by side
with the like-mode ratio or why there is none, and what was not run and why."""

from __future__ import annotations

import json
import math

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import fmt, headline, skips, stats
from tape_vs_trace.report.load import program_label
from tape_vs_trace.report.select import display
from tape_vs_trace.results.rowkey import RowKey

# the library workspace inside a CUDA peak is its own row (track_workspace_bytes), a table of its own
WORKSPACE = (" Each CUDA peak includes the GEMM-library workspace (cuBLAS/cuDNN) its step used, a set-up of the "
             "library rather than of the step: the GEMM-library workspace table (`track_workspace_bytes`) shows it "
             "apart, from the same probe call.")


def _pairs(rows: pd.DataFrame) -> list[dict[str, dict]]:
    """Rows grouped by their key without the framework (rowkey.RowKey): the candidates for a ratio."""
    return list(_by_case(rows).values())


def _by_case(rows: pd.DataFrame) -> dict[RowKey, dict[str, dict]]:
    cases: dict[RowKey, dict[str, dict]] = {}
    for r in rows.itertuples(index=False):
        row = r._asdict()
        cases.setdefault(RowKey.of(row).without("framework"), {})[r.framework] = row
    return cases


FEW_PROCESSES = 6  # a ratio's run with fewer processes a side rests its interval on few samples: marked
FEW = "‡"


def _processes(by_fw: dict) -> str:
    """'12; 12': each side's processes, PyTorch first; marked FEW where a side has fewer than FEW_PROCESSES."""
    counts = [None if fw not in by_fw or pd.isna(by_fw[fw].get("processes")) else int(by_fw[fw]["processes"])
              for fw in frameworks.NAMES]
    said = "; ".join("—" if c is None else f"{c}" for c in counts)
    few = any(c is not None and c < FEW_PROCESSES for c in counts)
    return said + (f" {FEW}" if few else "")


def _cell(row: dict | None, divisor: float, with_interval: bool) -> str:
    if row is None:
        return "not run"
    if row["status"] == "failed":
        return "failed"
    text = fmt.number(row["value"], divisor)
    if with_interval and math.isfinite(row["ci_low"]) and row["basis"] != "exact":
        text += f" [{fmt.number(row['ci_low'], divisor)}–{fmt.number(row['ci_high'], divisor)}]"
    return text


def _spread(row: dict | None, divisor: float) -> str:
    if row is None or row["status"] != "ok" or not math.isfinite(row["spread"]):
        return "n/a"
    return fmt.number(row["spread"], divisor)


def metric_table(rows: pd.DataFrame, numerics: bool) -> list[str]:
    """One metric of one pillar: PyTorch and JAX side by side per case, the ratio or why there is none."""
    metric, unit = rows.metric.iloc[0], rows.unit.iloc[0]
    sampled = bool(rows.sampled.iloc[0])
    divisor, label = fmt.scale(unit, rows.value)
    label = label or "value"
    methods = rows[rows.memory_method != ""].groupby("framework").memory_method.nunique()
    pairs = _pairs(rows)
    vary = bool((methods > 1).any())  # a framework's method changes between rows: name it on every row
    head = ["case"] + (["dtype, precision"] if numerics else [])
    for fw in frameworks.NAMES:
        head += [f"{frameworks.label(fw)} ({label})"] + ([f"{frameworks.label(fw)} IQR"] if sampled else [])
    head += (["processes (PyTorch; JAX)"] if sampled else []) + ["JAX/PyTorch"] + \
        (["memory method (PyTorch; JAX)"] if vary else [])
    kind = "sampled: geometric mean of per-process medians [95 % interval]" if sampled else "exact"
    lines = [f"**{display(metric)}** (`{metric}`, {kind}):", ""]
    if not vary and len(methods):
        first = rows[rows.memory_method != ""].groupby("framework").memory_method.first()
        what = display(metric)
        lines += [f"{what[:1].upper()}{what[1:]} measured by: "
                  + "; ".join(f"{frameworks.label(f)} {m}" for f, m in first.items())
                  + "." + (WORKSPACE if any(m == frameworks.memory_method(f, "cuda") for f, m in first.items()
                                            if f in frameworks.FRAMEWORKS) else ""), ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" + "---:|" * (len(head) - 1)]
    for by_fw in pairs:
        any_row = next(iter(by_fw.values()))
        cells = [_case(any_row) + _scan(by_fw)]
        if numerics:
            cells.append(", ".join(v for v in (any_row["dtype"], any_row["precision"]) if v))
        for fw in frameworks.NAMES:
            row = by_fw.get(fw)
            cells.append(_cell(row, divisor, sampled))
            if sampled:
                cells.append(_spread(row, divisor))
        if sampled:
            cells.append(_processes(by_fw))
        cells.append(_ratio(by_fw))
        if vary:
            cells.append("; ".join(by_fw[f]["memory_method"] if f in by_fw else "—" for f in frameworks.NAMES))
        lines.append("| " + " | ".join(cells) + " |")
    if sampled and any(_processes(by_fw).endswith(FEW) for by_fw in pairs):
        lines += ["", f"{FEW} fewer than {FEW_PROCESSES} processes a side: the interval rests on few processes."]
    return lines


def _ratio(by_fw: dict) -> str:
    """The ratio cell; where one framework did not run the row, the reason its skip rule gives, never a bare "only
    one framework ran"."""
    missing = [fw for fw in frameworks.NAMES if fw not in by_fw]
    if len(missing) == 1 and by_fw:
        ran = next(iter(by_fw.values()))
        params = json.dumps({**json.loads(ran["params"]), "framework": missing[0]}, separators=(",", ":"))
        reason = skips.reason(ran["benchmark"], params)
        # results of an older checkout can miss a side for a rule this one no longer has
        return f"— ({frameworks.label(missing[0])} not run: {reason or 'no skip rule of this checkout names why'})"
    return fmt.ratio(stats.compare(by_fw.get("torch"), by_fw.get("jax")))


def _scan(by_fw: dict) -> str:
    """' (PyTorch: prototype torch._higher_order_ops.scan; JAX: lax.scan)' for a scan row both frameworks ran:
    what each ran is not one operator."""
    row = next(iter(by_fw.values()))
    if len(by_fw) < 2 or RowKey.of(row).axis("formulation") != "scan":
        return ""
    return f" ({headline.scan_words(tuple(by_fw))})"


def _case(r) -> str:
    program = program_label(r.get("program") or "")
    return " ".join(v for v in (r["workload"], r["size"], r["variant"], f"({program})" if program else "") if v)


def not_run_table(skipped: pd.DataFrame, ran: pd.DataFrame) -> list[str]:
    """What asv skipped, as one table of counts by framework and reason, and the combinations behind each reason in
    a collapsed block (one line a reason); [] where nothing was skipped."""
    by_reason: dict[str, list[str]] = {}
    for by_fw in _by_case(skipped).values():
        case = next(iter(by_fw.values()))
        for fw, row in sorted(by_fw.items(), key=lambda kv: _order(kv[0])):
            by_reason.setdefault(_skipped_by(fw, row).removeprefix("not run for "), []).append(
                f"`{case['benchmark'].split('.', 1)[-1]}` {_case(case)}")
    if not by_reason:
        return []
    ordered = sorted(by_reason.items(), key=lambda kv: -len(kv[1]))
    lines = ["| framework and reason | combinations |", "|---|---:|",
             *[f"| {reason} | {len(cases)} |" for reason, cases in ordered], "",
             f"<details><summary>The {sum(len(c) for _, c in ordered)} combinations, by reason</summary>", "",
             *[f"- {reason}: {'; '.join(cases)}." for reason, cases in ordered], "", "</details>"]
    return lines


def not_run(skipped: pd.DataFrame, ran: pd.DataFrame) -> list[str]:
    """asv's skips (NaN: the benchmark's setup raised NotImplementedError), one line per case: each framework's
    reason from the benchmark's skip rule (report.skips), with the version that skipped it, and whether the other
    framework ran the case. A CPU-budget skip and a framework limit read as what they are, never both as 'not
    implemented'."""
    ran_by = {key: set(by_fw) for key, by_fw in _by_case(ran).items()}
    lines = []
    for key, by_fw in _by_case(skipped).items():
        case = next(iter(by_fw.values()))
        others = ran_by.get(key, set())
        why = "; ".join(_skipped_by(fw, row) for fw, row in sorted(by_fw.items(), key=lambda kv: _order(kv[0])))
        ran_it = f" ({', '.join(map(frameworks.label, sorted(others, key=_order)))} ran it)" if others else ""
        lines.append(f"- `{case['benchmark']}` {_case(case)}: {why}{ran_it}")
    return lines


def _order(framework: str) -> int:
    return frameworks.NAMES.index(framework) if framework in frameworks.NAMES else len(frameworks.NAMES)


def _skipped_by(framework: str, row: dict) -> str:
    version = row.get(f"{framework}_version")
    who = " ".join(v for v in (frameworks.label(framework), version) if isinstance(v, str) and v)
    reason = skips.reason(row["benchmark"], row["params"])
    return f"not run for {who}: {reason}" if reason else f"not run for {who} (no skip rule of this checkout names it)"
