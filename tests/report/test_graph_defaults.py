"""tape_vs_trace.report.graph_defaults: the selection each graph opens with (one machine, the newest; the compared axes
whole, every other axis at a measured value) and the scripts that apply it, loaded where they must be."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tape_vs_trace import cli
from tape_vs_trace.report import graph_defaults

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
# after the graph is drawn: where the address, the plot and the legend beside it are, and how many series it names
PROBE = ("<script>addEventListener('load', () => setTimeout(() => { const box = e => "
         "document.querySelector(e).getBoundingClientRect(); const o = document.createElement('pre'); "
         "o.id = 'probe'; o.textContent = JSON.stringify({hash: decodeURIComponent(location.hash), "
         "series: document.querySelectorAll('#tvt-legend .legendLabel').length, "
         "inside: document.querySelectorAll('#main-graph .legend').length, plot: box('#main-graph').right, "
         "legend: box('#tvt-legend').left}); document.body.appendChild(o); }, 4000));</script>")

PARAMS = [["'torch'", "'jax'"], ["'s'", "'m'"], ["'eager'", "'compiled'"]]


def _site(tmp_path: Path) -> Path:
    """A published site of two machines: `old` measured every combination at revision 3, `new` at revision 5 only
    those of size 'm'; and a benchmark without parameters measured on `old` only."""
    index = {"benchmarks": {"a.Step.time_step": {"params": PARAMS, "param_names": ["framework", "size", "mode"]},
                            "a.Count.track": {"params": [], "param_names": []},
                            "a.Engine.time_step": {"params": [PARAMS[0], ["'x'", "'y'", "'z'"]],
                                                   "param_names": ["framework", "mode"]}}}
    (tmp_path / "index.json").write_text(json.dumps(index))
    graphs = {("old", "a.Step.time_step"): [[3, [1.0] * 8]],
              ("new", "a.Step.time_step"): [[2, [1.0] * 8], [5, [None, None, 2.0, 2.0, None, None, 2.0, 2.0]]],
              ("old", "a.Count.track"): [[3, 7.0]], ("new", "a.Count.track"): [[5, None]],
              ("old", "a.Engine.time_step"): [[3, [None, 1.0, 1.0, None, 1.0, 1.0]]]}
    for (machine, name), points in graphs.items():
        folder = tmp_path / "graphs" / "arch-x86_64" / f"machine-{machine}" / "os-Linux"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps(points))
    (tmp_path / "graphs" / "summary").mkdir()
    (tmp_path / "graphs" / "summary" / "a.Step.time_step.json").write_text("[[9, 1.0]]")
    return tmp_path


def test_a_graph_opens_on_the_newest_machine_its_compared_axes_whole_the_rest_at_a_measured_value(
        tmp_path: Path) -> None:
    chosen = graph_defaults.choose(_site(tmp_path))
    # the size 'm' is the first combination `new` measured at its newest revision: 's' would draw nothing
    assert chosen["a.Step.time_step"] == {"machine": ["new"], "p-framework": ["'torch'", "'jax'"],
                                          "p-size": ["'m'"], "p-mode": ["'eager'", "'compiled'"]}
    # a machine whose newest point holds no value is not chosen; a benchmark without parameters names its machine
    assert chosen["a.Count.track"] == {"machine": ["old"]}
    # three modes would make six series: the mode stays at the first one measured
    assert chosen["a.Engine.time_step"] == {"machine": ["old"], "p-framework": ["'torch'", "'jax'"], "p-mode": ["'y'"]}


def test_the_scripts_load_after_asv_js_and_before_graphdisplay_js(tmp_path: Path) -> None:
    page = ('<head><script src="jquery.js"></script>\n<script language="javascript" type="text/javascript"\n'
            '        src="asv.js">\n    </script>\n<script src="graphdisplay.js"></script></head>')
    html = graph_defaults.inject(page, "offline-assets")
    asv, graphs = html.index('src="asv.js"'), html.index('src="graphdisplay.js"')
    defaults = html.index(f'src="{graph_defaults.GRAPH_DEFAULTS}"')
    script = html.index(f'src="offline-assets/{graph_defaults.SCRIPT}"')
    assert asv < defaults < script < graphs
    assert graph_defaults.inject("<p>no asv</p>", "x") == "<p>no asv</p>"


def test_written_into_a_site_the_defaults_are_the_script_asv_loads(tmp_path: Path) -> None:
    site = _site(tmp_path)
    assert not graph_defaults.write(site, "offline-assets")  # no index.html: nothing written
    (site / "index.html").write_text('<script src="asv.js"></script>')
    assert graph_defaults.write(site, "offline-assets")
    text = (site / graph_defaults.GRAPH_DEFAULTS).read_text()
    assert text.startswith("window.tvtGraphDefaults = ")
    assert json.loads(text.removeprefix("window.tvtGraphDefaults = ").rstrip(";\n")) == graph_defaults.choose(site)
    assert f'src="offline-assets/{graph_defaults.SCRIPT}"' in (site / "index.html").read_text()


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine")
def test_a_graph_opened_without_a_selection_draws_its_default_with_the_legend_beside_the_plot(tmp_path: Path) -> None:
    """Headless Chromium opens a published graph page by the benchmark's name alone: the address gains the chosen
    selection, the legend lists its series in a column right of the plot, and none is drawn inside it."""
    site = tmp_path / "html"
    assert cli.main(["publish", "--config", str(ROOT / "asv.conf.json"), "--results",
                     str(ROOT / "tests" / "data" / "asv_fixture"), "--out", str(site)]) == 0
    index = site / "index.html"
    index.write_text(index.read_text().replace("</body>", PROBE + "</body>"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    name = "inference.ForwardMemory_mlp.track_peak_bytes"  # the fixture's: framework x mode (record, no_grad)
    try:
        dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900",
                              "--virtual-time-budget=15000", "--dump-dom",
                              f"http://127.0.0.1:{server.server_port}/index.html#{name}"],
                             capture_output=True, text=True, timeout=120).stdout
    finally:
        server.shutdown()
    probe = re.search(r'<pre id="probe">(.*?)</pre>', dom)
    assert probe is not None, dom[-500:]
    seen = json.loads(probe.group(1).replace("&quot;", '"'))
    chosen = graph_defaults.choose(site)[name]
    assert seen["hash"].startswith(f"#{name}?machine={chosen['machine'][0]}&")
    assert seen["series"] == len(chosen["p-framework"]) * len(chosen["p-mode"]) == 4
    assert seen["inside"] == 0 and seen["legend"] >= seen["plot"]
