"""The whole report, built in a temporary folder beside --out and swapped in only once complete."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.progress import Step, quiet
from tape_vs_trace.report import (
    breakdown,
    curve,
    distributed_figure,
    distributed_results,
    figures,
    first_step,
    front,
    glance,
    headline,
    like_modes,
    markdown,
    native_peak_section,
    paired_results,
    readme,
)
from tape_vs_trace.report.load import ReportError, Results, Warn, load_results
from tape_vs_trace.report.select import base_numerics, latest
from tape_vs_trace.results.folder import MACHINE_RECORD

OUTPUTS = ["summary.csv", "summary.md", like_modes.PAGE, headline.NAME, glance.STRIP, *figures.FIGURES]


def _compile_growth():
    """report.compile_growth, imported when drawn: `python -m tape_vs_trace.report.compile_growth` runs it as
    __main__, and an import at the package's import would load it twice."""
    from tape_vs_trace.report import compile_growth

    return compile_growth


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_out(results: Path, out: Path) -> None:
    """Refuse an --out that would write into the results, replace something that is not a report, or cannot be a
    folder (a regular file on its path)."""
    res, dst = results.resolve(), out.resolve()
    if dst == res:
        raise ReportError(f"--out {out} is the results folder; the report goes into a folder of its own "
                          f"(e.g. {results / 'report'})")
    if _inside(res, dst):
        raise ReportError(f"--out {out} contains the results folder {results}; replacing it would delete them")
    for folder in [dst, *dst.parents]:
        if (folder / MACHINE_RECORD).exists():
            raise ReportError(f"--out {out} is inside the machine folder {folder}; asv owns that folder")
    for folder in dst.parents:
        if folder.exists() and not folder.is_dir():
            raise ReportError(f"--out {out} is under {folder}, which is a file, not a folder")
    if dst.exists() and not dst.is_dir():
        raise ReportError(f"--out {out} exists and is not a folder")
    if dst.is_dir() and any(dst.iterdir()) and not (dst / "summary.md").is_file():
        raise ReportError(f"--out {out} is a non-empty folder without summary.md, not a report; not replacing it")


def write_report(results: Path, out: Path, warn: Warn, readme_path: Path | None = None, verbose: bool = False,
                 step: Step = quiet) -> list[Path]:
    """Build the whole report in a temporary folder beside --out, then swap it in: a failure leaves the old one.
    `verbose` lists older result files one by one (load_results); `step` hears each step as it starts."""
    try:
        return _write_report(results, out, warn, readme_path, verbose, step)
    except OSError as exc:  # a folder that cannot be written, a disk that is full: one line, not a traceback
        raise ReportError(f"cannot write the report to {out}: {exc.strerror or exc}") from None


def _load(results: Path, warn: Warn, verbose: bool, step: Step) -> Results:
    """The asv results with the side measurements beside them, and a warning for what the report cannot show."""
    data = load_results(results, warn, verbose, step)
    step(f"reading the saved-bytes breakdowns, paired and distributed results beside them ({results / 'saved'}, "
         f"{results / 'paired'}, {results / 'distributed'})")
    data.saved = breakdown.load(results, data.table, warn)
    data.paired = paired_results.load(results, data.table, warn)
    data.distributed = distributed_results.load(results, warn)
    for machine in sorted(set(data.distributed) - set(data.table.machine)):
        warn(f"the distributed results of {machine} are not shown: the report's sections are per machine of the asv "
             "results, and it has none")
    present = set(data.table.framework)
    if not present >= set(frameworks.NAMES):
        have = ", ".join(frameworks.label(f) for f in sorted(present)) or "no framework"
        warn(f"the results hold {have} only: no JAX/PyTorch ratio can be formed")
    if (data.table.status == "failed").any():
        warn(f"{int((data.table.status == 'failed').sum())} result(s) failed; the report marks them 'failed'")
    return data


def _draw(data: Results, staging: Path, step: Step) -> tuple[dict[str, list[str]], dict[str, list[str]], dict]:
    """Every machine group's figures into `staging` (a subfolder per group where there are several): the names
    drawn per group, each group's compile-growth section and its newest depth series for the front
    (compile_growth.newest_series: (commit, whether older than the group's run, compile_growth.front_rows))."""
    groups = latest(data.table)
    drawn: dict[str, list[str]] = {}
    compiled: dict[str, list[str]] = {}
    series: dict[str, tuple[str, bool, list[list[str]], bool]] = {}
    for i, (group, rows) in enumerate(groups.items(), 1):
        sub = "" if len(groups) == 1 else f"{group}/"
        machine = rows.machine.iloc[0]
        step(f"drawing the figures of {group} ({i} of {len(groups)}): one per pillar")
        names = figures.draw(base_numerics(rows), data.machines.get(machine, {}), staging / sub)
        step(f"drawing the figures of {group} ({i} of {len(groups)}): saved bytes by op, remat curves")
        names += breakdown.draw(data.saved.get(machine), staging / sub)
        names += curve.draw(data.paired.get(machine), data.machines.get(machine, {}), staging / sub)
        names += distributed_figure.draw(data.distributed.get(machine), data.machines.get(machine, {}),
                                         staging / sub)
        every = data.table[(data.table.machine == machine) & (data.table.env == rows.env.iloc[0])]
        newest = front.newest_series(every)
        names += _compile_growth().draw(newest, staging / sub)
        commit = newest.commit.iloc[0]
        older = commit != rows.commit.iloc[0]
        compiled[group] = ([f"the newest depth series is of commit `{commit[:8]}`, older than this run"]
                           if older else []) + _compile_growth().section(newest)
        series[group] = (commit, older, front.front_rows(newest), front.one_process(newest))
        drawn[group] = [sub + n for n in names]
    return drawn, compiled, series


def _write_report(results: Path, out: Path, warn: Warn, readme_path: Path | None, verbose: bool,
                  step: Step) -> list[Path]:
    check_out(results, out)
    if readme_path is not None:
        readme.split(readme_path)  # refuse before building anything
    data = _load(results, warn, verbose, step)
    out = out.resolve()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"--out {out}: cannot create its parent folder ({exc.strerror})") from None
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}-") as tmp:
        staging = Path(tmp) / "new"
        staging.mkdir()
        extra = [paired_results.tidy(t) for t in data.paired.values()]
        extra += [distributed_results.tidy(machine, t) for machine, t in data.distributed.items()]
        extra += [breakdown.tidy(machine, t) for machine, t in data.saved.items()]
        step("writing summary.csv")
        pd.concat([data.table, *extra]).to_csv(staging / "summary.csv", index=False)
        drawn, compiled, series = _draw(data, staging, step)
        step("drawing the headline chart and writing summary.md: tables and findings")
        top = glance.build(data, staging)
        for group in latest(data.table):  # each machine's every case, on its own page
            sub = "" if len(drawn) == 1 else f"{group}/"
            drawn[group] = drawn.get(group, []) + [sub + n for n in glance.strip(top, group, staging / sub)]
        # The pages of their own that the front page points to, each in a line of its section.
        pointers = {"memory": native_peak_section.front_line(native_peak_section.write(results, staging, warn))}
        # the page's writing warned of any unreadable file already
        first = (first_step.front_rows(results, lambda _: None), first_step.SAID) \
            if first_step.write(staging, results, warn) else ([], "")
        (staging / "summary.md").write_text(markdown.markdown(data, drawn, results.as_posix(), top, series, pointers,
                                                              first), encoding="utf-8")
        for name, text in markdown.pages(data, drawn, compiled, top).items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text, encoding="utf-8")
        if readme_path is not None:
            label = Path(os.path.relpath(out, readme_path.resolve().parent)).as_posix()
            block = readme.section(data, drawn, label, top)
        if out.exists():
            out.rename(Path(tmp) / "old")
        staging.rename(out)
    if readme_path is not None:
        step(f"rewriting the results block of {readme_path} (between its report markers)")
        readme.update(readme_path, block)
    return sorted(p for p in out.rglob("*") if p.is_file())
