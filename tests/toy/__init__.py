"""A toy workload with fewer axes than the transformer (no formulation, no style, no attention): tanh(x @ w) * x.

What a new workload is: this spec, two mirror modules (torch_toy.py, jax_toy.py) and a reference forward. register()
puts the three where the suite looks (the specs, implementations.torch/.jax.<name>, tests.reference.FORWARD), in a
fresh interpreter, before anything reads the specs (tests/test_grid.py)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np

NAME = "aaa_toy"  # sorts before every workload: under a seed by sorted position it would shift all their inputs
DIGEST = "810532a220064212"  # its inputs' pin (WorkloadSpec.inputs_digest), as tests/test_inputs.py computes it


def _generate(rng: np.random.Generator, s: dict[str, int]) -> tuple[dict, dict, dict]:
    w = s["width"]
    return {"w": rng.standard_normal((w, w)) / np.sqrt(w)}, {"x": rng.standard_normal((s["batch"], w))}, {}


def reference(params: dict, data: dict, static: dict) -> np.ndarray:
    x = np.asarray(data["x"], np.float64)
    return np.tanh(x @ np.asarray(params["w"], np.float64)) * x


def spec(families: tuple[str, ...] | None = None):
    """The toy's spec, running "tiny" in `families` (if None, every family a workload without a depth and without a
    custom backward can run: check_grid refuses the others)."""
    from implementations import pillars, workloads

    unfit = (*workloads.DEPTH_FAMILIES, *workloads.VARIANT_FAMILIES)
    families = tuple(f for f in pillars.FAMILIES if f not in unfit) if families is None else families
    return workloads.WorkloadSpec(
        NAME, "tanh(x @ w) * x", ("plain", "remat_full", "remat_dots"), {"tiny": {"batch": 4, "width": 4}},
        _generate, lambda s: (s["batch"], s["width"]), inputs_digest=DIGEST,
        grid={f: workloads.on("tiny") for f in families})


PILLAR = "toy_pillar"
PILLAR_PATH = Path(__file__).with_name("pillar.py")


def register_pillar() -> None:
    """Add the toy pillar (pillar.py) to this process's pillar registry and families, as `benchmarks.toy_pillar`;
    the toy workload, registered next, names its family in its grid. Its classes are made when it is imported."""
    from implementations import pillars

    entry = pillars.Pillar(PILLAR, "a toy pillar", "the eager tape", "op-by-op jax.value_and_grad", ("ToyStep",),
                           ("mode",), pillars.Figure("values"),
                           (pillars.Across("time_step", "eager", "JAX op-by-op against PyTorch's eager tape"),))
    pillars.PILLARS = {**pillars.PILLARS, PILLAR: entry}
    pillars.FAMILIES = (*pillars.FAMILIES, *entry.families)


def load_pillar() -> None:
    """Import pillar.py as benchmarks.toy_pillar (what the suite's discovery imports: Pillar.module), a module file
    of the benchmarks package as asv's discovery finds one (a folder of this process's added to its path)."""
    import atexit
    import shutil
    import tempfile

    import benchmarks

    spec = importlib.util.spec_from_file_location(f"benchmarks.{PILLAR}", PILLAR_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    folder = Path(tempfile.mkdtemp(prefix="toy-pillar-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    (folder / f"{PILLAR}.py").symlink_to(PILLAR_PATH)
    benchmarks.__path__.append(str(folder))


def register(families: tuple[str, ...] | None = None, pillar: bool = False) -> None:
    """Add the toy to this process's specs (first, so that it sorts first), modules and reference forwards; with
    `pillar`, the toy pillar first, whose family the toy then runs too."""
    from implementations import workloads
    from tests import reference as references

    if pillar:
        register_pillar()  # before the spec: its default families are the registry's
    workloads.WORKLOADS = {NAME: spec(families), **workloads.WORKLOADS}
    workloads.check_grid(workloads.WORKLOADS)
    for fw in ("torch", "jax"):
        sys.modules[f"implementations.{fw}.{NAME}"] = importlib.import_module(f"tests.toy.{fw}_toy")
    references.FORWARD[NAME] = reference
    if pillar:
        load_pillar()
