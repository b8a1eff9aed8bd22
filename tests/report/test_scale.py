"""Scale wherever a number is cited (issue 41 item 1), each framework at its best (item 2), a page per machine
(item 6) and compile growth embedded (issue 40), on the committed results where they allow."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from implementations import workloads
from tape_vs_trace.report import cite, compile_growth, hosts, machine_page, scale, write_report
from tests.report.helpers import unrendered
from tests.shared import results_loaded_once

RESULTS = Path(__file__).parents[2] / "results"


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_root: Path) -> Path:
    out = tmp_path_factory.mktemp("committed") / "report"
    with unrendered(), results_loaded_once(shared_root):  # these tests read the text
        write_report(RESULTS, out, lambda line: None)
    return out


def test_the_opening_of_summary_md_states_device_cores_sizes_and_not_gpu_scale(built: Path) -> None:
    opening = "\n".join((built / "summary.md").read_text().splitlines()[:12])
    assert "device cpu, 2 cores" in opening and "mlp 64x256x1024" in opening
    assert "GFLOP of matmuls a step" in opening and "no matmuls" in opening
    assert scale.NOT_GPU_SCALE.removeprefix("CPU results ") in opening


def test_the_front_page_is_short_in_a_reviewers_order_and_every_table_carries_the_scale(built: Path) -> None:
    text = (built / "summary.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 80 and len(text.split()) <= 1500
    heads = [line for line in lines if line.startswith("## ")]
    assert heads == ["## Scale", "## Each framework at its fastest", "## Mechanisms, each in like modes", "## Memory",
                     "## Compile time", "## Where machines disagree"]
    # every table's caption (the paragraph above it) carries the scale
    starts = [i for i, line in enumerate(lines) if line.startswith("|") and not lines[i - 1].startswith("|")]
    assert starts and all(lines[i - 2].startswith("_Scale: 2-core CPUs") for i in starts)
    # the eager pair is named for what it measures, after the compiled one; saved bytes say "before XLA"
    body = text[text.index("## Mechanisms"):]
    assert body.index("| compiled program |") < body.index("| dispatch cost |") and "un-jitted JAX" in body
    assert "residuals before XLA" in text[text.index("## Memory"):]
    # short cells, the verdict in a column of its own; no old long cell
    assert "95 % interval 0." not in text and "no difference measurable on this machine" not in text


def test_each_framework_at_its_fastest_names_both_modes_with_a_cell_per_machine(built: Path) -> None:
    text = (built / "summary.md").read_text()
    part = text.split("## Each framework at its fastest")[1].split("## ")[0]
    rows = [r for r in part.splitlines() if r.startswith("| mlp ")]
    assert len(rows) == 1 and re.search(r"\| (eager|compiled)[^|]*; (eager|compiled)[^|]* \|", rows[0])
    assert re.search(r"\| [\d.]+× \[[\d.]+–[\d.]+\]", rows[0])
    assert re.search(r"JAX (slower|faster) on \d of \d|no finding on any of \d", rows[0])


def test_each_machine_has_a_page_linked_from_the_front(built: Path) -> None:
    front = (built / "summary.md").read_text()
    pages = sorted(built.glob("*/summary.md"))
    assert len(pages) >= 2 and "## All results" not in front
    # the committed machines' ratios differ between hosts: their table is a page of its own, linked, back-linked
    between = built / hosts.PAGE
    assert between.exists() and f"]({hosts.PAGE})" in front and "](summary.md)" in between.read_text()
    assert "| case | machines | JAX/PyTorch |" in between.read_text() and "| case | machines |" not in front
    for page in pages:
        link = machine_page.path(page.parent.name)
        assert f"]({link})" in front
        text = page.read_text()
        assert "## Provenance" in text and "## All results" in text and "(../summary.md)" in text


def test_a_cite_block_carries_the_scale(load_once) -> None:
    text = cite.run("GradStep_mlp.time_step", ["mode=compiled", "style=matched"], RESULTS, "text", lambda s: None)
    lines = [line for line in text.splitlines() if line.strip().startswith("scale")]
    assert lines and all("2 cores" in s and "mlp 64x256x1024" in s and "GFLOP" in s and scale.NOT_GPU_SCALE in s
                         for s in lines)


def test_compile_growth_is_embedded_with_its_findings_where_the_run_has_phases(load_once) -> None:
    data = load_once(RESULTS, lambda line: None)
    first = data.table[data.table.metric == "time_step"].iloc[0].to_dict()
    extra = []
    for depth, size in list(workloads.depth_series("chain", "cuda").items())[:3]:
        for fw in ("torch", "jax"):
            params = {"framework": fw, "workload": "chain", "size": size, "formulation": "unrolled",
                      "cache": "cold", "phase": "first_call"}
            extra.append(first | {"benchmark": "compile.CompilePhases_chain.time_compile_phase", "workload": "chain",
                                  "size": size, "framework": fw, "metric": compile_growth.METRIC,
                                  "params": json.dumps(params), "value": 0.01 * depth, "ci_low": 0.01 * depth,
                                  "ci_high": 0.01 * depth, "pillar": "compile"})
    rows = pd.concat([data.table[(data.table.machine == first["machine"]) & (data.table.commit == first["commit"])],
                      pd.DataFrame(extra)], ignore_index=True)
    said = compile_growth.findings(compile_growth.points(rows))
    group = "m"
    page = machine_page.page(data, group, rows, [f"{group}/{compile_growth.FIGURE}"], "Scale: x.", said)
    assert f"![compile growth]({compile_growth.FIGURE})" in page
    assert said and all(f"- {s}" in page for s in said)
    assert "Compile time against depth" not in machine_page.page(data, group, rows, [], "Scale: x.", [])
