"""A result row's key and the one rule for which two rows may be divided (tape_vs_trace.results.rowkey)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from implementations import frameworks
from tape_vs_trace.results import rowkey
from tape_vs_trace.results.rowkey import RowKey

PARAMS = {"workload": "transformer", "size": "2x4x64x128", "mode": "compiled", "formulation": "scan",
          "style": "default", "attention": "written", "dtype": "float32", "precision": "highest", "device": "cpu"}


def row(framework: str = "torch", **change) -> dict:
    """A row of the report's table (report.rows) as a dict, its parameters naming its framework."""
    params = {"framework": framework, **PARAMS, **change.pop("params", {})}
    return {"machine": "m", "commit": "c", "benchmark": "recording.GradStep_transformer.time_step",
            "benchmark_version": "5", "metric": "time_step", "framework": framework, "comparable": True,
            "memory_method": "", "params": json.dumps(params, separators=(",", ":"))} | change


def test_the_key_of_a_row_names_each_registry_field() -> None:
    key = RowKey.of(row("jax"))
    assert (key.pillar, key.family, key.metric, key.framework) == ("recording", "GradStep_transformer", "time_step",
                                                                   "jax")
    assert (key.workload, key.size, key.dtype, key.precision, key.device) == ("transformer", "2x4x64x128", "float32",
                                                                               "highest", "cpu")
    assert key.axes == (("attention", "written"), ("formulation", "scan"), ("mode", "compiled"),
                        ("style", "default"))
    assert key.params() == dict(sorted(PARAMS.items()))  # every parameter but the framework
    # a benchmark without a parameter has none in its key (harness.Overhead has no workload, size or dtype)
    bare = RowKey.of({"benchmark": "harness.Overhead.time_call", "metric": "time_call", "framework": "jax",
                      "params": '{"framework":"jax","path":"jit","device":"cpu"}'})
    assert (bare.workload, bare.size, bare.device, bare.axes) == (None, None, "cpu", (("path", "jit"),))


def test_a_key_is_a_value() -> None:
    assert RowKey.of(row()) == RowKey.of(row()) and hash(RowKey.of(row())) == hash(RowKey.of(row()))
    # the order in which a results file wrote the parameters does not make another row
    reordered = dict(reversed(list(json.loads(row()["params"]).items())))
    assert RowKey.of(row() | {"params": json.dumps(reordered)}) == RowKey.of(row())
    assert RowKey.of(row()).without("framework") == RowKey.of(row("jax")).without("framework")
    assert RowKey.of(row()).without("mode").axis("mode") == ""


def test_like_divides_rows_that_differ_in_the_framework_alone() -> None:
    assert rowkey.like(row("torch"), row("jax")) is None
    # rows whose parameters do not name the framework: the row's column does
    t, j = row("torch"), row("jax")
    for r in (t, j):
        r["params"] = json.dumps({k: v for k, v in json.loads(r["params"]).items() if k != "framework"})
    assert rowkey.like(t, j) is None


@pytest.mark.parametrize("change", [
    {"benchmark": "recording.GradStep_mlp.time_step"},  # another family
    {"benchmark": "inference.GradStep_transformer.time_step"},  # another pillar
    {"metric": "time_compile"},
    {"params": {"workload": "mlp"}},
    {"params": {"size": "4x4x64x128"}},
    {"params": {"mode": "eager"}},  # an axis
    {"params": {"style": "matched"}},  # the program's axes
    {"params": {"attention": "fused"}},
    {"params": {"remat": "every2"}},  # an axis one row has and the other has not
    {"params": {"dtype": "bfloat16"}},
    {"params": {"precision": "high"}},
    {"params": {"device": "cuda"}},
    {"machine": "other"},
    {"commit": "other"},
], ids=lambda c: next(iter(c.get("params", c))))
def test_like_refuses_rows_that_differ_in(change: dict) -> None:
    assert rowkey.like(row("torch"), row("jax", **change)) == "not like rows"


def test_like_refuses_rows_of_one_framework() -> None:
    assert rowkey.like(row("torch"), row("torch")) == "not like rows"


@pytest.mark.parametrize(("change", "reason"), [
    ({"benchmark_version": "6"}, "not like rows"),  # the benchmark's source changed: it measured another program
    ({"comparable": False}, "counts different things"),
    ({"memory_method": "jax compiled.memory_analysis"}, "different memory methods"),
])
def test_like_refuses_runs_whose_properties_differ(change: dict, reason: str) -> None:
    assert rowkey.unlike_runs(row("torch"), row("jax")) is None
    assert rowkey.like(row("torch"), row("jax", **change)) == reason
    assert rowkey.unlike_runs(row("torch"), row("jax", **change)) == reason


def test_like_refuses_peaks_of_unlike_modes_and_formulations() -> None:
    cuda = {fw: frameworks.memory_method(fw, "cuda") for fw in frameworks.NAMES}
    peak = {"benchmark": "recording.GradStep_transformer.track_peak_bytes", "metric": "track_peak_bytes"}
    t, j = row("torch", **peak, memory_method=cuda["torch"]), row("jax", **peak, memory_method=cuda["jax"])
    assert rowkey.like(t, j) == "unlike modes: PyTorch eager, JAX compiled"
    lstm = {"benchmark": "remat.RematCost_lstm.track_peak_bytes"}
    assert rowkey.like(row("torch", **lstm), row("jax", **lstm)) == "scan against unrolled"


def test_the_key_of_a_side_measurement_names_its_columns() -> None:
    columns = ("framework", "workload", "size", "dtype", "form", "ranks", "device")
    t = {"framework": "torch", "workload": "mlp", "size": "64x256x1024", "dtype": "float32", "form": "ddp",
         "ranks": 2, "device": "cpu", "time_s": 1.0}
    key = RowKey.of_columns(t, columns, "distributed")
    assert (key.benchmark, key.framework, key.workload, key.dtype, key.device) == ("distributed", "torch", "mlp",
                                                                                     "float32", "cpu")
    assert key.axes == (("form", "ddp"), ("ranks", 2))  # a value the row does not name (time_s) is no part of it
    assert key.differing(RowKey.of_columns(t | {"framework": "jax", "ranks": 4}, columns, "distributed")) == {
        "framework", "ranks"}


def test_two_side_rows_that_both_lack_a_named_value_are_not_alike_in_it() -> None:
    # an older CSV without a dtype column, read beside a newer one: its empty cells are NaN, which match nothing
    columns = ("framework", "workload", "size", "dtype", "form", "ranks", "device")
    t = {"framework": "torch", "workload": "mlp", "size": "64x256x1024", "dtype": float("nan"), "form": "ddp",
         "ranks": 2, "device": "cpu"}
    j = t | {"framework": "jax", "dtype": float("nan")}
    assert RowKey.of_columns(t, columns, "distributed").differing(RowKey.of_columns(j, columns, "distributed")) == {
        "framework", "dtype"}


def test_run_properties_name_what_two_machines_runs_must_share() -> None:
    t, j = row("torch", basis="processes"), row("jax", basis="processes", memory_method="")
    assert rowkey.run_properties((t, j)) == {"benchmark version": "5", "measurement method": "processes"}
    assert rowkey.run_properties((t, j), "one process per round (record)")["runner layout"] == \
        "one process per round (record)"
    # another version or method on one side is a property of its own, so two such machines do not meet
    assert rowkey.run_properties((t, j | {"benchmark_version": "6"}))["benchmark version"] == "5 / 6"
    assert rowkey.run_properties((t, j | {"basis": "one process"}))["measurement method"] == \
        "processes / one process"
    assert set(rowkey.run_properties((t, j), "x")) == set(rowkey.RUN_PROPERTIES)


def _columns(node: ast.AST, loop: str | None = None) -> bool:
    """Whether `node` reads one column of a row: r["x"], r.get("x"), r.x, or r[k] / r.get(k) over `loop`'s names."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        node = node.args[0]

    def named(a: ast.AST) -> bool:
        return isinstance(a, ast.Constant) and isinstance(a.value, str) or isinstance(a, ast.Name) and a.id == loop

    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return named(node.slice)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        return isinstance(node.func.value, ast.Name) and named(node.args[0])
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id not in ("self", "cls")


def _generated(node: ast.AST) -> bool:
    """(r[k] for k in KEY): a row's values over a tuple of column names."""
    return (isinstance(node, ast.GeneratorExp) and len(node.generators) == 1
            and isinstance(node.generators[0].target, ast.Name) and _columns(node.elt, node.generators[0].target.id))


def _tuple_keys(tree: ast.AST) -> list[ast.AST]:
    """The row keys built as tuples of columns: tuple(r[k] for k in KEY) anywhere; as a mapping's key, a tuple of
    four or more columns, or one holding parameters as JSON text; a function *key that writes JSON text."""
    found, keys = [], []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "tuple" and n.args:
            found += [n] if _generated(n.args[0]) else []
        keys += [n.key] if isinstance(n, ast.DictComp) else [k for k in n.keys if k] if isinstance(n, ast.Dict) else []
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "setdefault"):
            keys += n.args[:1]
        if isinstance(n, ast.FunctionDef) and n.name.endswith("key") and "json.dumps" in ast.unparse(n):
            found.append(n)
    for k in keys:
        if not isinstance(k, ast.Tuple) or "RowKey" in ast.unparse(k):
            continue
        cols = sum(_columns(e) or isinstance(e, ast.Starred) and _generated(e.value) for e in k.elts)
        found += [k] if cols >= 4 or "json.dumps" in ast.unparse(k) else []
    return found


def test_no_module_builds_a_row_key_as_a_tuple_of_columns() -> None:
    # a row's identity is RowKey (like rows, groups by key without the framework): a tuple of columns drifts from it
    root = Path(__file__).resolve().parents[2]
    found = [f"{p.relative_to(root)}:{n.lineno}: {ast.unparse(n).splitlines()[0][:80]}"
             for p in sorted([*root.glob("tape_vs_trace/**/*.py"), *root.glob("scripts/**/*.py")])
             for n in _tuple_keys(ast.parse(p.read_text()))]
    assert found == []


def test_the_check_finds_the_tuple_keys_it_names() -> None:
    code = ("KEY = ('a', 'b')\nx = {tuple(str(r[k]) for k in KEY): r for r in rows}\n"
            "y = {(r.a, r.b, r.c, r.d): r for r in rows}\nz.setdefault((r['b'], json.dumps(p)), {})\n"
            "def _key(p):\n    return json.dumps(p)\nok = {RowKey.of(r): r for r in rows}\n"
            "fine = {(r['form'], r['mode']): r for r in rows}\n")
    assert sorted(n.lineno for n in _tuple_keys(ast.parse(code))) == [2, 3, 4, 5]
