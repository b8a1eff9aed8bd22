"""Structural equivalence: both frameworks hold the same parameters, with the same shapes and counts; and the code's
layers: no import goes up a layer or round a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from implementations import workloads
from implementations.jax import common as jax_common
from implementations.torch import common as torch_common


@pytest.mark.parametrize("workload", list(workloads.WORKLOADS))
def test_same_parameters(workload: str) -> None:
    inputs = workloads.make_inputs(workload)
    torch_params, torch_data = torch_common.prepare(inputs)
    jax_params, jax_data = jax_common.prepare(inputs)
    # PyTorch keeps layer-stacked parameters as one leaf per layer (LAYER_STACKED); to_numpy stacks them back.
    torch_shapes = {k: np.shape(v) for k, v in torch_common.to_numpy(torch_params).items()}
    jax_shapes = {k: tuple(v.shape) for k, v in jax_params.items()}
    spec_shapes = {k: v.shape for k, v in inputs.params.items()}
    assert torch_shapes == jax_shapes == spec_shapes
    torch_count = sum(t.numel() for t in torch_common.leaves(torch_params))
    jax_count = sum(int(a.size) for a in jax_params.values())
    assert torch_count == jax_count == workloads.parameter_count(inputs) > 0
    assert {k: tuple(v.shape) for k, v in torch_data.items()} == {k: tuple(v.shape) for k, v in jax_data.items()}


@pytest.mark.parametrize(("workload", "dtype"), [(name, dtype) for name, spec in workloads.WORKLOADS.items()
                                                  for dtype in spec.dtypes])
def test_dtype_is_applied(workload: str, dtype: str) -> None:
    inputs = workloads.make_inputs(workload, dtype=dtype)
    torch_params, _ = torch_common.prepare(inputs)
    jax_params, _ = jax_common.prepare(inputs)
    assert {str(t.dtype) for t in torch_common.leaves(torch_params)} == {f"torch.{dtype}"}
    assert {str(a.dtype) for a in jax_params.values()} == {dtype}


def test_inputs_are_deterministic() -> None:
    first, second = workloads.make_inputs("mlp", "64x256x1024"), workloads.make_inputs("mlp", "64x256x1024")
    for name in first.params:
        np.testing.assert_array_equal(first.params[name], second.params[name])
    other_seed = workloads.make_inputs("mlp", "64x256x1024", seed=1)
    assert not np.array_equal(first.params["w1"], other_seed.params["w1"])


def test_the_unrolled_formulation_holds_the_same_per_layer_parameters_on_both_sides() -> None:
    inputs = workloads.make_inputs("transformer")
    torch_params, _ = torch_common.prepare(inputs, formulation="unrolled")
    jax_params, _ = jax_common.prepare(inputs, formulation="unrolled")

    def shapes(value):
        return [tuple(v.shape) for v in value] if isinstance(value, list) else tuple(value.shape)

    assert {k: shapes(v) for k, v in torch_params.items()} == {k: shapes(v) for k, v in jax_params.items()}
    layers = len(inputs.params["w_qkv"])
    stacked = set(jax_common.load("transformer").LAYER_STACKED)
    assert {k for k, v in jax_params.items() if isinstance(v, list) and len(v) == layers} == stacked
    scan, _ = jax_common.prepare(inputs, formulation="scan")
    assert not any(isinstance(v, list) for v in scan.values())


def test_default_formulations() -> None:
    # Each framework's natural form: PyTorch's Python loop, JAX's lax.scan; none where there is no loop.
    assert torch_common.formulation_of("transformer") == torch_common.formulation_of("lstm") == "unrolled"
    assert jax_common.formulation_of("transformer") == jax_common.formulation_of("lstm") == "scan"
    assert torch_common.formulation_of("mlp") is jax_common.formulation_of("mlp") is None


# The layers, lowest first, are folders: a module's layer is the folder it sits in (the most specific folder named
# here), so moving a module moves its layer. MAY_IMPORT says which layers each may import (functions' imports and
# those for type checking included); no import that runs goes round in a cycle. The report reads what the runners
# wrote through the results package: it imports no runner.
LAYERS: dict[str, str] = {
    "implementations": "implementations",
    "benchmarks (the asv suite)": "benchmarks",
    "tooling's base (progress lines)": "tape_vs_trace",
    "results (the data model)": "tape_vs_trace/results",
    "running (the grid's runner)": "tape_vs_trace/running",
    "side measurements": "tape_vs_trace/side",
    "report": "tape_vs_trace/report",
    "command line": "tape_vs_trace/cli",
    "scripts": "scripts",
}
_BELOW_TOOLING = ("tooling's base (progress lines)", "benchmarks (the asv suite)", "implementations")
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "implementations": (),
    "benchmarks (the asv suite)": ("implementations",),
    "tooling's base (progress lines)": (),
    "results (the data model)": ("tooling's base (progress lines)", "implementations"),
    "running (the grid's runner)": ("results (the data model)", *_BELOW_TOOLING),
    # a side measurement may take the suite's grid from the runner's profiles (native-peak's gradient-step pairs)
    "side measurements": ("running (the grid's runner)", "results (the data model)", *_BELOW_TOOLING),
    "report": ("results (the data model)", *_BELOW_TOOLING),
    "command line": ("report", "side measurements", "running (the grid's runner)", "results (the data model)",
                     *_BELOW_TOOLING),
    "scripts": ("command line", "report", "side measurements", "running (the grid's runner)",
                "results (the data model)", *_BELOW_TOOLING),
}
PACKAGES = ("implementations", "benchmarks", "tape_vs_trace", "scripts")
ROOT = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def layer_of(module: str) -> int:
    """The index in LAYERS of `module`'s layer: the deepest layer folder that holds its file."""
    folder = MODULES[module].parent.relative_to(ROOT).as_posix()
    found = [i for i, path in enumerate(LAYERS.values()) if folder == path or folder.startswith(path + "/")]
    if not found:
        raise KeyError(f"{module} is in no layer's folder (tests/test_structure.py LAYERS)")
    return max(found, key=lambda i: len(list(LAYERS.values())[i]))


# How a module imports another, weakest first: an import under `if TYPE_CHECKING:` never runs (annotations only), one
# inside a function runs when the function does (and hides a cycle from the reader), one at module level on import.
TYPING, FUNCTION, MODULE = "for type checking only", "inside a function", "at module level"


def imports(module: str, source: str | None = None) -> dict[str, str]:
    """The project modules `module` (or `source` as if it were that module) imports, each with how: TYPING, FUNCTION
    or MODULE, the strongest of its imports."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text() if source is None else source)
    kinds: dict[ast.AST, str] = {}

    def visit(node: ast.AST, kind: str) -> None:
        kinds[node] = kind
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and kind == MODULE:
                visit(child, FUNCTION)
            elif isinstance(node, ast.If) and child in node.body and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(child, TYPING)
            else:
                visit(child, kind)

    visit(tree, MODULE)
    order = (TYPING, FUNCTION, MODULE)
    found: dict[str, str] = {}
    for node, kind in kinds.items():
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            elif package.startswith("scripts") and base.split(".")[0] not in PACKAGES:
                base = f"scripts.{base}"  # the scripts import each other by their bare names
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            if package.startswith("scripts") and f"scripts.{name}" in MODULES:
                name = f"scripts.{name}"
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found[name] = max(found.get(name, TYPING), kind, key=order.index)
    return found


GRAPH = {module: imports(module) for module in MODULES}


def _where(a: str, b: str) -> str:
    return f"{a} -> {b}" + ("" if GRAPH[a][b] == MODULE else f" ({GRAPH[a][b]})")


def test_every_package_folder_is_a_layer_or_inside_one() -> None:
    # a new folder under tape_vs_trace/ is a layer to place, never a place where anything goes
    folders = {p.parent.relative_to(ROOT).as_posix() for p in MODULES.values()}
    tooling = {f for f in folders if f.count("/") == 1 and f.startswith("tape_vs_trace/")}
    assert tooling <= set(LAYERS.values()), f"folders that are no layer: {sorted(tooling - set(LAYERS.values()))}"
    assert all(layer_of(m) is not None for m in MODULES)
    stale = [path for path in LAYERS.values() if not (ROOT / path).is_dir()]
    assert not stale, f"LAYERS names folders that do not exist: {stale}"


def test_only_the_base_sits_directly_in_the_tooling_package() -> None:
    loose = sorted(p.name for p in (ROOT / "tape_vs_trace").glob("*.py"))
    assert loose == ["__init__.py", "progress.py"], loose


def test_no_import_goes_up_a_layer() -> None:
    names = list(LAYERS)
    wrong = [f"{_where(a, b)}: {names[layer_of(a)]} imports {names[layer_of(b)]}" for a in sorted(GRAPH)
             for b in sorted(GRAPH[a]) if layer_of(b) != layer_of(a) and names[layer_of(b)] not in
             MAY_IMPORT[names[layer_of(a)]]]
    assert not wrong, "imports of a layer above, or of one the layer may not import:\n" + "\n".join(wrong)


def test_a_layer_imports_only_layers_below_it() -> None:
    names = list(LAYERS)
    assert set(MAY_IMPORT) == set(names)
    assert all(names.index(b) < names.index(a) for a, below in MAY_IMPORT.items() for b in below)


def _cycles() -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in (w for w, kind in GRAPH[v].items() if kind != TYPING):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(GRAPH):
        if v not in index:
            connect(v)
    return found


def test_no_import_cycle() -> None:
    # imports that run (a function's included); annotations may name a module of their own layer both ways
    cycles = _cycles()
    assert not cycles, "import cycles:\n" + "\n".join(
        ", ".join(_where(a, b) for a in group for b in sorted(GRAPH[a]) if b in group) for group in cycles)


def test_the_asv_suite_imports_no_tooling() -> None:
    # asv imports the suite in each benchmark's environment: it may need the implementations, never the tooling.
    found = [_where(a, b) for a in sorted(GRAPH) if a.startswith("benchmarks") for b in GRAPH[a]
             if not b.startswith(("benchmarks", "implementations"))]
    assert not found, found


def test_the_import_graph_sees_imports_inside_functions() -> None:
    # today's import inside cite.run is how a cycle hid; the graph must see such an import, and say where it is
    source = """
from typing import TYPE_CHECKING
from tape_vs_trace.results import history
from .. import progress
if TYPE_CHECKING:
    from tape_vs_trace.report.load import Results
def run():
    from tape_vs_trace.report import stats
    import tape_vs_trace.results.host_check
    from tape_vs_trace.results import history
"""
    assert imports("tape_vs_trace.results.run_record", source) == {
        "tape_vs_trace.results.history": MODULE, "tape_vs_trace.progress": MODULE, "tape_vs_trace.report.load": TYPING,
        "tape_vs_trace.report.stats": FUNCTION, "tape_vs_trace.results.host_check": FUNCTION}
    assert GRAPH["tape_vs_trace.cli.handlers"]["tape_vs_trace.report.cite"] == FUNCTION


# Issue 37's size rule for the code: no file over MAX_LINES lines, no function over MAX_FUNCTION_LINES. Each
# exemption is a split not done yet; one that no longer applies fails, so the list only shrinks.
MAX_LINES, MAX_FUNCTION_LINES = 300, 60
OVERSIZED_FILES: set[str] = set()
OVERSIZED_FUNCTIONS: set[str] = set()


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    files, functions = {}, {}
    for path in MODULES.values():
        name = path.relative_to(ROOT).as_posix()
        source = path.read_text()
        files[name] = len(source.splitlines())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[f"{name}::{node.name}"] = max(functions.get(f"{name}::{node.name}", 0),
                                                        node.end_lineno - node.lineno + 1)
    return files, functions


def test_no_file_or_function_is_over_the_size_rule() -> None:
    files, functions = _sizes()
    long_files = {f"{name} ({n} lines)" for name, n in files.items() if n > MAX_LINES and name not in OVERSIZED_FILES}
    long_functions = {f"{name} ({n} lines)" for name, n in functions.items()
                      if n > MAX_FUNCTION_LINES and name not in OVERSIZED_FUNCTIONS}
    over = sorted(long_files | long_functions)
    assert not over, "split these along a seam: " + ", ".join(over)


def test_every_size_exemption_still_applies() -> None:
    files, functions = _sizes()
    stale = {n for n in OVERSIZED_FILES if files.get(n, 0) <= MAX_LINES}
    stale |= {n for n in OVERSIZED_FUNCTIONS if functions.get(n, 0) <= MAX_FUNCTION_LINES}
    assert not stale, f"remove from the size exemptions, they fit now: {sorted(stale)}"


# The files of a results folder that only tape_vs_trace.results.folder opens by name (Deliver 2 of issue 60).
RESULT_FILE_NAMES = ("machine.json", "benchmarks.json", "-existing-venv.json")


def hand_opened(source: str) -> list[str]:
    """The string constants of `source` that name a result file, docstrings left out."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    # a path or a pattern ends with the name and holds no space; a message that names the file is no read of it
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings and " " not in node.value and node.value.endswith(RESULT_FILE_NAMES)]


def test_no_module_outside_the_results_package_opens_a_result_file_by_name() -> None:
    found = {m: names for m, path in MODULES.items() if not m.startswith("tape_vs_trace.results.")
             and (names := hand_opened(path.read_text()))}
    assert not found, f"read these through tape_vs_trace.results.folder.ResultsFolder: {found}"


def test_the_hand_opened_check_sees_a_planted_read() -> None:
    planted = ('"""machine.json in a docstring is fine"""\nimport json\n'
               'x = json.loads((p / "machine.json").read_text())\n')
    assert hand_opened(planted) == ["machine.json"]
    assert hand_opened('f = results / f"{commit[:8]}-existing-venv.json"\n') == ["-existing-venv.json"]
