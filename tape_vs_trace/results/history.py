"""Where a benchmark's history breaks: asv keeps only the results of a benchmark's current version on its graphs and
drops the others without a word. This page of the published dashboard lists, per benchmark, every commit with
results and the benchmark version they were measured with, and marks each change of version.

The runner's process layout breaks a history that asv does not see: which combinations share a worker process
changed the speed of some steps (docs/history.md). `placement` says, for one benchmark of one result file, which
layout measured it: recorded by the runner since it records one, derived for older files from what they do record.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, NamedTuple

from tape_vs_trace.results import asv_files


def versions(results: Path) -> dict[str, list[tuple[str, str, str, str]]]:
    """benchmark -> [(date ms as text, machine, commit, version)] from every result file, oldest first."""
    out: dict[str, list[tuple[str, str, str, str]]] = {}
    for path in sorted(results.glob("*/*.json")):
        if path.name == "machine.json":
            continue
        try:
            file = asv_files.read(path)
            runs = [(name, (f"{file.date:015d}", path.parent.name, file.commit[:8], str(file.version(name))))
                    for name in file.benchmarks]
        except (asv_files.ResultFileError, ValueError, TypeError):
            continue  # a file asv itself cannot read: asv publish reports it
        for name, run in runs:
            out.setdefault(name, []).append(run)
    return {name: sorted(runs) for name, runs in sorted(out.items())}


def page(results: Path, css: str) -> str:
    """The history page (HTML) of `results`; `css` is the stylesheet's path relative to the page."""
    rows, breaks = [], 0
    for name, runs in versions(results).items():
        for i, (_, machine, commit, version) in enumerate(runs):
            prior = runs[i - 1][3] if i else None
            broke = prior is not None and prior != version
            breaks += broke
            mark = f"history breaks here: version {html.escape(str(prior))} &rarr; {html.escape(version)}" \
                if broke else ""
            row_class = ' class="warning"' if broke else ""
            rows.append(f"<tr{row_class}><td><code>{html.escape(name)}</code></td><td>{html.escape(machine)}</td>"
                        f"<td><code>{commit}</code></td><td>{html.escape(version)}</td><td>{mark}</td></tr>")
    summary = (f"{breaks} break(s) of history: the graphs show only each benchmark's current version."
               if breaks else "No break of history: every benchmark was measured with one version throughout.")
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Benchmark history</title>"
            f"<link rel=\"stylesheet\" href=\"{css}\"></head><body class=\"container\"><h1>Benchmark history</h1>"
            f"<p>{summary} A benchmark's version changes when what it measures changes (its <code>version</code> "
            "attribute); asv then drops the older results from the graphs. <a href=\"index.html\">Back to the "
            "dashboard</a>.</p><table class=\"table table-condensed\"><thead><tr><th>benchmark</th><th>machine</th>"
            "<th>commit</th><th>version</th><th></th></tr></thead><tbody>" + "".join(rows) +
            "</tbody></table></body></html>\n")


def link(index_html: str) -> str:
    """asv's index page with a "History" entry in its navigation bar."""
    anchor = '<ul class="nav navbar-nav navbar-left">'
    return index_html.replace(anchor, anchor + '<li><a href="history.html">History</a></li>', 1)


class Layout(NamedTuple):
    """A process layout of the worker runner (`tape_vs_trace.running.runner`) and the commit that introduced it."""

    id: str
    commit: str
    author_date_ms: int  # what asv records as a result file's "date"
    words: str


ASV = "one process per combination and round (asv run)"
# The worker runner's layouts, oldest first. A result file records its commit's author date, and this repository's
# history is linear: a file dated on or after a layout's commit was measured with it.
LAYOUTS = (
    Layout("worker-shared", "", 0,
           "one worker process per framework and round, compiled and eager combinations together"),
    Layout("worker-compiled-apart", "7b3a82c3bb348b39d4e38a97c790eabb466bbe9f", 1796197395000,
           "compiled combinations in a worker process of their own per framework and round"),
)
# Since this commit (author date in ms), a benchmark whose paired ratios divide an eager point by a compiled one
# keeps its compiled combinations in the eager worker: those the runner's paired_across_modes returned then.
COMPILED_WITH_EAGER = ("255262e945cd19a1ceb21012e3604a805d59a3b5", 1796198822000,
                       ("transforms.TransformStep_mlp.time_step",))


# what a recorded run whose combinations had several process-wide settings adds to its layout's words
SETTINGS_APART = "each process-wide setting (matmul precision, float64) in processes of its own"


class Placement(NamedTuple):
    """Which processes measured one benchmark of one result file, and how that is known."""

    words: str
    source: str


def runner_layout(details: dict[str, Any], date_ms: int) -> tuple[Layout, tuple[str, ...], str]:
    """The worker layout of a result file's worker run (its "tape_vs_trace" record, its commit's author date), the
    benchmarks whose compiled combinations share the eager worker, and how that is known."""
    recorded = (details.get("worker_runs") or {}).get("layout")
    by_id = {layout.id: layout for layout in LAYOUTS}
    if isinstance(recorded, dict) and recorded.get("id") in by_id:
        layout = by_id[recorded["id"]]
        if len(recorded.get("settings") or []) > 1:  # the split moved combinations only where a run had several
            layout = layout._replace(words=f"{layout.words}, {SETTINGS_APART}")
        return layout, tuple(recorded.get("compiled_with_eager") or ()), "recorded by the runner"
    layout = [layout for layout in LAYOUTS if date_ms >= layout.author_date_ms][-1]
    together = COMPILED_WITH_EAGER[2] if date_ms >= COMPILED_WITH_EAGER[1] else ()
    later = next((x for x in LAYOUTS if x.author_date_ms > date_ms), None)
    how = (f"derived: its commit is dated before {later.commit[:8]}, which introduced the next layout"
           if later else f"derived: its commit is dated on or after {layout.commit[:8]}, which introduced it")
    return layout, together, how


def placement(details: dict[str, Any], date_ms: int, benchmark: str) -> Placement:
    """How `benchmark` of a result file was placed in processes: asv run's process per combination (the runner
    the file names for it, asv where it names none), or the worker layout of the run that measured it (an earlier
    run's, where the file kept that run's values of the benchmark)."""
    runner = (details.get("runner_of") or {}).get(benchmark, "asv")
    if runner != "worker":
        return Placement(ASV, "recorded by the runner" if details.get("runner_of") else
                         "derived: the file names no runner, as asv run's files did not")
    for earlier in details.get("earlier_runs") or []:
        if benchmark in (earlier.get("benchmarks_kept") or []) and earlier.get("worker_runs"):
            details = earlier
    layout, together, how = runner_layout(details, date_ms)
    if layout.id != "worker-shared" and benchmark in together:
        return Placement(f"{layout.words}, except this benchmark's, which share the eager worker", how)
    return Placement(layout.words, how)
