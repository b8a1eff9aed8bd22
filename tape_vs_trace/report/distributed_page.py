"""The dashboard's Distributed page: the distributed results (results/distributed, not asv results) as the report
shows them, per machine (its newest file) and workload: the report's figure, drawn as SVG with its text kept as
text, then the section's tables, changes and methods (`distributed_section.section`), and the `cite` command of
each workload. asv's own graphs would plot these rows across commits as a regression series, which three launches
of one commit do not make; like the History page, this one sits beside asv's."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

from tape_vs_trace.report import distributed_figure, distributed_results, distributed_section
from tape_vs_trace.results.folder import ResultsFolder

PAGE = "distributed.html"
FOLDER = distributed_results.FOLDER  # results/distributed, and the figures' folder inside the published site
_INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]+)\)")
SECTION = "###"  # the section's own heading level on this page; its workloads' headings are one deeper
WORKLOAD = len(SECTION) + 1


def anchor(machine: str, workload: str) -> str:
    """The page's fragment of one machine's workload, `distributed.html#<machine>-<workload>`."""
    return f"{PAGE}#{machine}-{workload}"


def _inline(text: str) -> str:
    """The section's inline markdown (code spans, bold) as HTML, everything else escaped."""
    out, at = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[at:m.start()]))
        out.append(f"<code>{html.escape(m.group(1))}</code>" if m.group(1) else f"<b>{html.escape(m.group(2))}</b>")
        at = m.end()
    return "".join(out) + html.escape(text[at:])


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def to_html(lines: list[str], machine: str) -> str:
    """The markdown `distributed_section.section` writes (headings, images, tables, lists, paragraphs) as HTML;
    each workload's heading gets the id `anchor` names and, after its figure, its `cite` command."""
    out: list[str] = []
    table: list[list[str]] = []
    items: list[str] = []

    def flush() -> None:
        if table:
            head, *body = table
            out.append('<table class="table table-condensed"><thead><tr>' +
                       "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead><tbody>" +
                       "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body) +
                       "</tbody></table>")
            table.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("|"):
            if not set(line) <= set("|-: "):  # the header's separator row
                table.append(_cells(line))
            continue
        if line.startswith("- "):
            items.append(line[2:])
            continue
        flush()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            text = line[level:].strip()
            workload = text.split(" ", 1)[0]
            ident = f' id="{html.escape(anchor(machine, workload).split("#", 1)[1])}"' if level == WORKLOAD else ""
            out.append(f"<h{level}{ident}>{_inline(text)}</h{level}>")
            if level == WORKLOAD:
                out.append(f"<p>Cite a row: <code>tape-vs-trace cite distributed machine={html.escape(machine)} "
                           f"workload={html.escape(workload)} form=... mode=... ranks=...</code></p>")
        elif _IMAGE.fullmatch(line.strip()):
            alt, src = _IMAGE.fullmatch(line.strip()).groups()
            out.append(f'<p><img src="{html.escape(src)}" alt="{html.escape(alt)}" style="max-width:100%"></p>')
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush()
    return "\n".join(out)


def _machine_info(results: Path, machine: str) -> dict:
    return ResultsFolder(results).machine_record(machine)


def write(results: Path, site: Path, css: str, warn: Callable[[str], None]) -> bool:
    """site/distributed.html and its figures from `results`' distributed results; False (nothing written) when
    there are none."""
    from matplotlib import rc_context  # only a dashboard with distributed results pays for matplotlib

    tables = distributed_results.load(results, warn)
    if not tables:
        return False
    body = []
    for machine, table in sorted(tables.items()):
        folder = site / FOLDER / machine
        folder.mkdir(parents=True, exist_ok=True)
        footer = distributed_figure.footer(table, _machine_info(results, machine))
        names = []
        for workload, rows in table.groupby("workload", sort=False):
            path = folder / f"{distributed_section.FIGURES}{workload}.svg"
            # text as <text>, not glyph outlines: the labels stay searchable and selectable in the browser
            with rc_context({"svg.fonttype": "none", "svg.hashsalt": "tape-vs-trace"}):
                distributed_figure.figure(rows, footer, path)
            names.append(path.relative_to(site).as_posix())
        body.append(f'<h2 id="{html.escape(machine)}">{html.escape(machine)}</h2>\n' +
                    to_html(distributed_section.section(table, names, None, SECTION), machine))
    return bool((site / PAGE).write_text(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Distributed steps</title>"
        f"<link rel=\"stylesheet\" href=\"{css}\"></head><body class=\"container\"><h1>Distributed steps</h1>"
        "<p>One gradient step over N ranks per form and mode (<code>tape-vs-trace distributed</code>), from "
        "<code>results/distributed/</code>, each machine's newest file: not asv results, so not on asv's graphs. "
        "<a href=\"index.html\">Back to the dashboard</a>.</p>\n" + "\n".join(body) + "\n</body></html>\n",
        encoding="utf-8"))


def link(index_html: str) -> str:
    """asv's index page with a "Distributed" entry in its navigation bar."""
    anchor_tag = '<ul class="nav navbar-nav navbar-left">'
    return index_html.replace(anchor_tag, anchor_tag + f'<li><a href="{PAGE}">Distributed</a></li>', 1)
