"""The report's page of CPU native peaks (native-peak.md) and the remat curves drawn with them
(native_peak_curve_<machine>_<size>.png), from results/native-peak: per case both frameworks' peaks, from the newest
file that holds the case (native_peak_rows.current: its commit on the row), with their spread over processes,
analytic bounds and the suite's own CPU method beside them, the JAX/PyTorch ratios the ratio rule allows, and the
overhead of the tracker on a step; each curve from the newest file that ran it. Self-contained: build.py calls
`write` alone."""

from __future__ import annotations

import html
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from implementations import frameworks
from tape_vs_trace.report import paired_results
from tape_vs_trace.results import native_peak_rows as rows
from tape_vs_trace.results import side_tables

FOLDER = rows.SPEC.name
PAGE = "native-peak.md"
HTML_PAGE = "native-peak.html"  # the dashboard's copy of the page


def _mib(value: object) -> str:
    return f"{value / 2**20:.3f}" if isinstance(value, int | float) and value != "" else ""


def _case(line: dict) -> str:
    parts = [line["workload"], line["size"], line["kind"] if line["kind"] != "grad" else "",
             line["transform"], line["variant"] if line["variant"] != "plain" else "",
             f"budget {line['budget']}" if line["budget"] else "", line["formulation"]]
    return " ".join(p for p in parts if p)


def _spread(line: dict) -> str:
    if line["processes"] < 2:
        return "1 process"
    if line["peak_min"] == line["peak_max"]:
        return f"{line['processes']} processes, equal"
    return (f"{_mib(line['peak_min'])}-{_mib(line['peak_max'])} over {line['processes']} "
            f"(95 %: {_mib(line['ci_low'])}-{_mib(line['ci_high'])})")


def _bounds(line: dict) -> str:
    if line["lower_bytes"] == "":
        return "-"
    resident = line["resident_bytes"]
    return f"{_mib(line['lower_bytes'] - resident)}-{_mib(line['upper_bytes'] - resident)}"


def table(lines: list[dict]) -> list[str]:
    """The peaks, one row per case and framework, in MiB above the step's start (bounds likewise)."""
    out = ["| case | mode | framework | peak | of it GEMM scratch / small | repeats | bounds | verdict | "
           "suite's CPU method | step ms (tracked) | commit |",
           "|---|---|---|---:|---:|---|---|---|---|---|---|"]
    for line in lines:
        other = (f"{_mib(line['other_peak_bytes'])} ({line['other_method'].split(' (')[0]})"
                 if line["other_peak_bytes"] != "" else "none sees this step")
        verdict = "ok" if line["verdicts"] == ["ok"] else "; ".join(v.split(" (")[0] for v in line["verdicts"])
        out.append(f"| {_case(line)} | {line['mode']} | {frameworks.label(line['framework'])} | "
                   f"{_mib(line['peak_bytes'])} | {_mib(line['workspace_bytes'])} / {_mib(line['small_bytes'])} | "
                   f"{_spread(line)} | {_bounds(line)} | {verdict} | {other} | "
                   f"{line['step_s'] * 1e3:.2f} ({line['tracked_step_s'] * 1e3:.2f}) | {line['commit'][:8]} |")
    return out


def ratio_table(lines: list[dict]) -> list[str]:
    out = ["| case | mode | PyTorch | JAX | JAX / PyTorch | 95 % interval | commit |",
           "|---|---|---:|---:|---:|---|---|"]
    for r in rows.ratios(lines):
        interval = (f"{r['ratio_low']:.3f}-{r['ratio_high']:.3f}" if math.isfinite(r["ratio_low"])
                    else "one process a side")
        out.append(f"| {_case(r)} | {r['mode']} | {_mib(r['torch'])} | {_mib(r['jax'])} | {r['ratio']:.3f} | "
                   f"{interval} | {r['commit'][:8]} |")
    return out


def suite_times(results: Path) -> dict[tuple, tuple[float, float, float, str]]:
    """The suite's step time of each remat-curve point its paired experiment timed (results/paired: the geometric
    mean of per-process medians, 95 % interval, commit), each point from the newest commit (git's date) that timed
    it, keyed as `_point_key` keys a native-peak point; the measuring process's own times stand in only where the
    suite has none."""
    folder = results / paired_results.FOLDER
    if not folder.is_dir():
        return {}
    found = side_tables.files(folder, paired_results.SPEC.what, paired_results.read, lambda _: None)
    out = {}
    for machine, tables in side_tables.ordered(found, dated=side_tables.GIT).items():
        for _, table in tables:  # oldest first: a newer commit's time of a point replaces an older one's
            for r in table[table.group == "remat"].to_dict("records"):
                key = (machine, r["framework"], r["workload"], r["size"], r["mode"], r["formulation"] or "unrolled",
                       r["attention"] or "written", r["point"])
                out[key] = (r["time_s"], r["time_ci_low"], r["time_ci_high"], r["commit"])
    return out


def _point_key(machine: str, p: dict) -> tuple:
    point = f"budget {float(p['budget']):g}" if p["budget"] not in ("", None) else p["variant"]
    # the program's attention too: a fused-attention time is not the written-attention step whose peak was taken
    return (machine, p["framework"], p["workload"], p["size"], p["mode"], p["formulation"] or "unrolled",
            p["attention"] or "written", point)


def timed(points: list[dict], machine: str, times: dict) -> list[dict]:
    """Each point with the time the curve draws: the suite's (`times`, with its interval and commit) where it timed
    the point, else the measuring process's median of 5 calls (`suite` False: no interval, a load on the host
    inflates it)."""
    out = []
    for p in points:
        t = times.get(_point_key(machine, p))
        out.append({**p, "time_s": t[0], "time_low": t[1], "time_high": t[2], "time_commit": t[3], "suite": True}
                   if t is not None else {**p, "time_s": p["step_s"], "time_low": math.nan, "time_high": math.nan,
                                          "time_commit": p["commit"], "suite": False})
    return out


def draw_curve(points: list[dict], out: Path, machine: str) -> str:
    """One curve (one workload and size, every peak from one file; `timed` points): peak against step time, one line
    per framework x mode x formulation, a filled marker with its interval where the suite timed the point, a hollow
    one at the measuring process's time where not; the figure's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = points[0]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for fw, mode, form in dict.fromkeys((p["framework"], p["mode"], p["formulation"]) for p in points):
        line = sorted((p for p in points if (p["framework"], p["mode"], p["formulation"]) == (fw, mode, form)),
                      key=lambda p: p["peak_bytes"])
        xs, ys = [p["peak_bytes"] / 2**20 for p in line], [p["time_s"] * 1e3 for p in line]
        color = frameworks.get(fw).color
        ax.plot(xs, ys, "-" if mode == "eager" else (":" if form == "scan" else "--"), color=color,
                label=f"{frameworks.label(fw)} {mode} {form}".strip())
        marker = "o" if mode == "eager" else ("^" if form == "scan" else "s")
        for p, x, y in zip(line, xs, ys):
            if p["suite"]:
                ax.errorbar([x], [y], yerr=[[y - p["time_low"] * 1e3], [p["time_high"] * 1e3 - y]], fmt=marker,
                            color=color, capsize=2)
            else:
                ax.plot([x], [y], marker, color=color, markerfacecolor="none")
            ax.annotate(f"budget {p['budget']}" if p["budget"] else p["variant"], (x, y), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("native peak above the step's start (MiB; memray, PYTHONMALLOC=malloc)")
    ax.set_ylabel("step time (ms): filled, the suite's with its 95 % interval;\n"
                  "hollow, the measuring process's median of 5 calls")
    ax.set_yscale("log")
    ax.set_title(f"remat trade-off on a CPU, {first['workload']} {first['size']}, {machine}:\npeaks of commit "
                 f"{first['commit'][:8]}, one memory method on both sides, every mode", fontsize=9)
    ax.legend(fontsize=7)
    name = f"native_peak_curve_{machine}_{first['size']}.png"
    fig.tight_layout()
    fig.savefig(out / name, dpi=130)
    plt.close(fig)
    return name


def _files(lines: list[dict]) -> str:
    """Which files the lines come from, with their commits and how many cases each gives."""
    counts: dict[tuple[str, str], set] = {}
    for line in lines:
        counts.setdefault((line["file"], line["commit"]), set()).add(rows.case_of(line))
    return "; ".join(f"{FOLDER}/{name} (commit {commit[:8]}): {len(cases)} cases"
                     for (name, commit), cases in sorted(counts.items()))


def section(machine: str, lines: list[dict], curves: list[tuple[str, list[dict]]]) -> list[str]:
    """One machine's part of the page: its peaks and ratios (each case from the newest file that holds it) and its
    curve figures (`curves`: figure name and points, each curve from one file)."""
    text = [f"## {machine}", "", f"Each case from the newest file that holds it: {_files(lines)}.", "",
            "### Peaks", "", *table(lines), "",
            "### JAX / PyTorch, like modes only (rowkey.like: same case, mode and method)", "", *ratio_table(lines)]
    for name, points in curves:
        suite = sorted({p["time_commit"][:8] for p in points if p["suite"]})
        own = sum(not p["suite"] for p in points)
        text += ["", f"Remat curve, {points[0]['workload']} {points[0]['size']}: every peak from "
                     f"{FOLDER}/{points[0]['file']} (commit {points[0]['commit'][:8]}); times: "
                     + "; ".join(filter(None, [
                         f"{len(points) - own} points the suite's (paired remat experiment, commit "
                         f"{', '.join(suite)}), filled, 95 % interval" if suite else "",
                         f"{own} points the measuring process's own, hollow, no interval" if own else ""])) + ".",
                 "", f"![native-peak remat curve]({name})"]
    return text


def write(results: Path, out: Path, warn: Callable[[str], None] = lambda _: None) -> list[str]:
    """native-peak.md and its figures into `out` from results/native-peak (each case and each curve from the newest
    file that holds it); [] without one. An unreadable file is skipped with a warning."""
    body, names, method = [], [], ""
    folder = results / FOLDER
    all_curves = rows.curves(folder) if folder.is_dir() else {}  # the same files: `current` warns of them
    times = suite_times(results) if all_curves else {}
    for machine, lines in (rows.current(folder, warn) if folder.is_dir() else {}).items():
        if not lines:
            continue
        drawn = [timed(points, machine, times) for points in all_curves.get(machine, [])]
        curves = [(draw_curve(points, out, machine), points) for points in drawn]
        body += ["", *section(machine, lines, curves)]
        names += [name for name, _ in curves]
        method = lines[0]["method"]
    if not body:
        return []
    head = ["# CPU peak memory by one method on both sides", "",
            f"Method: {method}: one call after the warm-ups, in a fresh process per framework, case and repeat; "
            "bytes in MiB above the live bytes at the step's start; bounds likewise (empty where a step has none); "
            "step times in ms, median of 5 calls in the measuring process, untracked (tracked). How it is measured "
            "and what it sees that the suite's other CPU methods do not: docs/metrics.md."]
    (out / PAGE).write_text("\n".join(head + body) + "\n", encoding="utf-8")
    return [PAGE, *names]


def front_line(written: list[str]) -> str:
    """The front page's sentence under memory that points to PAGE (`written`: what `write` wrote); "" without it."""
    return f"CPU peaks by one method, both sides (memray), with ratios: [{PAGE}]({PAGE})." if written else ""


def to_html(markdown: str, css: str) -> str:
    """The page's markdown (headings, paragraphs, tables, images: what `page` writes) as a dashboard page."""
    out = []
    for block in markdown.split("\n\n"):
        lines = block.strip().splitlines()
        if not lines:
            continue
        if lines[0].startswith("#"):
            level = len(lines[0]) - len(lines[0].lstrip("#"))
            out.append(f"<h{level}>{html.escape(lines[0].lstrip('# '))}</h{level}>")
        elif lines[0].startswith("|"):
            cells = [[html.escape(c.strip()) for c in line.strip().strip("|").split("|")] for line in lines]
            head, body = cells[0], cells[2:]
            out.append('<table class="table table-condensed"><thead><tr>' + "".join(f"<th>{c}</th>" for c in head)
                       + "</tr></thead><tbody>" + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
                                                         for row in body) + "</tbody></table>")
        elif lines[0].startswith("!["):
            src = lines[0].split("(", 1)[1].rstrip(")")
            out.append(f'<img src="{html.escape(src)}" alt="native-peak remat curve" style="max-width:100%">')
        else:
            out.append(f"<p>{html.escape(' '.join(lines))}</p>")
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>CPU native peaks</title><link rel="stylesheet" '
            f'href="{css}"></head><body class="container">' + "\n".join(out) +
            '<p><a href="index.html">Back to the dashboard</a>.</p></body></html>\n')


def publish(results: Path, site: Path, css: str) -> bool:
    """site/native-peak.html and its figures, from results/native-peak (as `write`); False without a file."""
    with tempfile.TemporaryDirectory() as tmp:
        names = write(results, Path(tmp))
        if not names:
            return False
        for name in names[1:]:
            shutil.copy(Path(tmp) / name, site / name)
        (site / HTML_PAGE).write_text(to_html((Path(tmp) / PAGE).read_text(encoding="utf-8"), css), encoding="utf-8")
    return True


def link(index_html: str) -> str:
    """asv's index page with a "CPU native peaks" entry in its navigation bar."""
    anchor_tag = '<ul class="nav navbar-nav navbar-left">'
    return index_html.replace(anchor_tag, anchor_tag + f'<li><a href="{HTML_PAGE}">CPU native peaks</a></li>', 1)
