"""Rerun check: two asv results folders of the same commit, row by row.

A row (machine, environment, commit, benchmark, parameters) present in both runs agrees when its two 95 %
intervals overlap (timings) or its two values are equal (exact metrics: bytes, counts). Old results without
samples have no between-process interval; there asv's own interquartile range stands in, and the line says so. Every
JAX/PyTorch ratio stated as a difference in either run (its interval excludes every change up to the report's
resolution, `stats.Comparison.differs`) must not point the other way in the other run: it agrees when the other run
states the same difference, or has its ratio on the same side of 1 without stating it ("in one run only"); it flipped
when the other run's ratio lies on the other side and the two ratio intervals do not overlap (two stated opposite
differences never overlap); a ratio on the other side whose interval overlaps the stating run's neither agrees nor
flips ("other run across 1"): the other run states nothing the first contradicts. Absolute times of two runs
are only compared when `host_check.same_host` finds the same host by its fingerprint (a calibration that moved under
load is noted, not another host); otherwise they are flagged, and offered in calibrated units
(`host_check.normalised`), never as seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from implementations import frameworks
from tape_vs_trace.report import agreement, fmt, roofline, stats
from tape_vs_trace.report import hosts as hosts_section
from tape_vs_trace.report.agreement import Hosts, Interval, RowCheck
from tape_vs_trace.report.load import ReportError, Results, load_results
from tape_vs_trace.results import host_check, host_load
from tape_vs_trace.results.intervals import half_width
from tape_vs_trace.results.rowkey import RowKey

AGREEMENT = 0.95  # --strict: the share of timing rows that must agree
RUN = ("machine", "env", "commit")  # the run a row is of; rowkey.RowKey names the row within it
BASE, OTHER = frameworks.NAMES[0], frameworks.NAMES[1]  # the report's ratio: OTHER / BASE (JAX / PyTorch)


def load(folder: Path, warn: Callable[[str], None], verbose: bool = False) -> Results:
    """A results folder, or ReportError: a file the report would skip (corrupt, not asv's) is fatal here, as a rerun
    check that silently drops a file counts fewer rows than it claims."""
    return load_results(folder, warn=lambda m: _fatal(m) if m.startswith("skipped ") else warn(m), verbose=verbose)


def _fatal(message: str) -> None:
    raise ReportError(message.removeprefix("skipped "))


def _rows(results: Results) -> dict[tuple, dict]:
    """Each row of a run by (machine, env, commit, its RowKey)."""
    return {(*(r[k] for k in RUN), RowKey.of(r)): r for r in results.table.to_dict("records")}


def _directions(rows: dict[tuple, dict]) -> dict[tuple, stats.Comparison]:
    """Every JAX/PyTorch ratio of a run, by (machine, env, commit, RowKey without the framework)."""
    cases: dict[tuple, dict[str, dict]] = {}
    for r in rows.values():
        if r["metric"] == roofline.METRIC:  # the step-time ratio again (times a flops ratio of 1): not a second finding
            continue
        key = (*(r[k] for k in RUN), RowKey.of(r).without("framework"))
        cases.setdefault(key, {})[r["framework"]] = r
    return {k: stats.compare(c.get(BASE), c.get(OTHER)) for k, c in cases.items() if BASE in c and OTHER in c}


def _params(params: str | dict) -> str:
    return " ".join(f"{k}={v}" for k, v in (json.loads(params) if isinstance(params, str) else params).items())


def _value(row: dict, divisor: float, label: str) -> str:
    if row["status"] != "ok":
        return row["status"]
    iv = agreement.interval(row)
    text = f"{fmt.number(row['value'], divisor)} {label}".strip()
    if iv.kind and iv.kind != "exact":
        text += f" [{fmt.number(iv.low, divisor)}–{fmt.number(iv.high, divisor)}] ({iv.kind})"
    return text


def _ratio(c: stats.Comparison) -> str:
    exact = c.low == c.high == c.ratio
    return f"{c.ratio:.3g}× [{c.low:.3g}–{c.high:.3g}]" if c.differs is not None and not exact else fmt.ratio(c)


@dataclass
class Report:
    lines: list[str]
    agree: int
    total: int
    timing_agree: int
    timing_total: int

    @property
    def timing_share(self) -> float:
        return self.timing_agree / self.timing_total if self.timing_total else 0.0


def _host_lines(host: Hosts, normalise: str | None) -> list[str]:
    """A note per machine name without fingerprints or whose calibration moved, a flag per name that two hosts
    share."""
    lines = []
    for (name, commit), (same, why) in host.same.items():
        label = f"{name} @ {commit[:8]}"
        if same is None or (same and why != host_check.SAME):
            lines.append(f"note: {label}: {why}" + ("; its times are compared" if same else ""))
        elif not same:
            lines.append(f"different machines: {label} shares a name across the runs but not a host ({why}); its "
                         "times are not compared" + (f", normalised by {normalise} below" if normalise else
                                                      f" (--normalise {'|'.join(host_check.NORMALISATION_KINDS)} "
                                                      "compares them in calibrated units)"))
    return lines


def _checks(rows_a: dict[tuple, dict], rows_b: dict[tuple, dict], common: list[tuple], host: Hosts,
            normalise: str | None) -> list[RowCheck]:
    """Each common row judged; a timing of two different hosts is not compared (normalised if asked)."""
    checks: list[RowCheck] = []
    for key in common:
        ra, rb = rows_a[key], rows_b[key]
        same = host.same[(key[0], key[2])][0]
        if ra["sampled"] and same is False:
            note = agreement.normalised(ra, rb, host.calibrations[(key[0], key[2])], normalise) if normalise else ""
            checks.append(RowCheck(ra, rb, "different hosts", "not compared", note))
        else:
            checks.append(RowCheck(ra, rb, *agreement.judge(ra, rb)))
    return checks


def _check_line(c: RowCheck) -> str:
    divisor, label = fmt.scale(c.a["unit"], [c.a["value"], c.b["value"]])
    label = "" if label == "count" else label
    where = f"{c.a['benchmark']} {_params(c.a['params'])} [{c.a['machine']} @ {c.a['commit'][:8]}]"
    return (f"{c.verdict:<15} {where}: A {_value(c.a, divisor, label)} | B {_value(c.b, divisor, label)}; "
            f"{c.why}" + (f"; {c.normalised}" if c.normalised else ""))


SAME_WAY, ONE_RUN, ACROSS, FLIPPED = "same direction", "in one run only", "other run across 1", "direction flipped"


def direction(ca: stats.Comparison, cb: stats.Comparison) -> str:
    """How two runs' verdicts on one ratio, stated as a difference in at least one of them, relate (one of SAME_WAY,
    ONE_RUN, ACROSS, FLIPPED). A ratio on the other side of 1 contradicts only where the two intervals do not overlap:
    an interval that holds the stating run's ratio states nothing against it."""
    if (ca.ratio > 1) == (cb.ratio > 1):
        return SAME_WAY if ca.differs and cb.differs else ONE_RUN
    return ACROSS if agreement.overlaps(Interval(ca.low, ca.high, ""), Interval(cb.low, cb.high, "")) else FLIPPED


def _direction_lines(rows_a: dict[tuple, dict], rows_b: dict[tuple, dict]) -> tuple[list[str], str]:
    """A line per JAX/PyTorch ratio stated as a difference in either run, and the directions summary line."""
    dir_a, dir_b = _directions(rows_a), _directions(rows_b)
    decided = [k for k in dir_a if k in dir_b and (dir_a[k].differs or dir_b[k].differs)]
    labels = []
    lines = [f"{frameworks.label(OTHER)}/{frameworks.label(BASE)} ratios whose interval excludes 1 in either run:"]
    for k in decided:
        ca, cb = dir_a[k], dir_b[k]
        labels.append(direction(ca, cb))
        lines.append(f"  {labels[-1]:<18} {k[3].benchmark} "
                     f"{_params(k[3].params())} [{k[0]} @ {k[2][:8]}]: A {_ratio(ca)} | B {_ratio(cb)}")
    return lines, directions(labels)


def compare_runs(a: Results, b: Results, normalise: str | None = None) -> Report:
    """Row-by-row agreement of two runs, directions of their ratios, and the summary lines."""
    rows_a, rows_b = _rows(a), _rows(b)
    common = [k for k in rows_a if k in rows_b]
    if not common:
        raise ReportError("the two results folders have no row in common (same machine, commit, benchmark and "
                          "parameters): compare runs of the same commit")
    host = agreement.hosts(a, b, {(k[0], k[2]) for k in common})
    checks = _checks(rows_a, rows_b, common, host, normalise)
    direction_lines, directions_line = _direction_lines(rows_a, rows_b)
    loads = [host_load.load_line(f"{m} @ {c[:8]}", a.details.get((m, c)), b.details.get((m, c))) for m, c in host.same]
    lines = _host_lines(host, normalise) + [x for x in loads if x] + hosts_section.layout_notes(
        [(rows_a[k], rows_b[k]) for k in common], a.details, b.details) + \
        [_check_line(c) for c in checks] + direction_lines
    single = [c for c in checks if c.verdict == "not judged"]
    compared = [c for c in checks if c.verdict not in ("different hosts", "not judged")]
    timing = [c for c in compared if c.timing]
    agree = sum(c.verdict == "agree" for c in compared)
    timing_agree = sum(c.verdict == "agree" for c in timing)
    undecided = sum(c.verdict == "cannot tell" for c in compared)
    flagged = len(checks) - len(compared) - len(single)
    widths = [[half_width(r["value"], r["ci_low"], r["ci_high"]) for r in rows] for rows in
              zip(*((c.a, c.b) for c in timing if c.a["unit"] == "seconds"))]
    lines.append("median 95 % interval half-width, times of 1 ms or more: " + _widths(*(widths or [[], []])))
    shift = agreement.host_shift(checks)
    if shift:
        lines.append(f"the host's speed between the runs: B's times a median {shift[0]:.3g}× A's over {shift[2]} "
                     f"timing rows in seconds; with B's divided by that, {shift[1]} of {shift[2]} agree")
    if undecided:
        lines.append(f"{undecided} row(s) could not be judged (no interval in one run): counted as not agreeing")
    if single:
        lines.append(f"{len(single)} row(s) measured once per run by design (no interval in either): not judged, "
                     "left out of the counts below")
    if flagged:
        lines.append(f"{flagged} timing row(s) on different hosts not compared")
        if normalise:
            ok = sum(c.normalised.endswith(": overlap") for c in checks)
            lines.append(f"{ok} of {flagged} timing rows on different hosts agree after normalisation by "
                         f"{normalise} (calibrated units, not seconds)")
    lines.append(directions_line)
    lines.append(f"{timing_agree} of {len(timing)} timing rows agree")
    lines.append(f"{agree} of {len(compared)} rows agree")
    return Report(lines, agree, len(compared), timing_agree, len(timing))


def _paired_files(folder: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted((folder / "paired").glob("*.csv"))} if (folder / "paired").is_dir() else {}


def _point(row: dict) -> RowKey:
    """A paired row's key: its framework, experiment and point (the experiment names the workload, size and mode)."""
    return RowKey.of_columns(row, ("experiment", "point"), "paired")


def compare_paired(folder_a: Path, folder_b: Path) -> list[str]:
    """The paired comparisons and remat curve (results/paired/<machine>-<commit8>.csv) of the two runs, for every
    file name both have: each point's time agrees when the two 95 % intervals overlap; each paired ratio whose
    interval excludes 1 in either run must lie on the same side of 1 in the other. Empty when neither run has one."""
    from tape_vs_trace.report import paired_results, paired_section

    files_a, files_b = _paired_files(folder_a), _paired_files(folder_b)
    names = sorted(set(files_a) & set(files_b))
    if not names:
        return ["paired: no paired results of one machine and commit in both runs"] if files_a or files_b else []
    lines: list[str] = []
    agree = total = 0
    labels: list[str] = []
    widths: tuple[list[float], list[float]] = ([], [])
    for name in names:
        try:
            ta, tb = (paired_results.read(f[name]) for f in (files_a, files_b))
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            raise ReportError(f"paired results {name}: {exc}") from None
        rows_b = {_point(r): r for r in tb.to_dict("records")}
        for ra in ta.to_dict("records"):
            rb = rows_b.get(_point(ra))
            if rb is None:
                continue
            where = f"paired {ra['experiment']}: {ra['point']} [{name}]"
            ia = Interval(ra["time_ci_low"], ra["time_ci_high"], "95 % interval")
            ib = Interval(rb["time_ci_low"], rb["time_ci_high"], "95 % interval")
            ok = agreement.overlaps(ia, ib)
            total += 1
            agree += ok
            for width, r, i in zip(widths, (ra, rb), (ia, ib)):
                width.append(half_width(r["time_s"], i.low, i.high))
            lines.append(f"{'agree' if ok else 'differ':<15} {where}: A {ra['time_s'] * 1e3:.4g} ms "
                         f"[{ia.low * 1e3:.4g}–{ia.high * 1e3:.4g}] | B {rb['time_s'] * 1e3:.4g} ms "
                         f"[{ib.low * 1e3:.4g}–{ib.high * 1e3:.4g}]; 95 % intervals "
                         f"{'overlap' if ok else 'do not overlap'}")
            ca, cb = paired_section.paired_ratio(ra), paired_section.paired_ratio(rb)
            if ra["point"] == ra["baseline"] or not (ca.differs or cb.differs):
                continue
            labels.append(direction(ca, cb))
            lines.append(f"  {labels[-1]:<18} {where} against {ra['baseline']}: A {_ratio(ca)} | B {_ratio(cb)}")
    lines.append("paired: median 95 % interval half-width, times of 1 ms or more: " + _widths(*widths))
    lines.append("paired: " + directions(labels))
    lines.append(f"paired: {agree} of {total} timing rows agree")
    return lines


def _widths(a: list[float], b: list[float]) -> str:
    """'A 15.2 % (38 rows), B 14.0 % (38 rows)' over the finite half-widths of each run."""
    def one(values: list[float]) -> str:
        found = [v for v in values if math.isfinite(v)]
        return f"{100 * float(np.median(found)):.1f} % ({len(found)} rows)" if found else "none (0 rows)"

    return f"A {one(a)}, B {one(b)}"


def directions(labels: list[str]) -> str:
    """The directions line: of the ratios stated as a difference in either run (one `direction` label each), how many
    the other run agrees with (stated the same way, or in one run only with the other's ratio on the same side of 1),
    how many flipped, and how many the other run leaves across 1 with an interval that holds the stating run's
    ratio."""
    n = {label: labels.count(label) for label in (SAME_WAY, ONE_RUN, ACROSS, FLIPPED)}
    return (f"{n[SAME_WAY] + n[ONE_RUN]} of {len(labels)} directions agree ({n[FLIPPED]} flipped; {n[SAME_WAY]} "
            f"stated in both runs, {n[ONE_RUN]} in one run only with the other run's ratio on the same side of 1, "
            f"{n[ACROSS]} in one run only with the other run's ratio across 1 and its interval overlapping)")


def run(folder_a: Path, folder_b: Path, normalise: str | None, strict: bool, warn: Callable[[str], None],
        verbose: bool = False) -> int:
    """Print the report; exit status 1 only under --strict with too few timing rows agreeing (or none compared)."""
    report = compare_runs(load(folder_a, warn, verbose), load(folder_b, warn, verbose), normalise)
    paired_lines = compare_paired(folder_a, folder_b)
    print("\n".join(paired_lines[:-2] + report.lines[:-3] + paired_lines[-2:] + report.lines[-3:]))
    if strict and report.timing_share < AGREEMENT:
        warn(f"--strict: {report.timing_agree} of {report.timing_total} timing rows agree, fewer than "
             f"{AGREEMENT:.0%}")
        return 1
    return 0
