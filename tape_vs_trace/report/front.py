"""The front page's sections (summary.md, whose first part is the README's block), in the order a design review
asks: the scale once; each framework at its fastest mode; the mechanisms in like modes, each named for what it
measures; memory with its method; compile time; where machines disagree. Cells are short (`1.63× [1.55–1.71]`), the
verdict stands in a column of its own, and every table's caption carries the scale."""

from __future__ import annotations

import math

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import best, fmt, headline, hosts, machine_page, scale, stats
from tape_vs_trace.report.headline import Headline, Row
from tape_vs_trace.report.select import base_numerics, latest
from tape_vs_trace.results.rowkey import RowKey

FASTEST = "Each framework at its fastest"
UNLIKE = "†"  # a cell shown but left out of its row's verdict: an unlike run (hosts.like_machines)


def caption(top: Headline, sizes: str = "at the sizes above") -> str:
    """The scale every table carries: '_Scale: 2-core CPUs at the sizes above, not GPU-scale training._'."""
    devices = {r.torch["device"] for r in top.rows}
    cores = sorted({str(top.info.get(r.machine, {}).get("num_cpu", "")) for r in top.rows} - {""})
    said = f"{'/'.join(cores)}-core CPUs" if devices == {"cpu"} and cores else ", ".join(sorted(devices))
    return f"_Scale: {said} {sizes}{', not GPU-scale training' if 'cpu' in devices else ''}._"


def case_words(case: tuple[str, ...]) -> str:
    """'mlp 64x256x1024': a workload and its size by name (the Scale section says each size in words)."""
    return f"{case[0]} {case[1]}".strip()


def scale_lines(groups: list[tuple[str, pd.DataFrame]], info: dict[str, dict]) -> list[str]:
    """The scale, once: the machines (each one's newest run by its commit; device, cores, versions), every
    size with its step's cost (from the newest run that timed it), what CPU results describe and how a cell reads."""
    alike: dict[tuple, list[str]] = {}  # machines of one device, core count and versions, said once
    for g, rows in groups:
        first = rows.iloc[0]
        alike.setdefault((str(first.device), info.get(g, {}).get("num_cpu"),
                          f"torch {first.torch_version}, jax {first.jax_version}"), []).append(g)
    by_name = dict(groups)
    machines = "; ".join(", ".join(f"{g} (`{by_name[g].commit.iloc[0][:8]}`)" for g in gs) + f": device {device}"
                         + (f", {cores} cores{' each' if len(gs) > 1 else ''}" if cores else "") + f", {versions}"
                         for (device, cores, versions), gs in alike.items())
    seen: dict[tuple[str, str], str] = {}
    for _, rows in groups:
        base = base_numerics(rows)
        for w, s in scale.sizes(base):
            seen.setdefault((w, s), scale.size(base, w, s, saved=False, words=False))
    lines = [f"- **Machines** (newest run): {machines}."]
    cpu = any(str(rows.device.iloc[0]) == "cpu" for _, rows in groups)
    if seen:  # what CPU results describe, said with the sizes it concerns
        lines.append("- **Sizes**: " + "; ".join(seen.values()) + "." + (f" {scale.NOT_GPU_SCALE}." if cpu else ""))
    elif cpu:
        lines.append(f"- {scale.NOT_GPU_SCALE}.")
    lines.append("- **A cell**: JAX/PyTorch (above 1: JAX slower or keeps more), geometric mean of per-process medians "
                 f"[95 % interval]; a finding only beyond a rerun's ±{stats.BETWEEN_PROCESSES * 100:g} %; loops in "
                 "Python unless marked scan.")
    return lines


def fastest_rows(groups: list[tuple[str, pd.DataFrame]]) -> list[Row]:
    """Each machine's fastest-mode ratios (best.rows_of) as headline rows of one case per workload and size."""
    out = []
    for group, rows in groups:
        for b in best.rows_of(base_numerics(rows)):
            if b.comparison.formed:
                case = (b.workload, b.size, "", "", "", "")
                out.append(Row("step time", case, headline.workload_label(case), group, b.torch["commit"],
                               b.comparison, b.torch, b.jax))
    return out


def _mode(row: dict) -> str:
    key = RowKey.of(row)
    return " · ".join(p for p in (key.axis("mode"), "scan" if key.axis("formulation") == "scan" else "") if p)


def holds_short(by_machine: dict[str, Row]) -> str:
    """headline.holds' findings ('JAX slower on 1 of 3'), then how many more point one way not beyond a rerun's band
    ('2 slower, within a rerun's ±10 %'): the size is in each machine's cell."""
    n = len(by_machine)
    said = {m: headline.verdict(r.comparison, r.measure) for m, r in by_machine.items()}
    found = [v for m, v in said.items() if by_machine[m].comparison.differs]
    parts = [f"{v} on {found.count(v)} of {n}" for v in dict.fromkeys(found)] or [f"no finding on any of {n}"]
    ways = [v.split(", not beyond")[0].split()[-1] for v in said.values() if "not beyond" in v]
    parts += [f"{ways.count(w)} {w}" for w in dict.fromkeys(ways)]
    return "; ".join(parts) + (f", within a rerun's ±{stats.BETWEEN_PROCESSES * 100:g} %" if ways else "")


def grid(rows: list[Row], machines: list[str], details: dict, label, first: tuple[str, ...], holds=headline.holds
         ) -> tuple[list[str], dict[str, str]]:
    """A table of one case a line, a column per machine with its short cell, and the verdict across the like
    machines (headline.holds); `label(case, by_machine)` gives the `first` columns. Also, per machine left out of a
    verdict (its cell marked UNLIKE), why."""
    machines = [m for m in machines if any(r.machine == m for r in rows)]
    by_case: dict[tuple, dict[str, Row]] = {}
    for r in rows:
        by_case.setdefault(r.case, {})[r.machine] = r
    lines = ["| " + " | ".join([*first, *machines, "verdict (machines)"]) + " |",
             "|" + "---|" * len(first) + "---:|" * len(machines) + "---|"]
    left: dict[str, str] = {}
    for case, by_machine in by_case.items():
        like, why = hosts.like_machines(by_machine, details)
        cells = []
        for m in machines:
            cell = fmt.short(by_machine[m].comparison) if m in by_machine else "not run"
            if m in why:
                cell += f" {UNLIKE}"
                left.setdefault(m, "; ".join(why[m]))
            cells.append(cell)
        lines.append("| " + " | ".join([*label(case, by_machine), *cells, holds(
            {m: by_machine[m] for m in like})]) + " |")
    return lines, left


def machine_order(top: Headline) -> list[str]:
    """The machines' columns, in one order in every table."""
    return sorted({r.machine for r in top.rows})


def fastest_section(top: Headline, groups: list[tuple[str, pd.DataFrame]], details: dict) -> tuple[list[str], dict]:
    """1b: per workload and size, each framework's fastest gradient step on each machine, whichever its mode."""
    rows = fastest_rows(groups)
    if not rows:
        return [f"## {FASTEST}", "", best.NO_STEPS, ""], {}

    def label(case, by_machine):
        modes = [" or ".join(dict.fromkeys(_mode(getattr(r, fw)) for r in by_machine.values()))
                 for fw in ("torch", "jax")]
        return [case_words(case), "; ".join(modes)]

    table, left = grid(rows, machine_order(top), details, label, ("workload", "fastest mode (PyTorch; JAX)"),
                       holds_short)
    return [f"## {FASTEST}", "", f"{caption(top)} Each framework's fastest gradient step, whichever its mode.", "",
            *table, ""], left


def program(case, by_machine=None) -> list[str]:
    """[workload and size, program]: a Python loop unless the program says scan (the Reading bullet says so)."""
    form = "" if case[3] == "unrolled" else case[3]
    words = headline.program_words(case[:2] + ("", form) + case[4:]).replace(headline.scan_label(), "scan")
    return [case_words(case), words or "—"]


def gpu_peak_lines(table: pd.DataFrame) -> list[str]:
    """The allocator peaks each GPU machine's newest run holds, named by workload, size and variant, with the versions
    and their caveat where a peak is one process's: what exists on a GPU, said where memory is."""
    out = []
    for machine, rows in latest(table[table.device != "cpu"]).items():
        peaks = rows[(rows.metric == "track_peak_bytes") & (rows.status == "ok")]
        if peaks.empty:
            continue
        cases = "; ".join(f"{w} {s} ({', '.join(dict.fromkeys(g.variant))})"
                          for (w, s), g in peaks.groupby(["workload", "size"], sort=False))
        one = bool((peaks.processes.fillna(1) <= 1).all())
        out.append(f"- {machine} (torch {peaks.torch_version.iloc[0]}, jax {peaks.jax_version.iloc[0]}): "
                   f"{len(peaks)} allocator peaks, {cases}" + ("; one process each, no interval" if one else "")
                   + f" ([page]({machine_page.path(machine)})).")
    return out + ([""] if out else [])


def compile_section(top: Headline | None, series: dict[str, tuple[str, bool, list[list[str]], bool]],
                    first: tuple[list[str], str] = ([], "")) -> list[str]:
    """1e: per machine its newest compile-time depth series (report.compile_growth.front_rows), its commit named
    where it is older than the machine's newest run, and where every point is one process's, said once; `first`:
    the time to first step's rows in the same table and the sentence that says how to read them
    (report.first_step.front_rows, SAID)."""
    rows, none, single = [], [], True
    for group, (commit, older, cells, one) in series.items():
        if not cells:
            none.append(group)
            continue
        single &= one
        for workload, torch_said, jax_said in cells:
            run = f"{group} (`{commit[:8]}`, an older run)" if older else group
            rows.append(f"| {run} | {workload} | {torch_said} | {jax_said} |")
    for row in first[0]:  # beside the machine's compile rows
        at = [i for i, r in enumerate(rows) if r.startswith(row.split(" (`")[0] + " ")]
        rows.insert(at[-1] + 1 if at else len(rows), row)
    if not rows:
        return []
    said = [caption(top) if top is not None else "", "A compiled step's first call (cold caches) at the deepest depth, "
            "and depth^exponent [95 % interval]" + ("; one process a point." if single else ".")]
    said += [f"Not run on {', '.join(none)}."] if none else []
    said += [first[1]] if first[0] else []
    return ["## Compile time", "", " ".join(w for w in said if w), "", "| machine | workload | PyTorch | JAX |",
            "|---|---|---|---|", *rows, ""]


def unlike_short(left: dict[str, str], pages: str = "") -> list[str]:
    """The front page's word on a machine marked UNLIKE: left out of the verdicts, and the aspects of its run that
    differ, by name (their words on hosts.PAGE, linked from the folder `pages` names: '' for the report's own)."""
    return [f"- **{UNLIKE}** {m}: left out of the verdicts, another kind of run ("
            + ", ".join(text.removeprefix("its ").split(" (")[0] for text in why.split("; ")) + f"; [{hosts.PAGE}]"
            f"({pages}{hosts.PAGE}))." for m, why in left.items()]


def unlike_line(left: dict[str, str]) -> list[str]:
    """Why a machine's cells marked UNLIKE are left out of their verdicts, once for the page: the aspects of its run
    that differ, with its own words for each (hosts.like_machines)."""
    out = []
    for m, why in left.items():
        said = [text.removeprefix("its ").split(") is not ")[0].split(" (derived")[0].split(" (recorded")[0] + ")"
                for text in why.split("; ")]
        out.append(f"- **{UNLIKE}** {m}: shown, left out of the verdicts, another kind of run: its "
                   + "; ".join(said) + ".")
    return out


# each machine's newest compile-time depth series, for compile_section
def newest_series(rows: pd.DataFrame) -> pd.DataFrame:
    """Of one machine's rows (every commit), those of the newest commit whose cold first-call series spans two
    depths or more; the newest commit's where none does."""
    from tape_vs_trace.report import compile_growth  # at use: it also runs as __main__
    newest = rows.sort_values(["date", "commit"]).commit.iloc[-1]
    for commit in reversed(list(dict.fromkeys(rows.sort_values(["date", "commit"]).commit))):
        mine = rows[rows.commit == commit]
        pts = compile_growth.points(mine)
        first = pts[(pts.cache == "cold") & (pts.phase == "first_call")]
        if len(first) and first.groupby(["workload", "framework", "formulation"]).depth.nunique().max() >= 2:
            return mine
    return rows[rows.commit == newest]


def one_process(table: pd.DataFrame) -> bool:
    """Whether every cold point of the series is one process's, without an interval of its own."""
    from tape_vs_trace.report import compile_growth  # at use: it also runs as __main__
    pts = compile_growth.points(table)
    return bool(len(pts)) and not pts[pts.cache == "cold"].ci_low.map(math.isfinite).any()


def front_rows(table: pd.DataFrame) -> list[list[str]]:
    """Per workload, each framework's first call at the deepest depth of each formulation (with its interval where
    the point has one: `one_process` says when none has), with its growth exponent and interval, or why it has none:
    [workload, PyTorch's words, JAX's words]."""
    from tape_vs_trace.report import compile_growth  # at use: it also runs as __main__
    pts = compile_growth.points(table)
    first = pts[(pts.cache == "cold") & (pts.phase == "first_call") & (pts.seconds > 0)]
    fitted = compile_growth.fits(pts)
    out = []
    for workload, group in first.groupby("workload"):
        deepest_all = group.groupby(["framework", "formulation"]).depth.max()
        shared = deepest_all.nunique() == 1  # one deepest depth: said once, beside the workload
        cells = []
        for fw in frameworks.NAMES:
            said = []
            for form, line in group[group.framework == fw].groupby("formulation"):
                deepest = line[line.depth == line.depth.max()].iloc[0]
                point = f"{deepest.seconds:.2f} s" + ("" if shared else f" at depth {int(deepest.depth)}")
                if math.isfinite(deepest.ci_low):
                    point += f" [{deepest.ci_low:.2f}–{deepest.ci_high:.2f}]"
                fit = fitted[(fitted.workload == workload) & (fitted.framework == fw) & (fitted.formulation == form)
                             & (fitted.phase == "first_call")]
                grows = (f", depth^{fit.iloc[0].exponent:.2f} [{fit.iloc[0].low:.2f}, {fit.iloc[0].high:.2f}]"
                         if len(fit) and math.isfinite(fit.iloc[0].low) else
                         f", depth^{fit.iloc[0].exponent:.2f} (no interval)" if len(fit) else
                         ", one depth")
                said.append(f"{form} {point}{grows}")
            cells.append("; ".join(said) or "not run")
        out.append([f"{workload} at depth {int(deepest_all.iloc[0])}" if shared else workload, *cells])
    return out
