"""The one grid (implementations/workloads.py, each spec's `grid`): every consumer runs exactly what the specs say,
on both devices, and a new workload (a spec, two modules and its reference forward, nothing else edited: tests/toy)
runs in every pillar's grid, saved-all, paired, gpucheck, the GPU chunks, the report and cite while every other
workload keeps its grid and its inputs. The toy has fewer axes than the transformer: no formulation, no style, no
attention.

Each view of the grid is taken in a fresh interpreter (benchmark classes are made at import, for the device that
process sees), the toy registered there before anything reads the specs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from implementations import pillars, workloads
from tests import toy

ROOT = Path(__file__).resolve().parents[1]
TOY = toy.NAME
# The toy's parameters: the base ones and the pillar's axes, none of the transformer's program or loop axes.
TOY_PARAMS = {"framework": "torch", "workload": TOY, "size": "tiny", "mode": "eager", "dtype": "float32",
              "precision": "highest"}

# Prints what every consumer of the grid runs in this process, as JSON; with "toy", first registers tests/toy.
VIEW = r"""
import hashlib, json, sys
if sys.argv[1] == "toy":
    from tests import toy
    toy.register(pillar=True)
from implementations import experiments, workloads
from benchmarks import common, counts
from scripts import gpu_chunks
from tape_vs_trace.side import distributed_run, gpucheck, saved

device = common.DEVICE
names = gpu_chunks.discover()
classes = {c.__name__: c for c in common.suite_classes()}

def digest(w):
    inputs = workloads.make_inputs(w)
    arrays = [*inputs.params.values(), *inputs.data.values(), inputs.cotangent]
    return hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest()

def combination(bench, params):
    # a point's parameters are one combination of its class, and the class runs it
    cls = classes[bench.split(".")[1]]
    ok = list(params) == cls.param_names and all(params[n] in v for n, v in zip(cls.param_names, cls.params))
    return ok and not cls().reason_to_skip(common.Case(params))

ran, toy_run = [], {}
if sys.argv[1] == "toy":
    params = json.loads(sys.argv[2])
    cls = classes["GradStep_aaa_toy"]
    toy_run["grad_params"] = cls.param_names
    toy_run["points"] = sorted({combination(*experiments.asv_combination(e, p, device))
                                for e in experiments.experiments(device) if e.workload == "aaa_toy" for p in e.points})
    if device == "cpu":  # one eager step per framework, by the asv class's set-up and body; counts; saved bytes
        for fw in ("torch", "jax"):
            combo = [{**params, "framework": fw, "device": device}[n] for n in cls.param_names]
            bench = cls()
            bench.setup(*combo)
            bench.time_step(*combo)
            ran.append(fw)
            pillar = classes["ToyStep_aaa_toy"]()  # the toy pillar's family
            pillar.setup(*combo)
            pillar.time_step(*combo)
            ran.append(f"{fw} toy_pillar")
            graph = classes["GraphCost_aaa_toy"]
            counted = counts.count_one(graph, [{**params, "framework": fw, "device": device}[n]
                                               for n in graph.param_names])
            toy_run[f"counts_{fw}"] = counted["values"]
            toy_run[f"saved_{fw}"] = sum(r["nbytes"] for r in saved._records(fw, "aaa_toy", "tiny", "plain",
                                                                              "float32") if not r["is_argument"])
        toy_run["gpucheck"] = gpucheck.measure("torch", "aaa_toy", "tiny", device)["verdict"]
        timed = []  # the eager points of its remat curve, each by its class's set-up and body
        for e in experiments.experiments(device):
            for point in (e.points if e.workload == "aaa_toy" and e.group == "remat" and e.mode == "eager" else ()):
                bench, combo = experiments.asv_combination(e, point, device)
                curve_point = classes[bench.split(".")[1]]()
                curve_point.setup(*combo.values())
                curve_point.time_step(*combo.values())
                timed.append(f"{e.framework} {experiments.point_id(point)}")
        toy_run["curve"] = timed

print(json.dumps({
    "ran": ran,
    "toy": toy_run,
    "asv": {c.__name__: c.params[2] for c in classes.values() if "workload" in c.param_names},
    "counted": sorted(c.__name__ for c in counts.counted_classes()),
    "saved": [list(c) for c in saved.suite_cases(device)],
    "paired": sorted([e.group, e.workload, e.size, e.name] for e in experiments.experiments(device)),
    "gpucheck": [list(c) for c in gpucheck.cases(device)],
    "distributed": sorted({(c.workload, c.size) for c in distributed_run.cases(device)}),
    "chunks": sorted({n.split("(")[0].rsplit(".", 1)[0] for n in names}),
    "full": [c.name for c in gpu_chunks.full(names)],
    "digests": {w: digest(w) for w in workloads.WORKLOADS},
}))
"""


# Builds the report and a citation from a synthetic results folder whose rows are the toy's (tests/report/helpers.py's
# mlp rows renamed, and remat curve points), the toy registered first; prints what they show of it, as JSON.
REPORT_VIEW = r"""
import contextlib, io, json, sys
from pathlib import Path
from tests import toy
toy.register(pillar=True)
import pandas as pd
from tape_vs_trace import cli, report
from tape_vs_trace.report import headline
from tape_vs_trace.report.load import load_results
from tests.report.helpers import curve_rows, write_csv, write_results

root = Path(sys.argv[1])
results = write_results(root / "results")
for path in [results / "benchmarks.json", *(results / "box").glob("*.json")]:
    text = path.read_text().replace("'mlp'", "'aaa_toy'").replace("_mlp.", "_aaa_toy.")
    path.write_text(text.replace("'s'", "'tiny'"))
# the toy pillar's step: a copy of the GradStep rows under its benchmark
grad, mine = "recording.GradStep_aaa_toy.time_step", "toy_pillar.ToyStep_aaa_toy.time_step"
declared = json.loads((results / "benchmarks.json").read_text())
declared[mine] = {**declared[grad], "name": mine}
(results / "benchmarks.json").write_text(json.dumps(declared))
(run,) = (results / "box").glob("*-existing-venv.json")
data = json.loads(run.read_text())
data["results"][mine] = data["results"][grad]
run.write_text(json.dumps(data, allow_nan=True))
commit = data["commit_hash"]
points = [{**r, "workload": "aaa_toy", "size": "tiny", "formulation": "", "machine": "box", "commit": commit}
          for r in curve_rows() if r["formulation"] == "unrolled"]
write_csv(results / "paired", points, f"box-{commit[:8]}.csv")
report.write_report(results, root / "report", lambda message: None)
table = pd.read_csv(root / "report" / "summary.csv", keep_default_na=False)
cited = io.StringIO()
with contextlib.redirect_stdout(cited):
    cli.main(["cite", "GradStep_aaa_toy.time_step", "framework=torch", "mode=eager", "--results", str(results)])
compared = io.StringIO()
with contextlib.redirect_stdout(compared):
    cli.main(["compare", str(results), str(results)])
# a second machine with the same run, for the verdicts across machines
import shutil
shutil.copytree(results / "box", results / "box2")
record = json.loads((results / "box2" / "machine.json").read_text())
(results / "box2" / "machine.json").write_text(json.dumps({**record, "machine": "box2"}))
other = json.loads(run.read_text())
other["params"]["machine"] = "box2"
(results / "box2" / run.name).write_text(json.dumps(other, allow_nan=True))
report.write_report(results, root / "two", lambda message: None)
print(json.dumps({
    "pillars": sorted(set(table[table.workload == "aaa_toy"].pillar)),
    # the front page, each machine's page and its page of every table
    "markdown": [line for page in [root / "report" / "summary.md", *sorted((root / "report").glob("*/summary.md")),
                                   *sorted((root / "report").glob("*/tables.md"))]
                 for line in page.read_text().splitlines() if "aaa_toy" in line],
    "pages": "\n".join(p.read_text() for p in sorted((root / "report").rglob("*.md"))),
    "files": sorted(p.name for p in (root / "report").rglob("*") if p.is_file()),
    "headline": [r.label for r in headline.build(load_results(results, lambda m: None)).rows],
    "cite": cited.getvalue(),
    "compare": compared.getvalue(),
    "across": [line for line in (root / "two" / "summary.md").read_text().splitlines() if "aaa_toy" in line],
}))
"""


def _view(device: str, with_toy: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", VIEW, "toy" if with_toy else "real", json.dumps(TOY_PARAMS)], cwd=ROOT,
                          capture_output=True,
                          text=True, env={**os.environ, "TVT_DEVICE": device, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module", params=["cpu", "cuda"])
def views(request) -> tuple[str, dict, dict]:
    return request.param, _view(request.param, with_toy=False), _view(request.param, with_toy=True)


def _spec_runs(device: str) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(w, f, s.runs(f, device)) for w, s in workloads.WORKLOADS.items() for f in s.grid if s.runs(f, device)]


def test_every_consumer_runs_what_the_specs_say(views) -> None:
    device, real, _ = views
    saved = {(w, size) for w, size, *_ in real["saved"]}
    paired = {(group, w, size) for group, w, size, _ in real["paired"]}
    for w, family, sizes in _spec_runs(device):
        if family in pillars.SIDE_GRIDS:
            kind, _, group = family.partition(".")
            for size in sizes:
                found = {"saved": (w, size) in saved, "gpucheck": [w, size] in real["gpucheck"],
                         "paired": (("remat" if group == "remat" else "paired"), w, size) in paired,
                         "distributed": [w, size] in real["distributed"]}[kind]
                assert found, f"{family} omits {w} {size}"
            continue
        cls = f"{family}_{w}"
        assert real["asv"].get(cls) == list(sizes), f"{cls}: {real['asv'].get(cls)} against the spec's {sizes}"
        assert cls in {c.rsplit(".", 1)[1] for c in real["chunks"]}, f"the GPU chunks omit {cls}"
    # and nothing runs that no spec names
    assert len(real["asv"]) == sum(1 for _, f, _ in _spec_runs(device) if f not in pillars.SIDE_GRIDS)
    assert {w for w, *_ in real["saved"]} == {w for w, f, _ in _spec_runs(device) if f == "saved"}


def test_a_new_workload_runs_everywhere_and_changes_no_other(views) -> None:
    device, real, found = views
    toy_grid = toy.spec().grid
    for p in pillars.PILLARS.values():
        for family in p.families:
            if family not in toy_grid:
                continue
            assert found["asv"][f"{family}_{TOY}"] == ["tiny"], f"{TOY} is not in {p.module}'s {family}"
            assert any(c.endswith(f".{family}_{TOY}") for c in found["full"]), f"no GPU chunk runs {family}_{TOY}"
    # its classes have no formulation, style or attention parameter
    assert found["toy"]["grad_params"] == [*TOY_PARAMS, "device"]
    assert found["ran"] == (["torch", "torch toy_pillar", "jax", "jax toy_pillar"] if device == "cpu" else [])
    # the toy pillar (tests/toy/pillar.py and its registry entry): its class, for the toy, in the GPU chunks
    assert found["asv"][f"ToyStep_{TOY}"] == ["tiny"]
    assert f"{toy.PILLAR}.ToyStep_{TOY}" in found["full"]
    if device == "cpu":
        for fw in ("torch", "jax"):
            counted = found["toy"][f"counts_{fw}"]
            assert not [m for m, v in counted.items() if isinstance(v, dict)], counted  # no count failed
            assert counted["track_flops"] == 3 * 2 * 4 * 4 * 4  # x @ w, and its gradients with respect to x and w
            assert found["toy"][f"saved_{fw}"] > 0
        assert found["toy"]["gpucheck"]
        assert found["toy"]["curve"] == [f"{fw} {p}" for fw in ("torch", "jax")
                                         for p in ("plain", "remat_dots", "remat_full")]
    assert [TOY, "tiny", "plain", "float32", ""] in found["saved"]
    assert [TOY, "tiny"] in found["gpucheck"]
    assert [TOY, "tiny"] in found["distributed"]
    groups = {group for group, w, _, _ in found["paired"] if w == TOY}
    assert groups == {"remat", "paired"}
    assert found["toy"]["points"] == [True], "a remat or paired point of the toy is not a combination its class runs"
    assert {f"{f}_{TOY}" for f in ("GraphCost", "RematCost", "ForwardMemory")} <= set(found["counted"])
    # every other workload: the same classes, sizes, cases, experiments and inputs as before
    assert {k: v for k, v in found["asv"].items() if not k.endswith(f"_{TOY}")} == real["asv"]
    assert [c for c in found["saved"] if c[0] != TOY] == real["saved"]
    assert [e for e in found["paired"] if e[1] != TOY] == real["paired"]
    assert [c for c in found["gpucheck"] if c[0] != TOY] == real["gpucheck"]
    assert [c for c in found["distributed"] if c[0] != TOY] == real["distributed"]
    assert {w: d for w, d in found["digests"].items() if w != TOY} == real["digests"]


def test_a_grid_that_names_an_unknown_size_or_family_is_refused() -> None:
    base = workloads.WORKLOADS["mlp"]
    with pytest.raises(ValueError, match="size in mlp's grid for GradStep"):
        workloads.check_grid({"mlp": _with_grid(base, {"GradStep": workloads.on("no-such-size")})})
    with pytest.raises(ValueError, match="benchmark family in mlp's grid.*GradStep"):
        workloads.check_grid({"mlp": _with_grid(base, {"GradStpe": workloads.on("tiny")})})


def _with_grid(spec: workloads.WorkloadSpec, grid: dict) -> workloads.WorkloadSpec:
    import dataclasses

    return dataclasses.replace(spec, grid=grid)


def test_on_takes_the_cpu_sizes_for_cuda_unless_told() -> None:
    assert workloads.on("a", "b") == workloads.On(("a", "b"), ("a", "b"))
    assert workloads.on("a", cuda="c") == workloads.On(("a",), ("c",))
    assert workloads.on(cuda=("c", "d")) == workloads.On((), ("c", "d"))


@pytest.fixture
def registered(monkeypatch):
    """tests/toy registered in this process, undone after the test."""
    from tests import reference

    monkeypatch.setattr(workloads, "WORKLOADS", dict(workloads.WORKLOADS))
    monkeypatch.setattr(reference, "FORWARD", dict(reference.FORWARD))
    for fw in ("torch", "jax"):
        monkeypatch.delitem(sys.modules, f"implementations.{fw}.{TOY}", raising=False)
    toy.register()
    yield
    for fw in ("torch", "jax"):
        sys.modules.pop(f"implementations.{fw}.{TOY}", None)


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_a_new_workload_is_its_spec_two_modules_and_its_reference(registered, framework: str) -> None:
    # what the parity tests need of a workload: its inputs pinned in its spec, and a reference forward
    from tests.helpers import assert_close, grad_fn_result, reference_result, tolerance
    from tests.test_inputs import _digest

    inputs = workloads.make_inputs(TOY, "tiny", "float64")
    assert _digest(inputs) == workloads.spec(TOY).inputs_digest
    got, (_, want) = grad_fn_result(framework, inputs, "plain"), reference_result(TOY, "tiny", "float64")
    assert_close("loss", got.value, want.value, tolerance(inputs))
    for name in want.grad_params:
        assert_close(f"d/d {name}", got.grad_params[name], want.grad_params[name], tolerance(inputs))


def test_a_spec_without_its_pins_or_depth_is_refused() -> None:
    base = toy.spec()
    import dataclasses

    with pytest.raises(ValueError, match="aaa_toy: a bfloat16 tolerance where, and only where"):
        workloads.check_grid({TOY: dataclasses.replace(base, dtypes=("float32", "bfloat16"))})
    with pytest.raises(ValueError, match="aaa_toy's CompilePhases runs tiny, which has no depth"):
        workloads.check_grid({TOY: toy.spec(("CompilePhases",))})
    with pytest.raises(ValueError, match="aaa_toy's grid runs paired.custom but it has no 'custom' variant"):
        workloads.check_grid({TOY: toy.spec(("paired.custom",))})


def test_a_new_workloads_remat_curve_is_titled_with_its_name(tmp_path: Path, monkeypatch) -> None:
    import pandas as pd
    from matplotlib.figure import Figure

    from tape_vs_trace.report import curve
    from tests.report.helpers import curve_point

    one = (1.0, 1.0, 1.0)
    rows = [curve_point(fw, "eager", "", point, (t, t * 0.9, t * 1.1), one, saved, saved + 1, "m", 1)
            for fw in ("torch", "jax") for point, t, saved in (("plain", 0.01, 4), ("remat_full", 0.012, 2))]
    table = pd.DataFrame([{**r, "workload": TOY, "size": "tiny"} for r in rows])
    seen: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: seen.append(self))
    curve.figure(table, "tiny", "footer", tmp_path / "x.png")
    assert seen[0].get_suptitle() == f"remat trade-off, {TOY} tiny, eager only: step time against memory"


def test_every_workload_runs_in_some_grid() -> None:
    assert [w for w, s in workloads.WORKLOADS.items() if not any(s.grid.values())] == []


@pytest.mark.slow
def test_a_new_workloads_rows_reach_every_table_figure_the_headline_and_cite(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", REPORT_VIEW, str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout.splitlines()[-1])
    assert shown["pillars"] == ["harness", "inference", "recording", "remat", toy.PILLAR]
    assert any(line.startswith(f"| {TOY} tiny eager |") for line in shown["markdown"])  # the step-time table
    assert any(line.startswith(f"| {TOY} tiny remat_full |") for line in shown["markdown"])  # the remat table
    assert "![remat_curve_tiny](../remat_curve_tiny.png)" in shown["pages"]  # a machine page, a folder below it
    assert {"headline.png", "recording.png", "remat.png", "remat_curve_tiny.png", f"{toy.PILLAR}.png"} <= set(
        shown["files"])
    assert any(line.startswith("- **step time, JAX op-by-op against PyTorch's eager tape**") and TOY in line
               for line in shown["markdown"]), "the toy pillar's finding"
    assert f"{TOY} (batch 4, width 4)" in " ".join(shown["headline"])  # its size in words, with no template
    assert f"workload={TOY}, size=tiny, mode=eager" in shown["cite"]
    assert TOY in shown["compare"] and toy.PILLAR in shown["compare"]  # the rerun check, row by row
    assert any(line.endswith("of 2 |") for line in shown["across"]), shown["across"]  # a verdict across 2 machines
