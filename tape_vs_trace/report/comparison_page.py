"""The dashboard's Comparison page: per pillar and metric, each machine's JAX/PyTorch ratios of its newest run with
their 95 % intervals, one row per case so that machines line up whatever commit each ran, beside asv's own pages
(which plot one framework's value against commits).

The rows are the report's (`report.load`, each machine's newest commit by `report.select.latest`) and every ratio is
the report's one rule, `report.stats.compare`: a pair it refuses is listed with its reason, never drawn. The machines
are the dashboard's: a machine name whose host changed is published apart (`host_split`), and the page says which.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from implementations import metrics, pillars
from tape_vs_trace.report import comparison_figure, fmt, headline, host_split, stats
from tape_vs_trace.report.load import ReportError, load_results
from tape_vs_trace.report.select import display, latest, ordered
from tape_vs_trace.results.rowkey import RowKey

PAGE = "comparison.html"
DATA_ID = "comparison-points"  # the page's JSON block of every point drawn


@dataclass(frozen=True)
class Point:
    """One JAX/PyTorch ratio of one machine's newest run, or why the rule refused it."""

    machine: str
    pillar: str
    metric: str
    case: str
    commit: str
    comparison: stats.Comparison


def anchor(machine: str, pillar: str) -> str:
    """The page's fragment of one machine's markers in a pillar's charts, `comparison.html#<pillar>-<machine>`."""
    return f"{PAGE}#{pillar}-{machine}"


def case_label(row: dict) -> str:
    """'GradStep_transformer L4-B4-S64-D128 · eager/unrolled · matched/fused': family, size, variant and program
    (style/attention), with dtype and precision where not float32, highest, and each framework's scan operator in
    a scan row (they are not one operator)."""
    family = row["benchmark"].split(".")[1] if row["benchmark"].count(".") >= 2 else row["benchmark"]
    numerics = ", ".join(v for v in (row["dtype"], row["precision"]) if v)
    parts = [f"{family} {row['size']}".strip(), row["variant"], row.get("program") or ""]
    if numerics and numerics != "float32, highest":
        parts.append(numerics)
    scan = f" ({headline.scan_words()})" if json.loads(row["params"]).get("formulation") == "scan" else ""
    return " · ".join(p for p in parts if p) + scan


def points(table) -> list[Point]:
    """Every JAX/PyTorch pair of each machine's newest commit, in the report's metric order, with the rule's
    comparison (formed or refused)."""
    out = []
    for machine, rows in latest(table).items():
        pairs: dict[RowKey, dict[str, dict]] = {}
        for r in ordered(rows).to_dict("records"):
            pairs.setdefault(RowKey.of(r).without("framework"), {})[r["framework"]] = r
        for by_fw in pairs.values():
            if set(by_fw) != {"torch", "jax"}:
                continue  # one framework alone: the report's tables say why; no ratio to draw
            t = by_fw["torch"]
            out.append(Point(machine, t["pillar"], t["metric"], case_label(t), t["commit"],
                             stats.compare(t, by_fw["jax"])))
    return out


def metric_sampled(metric: str) -> bool:
    """Whether a metric's values are sampled (times) rather than exact (bytes, counts); an unknown one is sampled."""
    return metrics.METRICS[metric].sampled if metric in metrics.METRICS else True


def drawn(p: Point) -> bool:
    return p.comparison.formed and math.isfinite(p.comparison.ratio) and p.comparison.ratio > 0


def _record(p: Point) -> dict:
    c = p.comparison
    finite = [v if math.isfinite(v) else None for v in (c.ratio, c.low, c.high)]
    return {"machine": p.machine, "pillar": p.pillar, "metric": p.metric, "case": p.case, "commit": p.commit,
            "ratio": finite[0], "ci_low": finite[1], "ci_high": finite[2], "finding": c.differs,
            "text": fmt.ratio(c)}


def _section(pillar: str, metric: str, mine: list[Point], machines: list[str]) -> str:
    shown = [p for p in mine if drawn(p)]
    rows = list(dict.fromkeys(p.case for p in shown))
    figure = comparison_figure.svg(f"{pillars.PILLARS[pillar].title if pillar in pillars.PILLARS else pillar}: "
                                   f"{display(metric)}", rows,
                                   [(rows.index(p.case), machines.index(p.machine), p.comparison, p.commit,
                                     p.machine) for p in shown], machines,
                                   metric_sampled(metric)) if shown else ""
    table = "".join(f"<tr><td>{html.escape(p.case)}</td><td>{html.escape(p.machine)}</td><td><code>{p.commit[:8]}"
                    f"</code></td><td>{html.escape(fmt.ratio(p.comparison))}</td></tr>" for p in shown)
    refused: dict[str, list[Point]] = {}
    for p in mine:
        if not drawn(p):
            refused.setdefault(p.comparison.reason or "no finite ratio", []).append(p)
    notes = "".join(f"<li>no ratio ({html.escape(why)}): {len(ps)} case(s) on "
                    f"{html.escape(', '.join(dict.fromkeys(p.machine for p in ps)))}</li>"
                    for why, ps in refused.items())
    return (f'<h3 id="{html.escape(pillar)}-{html.escape(metric)}">{html.escape(display(metric))} '
            f"<small><code>{html.escape(metric)}</code></small></h3>" + (f"<div>{figure}</div>" if figure else "")
            + (f'<details><summary>{len(shown)} ratio(s) as numbers</summary><table class="table table-condensed">'
               "<thead><tr><th>case</th><th>machine</th><th>commit</th><th>JAX/PyTorch [95 % interval]</th></tr>"
               f"</thead><tbody>{table}</tbody></table></details>" if shown else "")
            + (f"<ul>{notes}</ul>" if notes else ""))


def _hosts(found: list[host_split.Machine]) -> str:
    """Whether each machine name was split by host, and the host rule's word on each run against the newest."""
    items = "".join(f"<li>{html.escape(host_split.summary(m))}</li>" for m in found)
    runs = "".join(f"<tr><td>{html.escape(m.name)}</td><td><code>{commit[:8]}</code></td><td>{html.escape(h.name)}"
                   f"</td><td>{html.escape(m.verdicts.get(commit, ''))}</td></tr>"
                   for m in found for h in m.hosts for commit in (r.commit for r in h.runs))
    return ("<h4 id=\"hosts\">Hosts</h4><p>Each machine name's runs are checked by the host rule "
            "(<code>host_check.same_host</code>, the result file's host fingerprint); runs of another host than the "
            "newest run's go under a name of their own on every page of this dashboard, so asv's graphs and "
            f"Regressions page never join two hosts.</p><ul>{items}</ul><details><summary>Each run against its "
            "machine's newest run</summary><table class=\"table table-condensed\"><thead><tr><th>machine</th>"
            f"<th>commit</th><th>published as</th><th>host rule</th></tr></thead><tbody>{runs}</tbody></table>"
            "</details>")


def body(found: list[Point], hosts: list[host_split.Machine]) -> str:
    machines = list(dict.fromkeys(p.machine for p in found))
    commits = {p.machine: p.commit[:8] for p in found}
    runs = "".join(f"<li>{html.escape(m)}: commit <code>{html.escape(commits[m])}</code></li>" for m in machines)
    out = [f"<p>Machines and the newest run of each:</p><ul>{runs}</ul>", _hosts(hosts),
           comparison_figure.legend(machines) if machines else "<p>No JAX/PyTorch pair to compare.</p>"]
    present = set(p.pillar for p in found)
    for pillar in [p for p in pillars.PILLARS if p in present] + sorted(present - set(pillars.PILLARS)):
        title = pillars.PILLARS[pillar].title if pillar in pillars.PILLARS else pillar
        out.append(f'<h2 id="{html.escape(pillar)}">{html.escape(title)}</h2>')
        for machine in machines:
            out.append(f'<span id="{html.escape(anchor(machine, pillar).split("#", 1)[1])}"></span>')
        for metric in dict.fromkeys(p.metric for p in found if p.pillar == pillar):
            out.append(_section(pillar, metric, [p for p in found if p.pillar == pillar and p.metric == metric],
                                machines))
    data = json.dumps([_record(p) for p in found if drawn(p)]).replace("</", "<\\/")
    out.append(f'<script type="application/json" id="{DATA_ID}">{data}</script>')
    return "\n".join(out)


def write(view: Path, site: Path, css: str, hosts: list[host_split.Machine], warn: Callable[[str], None]) -> bool:
    """site/comparison.html from the dashboard's results view (its split machine names); False where the results
    hold no JAX/PyTorch pair."""
    try:
        data = load_results(view, lambda _: None)  # the report and asv publish warn about old files already
    except ReportError as exc:
        warn(f"no comparison page: {exc}")
        return False
    found = points(data.table)
    if not found:
        return False
    (site / PAGE).write_text(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>JAX against PyTorch</title>"
        f"<link rel=\"stylesheet\" href=\"{css}\"></head><body class=\"container\"><h1>JAX against PyTorch</h1>"
        "<p>Per pillar and metric, JAX/PyTorch of each machine's newest run: the report's ratios (like rows only, "
        "one commit each) with their 95 % intervals over per-process medians. A ratio holds for the machine, "
        "commit and sizes it names. <a href=\"index.html\">Back to the dashboard</a>.</p>\n"
        + body(found, hosts) + "\n</body></html>\n", encoding="utf-8")
    return True


def link(index_html: str) -> str:
    """asv's index page with a "Comparison" entry in its navigation bar."""
    anchor_tag = '<ul class="nav navbar-nav navbar-left">'
    return index_html.replace(anchor_tag, anchor_tag + f'<li><a href="{PAGE}">Comparison</a></li>', 1)
