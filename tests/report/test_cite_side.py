"""tape_vs_trace.report.cite_side: a side table declared by its spec alone (a toy, here) is read by the one reader,
shown by its newest-file rule, refused by the one like rule where its methods differ, and cited by
`tape-vs-trace cite <name>` with no code of its own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tape_vs_trace import cli
from tape_vs_trace.results import side_tables
from tape_vs_trace.results.side_tables import SideTable

TOY = SideTable("toy", "toy results", ("case", "framework", "process", "peak_bytes", "method", "machine", "commit"),
                ("case", "framework"), ("peak_bytes",), ("method",), ("case", "framework"),
                (("peak_bytes", "method"),), newest_by=("case",), repeats="process")
HEAD = "case,framework,process,peak_bytes,method,machine,commit\n"


def _file(results: Path, commit: str, rows: list[str], mtime: float) -> Path:
    path = results / "toy" / f"box-{commit[:8]}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD + "".join(f"{r},box,{commit}\n" for r in rows))
    os.utime(path, (mtime, mtime))
    return path


@pytest.fixture()
def results(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setitem(side_tables.SPECS, TOY.name, TOY)
    # the older file: cases a (like methods, two processes a side) and b (unlike methods); the newer: case a again
    _file(tmp_path, "a" * 40, ["a,torch,0,100,rss", "a,torch,1,100,rss", "a,jax,0,300,rss", "a,jax,1,300,rss",
                               "b,torch,0,100,rss", "b,jax,0,200,xla analysis"], 2e9)
    _file(tmp_path, "b" * 40, ["a,torch,0,100,rss", "a,torch,1,110,rss", "a,jax,0,150,rss", "a,jax,1,160,rss"], 2e9 + 1)
    return tmp_path


def cite(capsys, results: Path, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["cite", "toy", *argv, "--results", str(results)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_spec_alone_reads_and_picks_each_case_from_the_newest_file_that_holds_it(results) -> None:
    found = side_tables.load(TOY, results, print)
    assert [p.name for _, p, _ in found] == ["box-aaaaaaaa.csv", "box-bbbbbbbb.csv"]
    shown = side_tables.newest_rows(TOY, found)["box"]
    assert sorted(set(zip(shown.case, shown.commit.str[0]))) == [("a", "b"), ("b", "a")]


def test_the_like_rule_refuses_unlike_methods(results, capsys) -> None:
    rows = {r["framework"]: r for r in side_tables.newest_rows(TOY, side_tables.load(TOY, results, print))["box"]
            .to_dict("records") if r["case"] == "b"}
    assert side_tables.unlike(TOY, rows["torch"], rows["jax"], "peak_bytes") == "different memory methods"
    rc, out, _ = cite(capsys, results, "case=b")
    assert rc == 0 and "JAX/PyTorch peak_bytes: — (different memory methods)" in out


def test_cite_names_method_machine_commit_and_interval_and_the_like_ratio(results, capsys) -> None:
    rc, out, _ = cite(capsys, results, "case=a")
    assert rc == 0 and out.startswith("toy case=a — PyTorch\n")
    assert "method     method rss; median over each key's processes" in out and "commit     bbbbbbbb" in out
    assert "machine    box" in out and "peak_bytes 0.0001" in out and "95 % interval" in out
    assert "JAX/PyTorch peak_bytes: 1.45 (95 % interval" in out  # 160 / 110: of two processes the upper one
    rc, out, _ = cite(capsys, results, "case=a", "framework=jax", "--format", "json")
    rec = json.loads(out)
    assert rc == 0 and rec["values"]["peak_bytes"]["all"] == [150.0, 160.0] and "ratio" not in rec
    rc, out, _ = cite(capsys, results, "case=a", "commit=aaaa", "framework=jax")  # commit= picks the older file
    assert rc == 0 and "commit     aaaaaaaa" in out


def test_an_ambiguous_or_unknown_query_is_one_line(results, capsys) -> None:
    rc, out, err = cite(capsys, results)
    assert rc == 1 and out == "" and "toy rows left on box: case takes a, b" in err and len(err.splitlines()) == 1
    rc, _, err = cite(capsys, results, "colour=red")
    assert rc == 1 and "toy rows have no column 'colour'; keys: case, framework, commit, machine" in err
