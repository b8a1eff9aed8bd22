"""Graph pages that open readable. asv 0.6 opens a benchmark's graph without a selection on every machine and up to
8 parameter combinations each (32 series for GradStep_transformer.time_step on four machines), its legend inside
the plot (graphdisplay.js: `max_curves = 8`, `legend.position: "nw"`). `write` chooses, per benchmark, the selection
a graph opens with when its address names none (`choose`), into GRAPH_DEFAULTS, and loads it with this project's
script (dashboard_assets/tape-vs-trace/graph.js), which applies it and puts the legend in a column beside the plot.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

GRAPH_DEFAULTS = "graph-defaults.js"  # in the site's root, beside index.html
SCRIPT = "tape-vs-trace/graph.js"  # in the vendored assets' folder, which publish copies
# the axes a graph exists to compare, in order, each shown whole while the series stay within MAX_SERIES; every
# other axis at one value that has data
WHOLE = ("framework", "mode")
MAX_SERIES = 4
_ASV_JS = re.compile(r"""(<script\b[^>]*\bsrc=["']asv\.js["'][^>]*>\s*</script>)""", re.IGNORECASE)


def _newest(graph: list) -> tuple[int, int]:
    """(the newest revision with a value, how many combinations have one there) of one graph file's points."""
    for revision, values in reversed(graph):
        values = values if isinstance(values, list) else [values]
        count = sum(v is not None for v in values)
        if count:
            return revision, count
    return -1, 0


def choose(site: Path) -> dict[str, dict[str, list[str]]]:
    """Per benchmark of the published `site`, the selection its graph opens with, in asv's address parameters: the
    machine with the newest result of it (ties: more combinations measured), and of its parameters the WHOLE axes
    whole while at most MAX_SERIES series result, every other axis at the value of the first combination that
    machine measured."""
    index = json.loads((site / "index.json").read_text())
    best: dict[str, tuple[tuple[int, int], str, list]] = {}
    for file in sorted((site / "graphs").rglob("*.json")):
        machine = next((p.removeprefix("machine-") for p in file.parts if p.startswith("machine-")), None)
        name = file.stem
        if machine is None or name not in index["benchmarks"]:
            continue  # the summary graphs, or a file of no benchmark asv lists
        graph = json.loads(file.read_text())
        rank = _newest(graph)
        if rank[1] and (name not in best or rank > best[name][0]):
            best[name] = (rank, machine, graph)
    out = {}
    for name, ((revision, _), machine, graph) in sorted(best.items()):
        meta = index["benchmarks"][name]
        chosen: dict[str, list[str]] = {"machine": [machine]}
        values = dict(graph)[revision]
        if meta["params"] and isinstance(values, list):
            combos = list(itertools.product(*meta["params"]))
            first = dict(zip(meta["param_names"], next(c for c, v in zip(combos, values) if v is not None)))
            every = dict(zip(meta["param_names"], meta["params"]))
            series = 1
            for axis in [a for a in WHOLE if a in every]:
                if series * len(every[axis]) <= MAX_SERIES:
                    series *= len(every[axis])
                    chosen[f"p-{axis}"] = list(every[axis])
            chosen |= {f"p-{axis}": [value] for axis, value in first.items() if f"p-{axis}" not in chosen}
        out[name] = chosen
    return out


def inject(index_html: str, assets: str) -> str:
    """asv's index page with GRAPH_DEFAULTS and SCRIPT (under `assets`) loaded right after asv.js: before
    graphdisplay.js registers its page, which the script wraps. Unchanged where asv.js is not loaded."""
    tags = (f'<script type="text/javascript" src="{GRAPH_DEFAULTS}"></script>'
            f'<script type="text/javascript" src="{assets}/{SCRIPT}"></script>')
    return _ASV_JS.sub(lambda m: m.group(1) + tags, index_html, count=1)


def write(site: Path, assets: str) -> bool:
    """GRAPH_DEFAULTS into `site` and the scripts into its index.html; False (nothing written) without index.html."""
    index = site / "index.html"
    if not index.is_file():
        return False
    (site / GRAPH_DEFAULTS).write_text(f"window.tvtGraphDefaults = {json.dumps(choose(site), indent=1)};\n",
                                       encoding="utf-8")
    index.write_text(inject(index.read_text(encoding="utf-8"), assets), encoding="utf-8")
    return True
