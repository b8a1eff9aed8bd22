"""The one grid (implementations/workloads.py, each spec's `grid`): every consumer runs exactly what the specs say,
on both devices, and a new workload (a spec and two modules, nothing else edited) runs in every pillar's grid,
saved-all, paired, gpucheck and the GPU chunks while every other workload keeps its grid and its inputs.

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

ROOT = Path(__file__).resolve().parents[1]
TOY = "aaa_toy"  # sorts before every workload: under a seed by sorted position it would shift all their inputs

# Prints what every consumer of the grid runs in this process, as JSON; with "toy", first registers a workload made
# of the transformer's generator and, as its two modules, the transformer's forwards.
VIEW = r"""
import dataclasses, hashlib, json, sys
from implementations import pillars, workloads
if sys.argv[1] == "toy":
    import types
    base = workloads.WORKLOADS["transformer"]
    toy = dataclasses.replace(base, name="aaa_toy", grid={f: workloads.on("tiny") for f in pillars.FAMILIES})
    workloads.WORKLOADS = {"aaa_toy": toy, **workloads.WORKLOADS}
    import importlib
    for fw in ("torch", "jax"):
        module = types.ModuleType(f"implementations.{fw}.aaa_toy")
        module.forward = importlib.import_module(f"implementations.{fw}.transformer").forward
        sys.modules[module.__name__] = module
from benchmarks import common, counts
from scripts import gpu_chunks
from tape_vs_trace import distributed_run, experiments, gpucheck, saved

device = common.DEVICE
names = gpu_chunks.discover()

def digest(w):
    inputs = workloads.make_inputs(w)
    arrays = [*inputs.params.values(), *inputs.data.values(), inputs.cotangent]
    return hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest()

ran = []
if sys.argv[1] == "toy" and device == "cpu":  # one eager step per framework, by the asv class's set-up and body
    from benchmarks import recording
    cls = recording.GradStep_aaa_toy
    for fw in ("torch", "jax"):
        combo = [fw, "aaa_toy", "tiny", "eager", "unrolled", "matched", "written", "float32", "highest", device]
        bench = cls()
        bench.setup(*combo)
        bench.time_step(*combo)
        ran.append(fw)

print(json.dumps({
    "ran": ran,
    "asv": {c.__name__: c.params[2] for c in common.suite_classes() if "workload" in c.param_names},
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


def _view(device: str, toy: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", VIEW, "toy" if toy else "real"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "TVT_DEVICE": device, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module", params=["cpu", "cuda"])
def views(request) -> tuple[str, dict, dict]:
    return request.param, _view(request.param, toy=False), _view(request.param, toy=True)


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
    device, real, toy = views
    for p in pillars.PILLARS.values():
        for family in p.families:
            assert toy["asv"][f"{family}_{TOY}"] == ["tiny"], f"{TOY} is not in {p.module}'s {family}"
            assert any(c.endswith(f".{family}_{TOY}") for c in toy["full"]), f"no GPU chunk runs {family}_{TOY}"
    assert toy["ran"] == (["torch", "jax"] if device == "cpu" else [])
    assert [TOY, "tiny", "plain", "float32", "matched/written"] in toy["saved"]
    assert [TOY, "tiny"] in toy["gpucheck"]
    assert [TOY, "tiny"] in toy["distributed"]
    groups = {group for group, w, _, _ in toy["paired"] if w == TOY}
    assert groups == {"remat", "paired"}
    assert {f"{f}_{TOY}" for f in ("GraphCost", "RematCost", "CustomMemory", "ForwardMemory")} <= set(toy["counted"])
    # every other workload: the same classes, sizes, cases, experiments and inputs as before
    assert {k: v for k, v in toy["asv"].items() if not k.endswith(f"_{TOY}")} == real["asv"]
    assert [c for c in toy["saved"] if c[0] != TOY] == real["saved"]
    assert [e for e in toy["paired"] if e[1] != TOY] == real["paired"]
    assert [c for c in toy["gpucheck"] if c[0] != TOY] == real["gpucheck"]
    assert [c for c in toy["distributed"] if c[0] != TOY] == real["distributed"]
    assert {w: d for w, d in toy["digests"].items() if w != TOY} == real["digests"]


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
