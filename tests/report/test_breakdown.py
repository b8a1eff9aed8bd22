"""The saved-bytes breakdown in the report (tape_vs_trace.report.breakdown): every saved-bytes finding names the ops
that make the difference, one figure per workload, and the report goes on without the file or past a corrupt one."""

from __future__ import annotations

import contextlib
import csv
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from tape_vs_trace import cli
from tape_vs_trace.report import breakdown, findings
from tape_vs_trace.results.rowkey import RowKey
from tape_vs_trace.side import saved
from tests.report.helpers import (
    FIXTURE,
    MACHINE,
    MIB,
    captured_figures,
    messages,
    off_the_page,
    overlapping,
    report_text,
    saved_groups,
    unnamed_axes,
    unrendered,
)


def fixture_commit() -> str:
    [path] = [p for p in (FIXTURE / MACHINE).glob("*.json") if p.name != "machine.json"]
    return json.loads(path.read_text())["commit_hash"]


def record(workload: str, variant: str, framework: str, op: str, nbytes: int, size: str = "64x256x1024") -> dict:
    return {"workload": workload, "size": size, "variant": variant, "dtype": "float32", "framework": framework,
            "op": op, "shape": "", "tensor_dtype": "float32", "nbytes": nbytes, "is_argument": op == "argument",
            "commit": fixture_commit()}


# Non-argument totals are the fixture's asv values: mlp 589,824 B (PyTorch) and 1,114,112 B (JAX); swiglu
# PyTorch 1,114,112 B plain and 851,968 B custom. By hand: JAX keeps 520,192 B more of mul, 262,144 B more of
# dot_general and of logistic, 4,096 B more of broadcast_in_dim (4th: not named); PyTorch 262,144 B more of aten.mm
# and of aten.silu; sum (aten.sum and sum) is the same on both sides and cancels; arguments never count.
HAND_MADE = [
    record("mlp", "plain", "torch", "aten.mm", 262144), record("mlp", "plain", "torch", "aten.silu", 262144),
    record("mlp", "plain", "torch", "aten.sum", 65536), record("mlp", "plain", "torch", "argument", 1048576),
    record("mlp", "plain", "jax", "dot_general", 262144), record("mlp", "plain", "jax", "logistic", 262144),
    record("mlp", "plain", "jax", "mul", 520192), record("mlp", "plain", "jax", "broadcast_in_dim", 4096),
    record("mlp", "plain", "jax", "sum", 65536), record("mlp", "plain", "jax", "argument", 4194304),
    record("swiglu", "plain", "torch", "aten.mm", 524288), record("swiglu", "plain", "torch", "aten.sigmoid", 262144),
    record("swiglu", "plain", "torch", "aten.mul", 327680),
    record("swiglu", "custom", "torch", "aten.mm", 524288), record("swiglu", "custom", "torch", "aten.cat", 327680),
]


def write_breakdown(results: Path, rows: list[dict], name: str | None = None) -> Path:
    folder = results / "saved"
    folder.mkdir(exist_ok=True)
    path = folder / (name or f"{MACHINE}-{fixture_commit()[:8]}.csv")
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=saved.ALL_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def build(results: Path, tmp_path: Path, capsys, render: bool = False) -> tuple[Path, list[str]]:
    """The report and its warnings; each figure an empty file unless `render` (a test that reads the PNGs)."""
    out = tmp_path / "report"
    with contextlib.nullcontext() if render else unrendered():
        assert cli.main(["report", "--results", str(results), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return out, messages(err.splitlines())


def test_difference_names_the_top_ops_of_each_side() -> None:
    torch_ops = pd.Series({"aten.mm": 3 * MIB, "aten.silu": MIB, "aten.sum": MIB})
    jax_ops = pd.Series({"dot_general": 3 * MIB, "logistic": 2 * MIB, "mul": 4 * MIB, "exp": MIB // 2, "sum": MIB,
                         "tanh": MIB // 4})
    text = breakdown.difference("JAX", jax_ops, "PyTorch", torch_ops)
    assert text == ("JAX keeps +4 MiB of mul, +3 MiB of dot_general, +2 MiB of logistic; "
                    "PyTorch keeps +3 MiB of aten.mm, +1 MiB of aten.silu")
    assert breakdown.difference("a", torch_ops, "b", torch_ops) == "the same bytes per op on both sides"


def test_findings_name_the_ops_and_figures_are_drawn(results: Path, tmp_path: Path, capsys) -> None:
    write_breakdown(results, HAND_MADE)
    out, warnings = build(results, tmp_path, capsys, render=True)
    assert not [w for w in warnings if "saved-bytes breakdown" in w]
    text = report_text(out)
    assert ("mlp 64x256x1024 +88.9 % (0.5625 MiB → 1.062 MiB): JAX keeps +0.4961 MiB of mul, +0.25 MiB of "
            "dot_general, +0.25 MiB of logistic; PyTorch keeps +0.25 MiB of aten.mm, +0.25 MiB of aten.silu.") in text
    assert "MiB of sum" not in text and "broadcast_in_dim" not in text and "MiB of argument" not in text
    assert ("PyTorch swiglu 64x256x1024 −23.5 % (1.062 MiB → 0.8125 MiB): custom keeps +0.3125 MiB of aten.cat; "
            "plain keeps +0.3125 MiB of aten.mul, +0.25 MiB of aten.sigmoid.") in text
    # JAX's swiglu is not in the file: its finding stands without ops rather than with invented ones.
    assert "JAX swiglu 64x256x1024 −48.0 % (1.562 MiB → 0.8125 MiB)." in text
    for workload in ("mlp", "swiglu"):
        assert (out / f"saved_{workload}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    recording = text.split(": every table\n", 1)[1].split("\n## recording", 1)[1].split("\n## ", 1)[0]
    # one machine's figures lie beside summary.md, a folder above its page
    assert "![saved_mlp](../saved_mlp.png)" in recording and "![saved_swiglu](../saved_swiglu.png)" in recording


def test_totals_that_are_not_the_asv_values_are_said(results: Path, tmp_path: Path, capsys) -> None:
    rows = [dict(r, nbytes=r["nbytes"] * 2) if r["op"] == "aten.silu" else r for r in HAND_MADE]
    write_breakdown(results, rows)
    out, _ = build(results, tmp_path, capsys)
    # PyTorch's mlp now totals 589,824 + 262,144 B in the file, not the asv value: said, in bytes.
    assert ("totals 851,968 B and 1,114,112 B, not the 589,824 B and 1,114,112 B above"
            in report_text(out))


def test_report_builds_without_the_breakdown(results: Path, tmp_path: Path, capsys) -> None:
    out, warnings = build(results, tmp_path, capsys)
    assert not list(out.glob("saved_*.png"))
    assert not [w for w in warnings if "saved" in w]
    assert "keeps +" not in report_text(out)


def test_a_machine_without_its_breakdown_is_named(results: Path, tmp_path: Path, capsys) -> None:
    write_breakdown(results, HAND_MADE, name="another-machine-01234567.csv")
    out, warnings = build(results, tmp_path, capsys)
    assert [w for w in warnings if "saved-bytes" in w] == [
        f"warning: no saved-bytes breakdown for machine {MACHINE} in {results / 'saved'} (`tape-vs-trace saved-all` "
        "writes it): its saved-bytes findings name no ops"]
    assert "keeps +" not in report_text(out) and not list(out.glob("saved_*.png"))


@pytest.mark.parametrize("content", ["not,a,breakdown\n1,2,3\n", "", "\x00\x01garbage"])
def test_corrupt_breakdown_is_a_warning(results: Path, tmp_path: Path, capsys, content: str) -> None:
    path = write_breakdown(results, [])
    path.write_text(content)
    out, warnings = build(results, tmp_path, capsys)
    assert any("skipped the saved-bytes breakdown" in w and path.name in w for w in warnings)
    assert any(f"no saved-bytes breakdown for machine {MACHINE}" in w for w in warnings)
    assert (out / "summary.md").is_file() and not list(out.glob("saved_*.png"))


def test_figure_rows_merge_the_same_op_under_its_short_name() -> None:
    # PyTorch's aten.mul and JAX's mul are one op: one bar name for both; aten.addmm (PyTorch only) keeps its name
    sel = pd.DataFrame([
        {"workload": "mlp", "variant": "plain", "framework": "torch", "op": "aten.mul", "nbytes": 100,
         "is_argument": False},
        {"workload": "mlp", "variant": "plain", "framework": "torch", "op": "aten.addmm", "nbytes": 40,
         "is_argument": False},
        {"workload": "mlp", "variant": "plain", "framework": "jax", "op": "mul", "nbytes": 60, "is_argument": False},
        {"workload": "mlp", "variant": "plain", "framework": "jax", "op": "x", "nbytes": 8, "is_argument": True},
    ])
    assert breakdown._figure_rows(sel, "mlp") == [
        {"case": "autodiff backward", "framework": "torch", "op": "mul", "bytes": 100, "is_argument": False},
        {"case": "autodiff backward", "framework": "torch", "op": "aten.addmm", "bytes": 40, "is_argument": False},
        {"case": "autodiff backward", "framework": "jax", "op": "mul", "bytes": 60, "is_argument": False},
    ]


def one_row_breakdown(tmp_path: Path, nbytes: str, is_argument: str) -> Path:
    path = tmp_path / "m-abcdef12.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=saved.ALL_FIELDS)
        writer.writeheader()
        writer.writerow(dict(workload="mlp", size="tiny", variant="plain", dtype="float32", framework="torch",
                             op="aten.mm", shape="(0, 4)", tensor_dtype="float32", nbytes=nbytes,
                             is_argument=is_argument, commit="abcdef12"))
    return path


def test_a_breakdown_row_may_hold_zero_bytes_but_not_a_bad_flag(tmp_path) -> None:
    table = breakdown._read(one_row_breakdown(tmp_path, "0", "False"))  # an empty tensor is saved, with 0 bytes
    assert table.nbytes.tolist() == [0] and table.is_argument.tolist() == [False]
    with pytest.raises(ValueError, match="^nbytes is not a byte count on every row$"):
        breakdown._read(one_row_breakdown(tmp_path, "-1", "False"))
    with pytest.raises(ValueError, match="^is_argument is not True/False on every row$"):
        breakdown._read(one_row_breakdown(tmp_path, "8", "yes"))


def transformer_breakdown(tmp_path: Path, with_programs: bool) -> pd.DataFrame:
    """A transformer breakdown as saved-all writes it: with the program column (both frameworks in the Python loop,
    every program), or from before it (each framework's own default loop: JAX's lax.scan, PyTorch's Python loop)."""
    programs = saved.programs("transformer") if with_programs else [""]
    rows = [record("transformer", "plain", fw, op, nbytes * (1 + k), size="L4") | {"program": program}
            for k, program in enumerate(programs)
            for fw, op, nbytes in (("torch", "aten.mm", 4 * MIB), ("jax", "dot_general", 5 * MIB))]
    fields = saved.ALL_FIELDS if with_programs else tuple(f for f in saved.ALL_FIELDS if f != "program")
    path = tmp_path / "m-abcdef12.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return breakdown._read(path)


def test_a_jax_scan_is_never_beside_a_pytorch_loop(tmp_path: Path, monkeypatch) -> None:
    figs = captured_figures(monkeypatch)
    assert breakdown.draw(transformer_breakdown(tmp_path, with_programs=False), tmp_path) == ["saved_transformer.png"]
    [ax] = figs["saved_transformer.png"].axes
    # two groups of one bar each, each named by its loop's form; the empty place says it was not measured
    assert saved_groups(ax) == {"autodiff backward\nunrolled loop": ["PyTorch"],
                                "autodiff backward\nscan loop": ["JAX"]}
    assert sorted(t.get_text() for t in ax.texts) == ["JAX: not measured", "PyTorch: not measured"]


def test_like_rows_stand_side_by_side_named_by_loop_and_program(tmp_path: Path, monkeypatch) -> None:
    figs = captured_figures(monkeypatch)
    breakdown.draw(transformer_breakdown(tmp_path, with_programs=True), tmp_path)
    [ax] = figs["saved_transformer.png"].axes
    assert saved_groups(ax) == {f"autodiff backward\nunrolled loop\n{style} style\n{attention} attention":
                                ["PyTorch", "JAX"] for style in ("default", "matched")
                                for attention in ("written", "fused")}
    assert not ax.texts


def test_saved_figures_read_without_overlaps_and_name_their_metric(results: Path, tmp_path: Path,
                                                                    monkeypatch) -> None:
    write_breakdown(results, HAND_MADE)
    figs = captured_figures(monkeypatch)
    assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "report")]) == 0
    # and the most crowded case: four programs of both frameworks, under the report's two-line title
    breakdown.draw(transformer_breakdown(tmp_path, with_programs=True), tmp_path)
    for name in ("saved_mlp.png", "saved_swiglu.png", "saved_transformer.png"):
        fig = figs[name]
        assert not overlapping(fig) and not off_the_page(fig) and not unnamed_axes(fig), name


def test_a_breakdown_of_jaxs_scan_names_no_ops_for_a_loop_row(tmp_path: Path) -> None:
    # A file from before the program column ran JAX's lax.scan: its ops would explain another program than the
    # suite's loop rows, so the finding stands without ops; with the program column (the loop), it names them.
    def row(framework: str, value: float) -> dict:
        params = {"framework": framework, "workload": "transformer", "size": "L4", "formulation": "unrolled"}
        return {"variant": "unrolled", "dtype": "float32", "framework": framework, "program": "", "value": value,
                "params": json.dumps(params)}

    t, j = row("torch", 4 * MIB), row("jax", 5 * MIB)
    old = transformer_breakdown(tmp_path, with_programs=False)
    assert findings._ops(old, "transformer", "L4", t, j, "PyTorch", "JAX") == ""
    new = transformer_breakdown(tmp_path, with_programs=True)
    j_new = j | {"program": "default/written"}
    t_new = t | {"program": "default/written"}
    assert findings._ops(new, "transformer", "L4", t_new, j_new, "PyTorch", "JAX").startswith(": JAX keeps +")


def test_the_breakdown_is_rows_of_summary_csv_keyed_like_every_other(results: Path, tmp_path: Path, capsys) -> None:
    path = write_breakdown(results, HAND_MADE)
    out, _ = build(results, tmp_path, capsys)
    table = pd.read_csv(out / "summary.csv", dtype=str, keep_default_na=False)
    mine = table[table.benchmark == breakdown.BENCHMARK].to_dict("records")
    # a row per case, framework and producing op: mlp 3 PyTorch and 5 JAX ops, swiglu 3 plain and 2 custom
    assert len(mine) == 13 and "argument" not in {json.loads(r["params"])["op"] for r in mine}
    keys = {RowKey.of(r): r for r in mine}
    assert len(keys) == len(mine)
    torch = RowKey(breakdown.BENCHMARK, breakdown.METRIC, "torch", "mlp", "64x256x1024", "float32", None, "cpu",
                   (("op", "aten.mm"), ("program", ""), ("variant", "plain")))
    row = keys[torch]
    assert (float(row["value"]), row["unit"], row["basis"], row["sampled"], row["comparable"]) == (
        262144, "bytes", "exact", "False", "False")
    assert (row["pillar"], row["status"], row["machine"], row["file"], row["date"] != "") == (
        "saved", "ok", MACHINE, f"saved/{path.name}", True)
    # the frameworks' rows of one case differ in the framework and the op alone
    jax = RowKey.of(row | {"framework": "jax", "params": row["params"].replace("aten.mm", "dot_general")})
    assert jax in keys and torch.differing(jax) == {"framework", "op"}
    # each case's op rows sum to the breakdown's non-argument total (mlp: the fixture's asv values)
    sums: Counter = Counter()
    for r in mine:
        p = json.loads(r["params"])
        sums[p["workload"], p["variant"], r["framework"]] += int(float(r["value"]))
    data = breakdown._read(path)
    totals = data[~data.is_argument].groupby(["workload", "variant", "framework"]).nbytes.sum()
    assert sums == {k: int(v) for k, v in totals.items()}
    assert (sums["mlp", "plain", "torch"], sums["mlp", "plain", "jax"]) == (589824, 1114112)
    # no table or finding of the report reads them: they are summary.csv's alone
    text = report_text(out)
    assert breakdown.METRIC not in text and "one producing op" not in text


def test_breakdown_rows_name_the_loop_they_ran(tmp_path: Path) -> None:
    # a file from before the program column ran JAX's lax.scan: its rows are not like PyTorch's loop rows
    old = breakdown.tidy("m", transformer_breakdown(tmp_path, with_programs=False))
    t, j = (RowKey.of(r) for r in old.to_dict("records"))
    assert t.differing(j) == {"framework", "op", "formulation"}
    new = breakdown.tidy("m", transformer_breakdown(tmp_path, with_programs=True))
    assert {dict(RowKey.of(r).axes)["formulation"] for r in new.to_dict("records")} == {"unrolled"}
    assert len(new) == 2 * len(saved.programs("transformer"))
    assert (new.file == f"saved/m-{fixture_commit()[:8]}.csv.gz").all()  # saved-all's name where no path is known
