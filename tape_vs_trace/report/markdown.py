"""summary.md, the front page, in the order a design review asks (report.front): the scale once, each framework at
its fastest mode, the mechanisms in like modes, memory, compile time and where machines disagree (hosts.PAGE), then
a link to each machine's page of its own (report.machine_page: findings, tables, provenance). Its first part is the
README's block (report.readme). Every number is computed from the tidy table (summary.csv)."""

from __future__ import annotations

import pandas as pd

from tape_vs_trace.report import front, glance, headline, hosts, like_modes, machine_page, scale
from tape_vs_trace.report.headline import Headline
from tape_vs_trace.report.load import Results
from tape_vs_trace.report.select import base_numerics, latest


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    kept = "".join(ch for ch in heading.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _newest_first(groups: dict[str, pd.DataFrame]) -> list[tuple[str, pd.DataFrame]]:
    return sorted(groups.items(), key=lambda kv: (kv[1].date.max(), kv[0]), reverse=True)


def first_part(data: Results, top: Headline | None, chart: str = headline.NAME, pages: str = ""
               ) -> tuple[list[str], dict]:
    """The answers a reviewer wants first, and the README's block: the scale, each framework at its fastest and the
    chart of report.glance (`chart`: its link from the page; `pages`: the report's folder from the page, for its
    other links); also the machines left out of its verdicts, and why."""
    groups = _newest_first(latest(data.table))
    info = {g: data.machines.get(rows.machine.iloc[0], {}) for g, rows in groups}
    fastest, left = front.fastest_section(top, groups, data.details) if top is not None else ([], {})
    lines = ["## Scale", "", *front.scale_lines(groups, info), *front.unlike_short(left, pages), "", *fastest]
    if top is not None and top.drawn:
        lines += [f"![{glance.ALT}]({chart})", ""]
    lines += [f"- Not in the verdicts: {why}." for why in top.left_out] if top is not None else []
    return lines, left


def markdown(data: Results, figures: dict[str, list[str]], results_label: str, top: Headline | None = None,
             series: dict[str, tuple[str, bool, list[list[str]], bool]] | None = None,
             pointers: dict[str, str] | None = None, first_step: tuple[list[str], str] = ([], "")) -> str:
    """summary.md: `first_part`, the mechanisms in like modes, memory (its caption with `pointers["memory"]` and the
    GPU allocator peaks), compile time (`series`: per machine its newest depth series, report.front.compile_section;
    and `first_step`'s rows and sentence, report.first_step.front_rows), where machines disagree; each machine's
    page linked first."""
    pointers = pointers or {}
    table = data.table
    groups = _newest_first(latest(table))
    shown = {(r.machine.iloc[0], r.commit.iloc[0]) for _, r in groups}
    older = len(set(zip(table.machine, table.commit)) - shown)
    links = ", ".join(f"[{g}]({machine_page.path(g)})" for g, _ in groups)
    intro = (f"Built by `tape-vs-trace report` from `{results_label}` ({data.files} result files, "
             f"{table.machine.nunique()} machines; each machine's newest run, {older} older in `summary.csv`). Machine "
             f"pages: {links}.")
    lines = ["# tape-vs-trace report", "", intro, ""]
    opening, left = first_part(data, top)
    lines += opening
    if top is not None:
        gpu = " ".join(line.removeprefix("- ") for line in front.gpu_peak_lines(table) if line)
        lines += like_modes.mechanism_summary(top, data.details)
        lines += like_modes.memory_summary(top, data.details, " ".join(w for w in (pointers.get("memory", ""), gpu)
                                                                        if w))
    lines += front.compile_section(top, series or {}, first_step)
    between = hosts.front_lines(top.rows, data.details, top.no_matmuls) if top is not None else []
    if between:
        lines += ["## Where machines disagree", "", *between]
    return "\n".join(lines) + "\n"


def pages(data: Results, figures: dict[str, list[str]], compiled: dict[str, list[str]] | None = None,
          top: Headline | None = None) -> dict[str, str]:
    """Each machine's page by its path relative to the front (machine_page.path), and where ratios differ between
    machines of the headline (`top`), hosts.PAGE."""
    compiled = compiled or {}
    out = {}
    between = hosts.page(top.rows, data.details, top.no_matmuls) if top is not None else None
    if between:
        out[hosts.PAGE] = between
    tables = like_modes.page(top, data.details) if top is not None else ""
    if tables:
        out[like_modes.PAGE] = tables
    for group, rows in latest(data.table).items():
        scaled = scale.words(base_numerics(rows), data.machines.get(rows.machine.iloc[0], {}))
        out[machine_page.path(group)] = machine_page.page(data, group, rows, figures.get(group, []), scaled,
                                                          compiled.get(group, []))
        out[machine_page.tables_path(group)] = machine_page.tables_page(data, group, rows, figures.get(group, []))
    return out
