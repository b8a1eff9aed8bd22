"""`tape-vs-trace publish`: the dashboard loads every script and stylesheet from its own folder (works offline)."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import asv
import pytest

from tape_vs_trace import cli
from tape_vs_trace.report import publish

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "asv_fixture"  # a complete asv results folder: benchmarks.json, one machine
GPU_FIXTURE = ROOT / "tests" / "data" / "gpu_fixture"  # one synthetic GPU machine's folder, no benchmarks.json
GPU, CPU = "gpu-nvidia-h200", "cpu-amd-epyc-2c"
ASV_INDEX = Path(asv.__file__).parent / "www" / "index.html"
REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)  # http://, https://, protocol-relative //
CSS_URL = re.compile(r"""@import\s+(["'])(.*?)\1|url\(\s*(["']?)(.*?)\3\s*\)""", re.IGNORECASE)
JS_URL = re.compile(r"""\b(?:src|href)\s*=\s*\\?["']([^"'\\]*)""", re.IGNORECASE)


class _Loads(HTMLParser):
    """What a page makes the browser fetch: src= of any element, href= of <link>, and <style> blocks' CSS urls."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (name == "src" or (name == "href" and tag == "link")):
                self.urls.append(value)
        self._in_style = tag == "style"

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.urls += _css_urls(data)


def _css_urls(css: str) -> list[str]:
    return [m.group(2) or m.group(4) for m in CSS_URL.finditer(css)]


def _loads(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":
        parser = _Loads()
        parser.feed(text)
        return parser.urls
    if path.suffix == ".css":
        return _css_urls(text)
    return JS_URL.findall(text)  # .js: tags written as strings


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = cli.main(["publish", "--config", str(ROOT / "asv.conf.json"), *args])
    return status, capsys.readouterr().err


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("publish") / "html"
    assert cli.main(["publish", "--config", str(ROOT / "asv.conf.json"), "--results", str(FIXTURE),
                     "--out", str(out)]) == 0
    return out


def test_no_page_loads_from_another_host(site: Path) -> None:
    files = [p for p in site.rglob("*") if p.suffix in (".html", ".js", ".css")]
    remote = {f"{p.relative_to(site)}: {url}" for p in files for url in _loads(p) if REMOTE.match(url)}
    assert not remote, "loaded from another host:\n" + "\n".join(sorted(remote))
    # the check saw asv's page and its libraries, not an empty folder
    index = _loads(site / "index.html")
    assert f"{publish.ASSET_DIR}/jquery/jquery.min.js" in index
    assert f"{publish.ASSET_DIR}/bootstrap/css/bootstrap.min.css" in index
    assert json.loads((site / "index.json").read_text())["benchmarks"], "asv published no benchmark"


def test_every_local_asset_exists(site: Path) -> None:
    missing, seen = [], 0
    for path in (p for p in site.rglob("*") if p.suffix in (".html", ".css")):
        for url in _loads(path):
            target = url.split("#")[0].split("?")[0]
            if REMOTE.match(url) or url.startswith("data:") or not target:
                continue
            seen += 1
            if not (path.parent / target).is_file():
                missing.append(f"{path.relative_to(site)}: {url}")
    assert not missing, "missing assets:\n" + "\n".join(missing)
    assert seen >= 20  # asv's own files, ten vendored libraries, Bootstrap's glyphicon fonts


def test_vendored_copies_are_the_files_asv_pins() -> None:
    """Where the README says "same bytes", the copy matches the SRI hash in asv's own index.html."""
    manifest = json.loads((publish.ASSETS / "manifest.json").read_text())
    pinned = dict(re.findall(r'(?:src|href)="(https://[^"]+)" integrity="([^"]+)"', ASV_INDEX.read_text()))
    assert set(pinned) == set(manifest), "asv's CDN files and manifest.json differ: update dashboard_assets/"
    same_bytes = {"jquery/jquery.min.js", "flot-orderbars/jquery.flot.orderBars.js", "blueimp-md5/md5.min.js",
                  "bootstrap/js/bootstrap.min.js", "bootstrap/css/bootstrap.min.css"}
    for url, entry in manifest.items():
        assert (publish.ASSETS / entry["licence"]).is_file(), f"{entry['npm']}: no licence file"
        if entry["file"] in same_bytes:
            algorithm, digest = pinned[url].split("-", 1)
            data = (publish.ASSETS / entry["file"]).read_bytes()
            assert base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == digest, entry["file"]
    size = sum(p.stat().st_size for p in publish.ASSETS.rglob("*") if p.is_file())
    assert size < 2_000_000, f"vendored assets take {size:,} bytes"


def test_unvendored_cdn_file_stops_publish(tmp_path: Path) -> None:
    page = tmp_path / "index.html"
    manifest = json.loads((publish.ASSETS / "manifest.json").read_text())
    with pytest.raises(publish.PublishError, match=r"loads //cdn\.example\.org/d3\.js, which has no vendored copy"):
        publish.localise('<script src="//cdn.example.org/d3.js"></script>', page, tmp_path, manifest)
    tag = ('<link rel="stylesheet"\n href="https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css" '
           'integrity="sha256-x" crossorigin="anonymous">')
    html = publish.localise(tag, page, tmp_path, manifest)
    assert html == f'<link rel="stylesheet"\n href="{publish.ASSET_DIR}/bootstrap/css/bootstrap.min.css">'


def test_missing_results_folder_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = _run(capsys, "--results", str(tmp_path / "nope"), "--out", str(tmp_path / "html"))
    assert (status, err.count("\n")) == (1, 1) and err.startswith("error: results folder"), err
    assert not (tmp_path / "html").exists()


def test_out_under_a_file_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    status, err = _run(capsys, "--results", str(FIXTURE), "--out", str(tmp_path / "file" / "html"))
    assert (status, err.count("\n")) == (1, 1) and "is a file" in err, err


def test_replaces_an_earlier_dashboard_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """asv deletes its html_dir before writing: publish must not do that to a folder that holds something else."""
    out = tmp_path / "html"
    out.mkdir()
    (out / "notes.txt").write_text("keep")
    status, err = _run(capsys, "--results", str(FIXTURE), "--out", str(out))
    assert (status, err.count("\n")) == (1, 1) and "holds no asv dashboard" in err, err
    assert (out / "notes.txt").read_text() == "keep"
    (out / "notes.txt").unlink()
    assert _run(capsys, "--results", str(FIXTURE), "--out", str(out))[0] == 0
    (out / "stale.txt").write_text("from the last dashboard")
    assert _run(capsys, "--results", str(FIXTURE), "--out", str(out))[0] == 0
    assert (out / "index.html").is_file() and not (out / "stale.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["html"], "scratch folder left behind"


def test_progress_names_each_step_and_asvs_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On stderr, a line as each step starts, asv publish's own stages among them (asv's progress lines, which
    publish otherwise keeps to itself); stdout keeps its one line."""
    assert cli.main(["publish", "--config", str(ROOT / "asv.conf.json"), "--results", str(FIXTURE),
                     "--out", str(tmp_path / "html")]) == 0
    captured = capsys.readouterr()
    steps = [re.sub(r"^\[publish \d+ s\] ", "", line) for line in captured.err.splitlines()
             if line.startswith("[publish ")]
    assert steps[0] == f"reading the parameter values of {CPU}'s results"
    assert any(re.fullmatch(r"asv publish: Loading results \(\d+ %\)", s) for s in steps), steps
    assert steps[-1] == "pointing every page at the offline copies of its scripts and stylesheets"
    assert captured.out.startswith("wrote the dashboard to") and captured.out.count("\n") == 1


def test_history_page_marks_where_a_benchmark_version_changes(tmp_path: Path) -> None:
    """asv drops results of older benchmark versions from its graphs without a word; the published history page
    says where that happened, and the dashboard's navigation bar links it."""
    import shutil

    from tape_vs_trace.results import history

    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    (older,) = [p for p in results.glob("*/*.json") if p.name != "machine.json"]
    data = json.loads(older.read_text())
    at = data["result_columns"].index("version")
    newer = json.loads(json.dumps(data))
    newer["commit_hash"], newer["date"] = "f" * 40, data["date"] + 1000
    name = next(iter(newer["results"]))
    newer["results"][name][at] = "99"
    (older.parent / "ffffffff-existing-venv.json").write_text(json.dumps(newer))
    page = history.page(results, "style.css")
    assert "1 break(s) of history" in page
    assert f"version {data['results'][name][at]} &rarr; 99" in page and "<code>ffffffff</code>" in page
    assert "No break of history" in history.page(FIXTURE, "style.css")
    assert '<li><a href="history.html">History</a></li>' in history.link((ASV_INDEX).read_text())


def test_published_site_has_the_history_page(site: Path) -> None:
    assert (site / "history.html").is_file() and 'href="history.html"' in (site / "index.html").read_text()


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CPU fixture with the GPU fixture's machine folder copied in, as the README's recipe does."""
    results = tmp_path_factory.mktemp("merged") / "results"
    shutil.copytree(FIXTURE, results)
    shutil.copytree(GPU_FIXTURE / GPU, results / GPU)
    return results


@pytest.fixture(scope="module")
def merged_site(merged: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("publish-merged") / "html"
    assert cli.main(["publish", "--config", str(ROOT / "asv.conf.json"), "--results", str(merged),
                     "--out", str(out)]) == 0
    return out


def _drawn(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def _series(site: Path, machine: str) -> dict[str, dict[tuple, float]]:
    """{benchmark: {(revision, *parameter values): value}} of one machine's graphs, mapped onto the parameter
    values by the published index.json, as the dashboard's pages map them."""
    index = json.loads((site / "index.json").read_text())
    series: dict[str, dict[tuple, float]] = {}
    for path in (site / "graphs").rglob("*.json"):
        parts = path.relative_to(site / "graphs").parts
        # graphs/summary/ and each machine's summary.json are asv's overviews, not a benchmark's series
        if parts[0] == "summary" or f"machine-{machine}" not in parts or path.stem not in index["benchmarks"]:
            continue
        params = index["benchmarks"][path.stem]["params"]
        combos = list(itertools.product(*params)) if params else [()]
        for revision, values in json.loads(path.read_text()):
            for combo, value in zip(combos, values if params else [values]):
                if _drawn(value):
                    series.setdefault(path.stem, {})[(revision, *combo)] = value
    return series


def test_gpu_machine_results_are_drawn(merged_site: Path) -> None:
    """A GPU machine's folder merged into the results renders its points at the GPU's own parameter values
    (sizes, bfloat16, tf32, cuda), which the CPU-discovered benchmarks.json does not list. The GPU results are
    tests/data/gpu_fixture: a synthetic fixture, not a measurement."""
    data = json.loads((GPU_FIXTURE / GPU / "93acfd55-existing-venv.json").read_text())
    columns = data["result_columns"]
    drawn = _series(merged_site, GPU)
    # asv draws what benchmarks.json names: not the workspace row, which the CPU fixture's discovery predates
    declared = json.loads((FIXTURE / "benchmarks.json").read_text())
    assert set(drawn) == {name for name in data["results"] if name in declared} and len(drawn) >= 3
    for name, row in ((n, r) for n, r in data["results"].items() if n in drawn):
        values, params = row[columns.index("result")], row[columns.index("params")]
        expected = {combo: v for combo, v in zip(itertools.product(*params), values) if _drawn(v)}
        assert {combo[1:]: v for combo, v in drawn[name].items()} == expected, name
    step = json.loads((merged_site / "index.json").read_text())["benchmarks"]["recording.GradStep_mlp.time_step"]
    axes = dict(zip(step["param_names"], step["params"]))
    # the discovered values first, then the other machine's in the order they first appear
    assert axes["size"] == ["'64x256x1024'", "'2048x4096x16384'"]
    assert (axes["dtype"], axes["precision"]) == (["'float32'", "'bfloat16'"], ["'highest'", "'tf32'"])
    assert axes["device"] == ["'cpu'", "'cuda'"]


def test_cpu_series_unchanged_by_a_merged_gpu_machine(site: Path, merged_site: Path) -> None:
    alone, beside_gpu = _series(site, CPU), _series(merged_site, CPU)
    assert alone and beside_gpu == alone


def test_publish_leaves_the_results_folder_as_it_was(merged: Path, merged_site: Path) -> None:
    """The merged parameter values go into a scratch copy of benchmarks.json, never into the results folder."""
    sources = {**{p.relative_to(FIXTURE): p for p in FIXTURE.rglob("*") if p.is_file()},
               **{p.relative_to(GPU_FIXTURE): p for p in (GPU_FIXTURE / GPU).rglob("*") if p.is_file()}}
    now = {p.relative_to(merged): p for p in merged.rglob("*") if p.is_file() or p.is_symlink()}
    assert set(now) == set(sources)
    assert all(now[rel].read_bytes() == src.read_bytes() for rel, src in sources.items())


def test_different_parameter_axes_keep_the_discovered_ones(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Result files name no parameters: a result with another number of axes than benchmarks.json lists (a
    benchmark changed on one machine only) leaves the discovered values as they are, with a one-line warning."""
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    shutil.copytree(GPU_FIXTURE / GPU, results / GPU)
    path = results / GPU / "93acfd55-existing-venv.json"
    data = json.loads(path.read_text())
    data["results"]["remat.RematCost_mlp.track_peak_bytes"][1].append(["'extra'"])
    path.write_text(json.dumps(data))
    benchmarks = publish.merged_benchmarks(results)
    discovered = json.loads((FIXTURE / "benchmarks.json").read_text())
    name = "remat.RematCost_mlp.track_peak_bytes"
    assert benchmarks[name] == discovered[name]
    assert benchmarks["recording.GraphCost_mlp.track_saved_bytes"]["params"][2] == ["'64x256x1024'",
                                                                                 "'2048x4096x16384'"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"warning: {GPU}'s results of {name} have another"), err


@pytest.fixture(scope="module")
def distributed_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CPU fixture with a distributed CSV of its machine: the mlp's ddp eager step at N=1 and 2, both
    frameworks (PyTorch's launch medians 2, 3, 4 ms at N=2), and a failed JAX row."""
    import csv

    from tape_vs_trace.side.distributed_run import FIELDS
    from tests.report.helpers import COMMIT, MACHINE, distributed_row

    results = tmp_path_factory.mktemp("distributed") / "results"
    shutil.copytree(FIXTURE, results)
    rows = [distributed_row("torch", "ddp", "eager", 1, [1.0, 1.1, 1.2], peak=2.0),
            distributed_row("torch", "ddp", "eager", 2, [2.0, 3.0, 4.0], peak=2.0),
            distributed_row("jax", "ddp", "eager", 1, [1.5, 1.6, 1.7]),
            distributed_row("jax", "ddp", "eager", 2, [], status="failed", reason="launch 1 timed out")]
    (results / "distributed").mkdir()
    with (results / "distributed" / f"{MACHINE}-{COMMIT[:8]}.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path_factory.mktemp("publish-distributed") / "html"
    assert cli.main(["publish", "--config", str(ROOT / "asv.conf.json"), "--results", str(results),
                     "--out", str(out)]) == 0
    return out


def test_distributed_rows_are_on_their_own_linked_page(distributed_site: Path, site: Path) -> None:
    """The page a reader opens from the navigation bar: the workload's figure (each line labelled in its legend) and
    its tables, one row per form, mode and N with both frameworks' times and the ratio or its refusal."""
    from tests.report.helpers import MACHINE

    assert '<li><a href="distributed.html">Distributed</a></li>' in (distributed_site / "index.html").read_text()
    page = (distributed_site / "distributed.html").read_text()
    assert f'<h4 id="{MACHINE}-mlp">mlp 64x256x1024</h4>' in page
    assert f"tape-vs-trace cite distributed machine={MACHINE} workload=mlp" in page
    figure = re.search(r'<img src="(distributed/[^"]+\.svg)"', page)
    assert figure is not None
    drawn = re.findall(r"<text[^>]*>([^<]*)</text>", (distributed_site / figure.group(1)).read_text())
    assert {"PyTorch ddp eager", "JAX ddp eager", "ranks N"} <= set(drawn)
    assert "distributed mlp 64x256x1024: one step over N ranks" in drawn
    cells = [re.findall(r"<td>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", page)]
    # form, mode, N, PyTorch [interval], JAX, JAX/PyTorch: the ratio at N=1, refused at N=2 where JAX failed
    # Student-t on the logs of 2, 3, 4 ms: [1.214, 6.851] ms
    assert ["ddp", "eager", "2", "3 [1.214–6.851]", "failed", "— (failed)"] in [c[:6] for c in cells]
    assert any(c[:3] == ["ddp", "eager", "1"] and c[5].startswith("1.45×") for c in cells)
    assert "launch 1 timed out" in page
    # without results/distributed: no page and no link
    assert not (site / "distributed.html").exists() and "distributed.html" not in (site / "index.html").read_text()


def _jumps(site: Path) -> list[tuple[str, str, str, str]]:
    """(machine, benchmark, commit before, commit after) of every jump on asv's Regressions page; a jump asv states
    as "in commit X" lies between X and the series' previous point."""
    to_hash = json.loads((site / "index.json").read_text())["revision_to_hash"]
    listed = json.loads((site / "regressions.json").read_text())["regressions"]
    out = []
    for name, graph, _, index, _, _, jumps in listed:
        machine = re.search(r"/machine-([^/]+)/", graph).group(1)
        points = json.loads((site / graph).read_text())
        for before, after, _, _ in jumps:
            if before is None:
                before = max(r for r, v in points if r < after and (v if index is None else v[index]) is not None)
            out.append((machine, name, to_hash[str(before)], to_hash[str(after)]))
    return out


def _records(results: Path) -> dict[str, dict]:
    """commit -> the result file's "tape_vs_trace" record, over every machine folder."""
    out = {}
    for path in results.glob("*/*-*.json"):
        data = json.loads(path.read_text())
        out[data["commit_hash"]] = data.get("tape_vs_trace") or {}
    return out


def test_a_host_change_is_not_a_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One machine name, an Intel host's run and then two runs on an AMD host whose times are twice as long (real
    machine records, copied fixture times): the Intel run is published as `<name>@host2`, so no graph and no
    regression joins the two hosts, while the AMD host's two runs (the first under load) stay one series."""
    from tape_vs_trace.results import host_check
    from tests.report.test_host_split import AMD_LOADED, AMD_QUIET, INTEL, commits, results_with_hosts

    results = results_with_hosts(tmp_path, [INTEL, AMD_LOADED, AMD_QUIET], scale=[1.0, 2.0, 2.0])
    out = tmp_path / "html"
    assert cli.main(["publish", "--config", str(ROOT / "asv.conf.json"), "--results", str(results),
                     "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {CPU}: runs on another host than its newest are published apart, {CPU}@host2" in err
    index = json.loads((out / "index.json").read_text())
    assert {CPU, f"{CPU}@host2"} <= set(index["machines"])
    records = _records(results)
    for machine, name, before, after in _jumps(out):
        assert host_check.same_host(records[before], records[after])[0], (machine, name, before[:8], after[:8])
    intel = commits(1)[0][0]
    assert all(intel not in (before, after) for _, _, before, after in _jumps(out))
    drawn = _series(out, CPU)
    assert drawn and not any(key[0] == int(next(k for k, h in index["revision_to_hash"].items() if h == intel))
                             for series in drawn.values() for key in series)
    assert "comparison.html#hosts" in (out / "index.html").read_text()


@pytest.fixture(scope="module")
def committed_site(tmp_path_factory: pytest.TempPathFactory, shared_root: Path) -> Path:
    """The dashboard of the committed results (results/)."""
    from tests.shared import results_loaded_once

    out = tmp_path_factory.mktemp("publish-committed") / "html"
    with results_loaded_once(shared_root):
        assert cli.main(["publish", "--config", str(ROOT / "asv.conf.json"), "--out", str(out)]) == 0
    return out


def test_no_regression_of_the_committed_results_spans_a_host_change(committed_site: Path) -> None:
    """Every jump asv lists lies between two runs the host rule calls one host, and the Regressions page gives the
    host rule's word on each jump's two runs."""
    from tape_vs_trace.report import host_split
    from tape_vs_trace.results import host_check

    records = _records(ROOT / "results")
    jumps = _jumps(committed_site)
    for machine, name, before, after in jumps:
        assert host_check.same_host(records[before], records[after])[0], (machine, name, before[:8], after[:8])
    index = (committed_site / "index.html").read_text()
    note = re.search(r'<details class="host-note".*?</details>', index, re.DOTALL)
    assert note is not None or not jumps
    if jumps:
        split = sum(m.split for m in host_split.machines(ROOT / "results"))
        assert note.group(0).count("<li>") == split + len(jumps)
        assert all(f"between {b[:8]} and {a[:8]}: " in note.group(0) for _, _, b, a in jumps)


def test_comparison_page_is_linked_from_the_navigation_bar(committed_site: Path) -> None:
    assert '<li><a href="comparison.html">Comparison</a></li>' in (committed_site / "index.html").read_text()
    assert (committed_site / "comparison.html").is_file()


def test_every_graph_opens_on_one_machine_with_at_most_four_series(committed_site: Path) -> None:
    """The committed results' dashboard: each graph's default selection names one machine that asv lists and
    values each benchmark has, at most the four series of framework x mode; the script that applies it is there."""
    index = json.loads((committed_site / "index.json").read_text())
    text = (committed_site / "graph-defaults.js").read_text()
    chosen = json.loads(text.removeprefix("window.tvtGraphDefaults = ").rstrip(";\n"))
    assert "recording.GradStep_transformer.time_step" in chosen and len(chosen) >= 40
    for name, selection in chosen.items():
        assert len(selection["machine"]) == 1 and selection["machine"][0] in index["params"]["machine"]
        meta = index["benchmarks"][name]
        for axis, values in zip(meta["param_names"], meta["params"]):
            assert set(selection[f"p-{axis}"]) <= set(values)
        assert math.prod(len(v) for k, v in selection.items() if k.startswith("p-")) <= 4, name
    assert (committed_site / publish.ASSET_DIR / "tape-vs-trace" / "graph.js").is_file()
    assert 'src="graph-defaults.js"' in (committed_site / "index.html").read_text()
