"""Scale wherever a number is cited (issue 41 item 1), each framework at its best (item 2), a page per machine
(item 6) and compile growth embedded (issue 40), on the committed results where they allow."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from implementations import workloads
from tape_vs_trace import cite
from tape_vs_trace.report import best, compile_growth, hosts, load, machine_page, scale, write_report
from tests.report.helpers import unrendered

RESULTS = Path(__file__).parents[2] / "results"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("committed") / "report"
    with unrendered():  # these tests read the text
        write_report(RESULTS, out, lambda line: None)
    return out


def test_the_opening_of_summary_md_states_device_cores_sizes_and_not_gpu_scale(built: Path) -> None:
    opening = "\n".join((built / "summary.md").read_text().splitlines()[:12])
    assert "device cpu, 2 cores" in opening and "mlp 64x256x1024" in opening
    assert "GFLOP of matmuls a step" in opening and "saved for the backward" in opening
    assert scale.NOT_GPU_SCALE in opening


def test_each_headline_sentence_carries_its_scale_and_calibration(built: Path) -> None:
    sentences = [line for line in (built / "summary.md").read_text().splitlines() if line.startswith("- On ")]
    assert sentences and all(scale.NOT_GPU_SCALE in s and "sizes: " in s for s in sentences)
    assert all("dispatch cost predicts JAX/PyTorch" in s and "matmul rate predicts" in s for s in sentences)
    # the brief form: each size with its step's flops; the saved bytes and the CPU's name are in the Scale section
    assert all("GFLOP a step" in s and "iB saved for the backward" not in s for s in sentences)


def test_the_best_of_each_verdict_names_both_modes_per_machine(built: Path) -> None:
    text = (built / "summary.md").read_text()
    groups = [line[4:] for line in text.splitlines() if line.startswith("### ")]
    table = pd.read_csv(built / "summary.csv", keep_default_na=False)
    stepped = set(table[table.benchmark.str.startswith("recording.GradStep_") & (table.metric == "time_step")].machine)
    assert groups and stepped
    for group in groups:
        part = text.split(f"### {group}")[1].split("### ")[0]
        assert "What does each framework give at its fastest mode on this machine?" in part
        if group not in stepped:  # a machine without gradient steps (a GPU's first contacts) says so
            assert best.NO_STEPS in part
            continue
        rows = [r for r in part.splitlines() if r.startswith("| mlp (")]
        assert rows and all(re.search(r"\| (eager|compiled)[^|]*: [\d.]+ \S+ \| (eager|compiled)", r) for r in rows)
        assert all(re.search(r"JAX (slower|faster)|no difference measurable", r) for r in rows)


def test_each_machine_has_a_page_linked_from_the_front(built: Path) -> None:
    front = (built / "summary.md").read_text()
    pages = sorted(built.glob("*/summary.md"))
    # short: per machine its scale, headline sentence, fastest-mode table and compile growth; the rest on its page
    assert len(pages) >= 2 and len(front.splitlines()) < 30 + 30 * len(pages)
    assert "## All results" not in front
    # the committed machines' ratios differ between hosts: their table is a page of its own, linked, back-linked
    between = built / hosts.PAGE
    assert between.exists() and f"]({hosts.PAGE})" in front and "](summary.md)" in between.read_text()
    assert "| case | machines | JAX/PyTorch |" in between.read_text() and "| case | machines |" not in front
    for page in pages:
        link = machine_page.path(page.parent.name)
        assert f"]({link})" in front
        text = page.read_text()
        assert "## Provenance" in text and "## All results" in text and "(../summary.md)" in text


def test_a_cite_block_carries_the_scale() -> None:
    text = cite.run("GradStep_mlp.time_step", ["mode=compiled", "style=matched"], RESULTS, "text", lambda s: None)
    lines = [line for line in text.splitlines() if line.strip().startswith("scale")]
    assert lines and all("2 cores" in s and "mlp 64x256x1024" in s and "GFLOP" in s and scale.NOT_GPU_SCALE in s
                         for s in lines)


def test_compile_growth_is_embedded_with_its_findings_where_the_run_has_phases(tmp_path: Path) -> None:
    data = load.load_results(RESULTS, lambda line: None)
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
