"""Where a benchmark's history breaks: asv keeps only the results of a benchmark's current version on its graphs and
drops the others without a word. This page of the published dashboard lists, per benchmark, every commit with
results and the benchmark version they were measured with, and marks each change of version."""

from __future__ import annotations

import html
import json
from pathlib import Path


def versions(results: Path) -> dict[str, list[tuple[str, str, str, str]]]:
    """benchmark -> [(date ms as text, machine, commit, version)] from every result file, oldest first."""
    out: dict[str, list[tuple[str, str, str, str]]] = {}
    for path in sorted(results.glob("*/*.json")):
        if path.name == "machine.json":
            continue
        try:
            data = json.loads(path.read_text())
            columns = data["result_columns"]
            at = columns.index("version")
            for name, entry in data["results"].items():
                version = entry[at] if at < len(entry) else None
                out.setdefault(name, []).append((f"{data['date']:015d}", path.parent.name,
                                                 str(data["commit_hash"])[:8], str(version)))
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            continue  # a file asv itself cannot read: asv publish reports it
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
