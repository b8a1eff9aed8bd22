"""summary.md: provenance, one narrow table per pillar and metric (unit in the header), what was not run and why,
and the findings. Every number is computed from the tidy table (summary.csv)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from implementations import frameworks, metrics, pillars
from tape_vs_trace.report import distributed_section, fmt, headline, hosts, paired_section, skips, stats
from tape_vs_trace.report.findings import Paired, answered, findings
from tape_vs_trace.report.headline import Headline
from tape_vs_trace.report.load import Results, program_label
from tape_vs_trace.report.select import Cells, base_numerics, display, latest, ordered

CURVE_FIGURES = "remat_curve_"  # report/curve.py's remat_curve_<size>.png: in the paired section
SAVED_FIGURES = "saved_"  # report/breakdown.py's saved_<workload>.png: what the tape and the trace keep, by op
HOST_KEYS = ("fingerprint", "calibration")
# the asv peak is one number: the library workspace inside it is printed by gpucheck, not recorded per row
WORKSPACE = (" Each CUDA peak includes the GEMM-library workspace (cuBLAS/cuDNN) its step used, a set-up of the "
             "library rather than of the step, not recorded apart in these results: `python -m "
             "tape_vs_trace.gpucheck` prints it per framework (its 'of it workspace' column).")


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
        # results of an older checkout can miss a side for a rule this one no longer has
        return f"— ({frameworks.label(missing[0])} not run: {reason or 'no skip rule of this checkout names why'})"
    return fmt.ratio(stats.compare(by_fw.get("torch"), by_fw.get("jax")))


def _scan(by_fw: dict) -> str:
    """' (PyTorch: prototype torch._higher_order_ops.scan; JAX: lax.scan)' for a scan row both frameworks ran:
    what each ran is not one operator."""
    row = next(iter(by_fw.values()))
    if len(by_fw) < 2 or json.loads(row["params"]).get("formulation") != "scan":
        return ""
    return f" ({headline.scan_words(tuple(by_fw))})"


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


def readable(value) -> str:
    """A recorded value as a reader reads it: nested records as 'key: value; ...', lists comma-separated, large
    rates and byte counts with a unit."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {readable(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(readable(v) for v in value) or "none"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# how a calibration's rates read: (key, words, divisor, unit)
CALIBRATION_WORDS = (("matmul_flops_per_s", "matmul rate (PyTorch; the roofline's)", 1e9, "GFLOP/s"),
                     ("matmul_flops_per_s_jax", "matmul rate (JAX, for information)", 1e9, "GFLOP/s"),
                     ("copy_bytes_per_s", "copy bandwidth", 1e9, "GB/s"),
                     ("dispatch_seconds_per_op", "dispatch cost of a tiny op", 1e-6, "µs"))


def _rate(value, divisor: float, unit: str) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k} {_rate(v, divisor, unit)}" for k, v in value.items())
    return f"{value / divisor:.4g} {unit}" if isinstance(value, (int, float)) else readable(value)


def _kv(title: str, values: dict) -> list[str]:
    """A host record as a two-column table; a calibration's rates in units, its raw samples left to the file."""
    rows = []
    if title.endswith("calibration"):
        rows = [(words, _rate(values[key], divisor, unit)) for key, words, divisor, unit in CALIBRATION_WORDS
                if key in values]
        shown = {key for key, *_ in CALIBRATION_WORDS} | {"samples"}
        rows += [(k, readable(v)) for k, v in sorted(values.items()) if k not in shown]
    else:
        for k, v in sorted(values.items()):
            if isinstance(v, dict) and k == "cpu":  # the CPU record: one row per field
                rows += [(f"cpu {kk}", readable(vv)) for kk, vv in v.items()]
            elif k == "ram_bytes" and isinstance(v, (int, float)):
                rows.append(("RAM", f"{v / 2 ** 30:.1f} GiB"))
            else:
                rows.append((k, readable(v)))
    return [f"{title}:", "", "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows] + [""]


def _host(info: dict, details: dict) -> str:
    """'CPU, 2 cores, 23.5 GiB RAM, Linux x86_64': what the machine record has, the fingerprint's RAM where the
    record has none; nothing printed for what neither knows."""
    ram = info.get("ram")
    fingerprint = details.get("fingerprint") if isinstance(details.get("fingerprint"), dict) else {}
    if not ram and isinstance(fingerprint.get("ram_bytes"), (int, float)):
        ram = f"{fingerprint['ram_bytes'] / 2 ** 30:.1f} GiB"
    parts = [info.get("cpu"), f"{info['num_cpu']} cores" if info.get("num_cpu") else None,
             f"{ram} RAM" if ram else None, " ".join(v for v in (info.get("os"), info.get("arch")) if v) or None]
    return ", ".join(p for p in parts if p) or "no machine record"


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
             f"| machine | {machine}: {_host(info, details)} |",
             f"| device | {first.device} |", f"| torch | {first.torch_version} |", f"| jax | {first.jax_version} |",
             f"| python | {data.python.get((machine, commit)) or 'n/a'} (asv environment `{first.env}`) |",
             f"| dtype | {joined('dtype')} |", f"| matmul precision | {joined('precision')} |",
             f"| benchmark versions | {joined('benchmark_version')} |"]
    lines += [f"| {k} | {readable(v)} |" for k, v in sorted(details.items()) if k not in HOST_KEYS + RUNNER_KEYS]
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


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    kept = "".join(ch for ch in heading.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _newest_first(groups: dict[str, pd.DataFrame]) -> list[tuple[str, pd.DataFrame]]:
    return sorted(groups.items(), key=lambda kv: (kv[1].date.max(), kv[0]), reverse=True)


def headline_section(top: Headline | None, details: dict | None = None) -> list[str]:
    """The chart, one sentence per machine, the machines left out and why, and where there are several, each case
    on every machine with on how many its finding holds."""
    if top is None:
        return []
    lines = [f"![headline]({headline.NAME})", ""] if top.drawn else ["No JAX/PyTorch ratio to draw.", ""]
    lines += [f"- {headline.sentence(top.rows, m, top.info.get(m, {}))}" for m in dict.fromkeys(r.machine
                                                                                            for r in top.rows)]
    lines += [f"- Not in the headline: {why}." for why in top.left_out]
    table = hosts.across(top.rows, details or {})
    if table:
        lines += ["", "Across machines (a finding holds on a machine where its ratio points the same way beyond the "
                  "band a rerun moves it; only like runs meet in a verdict):", "", *table,
                  *hosts.explain(top.rows, details or {})]
    return lines + [""]


def markdown(data: Results, figures: dict[str, list[str]], results_label: str, top: Headline | None = None) -> str:
    """summary.md: contents, the headline, the latest run's findings per machine (newest first), then per machine
    its tables, what was not run, the paired section and provenance; older commits last."""
    table = data.table
    groups = _newest_first(latest(table))
    shown = {(r.machine.iloc[0], r.commit.iloc[0]) for _, r in groups}
    older = sorted(set(zip(table.machine, table.commit)) - shown)
    intro = (f"Built by `tape-vs-trace report` from the asv results in `{results_label}` ({data.files} result "
             f"file(s), {table.machine.nunique()} machine(s), {table.commit.nunique()} commit(s)). Every number is "
             "computed from `summary.csv` (the same numbers, unrounded), for each machine's latest commit. Ratios are "
             "JAX/PyTorch: above 1, JAX is slower or keeps more. `failed` marks a benchmark that ran and failed; "
             "`not run` one that was not run for that framework; a dash gives the reason a ratio is not formed.")
    contents = ["## Contents", "", "- [Headline](#headline)", "- [Latest findings](#latest-findings)"]
    contents += [f"  - [{g}](#{slug('Findings on ' + g)})" for g, _ in groups]
    contents += [f"- [All results on {g}](#{slug('All results on ' + g)})" for g, _ in groups]
    contents += ["- [Older commits](#older-commits)"] if older else []
    lines = ["# tape-vs-trace report", "", intro, "", *contents, "", "## Headline", "",
             *headline_section(top, data.details), "## Latest findings", ""]
    body: list[str] = []
    for group, rows in groups:
        machine, commit = rows.machine.iloc[0], rows.commit.iloc[0]
        base = base_numerics(rows)
        cells = Cells(base)
        paired = Paired(data.paired.get(machine), rows.device.iloc[0])
        found = findings(cells, data.saved.get(machine), paired)
        numerics = len(set(zip(rows.dtype, rows.precision)) - {("", "")}) > 1
        lines += [f"### Findings on {group}", "", f"Commit `{commit[:8]}` ({rows.date.iloc[0]}), torch "
                  f"{rows.torch_version.iloc[0]}, jax {rows.jax_version.iloc[0]}, device {rows.device.iloc[0]}.", ""]
        if numerics:
            first = base[base.dtype != ""].iloc[0]
            lines += [f"Findings and figures use {first.dtype} at matmul precision {first.precision}; the tables "
                      "show every dtype and precision.", ""]
        for pillar in [p for p in pillars.PILLARS if found.get(p)]:
            lines += [f"#### {pillar}", "", *[f"- {s}" for s in found[pillar]], ""]
            if any(fmt.NO_INTERVAL in s for s in found[pillar]):
                lines += [f"_{fmt.NO_INTERVAL}_: the ratio's results carry no between-process samples (recorded "
                          "without --record-samples, or one process), so it is shown but not claimed as a "
                          "difference.", ""]
        body += [f"## All results on {group}", ""]
        skipped = data.skipped
        if len(skipped):
            skipped = skipped[(skipped.machine == machine) & (skipped.commit == commit)]
        present = [p for p in pillars.PILLARS if p in set(rows.pillar)]
        for pillar in present + sorted(set(rows.pillar) - set(pillars.PILLARS)):
            body += [f"### {pillar}", ""]
            body += [f"![{Path(n).stem}]({n})\n" for n in figures.get(group, [])
                     if Path(n).name == f"{pillar}.png"
                     or (pillar == "recording" and Path(n).name.startswith(SAVED_FIGURES))]
            sel = ordered(rows[rows.pillar == pillar])
            for metric in dict.fromkeys(sel.metric):
                body += metric_table(sel[sel.metric == metric], numerics) + [""]
            missing = not_run(skipped[skipped.pillar == pillar], rows) if len(skipped) else []
            if missing:
                body += ["Not run (asv recorded the combination as skipped):", "", *missing, ""]
        curves = [n for n in figures.get(group, []) if Path(n).name.startswith(CURVE_FIGURES)]
        body += paired_section.section(data.paired.get(machine), curves, commit, "###",
                                       answered(cells, paired) if paired.rows else set())
        spread = [n for n in figures.get(group, []) if Path(n).name.startswith(distributed_section.FIGURES)]
        body += distributed_section.section(data.distributed.get(machine), spread, commit, "###")
        body += ["### Provenance", "", *provenance(data, rows), ""]
    lines += body
    if older:
        lines += ["## Older commits", "", "In summary.csv only (the tables above are each machine's latest commit): "
                  + ", ".join(f"`{c[:8]}` ({m})" for m, c in older) + ".", ""]
    return "\n".join(lines)


RUNNER_KEYS = ("runner_of", "worker_runs", "chosen")  # per-benchmark lists, not a provenance line


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
        profile = f"profile {runs['profile']}, " if runs.get("profile") else ""
        planned = runs.get("rounds_planned")
        rounds = f"{runs.get('rounds', '?')}" + (f" of {planned}" if planned and planned != runs.get("rounds") else "")
        text += (f"; tape-vs-trace run: {profile}{rounds} rounds, {runs.get('processes', '?')} worker "
                 f"processes, {runs.get('wall_s', '?')} s")
        if runs.get("stopped"):
            text += f" ({runs['stopped']})"
    return [f"| runner | {text} |"]
