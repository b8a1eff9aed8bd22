"""Runs on different hosts. Runs filed under one machine name that come from different hosts: told apart by their
fingerprints (results.host_check.same_host), their times never compared as seconds, and offered side by side in
calibrated units for a reader who wants to anyway. Machines whose ratios meet in one verdict across machines: only
like runs (the same benchmark versions, runner layout and measurement methods), the others named with the reason."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pandas as pd

from tape_vs_trace.report import headline, predicted, stats
from tape_vs_trace.report.headline import Row
from tape_vs_trace.report.load import Results
from tape_vs_trace.report.predicted import ACCOUNTS, NO_CALIBRATION, NOT_EXPLAINED
from tape_vs_trace.results import history, host_check, rowkey
from tape_vs_trace.results.rowkey import RowKey

KIND = "matmul_float32"  # times in float32 matmul flops of each host's calibrated rate
SHOWN = "time_step"  # the step times: the numbers most cited


def section(data: Results, machine: str, commit: str) -> list[str]:
    """Markdown lines for the other result files of `machine` that ran on another host than `commit`'s run."""
    mine = data.details.get((machine, commit)) or {}
    lines: list[str] = []
    for (m, other), theirs in sorted(data.details.items()):
        if m != machine or other == commit:
            continue
        same, why = host_check.same_host(mine, theirs or {})
        if same:
            continue
        lines += [f"Commit `{other[:8]}` of machine {machine} ran on a different host ({why}): its times are not "
                  "compared with this run's as seconds.", ""]
        lines += _normalised(data.table, machine, commit, other, mine.get("calibration"), theirs.get("calibration"))
    return lines


def _normalised(table: pd.DataFrame, machine: str, commit: str, other: str, cal_a, cal_b) -> list[str]:
    if not (isinstance(cal_a, dict) and isinstance(cal_b, dict)):
        return ["(no calibration in both runs: no calibrated comparison)", ""]
    rows = table[(table.machine == machine) & (table.metric == SHOWN) & (table.status == "ok")]
    a, b = ({RowKey.of(r): r for r in rows[rows.commit == c].to_dict("records")} for c in (commit, other))
    both = [key for key in a if key in b]
    out = [f"Step times of both runs in calibrated units ({KIND}: how many float32 matmul flops each host does in "
           "that time, from its own calibration; not seconds):", "",
           f"| benchmark | parameters | this run | commit `{other[:8]}` |", "|---|---|---:|---:|"]
    for key in both:
        try:
            na, nb = (host_check.normalised(r[key]["value"], cal, KIND) for r, cal in ((a, cal_a), (b, cal_b)))
        except ValueError as exc:
            return [f"(no calibrated comparison: {exc})", ""]
        params = ", ".join(f"{k}={v}" for k, v in json.loads(a[key]["params"]).items()
                           if k not in ("dtype", "precision", "device"))
        out.append(f"| `{key.benchmark}` | {params} | {na.value:.4g} | {nb.value:.4g} |")
    return out + [""] if len(both) else []


ASPECTS = rowkey.RUN_PROPERTIES  # what must match for two machines' ratios of one case to meet in one verdict


def date_ms(row: dict) -> int:
    """A table row's commit date (the result file's, as asv records it) in ms."""
    return int(datetime.strptime(row["date"], "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC).timestamp() * 1000)


def run_kind(r: Row, details: dict[tuple[str, str], dict]) -> dict[str, str]:
    """The aspects of one machine's ratio that another machine's must share to meet it in a verdict: both rows'
    benchmark versions, their runner layout where the value is a sampled time (a count does not depend on which
    processes ran it; `history.placement`, with how it is known), and how each value was measured."""
    layout = None
    if r.torch.get("sampled"):
        record = details.get((r.torch["machine"], r.commit)) or {}
        where = history.placement(record, date_ms(r.torch), r.torch["benchmark"])
        layout = f"{where.words} ({where.source})"
    return rowkey.run_properties((r.torch, r.jax), layout)


def _bare(kind: dict[str, str]) -> tuple:
    """A kind without how each aspect is known: two layouts meet when they are the same, however known."""
    return tuple(v.split(" (", 1)[0] if k == "runner layout" else v for k, v in kind.items())


def like_machines(by_machine: dict[str, Row], details: dict) -> tuple[list[str], dict[str, list[str]]]:
    """The machines whose ratios of one case meet in its verdict (the most alike, ties to the newest run's), and for
    each machine left out, why: each aspect it does not share, with both machines' words."""
    kinds = {m: run_kind(r, details) for m, r in by_machine.items()}
    groups: dict[tuple, list[str]] = {}
    for m, kind in kinds.items():
        groups.setdefault(_bare(kind), []).append(m)
    newest = {m: date_ms(r.torch) for m, r in by_machine.items()}
    like = max(groups.values(), key=lambda ms: (len(ms), max(newest[m] for m in ms)))
    ref = like[0]
    why = {m: [f"its {a} ({kinds[m].get(a, 'none')}) is not {ref}'s ({kinds[ref].get(a, 'none')})" for a in ASPECTS
               if _bare({a: kinds[m].get(a, "")}) != _bare({a: kinds[ref].get(a, "")})]
           for m in kinds if m not in like}
    return like, why


def _differs(a: Row, b: Row) -> float | None:
    """b's ratio over a's where they differ beyond a rerun's band, intervals apart; None otherwise."""
    ca, cb = a.comparison, b.comparison
    change = cb.ratio / ca.ratio
    apart = ca.high < cb.low or cb.high < ca.low
    return change if apart and abs(math.log(change)) > math.log(1 + stats.BETWEEN_PROCESSES) else None


def _calibration_table(machines: list[tuple[str, str]], details: dict) -> list[str]:
    head = [f"{fw} {label}" for label, *_ in predicted.CALIBRATIONS.values() for fw in ("PyTorch", "JAX")]
    lines = ["| machine | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for machine, commit in machines:
        cal = (details.get((machine, commit)) or {}).get("calibration") or {}
        cells = [host_check.calibrated_value(cal, path) for _, t, j, _ in predicted.CALIBRATIONS.values()
                 for path in (t, j)]
        lines.append(f"| {machine} (`{commit[:8]}`) | " + " | ".join("n/a" if v is None else f"{v:.4g}"
                                                                       for v in cells) + " |")
    return lines


def _differences(rows: list[Row], details: dict[tuple[str, str], dict], no_matmuls: frozenset = frozenset()
                 ) -> tuple[list[str], list[str], list, int]:
    """The table rows of `explain`, each one's verdict (`accounts`, without its reason), the runs they name and how
    many verdicts rest on both runs' intervals; `no_matmuls` holds the workloads whose step has no matmuls."""
    by_case: dict[tuple, dict[str, Row]] = {}
    for r in rows:
        if r.measure == "step time":
            by_case.setdefault(r.case, {})[r.machine] = r
    found, verdicts, machines, on_intervals = [], [], {}, 0
    for case, by_machine in by_case.items():
        like = like_machines(by_machine, details)[0]
        for i, ma in enumerate(like):
            for mb in like[i + 1:]:
                a, b = by_machine[ma], by_machine[mb]
                change = _differs(a, b)
                kind = predicted.RELEVANT.get(case[2])
                if change is None or kind is None:
                    continue
                cals = [predicted.calibrated(details, r.torch["machine"], r.commit, kind) for r in (a, b)]
                said = predicted.accounts(change, *cals,
                                          concerns=not (kind == "matmul rate" and case[0] in no_matmuls))
                verdicts.append(said.split(" (")[0])
                on_intervals += all(c is not None and c.has_interval for c in cals)
                machines.update({(r.torch["machine"], r.commit): None for r in (a, b)})
                found.append(f"| {headline.case_label(case)} | {ma} → {mb} | {a.comparison.ratio:.3g}× → "
                             f"{b.comparison.ratio:.3g}× | {change:.3g}× | {kind}: {predicted.shown(cals[0])} → "
                             f"{predicted.shown(cals[1])} | {said} |")
    return found, verdicts, list(machines), on_intervals


def _counted(verdicts: list[str], subject: str, on_intervals: int) -> str:
    """How many of `verdicts` each kind is, and how many rest on both runs' intervals, as one sentence about
    `subject`."""
    n = {v: verdicts.count(v) for v in (ACCOUNTS, NOT_EXPLAINED, NO_CALIBRATION)}
    return (f"Of {subject}, the calibration of the step's kind (dispatch cost for eager steps, matmul rate for "
            f"compiled steps with matmuls) accounts for {n[ACCOUNTS]}; {n[NOT_EXPLAINED]} are not explained by the "
            "calibration"
            + (f"; {n[NO_CALIBRATION]} have no such calibration in both runs" if n[NO_CALIBRATION] else "")
            + f". {on_intervals} of the {len(verdicts)} rest on both runs' 95 % intervals over the calibration's "
            "processes, the others on ranges over runs.")


def explain(rows: list[Row], details: dict[tuple[str, str], dict], no_matmuls: frozenset = frozenset()) -> list[str]:
    """For every step-time ratio that differs between two like machines (`like_machines`) beyond the band a rerun
    moves it, with intervals apart: each framework's calibration on each machine, the JAX/PyTorch ratio the
    calibration of the step's kind (predicted.RELEVANT) predicts on each, with its interval or its range over the
    host's runs (`predicted.calibrated`), and whether that accounts for the change (`predicted.accounts`); then how
    many it does. Empty where no ratio differs."""
    found, verdicts, machines, on_intervals = _differences(rows, details, no_matmuls)
    if not found:
        return []
    return ["", f"Ratios that differ between like machines beyond the {stats.BETWEEN_PROCESSES * 100:g} % a rerun "
            "moves them (intervals apart), against the calibrations each run recorded of both frameworks:", "",
            *_calibration_table(machines, details), "",
            "A calibration predicts a JAX/PyTorch ratio on each host: the run's own, with its 95 % interval over "
            "the calibration's processes [in brackets] where the run kept each process's values, otherwise with "
            "its range over every run of the machine on the same host (a calibration moves between runs as a step "
            "does). Two runs with intervals predict the change with an interval of their own; otherwise every pair "
            "of their bounds does, which is wider. It accounts for a change only where that prediction excludes 1 "
            "and holds the change, and only where it concerns the workload (the matmul rate not for a step without "
            "matmuls).", "",
            "| case | machines | JAX/PyTorch | change | calibration of the step's kind, JAX/PyTorch [interval] or "
            "(range, runs) | does it account for the change? |",
            "|---|---|---|---:|---|---|", *found, "",
            _counted(verdicts, f"{len(found)} such difference(s)", on_intervals)]


PAGE = "hosts.md"  # the differences between machines, beside the front page: they grow with every pair of machines


def page(rows: list[Row], details: dict[tuple[str, str], dict], no_matmuls: frozenset = frozenset()) -> str | None:
    """hosts.md: every ratio that differs between like machines against both frameworks' calibrations (`explain`);
    None where none differs."""
    lines = explain(rows, details, no_matmuls)
    if not lines:
        return None
    return "\n".join(["# Ratios that differ between machines", "", "[Back to the report](summary.md)", *lines, ""])


def front_lines(rows: list[Row], details: dict[tuple[str, str], dict], no_matmuls: frozenset = frozenset()
                ) -> list[str]:
    """The front page's word on the differences between machines: how many, by verdict, and a link to PAGE; empty
    where none differs."""
    found, verdicts, *_ = _differences(rows, details, no_matmuls)
    if not found:
        return []
    n = {v: verdicts.count(v) for v in (ACCOUNTS, NOT_EXPLAINED, NO_CALIBRATION)}
    none = f"; {n[NO_CALIBRATION]} lack a calibration in both runs" if n[NO_CALIBRATION] else ""
    return [f"{len(found)} step-time ratios differ between like machines beyond a rerun's "
            f"±{stats.BETWEEN_PROCESSES * 100:g} % (intervals apart): the calibration of the step's kind accounts for "
            f"{n[ACCOUNTS]}; {n[NOT_EXPLAINED]} are not explained by it{none}: [{PAGE}]({PAGE})."]


def layout_notes(pairs: list[tuple[dict, dict]], details_a: dict, details_b: dict) -> list[str]:
    """For the rerun check: a note per machine and commit whose two runs measured some timed benchmark (of the row
    pairs) in another process layout (`history.placement`). Its rows are compared all the same (a worker run
    against asv run is a check of the runner), but a difference there may be the layout's."""
    moved: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
    for ra, rb in pairs:
        if not ra["sampled"]:
            continue
        where = [history.placement(d.get((r["machine"], r["commit"])) or {}, date_ms(r), r["benchmark"]).words
                 for d, r in ((details_a, ra), (details_b, rb))]
        if where[0] != where[1]:
            moved.setdefault((ra["machine"], ra["commit"]), {})[ra["benchmark"]] = (where[0], where[1])
    lines = []
    for (name, commit), benchmarks in moved.items():
        first, (wa, wb) = next(iter(benchmarks.items()))
        lines.append(f"note: {name} @ {commit[:8]}: {len(benchmarks)} timed benchmark(s) ran in another runner layout "
                     f"in each run (such as {first}: A {wa}; B {wb}); compared, but a difference there may be the "
                     "layout's")
    return lines
