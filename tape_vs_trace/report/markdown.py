"""summary.md, the front page: what the report is, each machine's scale, the headline (sentences, chart, the table
across machines, how many ratios differ between machines with a link to hosts.PAGE), each framework at its best per
machine, and a link to each machine's page of its own (report.machine_page: findings, tables, provenance). Every
number is computed from the tidy table (summary.csv)."""

from __future__ import annotations

import pandas as pd

from tape_vs_trace.report import best, headline, hosts, machine_page, scale
from tape_vs_trace.report.headline import Headline
from tape_vs_trace.report.load import Results
from tape_vs_trace.report.select import base_numerics, latest


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    kept = "".join(ch for ch in heading.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _newest_first(groups: dict[str, pd.DataFrame]) -> list[tuple[str, pd.DataFrame]]:
    return sorted(groups.items(), key=lambda kv: (kv[1].date.max(), kv[0]), reverse=True)


def headline_section(top: Headline | None, details: dict | None = None,
                     groups: dict[str, pd.DataFrame] | None = None) -> list[str]:
    """The chart, one sentence per machine (with its scale and what its calibration says of each mode), the
    machines left out and why, and where there are several, each case on every machine with on how many its finding
    holds."""
    if top is None:
        return []
    details, groups = details or {}, groups or {}
    lines = [f"![headline]({headline.NAME})", ""] if top.drawn else ["No JAX/PyTorch ratio to draw.", ""]
    for m in dict.fromkeys(r.machine for r in top.rows):
        said = best.sentence(top, m, groups[m], details) if m in groups else \
            headline.sentence(top.rows, m, top.info.get(m, {}), top.scale.get(m, ""))
        lines.append(f"- {said}")
    lines += [f"- Not in the headline: {why}." for why in top.left_out]
    table = hosts.across(top.rows, details)
    if table:
        lines += ["", "Across machines (a finding holds on a machine where its ratio points the same way beyond the "
                  "band a rerun moves it; only like runs meet in a verdict):", "", *table,
                  *hosts.front_lines(top.rows, details)]
    return lines + [""]


def _scale_lines(groups: list[tuple[str, pd.DataFrame]], data: Results) -> list[str]:
    """Each machine's scale first: a number pasted into a review carries what it was measured on."""
    return [f"- **{g}**: " + scale.words(base_numerics(rows), data.machines.get(rows.machine.iloc[0], {}))
            .removeprefix("Scale: ") for g, rows in groups]


def markdown(data: Results, figures: dict[str, list[str]], results_label: str, top: Headline | None = None,
             compiled: dict[str, list[str]] | None = None) -> str:
    """summary.md's front: the scale of each machine, the headline, per machine each framework at its best, its
    compile growth (`compiled`: report.compile_growth's lines) and a link to its page (`pages`); older commits
    last."""
    table = data.table
    groups = _newest_first(latest(table))
    shown = {(r.machine.iloc[0], r.commit.iloc[0]) for _, r in groups}
    older = sorted(set(zip(table.machine, table.commit)) - shown)
    intro = (f"Built by `tape-vs-trace report` from the asv results in `{results_label}` ({data.files} result "
             f"file(s), {table.machine.nunique()} machine(s), {table.commit.nunique()} commit(s)). Ratios are "
             "JAX/PyTorch: above 1, JAX is slower or keeps more. Each machine's findings, every table and the "
             "provenance are on its own page, linked below; every number is computed from `summary.csv`.")
    lines = ["# tape-vs-trace report", "", intro, "", "## Scale", "", *_scale_lines(groups, data), "",
             "## Headline", "", *headline_section(top, data.details, dict(groups)), "## Each machine", ""]
    for group, rows in groups:
        lines += [f"### {group}", "", f"[Findings, every table and provenance: {machine_page.path(group)}]"
                  f"({machine_page.path(group)})", "", *best.section(base_numerics(rows), data.details),
                  *machine_page.compile_section((compiled or {}).get(group, []), figures.get(group, []), "####")]
    if older:
        lines += ["## Older commits", "", "In summary.csv only (the pages show each machine's latest commit): "
                  + ", ".join(f"`{c[:8]}` ({m})" for m, c in older) + ".", ""]
    return "\n".join(lines)


def pages(data: Results, figures: dict[str, list[str]], compiled: dict[str, list[str]] | None = None,
          top: Headline | None = None) -> dict[str, str]:
    """Each machine's page by its path relative to the front (machine_page.path), and where ratios differ between
    machines of the headline (`top`), hosts.PAGE."""
    compiled = compiled or {}
    out = {}
    between = hosts.page(top.rows, data.details) if top is not None else None
    if between:
        out[hosts.PAGE] = between
    for group, rows in latest(data.table).items():
        scaled = scale.words(base_numerics(rows), data.machines.get(rows.machine.iloc[0], {}))
        out[machine_page.path(group)] = machine_page.page(data, group, rows, figures.get(group, []), scaled,
                                                          compiled.get(group, []))
    return out
