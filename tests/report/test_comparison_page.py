"""The dashboard's Comparison page, built from the committed results (results/) as `publish` builds it: each
machine's JAX/PyTorch ratios of its newest run, the report's rule, and every machine's points drawn."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tape_vs_trace.report import comparison_page, host_split, publish, stats
from tape_vs_trace.report.select import latest
from tests.shared import results_loaded_once

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shared_root: Path) -> tuple[Path, Path]:
    """(the dashboard's results view, the site folder holding comparison.html) of the committed results."""
    tmp = tmp_path_factory.mktemp("comparison")
    view, hosts = publish.results_view(RESULTS, tmp / "view")
    (tmp / "site").mkdir()
    with results_loaded_once(shared_root):
        assert comparison_page.write(view, tmp / "site", "style.css", hosts, print)
    return view, tmp / "site"


def _page(site: Path) -> str:
    return (site / comparison_page.PAGE).read_text(encoding="utf-8")


def _points(site: Path) -> list[dict]:
    block = re.search(rf'<script type="application/json" id="{comparison_page.DATA_ID}">(.*?)</script>',
                      _page(site), re.DOTALL)
    assert block is not None
    return json.loads(block.group(1).replace("<\\/", "</"))


def test_every_machine_has_its_points_drawn(built: tuple[Path, Path]) -> None:
    """Each published machine of the committed results has points, or is named where the page lists the pairs the
    rule refused (a GPU's first contacts: peaks by unlike modes); the page draws one marker per point."""
    view, site = built
    machines = {h.name for m in host_split.machines(RESULTS) for h in m.hosts}
    points = Counter(p["machine"] for p in _points(site))
    assert machines and points and set(points) <= machines, (machines, points)
    refused = re.findall(r"<li>no ratio \(.*?\): \d+ case\(s\) on ([^<]*)</li>", _page(site))
    named = {m.strip() for line in refused for m in line.split(",")}
    assert machines - set(points) <= named, (machines - set(points), named)
    markers = Counter(re.findall(r'class="point" data-machine="([^"]+)"', _page(site)))
    assert markers == points


def test_points_are_the_reports_ratios_of_each_machines_newest_run(built: tuple[Path, Path], load_once) -> None:
    """Every drawn ratio is report.stats.compare of the like rows of the machine's newest commit (interval
    included); the pairs the rule refuses are not drawn."""
    view, site = built
    table = load_once(view, lambda _: None).table
    newest = latest(table)
    drawn = {(p["machine"], p["metric"], p["case"]): p for p in _points(site)}
    formed = 0
    for machine, rows in newest.items():
        pairs: dict[tuple, dict[str, dict]] = {}
        for r in rows.to_dict("records"):
            params = json.loads(r["params"])
            params.pop("framework")
            pairs.setdefault((r["benchmark"], json.dumps(params, sort_keys=True)), {})[r["framework"]] = r
        for by_fw in pairs.values():
            if set(by_fw) != {"torch", "jax"}:
                continue
            c = stats.compare(by_fw["torch"], by_fw["jax"])
            key = (machine, by_fw["torch"]["metric"], comparison_page.case_label(by_fw["torch"]))
            if not (c.formed and math.isfinite(c.ratio)):
                assert key not in drawn, key
                continue
            formed += 1
            p = drawn[key]
            assert p["commit"] == rows.commit.iloc[0]
            assert p["ratio"] == pytest.approx(by_fw["jax"]["value"] / by_fw["torch"]["value"])
            if math.isfinite(c.low):
                assert (p["ci_low"], p["ci_high"]) == pytest.approx((c.low, c.high))
    assert formed == len(drawn)


def test_machines_line_up_on_one_row_per_case(built: tuple[Path, Path]) -> None:
    """A case measured on several machines is one labelled row of its chart, with each machine's marker on it."""
    _, site = built
    page = _page(site)
    cases = Counter((p["pillar"], p["metric"], p["case"]) for p in _points(site))
    shared = [case for case, n in cases.items() if n > 1]
    assert shared, "no case is measured on two machines"
    pillar, metric, case = shared[0]
    section = page[page.index(f'id="{pillar}-{metric}"'):]
    chart = section[:section.index("</svg>")]
    assert chart.count(f">{case}</text>") == 1
    machines = {p["machine"] for p in _points(site) if (p["pillar"], p["metric"], p["case"]) == shared[0]}
    assert all(len(re.findall(rf"<title>{re.escape(m)} at \w+: {re.escape(case)}: ", chart)) == 1 for m in machines)


def test_refused_ratios_are_listed_with_their_reason(built: tuple[Path, Path]) -> None:
    """Graph sizes count different things in the two frameworks: no chart, one line with the rule's reason."""
    _, site = built
    page = _page(site)
    section = page[page.index('id="recording-track_graph_size"'):]
    section = section[:section.index("<h3")] if "<h3" in section else section
    assert "<svg" not in section and "no ratio (counts different things)" in section


def test_cite_names_the_comparison_page(load_once) -> None:
    from tape_vs_trace.report import cite

    text = cite.run("GradStep_mlp.time_step", ["mode=eager", "style=default"], RESULTS, "text", lambda _: None)
    assert comparison_page.anchor("cpu-intel-xeon-f6m207-2c", "recording") in text


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine")
def test_every_machines_points_render_in_chromium(built: tuple[Path, Path], tmp_path: Path) -> None:
    """Headless Chromium lays the page out: each machine's markers have a box of their own on the page."""
    _, site = built
    probe = tmp_path / comparison_page.PAGE
    count = ("<script>addEventListener('load', () => { const n = {}; for (const e of "
             "document.querySelectorAll('.point')) { const b = e.getBoundingClientRect(); "
             "if (b.width > 0 && b.height > 0) n[e.dataset.machine] = (n[e.dataset.machine] || 0) + 1; } "
             "const o = document.createElement('pre'); o.id = 'rendered'; o.textContent = JSON.stringify(n); "
             "document.body.appendChild(o); });</script>")
    probe.write_text(_page(site).replace("</body>", count + "</body>"), encoding="utf-8")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
                          "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    rendered = re.search(r'<pre id="rendered">(.*?)</pre>', dom)
    assert rendered is not None, dom[-500:]
    assert json.loads(rendered.group(1).replace("&quot;", '"')) == dict(Counter(p["machine"] for p in _points(site)))
