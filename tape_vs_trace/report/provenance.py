"""A machine page's provenance: commit, run, host, software, the host records (fingerprint, calibration), the
runner, samples per benchmark and the measurement methods."""

from __future__ import annotations

import statistics

import pandas as pd

from implementations import metrics
from tape_vs_trace.report import fmt, hosts, stats
from tape_vs_trace.report.load import Results

HOST_KEYS = ("fingerprint", "calibration")


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
        shown = {key for key, *_ in CALIBRATION_WORDS} | {"samples", "per_process"}
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


def _run_dates(starts: list[str], runs: dict) -> str:
    """When the benchmarks started: first to last, or where all share one start (a runner stamps its whole run
    once), that start and the runner's wall time."""
    if not starts:
        return "n/a"
    if starts[0] != starts[-1]:
        return f"{starts[0]} to {starts[-1]} (the benchmarks' start times)"
    wall = runs.get("wall_s")
    return starts[0] + (f" (started; tape-vs-trace run took {wall} s)" if wall is not None else " (started)")


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
             f"| run date | {_run_dates(runs, details.get('worker_runs') or {})} |",
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
              "- value of a sampled metric: the geometric mean of per-process medians; IQR: q75 − q25 of the "
              "per-process medians; [interval]: 95 % Student-t interval across processes on the logarithms of the "
              "per-process medians (n − 1 degrees of freedom). Results "
              "without samples give asv's median and quartiles and no interval.",
              "- JAX/PyTorch: formed only between rows whose parameters differ in the framework alone, both ran, the "
              "metric counts the same thing and was measured the same way; its interval is Welch's t interval on the "
              "difference of mean log per-process medians. A sampled ratio is stated as a difference only when its "
              f"interval excludes every change up to {stats.BETWEEN_PROCESSES * 100:g} % (how far such ratios moved "
              f"between two runs of one commit); otherwise it reads '{fmt.NO_DIFFERENCE}'."]
    return lines


RUNNER_KEYS = ("runner_of", "worker_runs", "chosen")  # per-benchmark lists, not a provenance line


def _runner_lines(details: dict) -> list[str]:
    """Which runner took the file's benchmarks, in a line: counts by runner and, for tape-vs-trace run, its rounds,
    worker processes and wall time (the per-process record stays in the result file); then a line per earlier run
    whose values the file still holds (a later run of other rows merged into it)."""
    runner_of = details.get("runner_of") or {}
    if not runner_of:
        return []
    counts = {r: sum(1 for v in runner_of.values() if v == r) for r in sorted(set(runner_of.values()))}
    text = ", ".join(f"{n} benchmark(s) by {'tape-vs-trace run' if r == 'worker' else 'asv run'}"
                     for r, n in counts.items())
    runs = details.get("worker_runs") or {}
    if runs:
        text += f"; tape-vs-trace run: {_run_words(runs)}"
    earlier = [e.get("worker_runs") for e in details.get("earlier_runs") or [] if isinstance(e, dict)]
    return [f"| runner | {text} |"] + [f"| earlier run in this file | {_run_words(r)} |" for r in earlier if r]


def _run_words(runs: dict) -> str:
    """One tape-vs-trace run: profile, rounds, processes, wall time, why it stopped, and what the host's hypervisor
    took while its workers ran (a run it disturbed has wider intervals that no setting of the frameworks explains)."""
    profile = f"profile {runs['profile']}, " if runs.get("profile") else ""
    planned = runs.get("rounds_planned")
    done = runs.get("rounds", "?")
    rounds = f"{done}" + (f" of {planned}" if planned and planned != done else "")
    rounds += " round" if (planned or done) == 1 else " rounds"  # "1 round", "1 of 3 rounds"
    parts = f"{runs['parts']} parts, " if int(runs.get("parts", 1)) > 1 else ""
    text = (f"{profile}{parts}{rounds}, {runs.get('processes', '?')} worker processes, "
            f"{runs.get('wall_s', '?')} s")
    if runs.get("stopped"):
        text += f" ({runs['stopped']})"
    copied: dict[str, tuple[int, int]] = {}  # a group copied in its round (running.plan.copies): first round, most
    for r, groups in enumerate(runs.get("copies") or [], start=1):
        for group, n in groups.items():
            first, most = copied.get(group, (r, n))
            copied[group] = (first, max(most, n))
    if copied:
        text += "; copied in their rounds: " + ", ".join(
            f"{group} ({most} processes a round from round {first})" for group, (first, most) in copied.items())
    steal = [p["host"]["steal"] for p in runs.get("per_process") or [] if isinstance(p.get("host"), dict)]
    if steal:
        text += (f"; the hypervisor's steal while each worker ran: median {statistics.median(steal):.1%}, "
                 f"most {max(steal):.1%}")
    return text
