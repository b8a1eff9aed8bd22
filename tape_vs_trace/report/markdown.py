"""summary.md: provenance, one narrow table per pillar and metric (unit in the header), what was not run and why,
and the findings. Every number is computed from the tidy table (summary.csv)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from implementations import frameworks, metrics, pillars
from tape_vs_trace.report import fmt, hosts, paired_section, skips, stats
from tape_vs_trace.report.findings import findings
from tape_vs_trace.report.load import Results, program_label
from tape_vs_trace.report.select import Cells, base_numerics, display, latest, ordered

CURVE_FIGURES = "remat_curve_"  # report/curve.py's remat_curve_<size>.png: in the paired section
SAVED_FIGURES = "saved_"  # report/breakdown.py's saved_<workload>.png: what the tape and the trace keep, by op
HOST_KEYS = ("fingerprint", "calibration")


def _pairs(rows: pd.DataFrame) -> list[dict[str, dict]]:
    """Rows grouped by (benchmark, every parameter but the framework): the candidates for a ratio."""
    cases: dict[tuple, dict[str, dict]] = {}
    for r in rows.itertuples(index=False):
        params = {k: v for k, v in json.loads(r.params).items() if k != "framework"}
        cases.setdefault((r.benchmark, json.dumps(params, sort_keys=True)), {})[r.framework] = r._asdict()
    return list(cases.values())


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
    head += ["JAX/PyTorch"] + (["memory method (PyTorch; JAX)"] if vary else [])
    kind = "sampled: median of per-process medians [95 % interval]" if sampled else "exact"
    lines = [f"**{display(metric)}** (`{metric}`, {kind}):", ""]
    if not vary and len(methods):
        first = rows[rows.memory_method != ""].groupby("framework").memory_method.first()
        lines += ["Peak memory measured by: " + "; ".join(f"{frameworks.label(f)} {m}" for f, m in first.items())
                  + ".", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" + "---:|" * (len(head) - 1)]
    for by_fw in pairs:
        any_row = next(iter(by_fw.values()))
        cells = [_case(any_row)]
        if numerics:
            cells.append(", ".join(v for v in (any_row["dtype"], any_row["precision"]) if v))
        for fw in frameworks.NAMES:
            row = by_fw.get(fw)
            cells.append(_cell(row, divisor, sampled))
            if sampled:
                cells.append(_spread(row, divisor))
        cells.append(_ratio(by_fw))
        if vary:
            cells.append("; ".join(by_fw[f]["memory_method"] if f in by_fw else "—" for f in frameworks.NAMES))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _ratio(by_fw: dict) -> str:
    """The ratio cell; where one framework did not run the row, the reason its skip rule gives, never a bare "only
    one framework ran"."""
    missing = [fw for fw in frameworks.NAMES if fw not in by_fw]
    if len(missing) == 1 and by_fw:
        ran = next(iter(by_fw.values()))
        params = json.dumps({**json.loads(ran["params"]), "framework": missing[0]}, separators=(",", ":"))
        reason = skips.reason(ran["benchmark"], params)
        if reason:
            return f"— ({frameworks.label(missing[0])} not run: {reason})"
    return fmt.ratio(stats.compare(by_fw.get("torch"), by_fw.get("jax")))


def _case(r) -> str:
    program = program_label(r.get("program") or "")
    return " ".join(v for v in (r["workload"], r["size"], r["variant"], f"({program})" if program else "") if v)


def not_run(skipped: pd.DataFrame, ran: pd.DataFrame) -> list[str]:
    """asv's skips (NaN: the benchmark's setup raised NotImplementedError), one line per case: each framework's
    reason from the benchmark's skip rule (report.skips), with the version that skipped it, and whether the other
    framework ran the case. A CPU-budget skip and a framework limit read as what they are, never both as 'not
    implemented'."""
    ran_by = {(case["benchmark"], json.dumps(p, sort_keys=True)): set(by_fw) for by_fw in _pairs(ran)
              for case in [next(iter(by_fw.values()))] for p in [_unframed(case)]}
    lines = []
    for by_fw in _pairs(skipped):
        case = next(iter(by_fw.values()))
        others = ran_by.get((case["benchmark"], json.dumps(_unframed(case), sort_keys=True)), set())
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


def _unframed(row: dict) -> dict:
    return {k: v for k, v in json.loads(row["params"]).items() if k != "framework"}


def _kv(title: str, values: dict) -> list[str]:
    return [f"{title}:", "", "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in sorted(values.items())] + [""]


def provenance(data: Results, rows: pd.DataFrame) -> list[str]:
    first = rows.iloc[0]
    machine, commit = first.machine, first.commit
    info = data.machines.get(machine, {})
    details = data.details.get((machine, commit), {})
    runs = sorted(d for d in rows.run_date if d)

    def joined(column: str) -> str:
        return ", ".join(v for v in dict.fromkeys(rows[column]) if v) or "n/a"

    lines = ["| | |", "|---|---|",
             f"| commit | `{commit}` (commit date {first.date}) |",
             f"| run date | {runs[0] + ' to ' + runs[-1] if runs else 'n/a'} |",
             f"| machine | {machine}: {info.get('cpu', '?')}, {info.get('num_cpu', '?')} cores, {info.get('ram', '?')}"
             f" RAM, {info.get('os', '?')} {info.get('arch', '')} |",
             f"| device | {first.device} |", f"| torch | {first.torch_version} |", f"| jax | {first.jax_version} |",
             f"| python | {data.python.get((machine, commit)) or 'n/a'} (asv environment `{first.env}`) |",
             f"| dtype | {joined('dtype')} |", f"| matmul precision | {joined('precision')} |",
             f"| benchmark versions | {joined('benchmark_version')} |"]
    lines += [f"| {k} | {v} |" for k, v in sorted(details.items()) if k not in HOST_KEYS + RUNNER_KEYS]
    lines += _runner_lines(details) + [""]
    for key in HOST_KEYS:
        if isinstance(details.get(key), dict):
            lines += _kv(f"Host {key}", details[key])
    lines += hosts.section(data, machine, commit)
    lines += ["Comparisons are made within this one result file only: one commit and, per benchmark, one benchmark "
              "version (column `benchmark_version` of summary.csv).", ""]
    lines += ["Samples and processes per timed benchmark (the interval comes from per-process medians):", "",
              "| benchmark | processes | samples | basis |", "|---|---:|---:|---|"]
    timed = rows[rows.sampled & (rows.status == "ok")]
    for name, r in timed.groupby("benchmark", sort=False):
        procs = ", ".join(str(int(p)) for p in sorted(set(r.processes.dropna()))) or "n/a"
        samples = ", ".join(str(int(s)) for s in sorted(set(r.samples.dropna()))) or "n/a"
        lines.append(f"| `{name}` | {procs} | {samples} | {'; '.join(dict.fromkeys(r.basis))} |")
    lines += ["", "Measurement methods:", "",
              *[f"- `{m.name}` ({m.display}, {m.unit}, {'sampled' if m.sampled else 'exact'}"
                f"{'' if m.comparable else ', no JAX/PyTorch ratio'}): {m.description}"
                for m in metrics.METRICS.values() if m.name in set(rows.metric)],
              "- value of a sampled metric: the median of per-process medians; IQR: q75 − q25 of the per-process "
              "medians; [interval]: 95 % Student-t interval across processes on the logarithms of the per-process "
              "medians (n − 1 degrees of freedom). Results "
              "without samples give asv's median and quartiles and no interval.",
              "- JAX/PyTorch: formed only between rows whose parameters differ in the framework alone, both ran, the "
              "metric counts the same thing and was measured the same way; its interval is Welch's t interval on the "
              "difference of mean log per-process medians. A sampled ratio is stated as a difference only when its "
              f"interval excludes every change up to {stats.BETWEEN_PROCESSES * 100:g} % (how far such ratios moved "
              f"between two runs of one commit); otherwise it reads '{fmt.NO_DIFFERENCE}'."]
    return lines


def markdown(data: Results, figures: dict[str, list[str]], results_label: str) -> str:
    table = data.table
    groups = latest(table)
    several = len(groups) > 1
    lines = ["# tape-vs-trace report", "",
             f"Built by `tape-vs-trace report` from the asv results in `{results_label}` ({data.files} result file(s), "
             f"{table.machine.nunique()} machine(s), {table.commit.nunique()} commit(s)). Every number below is "
             "computed from `summary.csv` (the same numbers, unrounded), for each machine's latest commit. "
             "`failed` marks a benchmark that ran and failed; `not run` one that was not run for that framework; a "
             "dash gives the reason a ratio is not formed.", ""]
    shown = {(r.machine.iloc[0], r.commit.iloc[0]) for r in groups.values()}
    older = sorted(set(zip(table.machine, table.commit)) - shown)
    if older:
        lines += ["Older commits, in summary.csv only: " + ", ".join(f"`{c[:8]}` ({m})" for m, c in older) + ".", ""]
    for group, rows in groups.items():
        h = "###" if several else "##"
        lines += [f"## {group}", ""] if several else []
        lines += [f"{h} Provenance", "", *provenance(data, rows), ""]
        base = base_numerics(rows)
        found = findings(Cells(base), data.saved.get(rows.machine.iloc[0]))
        numerics = len(set(zip(rows.dtype, rows.precision)) - {("", "")}) > 1
        if numerics:
            first = base[base.dtype != ""].iloc[0]
            lines += [f"Findings and figures use {first.dtype} at matmul precision {first.precision}; the tables "
                      "show every dtype and precision.", ""]
        skipped = data.skipped
        if len(skipped):
            skipped = skipped[(skipped.machine == rows.machine.iloc[0]) & (skipped.commit == rows.commit.iloc[0])]
        shown = [p for p in pillars.PILLARS if p in set(rows.pillar)]
        for pillar in shown + sorted(set(rows.pillar) - set(pillars.PILLARS)):
            lines += [f"{h} {pillar}", ""]
            lines += [f"![{Path(n).stem}]({n})\n" for n in figures.get(group, [])
                      if Path(n).name == f"{pillar}.png"
                      or (pillar == "recording" and Path(n).name.startswith(SAVED_FIGURES))]
            sel = ordered(rows[rows.pillar == pillar])
            for metric in dict.fromkeys(sel.metric):
                lines += metric_table(sel[sel.metric == metric], numerics) + [""]
            missing = not_run(skipped[skipped.pillar == pillar], rows) if len(skipped) else []
            if missing:
                lines += ["Not run (asv recorded the combination as skipped):", "", *missing, ""]
            if found.get(pillar):
                lines += ["Findings:", ""] + [f"- {s}" for s in found[pillar]] + [""]
                if any(fmt.NO_INTERVAL in s for s in found[pillar]):
                    lines += [f"_{fmt.NO_INTERVAL}_: the ratio's results carry no between-process samples (recorded "
                              "without --record-samples, or one process), so it is shown but not claimed as a "
                              "difference.", ""]
        curves = [n for n in figures.get(group, []) if Path(n).name.startswith(CURVE_FIGURES)]
        lines += paired_section.section(data.paired.get(rows.machine.iloc[0]), curves, rows.commit.iloc[0], h)
    return "\n".join(lines)


RUNNER_KEYS = ("runner_of", "worker_runs")


def _runner_lines(details: dict) -> list[str]:
    """Which runner took the file's benchmarks, in a line: counts by runner and, for tape-vs-trace run, its rounds,
    worker processes and wall time (the per-process record stays in the result file)."""
    runner_of = details.get("runner_of") or {}
    if not runner_of:
        return []
    counts = {r: sum(1 for v in runner_of.values() if v == r) for r in sorted(set(runner_of.values()))}
    text = ", ".join(f"{n} benchmark(s) by {'tape-vs-trace run' if r == 'worker' else 'asv run'}"
                     for r, n in counts.items())
    runs = details.get("worker_runs") or {}
    if runs:
        text += (f"; tape-vs-trace run: {runs.get('rounds', '?')} rounds, {runs.get('processes', '?')} worker "
                 f"processes, {runs.get('wall_s', '?')} s")
    return [f"| runner | {text} |"]
