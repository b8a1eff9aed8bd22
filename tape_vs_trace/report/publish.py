"""asv's dashboard for machines without internet: every script and stylesheet is loaded from the published folder.

asv 0.6.6 writes pages that load jQuery, flot and Bootstrap from CDNs, so on an air-gapped cluster the dashboard
renders blank. `publish` runs `asv publish` into a scratch folder beside --out, adds the History, Comparison and
Distributed pages (`history`, `comparison_page`, `distributed_page`), points each CDN `<script>`/`<link>` at the
copy in `dashboard_assets/` (files from npm packages, with their licences; see its README.md), and only then
replaces --out, so a failure leaves the previous dashboard in place.

asv draws only the parameter values its benchmarks.json lists, and that file is discovered on one machine: a GPU
machine's folder merged into the results would render empty series (other sizes, bfloat16, tf32, cuda). So asv reads
a scratch results folder of links to the real files and a benchmarks.json whose values are the union over every
machine's result files (`merged_benchmarks`); the real benchmarks.json is never rewritten. In that folder a machine
name whose host changed has its other hosts' runs under names of their own (`host_split`), so that no graph or
regression joins two hosts; the Regressions page says what the host rule makes of each jump's two runs.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from tape_vs_trace.progress import Step, quiet
from tape_vs_trace.report import comparison_page, distributed_page, graph_defaults, host_split, native_peak_section
from tape_vs_trace.results import asv_files, history
from tape_vs_trace.results.folder import BENCHMARKS, ResultsFolder

ASSETS = Path(__file__).parents[1] / "dashboard_assets"
ASSET_DIR = "offline-assets"  # the vendored copies' folder inside the published site
# Config keys naming paths: asv reads them relative to the config file's folder (it chdirs there), so the scratch
# config, which lives elsewhere, gets them as absolute paths.
PATH_KEYS = ("repo", "benchmark_dir", "env_dir", "results_dir", "html_dir")
_TAG = re.compile(r"<(?:script|link)\b[^>]*>", re.IGNORECASE)
_URL_ATTR = re.compile(r"""\b(src|href)\s*=\s*(["'])(.*?)\2""", re.IGNORECASE | re.DOTALL)
# The SRI hashes name the CDN's bytes, and some copies are the same release unminified (see the assets' README);
# a CORS mode on a same-folder file only gets in the way of opening the site from disk.
_CDN_ATTRS = re.compile(r"""\s+(?:integrity|crossorigin|referrerpolicy)\s*=\s*(["']).*?\1""", re.IGNORECASE)
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
_ASV_STAGE = re.compile(r"^\[\s*([\d.]+)%\] · (.*)$")  # asv's progress line: "[33.33%] · Loading results"


def _stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


class PublishError(Exception):
    """Bad input or a failed `asv publish`: the command line prints it as one line."""


def publish(config: Path, results: Path | None = None, out: Path | None = None,
            step: Step = quiet, warn: Callable[[str], None] = _stderr) -> tuple[Path, list[Path]]:
    """Build the dashboard of `results` (default: the config's results_dir) into `out` (default: its html_dir),
    with the History page and, where results/distributed holds any, the Distributed page; `step` hears each step
    as it starts, asv publish's own stages among them, `warn` each distributed file skipped.

    Returns the output folder and the pages whose CDN references now point at the vendored copies.
    """
    conf = _load_config(config)
    results = results if results is not None else config.parent / conf.get("results_dir", "results")
    out = (out if out is not None else config.parent / conf.get("html_dir", "html")).absolute()
    _check_paths(results, out)
    manifest: dict[str, dict[str, str]] = json.loads((ASSETS / "manifest.json").read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}-publish-", dir=out.parent) as scratch:
        site = Path(scratch) / "site"
        view, hosts = results_view(results.resolve(), Path(scratch) / "results", step)
        for machine in hosts:
            if machine.split:
                warn(f"{host_split.summary(machine)}")
        # asv's reader drops the "version" key it checked; asv publish wants it back
        conf.update(version=1, results_dir=str(view), html_dir=str(site))
        scratch_config = Path(scratch) / "asv.conf.json"
        scratch_config.write_text(json.dumps(conf, indent=2))
        _run_asv(scratch_config, step)
        css = f"{ASSET_DIR}/bootstrap/css/bootstrap.min.css"
        step("drawing the JAX/PyTorch comparison page")
        compared = comparison_page.write(view, site, css, hosts, warn)
        if (results / distributed_page.FOLDER).is_dir():
            step("drawing the distributed results' page")
        distributed = distributed_page.write(results, site, css, warn)
        native = native_peak_section.publish(results, site, css)
        step("choosing the selection each graph opens with")
        graph_defaults.write(site, ASSET_DIR)
        step("pointing every page at the offline copies of its scripts and stylesheets")
        shutil.copytree(ASSETS, site / ASSET_DIR)
        (site / "history.html").write_text(history.page(results, css), encoding="utf-8")
        index = site / "index.html"
        if index.is_file():
            text = history.link(index.read_text(encoding="utf-8"))
            text = comparison_page.link(text) if compared else text
            text = regressions_note(text, hosts, host_split.regressions(site, hosts))
            text = native_peak_section.link(text) if native else text
            index.write_text(distributed_page.link(text) if distributed else text, encoding="utf-8")
        pages = sorted(site.rglob("*.html"))
        for page in pages:
            page.write_text(localise(page.read_text(encoding="utf-8"), page, site, manifest), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        site.rename(out)
    return out, [out / page.relative_to(site) for page in pages]


def _load_config(config: Path) -> dict:
    """The asv config (JSON with // comments, read by asv's own reader) with its paths made absolute."""
    from asv import util  # asv is only needed by this subcommand

    if not config.is_file():
        raise PublishError(f"asv config {config} not found")
    try:
        conf = util.load_json(str(config), api_version=1, js_comments=True)
    except (util.UserError, ValueError) as exc:
        raise PublishError(f"cannot read asv config {config}: {str(exc).splitlines()[0]}") from exc
    base = config.resolve().parent
    for key in PATH_KEYS:
        # `repo` may be a URL: only a path that exists next to the config is one asv would read as a folder
        if isinstance(conf.get(key), str) and (key != "repo" or (base / conf[key]).exists()):
            conf[key] = str((base / conf[key]).resolve())
    return conf


def _check_paths(results: Path, out: Path) -> None:
    """Refuse what asv would fail on with a traceback, and any --out that replacing could destroy."""
    if not results.is_dir():
        raise PublishError(f"results folder {results} not found")
    if not ResultsFolder(results).has_benchmarks():
        raise PublishError(f"{results} is no asv results folder: it has no benchmarks.json (run `make bench` first)")
    for folder in (out, *out.parents):
        if folder.exists() and not folder.is_dir():
            raise PublishError(f"cannot write the dashboard to {out}: {folder} is a file")
    # asv's own publish deletes html_dir first; here only an earlier dashboard (asv writes index.json) is replaced
    if out.is_dir() and any(out.iterdir()) and not (out / "index.json").is_file():
        raise PublishError(f"{out} is not empty and holds no asv dashboard; not replacing it")


def merged_benchmarks(results: Path, step: Step = quiet) -> dict:
    """`results`' benchmarks.json with every benchmark's parameter values extended by those its result files hold
    on any machine: the discovered values first, then new ones in the order they first appear."""
    folder = ResultsFolder(results)
    try:
        benchmarks = folder.benchmarks()
    except asv_files.ResultFileError as exc:
        raise PublishError(f"cannot read {exc}") from None
    differ: dict[str, set[str]] = {}
    for machine_folder, machine in folder.machine_folders():
        step(f"reading the parameter values of {machine}'s results")
        for file in asv_files.result_files(machine_folder):
            try:
                result = asv_files.read(file)
            except asv_files.ResultFileError:
                continue  # asv publish warns about the file itself
            if result.machine != machine:
                continue  # asv publish refuses a file of another machine name
            # only results asv draws: benchmarks.json names them, at its version
            for name in sorted(result.drawn(benchmarks)):
                if not _extend(benchmarks[name], result.grid(name)):
                    differ.setdefault(machine, set()).add(name)
    for machine, names in differ.items():
        shown = ", ".join(sorted(names)[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        print(f"warning: {machine}'s results of {shown} have another number of parameters than benchmarks.json "
              "lists; asv draws none of them", file=sys.stderr)
    return {**benchmarks, "version": 2}


def _extend(benchmark: dict, params: list[list[str]]) -> bool:
    """Append to `benchmark`'s parameter values those of `params` it lacks, axis by axis; False where the axes
    differ in number (result files name no parameters: that is the one sign of another parameter list)."""
    if len(params) != len(benchmark["param_names"]):
        return False
    for axis, values in zip(benchmark["params"], params):
        axis.extend(value for value in dict.fromkeys(values) if value not in axis)
    return True


def results_view(results: Path, view: Path, step: Step = quiet) -> tuple[Path, list[host_split.Machine]]:
    """A folder that asv reads as `results`: links to its result files (each machine's other hosts' runs copied
    under names of their own) and the merged benchmarks.json; and the machines' hosts."""
    hosts = host_split.machines(results)
    moved = host_split.stage(hosts, results, view)
    for file in sorted(results.rglob("*.json")):
        link = view / file.relative_to(results)
        if link == view / BENCHMARKS or file in moved:
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(file)
        except OSError:  # a file system without symbolic links
            shutil.copy2(file, link)
    view.mkdir(parents=True, exist_ok=True)
    (view / BENCHMARKS).write_text(json.dumps(merged_benchmarks(results, step), indent=4))
    return view, hosts


def regressions_note(index_html: str, hosts: list[host_split.Machine], jumps: list[str]) -> str:
    """asv's index page with, above its Regressions page's table (asv's script rewrites only the table's own
    element), the machine names split by host and each jump's two runs with the host rule's word on them."""
    split = [host_split.summary(m) for m in hosts if m.split]
    if not split and not jumps:
        return index_html
    items = "".join(f"<li>{html.escape(line)}</li>" for line in split + jumps)
    told = (f"{len(split)} machine name(s) split by host" if split else "no machine name split by host") + \
        (f"; the host rule on each jump's two runs ({len(jumps)})" if jumps else "")
    note = ('<details class="host-note" open style="margin: 8px 16px"><summary>Hosts: '
            f"{told}</summary><ul>{items}</ul><p>The host rule and each machine's runs: the "
            f'<a href="{comparison_page.PAGE}#hosts">Comparison page</a>.</p></details>')
    return index_html.replace('<div id="regressions-body">', note + '<div id="regressions-body">', 1)


def _run_asv(config: Path, step: Step = quiet) -> None:
    """`python -m asv publish` with this interpreter, each of its stages a step as it starts; asv's last line on
    failure. Its warnings go to stderr."""
    with subprocess.Popen([sys.executable, "-m", "asv", "publish", "--config", str(config)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as asv:  # one pipe: no deadlock on a full other one
        lines = []
        for line in asv.stdout:
            stage = _ASV_STAGE.match(line.strip())
            if stage:
                step(f"asv publish: {stage.group(2)} ({float(stage.group(1)):.0f} %)")
            elif line.strip():
                lines.append(line.strip())
    if asv.returncode != 0:
        raise PublishError(f"asv publish failed: {lines[-1] if lines else f'exit status {asv.returncode}'}")
    # e.g. results of a commit on no branch of the config, which asv leaves off the dashboard
    for line in lines:
        print(f"asv: {line}", file=sys.stderr)


def localise(html: str, page: Path, site: Path, manifest: dict[str, dict[str, str]]) -> str:
    """`html` with every remote script and stylesheet pointed at its vendored copy, relative to `page`."""
    prefix = Path(os.path.relpath(site / ASSET_DIR, page.parent)).as_posix()

    def local(tag: re.Match[str]) -> str:
        attr = _URL_ATTR.search(tag.group(0))
        if attr is None or not _REMOTE.match(attr.group(3)):
            return tag.group(0)
        url = attr.group(3)
        entry = manifest.get("https:" + url if url.startswith("//") else url)
        if entry is None:
            raise PublishError(f"{page.name} loads {url}, which has no vendored copy in "
                               f"{ASSETS / 'manifest.json'}; add it there (see the README beside it)")
        rewritten = tag.group(0).replace(attr.group(0), f'{attr.group(1)}="{prefix}/{entry["file"]}"')
        return _CDN_ATTRS.sub("", rewritten)

    return _TAG.sub(local, html)
