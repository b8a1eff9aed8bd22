"""A machine name whose host changed, split for the dashboard: asv joins every result file of one machine name into
one series, so a run on another host would read as a regression on its graphs and its Regressions page.

The host is the project's one rule, `host_check.same_host`, applied to each result file's "tape_vs_trace" record:
a machine's newest run keeps the name, and runs of another host go under `<name>@host2`, `@host3`, ... (newest host
first). A run whose record has no fingerprint cannot be told apart and stays under the name, as asv publishes it.
Only the dashboard's scratch copy of the results is renamed; the results folder is never written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tape_vs_trace.results import asv_files, host_check
from tape_vs_trace.results.folder import BENCHMARKS, MACHINE_RECORD, ResultsFolder

SUFFIX = "@host"
SKIP = (MACHINE_RECORD, BENCHMARKS)


@dataclass(frozen=True)
class Run:
    """One result file of a machine folder, with what the host rule reads from it."""

    path: Path
    commit: str
    date: float
    record: dict  # the file's "tape_vs_trace" entry ({} in a plain asv result)

    @property
    def fingerprinted(self) -> bool:
        return bool(self.record.get("fingerprint"))


@dataclass
class Host:
    """The runs of one machine folder that ran on one host, published as `name`."""

    name: str
    runs: list[Run] = field(default_factory=list)  # newest first
    reason: str = ""  # why this is another host than the newest run's (same_host's reason); "" for that host


@dataclass(frozen=True)
class Machine:
    """One machine folder: its hosts (the newest run's first) and, per run, the host rule's word on it against the
    newest run."""

    folder: Path
    name: str
    hosts: list[Host]
    verdicts: dict[str, str]  # commit -> same_host's reason against the newest run, or why none was asked

    @property
    def split(self) -> bool:
        return len(self.hosts) > 1


def _runs(folder: Path) -> list[Run]:
    """The folder's readable result files (asv_files), newest first (by commit date, then name)."""
    runs = []
    for path in asv_files.result_files(folder):
        if path.name in SKIP:
            continue
        try:
            file = asv_files.read(path)
            runs.append(Run(path, file.commit, float(file.date or 0), file.details or {}))
        except (asv_files.ResultFileError, ValueError, TypeError):
            continue  # asv publish warns about the file itself
    return sorted(runs, key=lambda r: (r.date, r.path.name), reverse=True)


def machine(folder: Path, name: str) -> Machine:
    """`folder`'s runs grouped by host: each fingerprinted run joins the first host whose newest fingerprinted run
    `same_host` calls the same, else starts a host of its own; a run without fingerprint joins the first host."""
    hosts = [Host(name)]
    anchors: list[dict] = []  # each host's newest fingerprinted record
    verdicts = {}
    for run in _runs(folder):
        if not run.fingerprinted:
            hosts[0].runs.append(run)
            verdicts[run.commit] = "no host fingerprint recorded: cannot tell the host, kept under the name"
            continue
        if not anchors:
            anchors.append(run.record)
            hosts[0].runs.append(run)
            verdicts[run.commit] = "the newest fingerprinted run"
            continue
        verdicts[run.commit] = host_check.same_host(anchors[0], run.record)[1]
        for i, anchor in enumerate(anchors):
            if host_check.same_host(anchor, run.record)[0]:
                hosts[i].runs.append(run)
                break
        else:
            hosts.append(Host(f"{name}{SUFFIX}{len(hosts) + 1}", [run],
                              host_check.same_host(anchors[0], run.record)[1]))
            anchors.append(run.record)
    return Machine(folder, name, [h for h in hosts if h.runs] or hosts, verdicts)


def machines(results: Path) -> list[Machine]:
    """Every machine folder of `results` (it holds a readable machine.json), in name order."""
    return [machine(folder, name) for folder, name in ResultsFolder(results).machine_folders()]


def stage(found: list[Machine], results: Path, view: Path) -> set[Path]:
    """Write each split machine's other hosts into `view` as machine folders of their own (machine.json and result
    files copied with the machine renamed); return the result files so written, which `view` must not link."""
    moved = set()
    for m in found:
        for host in m.hosts[1:]:
            folder = view / m.folder.relative_to(results).parent / host.name
            info = ResultsFolder(results).machine_record(m.folder.name)
            ResultsFolder(results).write_machine_record(host.name, {**info, "machine": host.name}, folder=folder)
            for run in host.runs:
                asv_files.write(run.path, folder / run.path.name, machine=host.name)
                moved.add(run.path)
    return moved


def summary(m: Machine) -> str:
    """One line saying whether and how the dashboard split `m`."""
    if not m.split:
        return f"{m.name}: one host by the host rule across its {len(m.hosts[0].runs)} run(s)"
    parts = [f"{h.name} ({', '.join(r.commit[:8] for r in h.runs)}): {h.reason}" for h in m.hosts[1:]]
    return f"{m.name}: runs on another host than its newest are published apart, " + "; ".join(parts)


def _previous(site: Path, graph: str, index: int | None, revision: int) -> int | None:
    """The revision before `revision` at which the graph's series (parameter combination `index`) has a value: the
    other run of a jump asv states as "in commit X" (no first revision)."""
    try:
        points = json.loads((site / graph).read_text())
    except (OSError, ValueError):
        return None
    before = [r for r, v in points if r < revision and (v if index is None else v[index]) is not None]
    return max(before) if before else None


def regressions(site: Path, found: list[Machine]) -> list[str]:
    """One line per jump on asv's Regressions page (the published regressions.json): its machine, benchmark, the
    two runs it lies between and the host rule's word on those two runs."""
    try:
        listed = json.loads((site / "regressions.json").read_text())["regressions"]
        to_hash = json.loads((site / "index.json").read_text())["revision_to_hash"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    runs = {(h.name, r.commit): r for m in found for h in m.hosts for r in h.runs}
    lines = []
    for name, graph, _, index, _, _, jumps in listed:
        machine = next((p[len("machine-"):] for p in graph.split("/") if p.startswith("machine-")), "")
        for before, after, old, new in jumps or []:
            before = before if before is not None else _previous(site, graph, index, after)
            a, b = (runs.get((machine, to_hash.get(str(rev), ""))) for rev in (before, after))
            if a is None or b is None:
                continue
            verdict = host_check.same_host(a.record, b.record)[1] if a.fingerprinted and b.fingerprinted else \
                "no host fingerprint in one of the runs"
            change = f" {new / old:.3g}×" if old else ""
            lines.append(f"{machine}: {name}{change} between {a.commit[:8]} and {b.commit[:8]}: {verdict}")
    return lines
