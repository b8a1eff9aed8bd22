"""The paired results in the report (results/paired/<machine>-<commit8>.csv, written by `tape-vs-trace paired`): a
hand-made CSV of a few points beside the asv fixture, and the findings, tables, figures and summary.csv rows the
report makes of it, checked against numbers worked out by hand."""

from __future__ import annotations

import csv
import json
import math
import shutil
import struct
from pathlib import Path

import pandas as pd
import pytest

from tape_vs_trace import cli, report
from tape_vs_trace.paired import FIELDS
from tape_vs_trace.report import curve, fmt, paired

FIXTURE = Path(__file__).parent / "data" / "asv_fixture"
MACHINE = "cpu-amd-epyc-2c"
COMMIT = "93acfd557dc6d3533c8d26b62e737c3b1f3b0e8b"  # the fixture's commit
MIB = 2 ** 20
SIZE = "L4-B4-S64-D128"
NO_PEAK = "not measured: the live-storage tracker cannot see inside Inductor's kernels"


def point(experiment: str, group: str, framework: str, mode: str, formulation: str, name: str, medians: list[float],
          ratio: tuple[float, float, float], saved: float | str = "", peak: float | str = "", baseline: str = "plain",
          workload: str = "transformer", size: str = SIZE, budget: str = "") -> dict:
    """One row of the paired CSV; medians in ms, memory in MiB; the time is the geometric mean of the medians."""
    time = math.exp(sum(math.log(m) for m in medians) / len(medians)) * 1e-3
    return {f: "" for f in FIELDS} | {
        "experiment": experiment, "group": group, "framework": framework, "workload": workload, "size": size,
        "mode": mode, "formulation": formulation, "point": name, "variant": name, "budget": budget,
        "baseline": baseline, "time_s": time, "time_ci_low": time * 0.9, "time_ci_high": time * 1.1,
        "ratio": ratio[0], "ratio_ci_low": ratio[1], "ratio_ci_high": ratio[2], "processes": len(medians),
        "passes": 10, "process_medians": ";".join(f"{m * 1e-3:.6g}" for m in medians),
        "saved_bytes": saved if saved == "" else saved * MIB, "flops": 1e9 if group == "remat" else "",
        "peak_bytes": peak if peak == "" else peak * MIB, "cost_method": "eager probes" if mode == "eager" else
        f"{framework} compiled", "peak_method": NO_PEAK if peak == "" else f"{framework} method", "device": "cpu",
        "commit": COMMIT, "machine": MACHINE}


def curve_rows() -> list[dict]:
    one = (1.0, 1.0, 1.0)
    te = ("remat torch eager", "remat", "torch", "eager", "unrolled")
    tc = ("remat torch compiled", "remat", "torch", "compiled", "unrolled")
    ju = ("remat jax compiled unrolled", "remat", "jax", "compiled", "unrolled")
    js = ("remat jax compiled scan", "remat", "jax", "compiled", "scan")
    return [
        # PyTorch eager: remat_every2 is slower and larger than remat_full, so not Pareto-optimal; the rest are.
        point(*te, "plain", [10, 10, 10], one, saved=8, peak=12),
        point(*te, "remat_dots", [11, 11, 11], (1.05, 1.04, 1.08), saved=5, peak=9),
        point(*te, "remat_full", [12, 12, 12], (1.2, 1.15, 1.24), saved=2, peak=6),
        point(*te, "remat_every2", [14, 14, 14], (1.3, 1.2, 1.4), saved=3, peak=7),
        # compiled PyTorch: no CPU peak; saved bytes rise from budget 0.5 to 0.25
        point(*tc, "plain", [9, 9, 9], one, saved=8),
        point(*tc, "budget 0.5", [9, 9, 9], (1.0, 0.98, 1.02), saved=6, budget="0.5"),
        point(*tc, "budget 0.25", [9, 9, 9], (1.0, 0.98, 1.02), saved=7, budget="0.25"),
        point(*tc, "budget 0.1", [10, 10, 10], (1.1, 1.05, 1.15), saved=4, budget="0.1"),
        point(*tc, "budget 0", [12, 12, 12], (1.3, 1.25, 1.35), saved=3, budget="0"),
        point(*ju, "plain", [17, 18, 19], one, saved=9, peak=20),
        point(*js, "plain", [17, 18, 19], one, saved=9, peak=20),
    ]


def paired_rows() -> list[dict]:
    hooks = ("hooks against none mlp torch eager", "paired", "torch", "eager", "plain")
    inference = ("inference_mode against no_grad mlp torch forward", "paired", "torch", "forward", "plain")
    custom = ("custom against autodiff swiglu jax eager", "paired", "jax", "eager", "plain")
    return [
        point(*hooks, "no hooks", [1, 1, 1], (1.0, 1.0, 1.0), baseline="no hooks", workload="mlp", size="64x256x1024"),
        point(*hooks, "hooks", [1.2, 1.2, 1.2], (1.2, 1.1, 1.3), baseline="no hooks", workload="mlp",
              size="64x256x1024"),
        point(*inference, "no_grad", [1, 1, 1], (1.0, 1.0, 1.0), baseline="no_grad", workload="mlp",
              size="64x256x1024"),
        point(*inference, "inference_mode", [1, 1, 1], (1.02, 0.95, 1.1), baseline="no_grad", workload="mlp",
              size="64x256x1024"),
        point(*custom, "autodiff", [2, 2, 2], (1.0, 1.0, 1.0), baseline="autodiff", workload="swiglu",
              size="64x256x1024"),
        point(*custom, "custom", [1.6, 1.6, 1.6], (0.8, 0.7, 0.9), baseline="autodiff", workload="swiglu",
              size="64x256x1024"),
    ]


def write_csv(folder: Path, rows: list[dict], name: str = f"{MACHINE}-{COMMIT[:8]}.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / name).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return folder / name


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list[str]]:
    results = tmp_path_factory.mktemp("paired") / "results"
    shutil.copytree(FIXTURE, results)
    write_csv(results / "paired", curve_rows() + paired_rows())
    warnings: list[str] = []
    report.write_report(results, results.parent / "report", warnings.append)
    return results.parent / "report", warnings


def test_paired_experiments_read_as_differences_only_outside_the_interval(built) -> None:
    out, warnings = built
    text = (out / "summary.md").read_text()
    assert not [w for w in warnings if "paired" in w]
    assert "- PyTorch mlp 64x256x1024 eager: hooks costs 20.0 % more time than no hooks (95 % interval " \
           "10.0–30.0 %) (1.2 ms against 1 ms)." in text
    assert "- JAX swiglu 64x256x1024 eager: custom costs 20.0 % less time than autodiff (95 % interval 10.0–30.0 %)" \
        in text
    assert "- PyTorch mlp 64x256x1024 forward: inference_mode against no_grad: no difference measurable on this " \
           "machine (ratio 1.02, 95 % interval 0.95–1.1)" in text


def test_remat_choices_by_hand(built) -> None:
    text = (built[0] / "summary.md").read_text()
    # fastest: plain (1); within 10 %: plain and remat_dots (1.05), least peak remat_dots (9 MiB). At most 25 %
    # slower by the upper bound: plain (1), remat_dots (1.08), remat_full (1.24), not remat_every2 (1.4): remat_full.
    [line] = [x for x in text.splitlines() if x.startswith(f"- PyTorch eager unrolled {SIZE} (memory: peak memory)")]
    assert "the least memory is **remat_dots**: 9 MiB, 1.05× [1.04–1.08] plain" in line
    assert "slower than plain (upper 95 % bound) is **remat_full**: 6 MiB, 1.2× [1.15–1.24] plain" in line
    # compiled PyTorch has no CPU peak: judged by saved bytes. Within 10 % of 1.0: plain, 0.5, 0.25 and 0.1 (1.1);
    # least saved: budget 0.1 (4 MiB). Upper bound at most 1.25: budget 0.1 (1.15), not budget 0 (1.35).
    [line] = [x for x in text.splitlines()
              if x.startswith(f"- PyTorch compiled unrolled {SIZE} (memory: saved for backward)")]
    assert "the least memory is **budget 0.1**: 4 MiB" in line and "plain (upper 95 % bound) is **budget 0.1**" in line


def test_budgets_that_do_not_fall_monotonically_are_named(built) -> None:
    text = (built[0] / "summary.md").read_text()
    assert f"- PyTorch compiled unrolled {SIZE}: saved for backward does **not** fall monotonically with the budget " \
           "(MiB by budget: 1: 8, 0.5: 6, 0.25: 7, 0.1: 4, 0: 3; rises 0.5 → 0.25)." in text
    assert "peak memory does" not in text, "compiled PyTorch has no CPU peak: no sentence about one"
    rows = pd.DataFrame(curve_rows())
    for c in paired.NUMBERS:
        rows[c] = pd.to_numeric(rows[c].replace("", math.nan))
    falling = rows[rows.experiment == "remat torch compiled"].copy()
    falling.loc[falling.point == "budget 0.25", "saved_bytes"] = 5 * MIB
    [line] = paired.budgets(("torch", "compiled", "unrolled", SIZE), falling)
    assert "falls monotonically with the budget, from 8 MiB (budget 1) to 3 MiB (budget 0)" in line
    flat = falling.assign(saved_bytes=8 * MIB)
    assert "does not change with the budget (8 MiB" in paired.budgets(("torch", "compiled", "unrolled", SIZE), flat)[0]


def test_pareto_marks_the_points_nothing_beats() -> None:
    # plain (10, 12), dots (11, 9), full (12, 6), every2 (14, 7): full is faster and smaller than every2
    assert paired.pareto([10, 11, 12, 14], [12, 9, 6, 7]) == [True, True, True, False]
    # a tie is not beaten: neither point is both faster and smaller than the other
    assert paired.pareto([10, 10], [5, 5]) == [True, True]
    assert paired.pareto([10, 9], [5, 4]) == [False, True]


def test_jax_against_pytorch_only_between_like_rows(built) -> None:
    rows = {(r["framework"], r["formulation"], r["point"], r["mode"]): r for r in curve_rows()}
    torch = rows[("torch", "unrolled", "plain", "compiled")]
    for r in (torch, rows[("jax", "unrolled", "plain", "compiled")], rows[("jax", "scan", "plain", "compiled")]):
        r.update(time_s=float(r["time_s"]), saved_bytes=float(r["saved_bytes"]))
    scan = paired.across(torch, rows[("jax", "scan", "plain", "compiled")])
    assert not scan.formed and scan.reason == "scan against loop"
    # logs of 17, 18, 19 ms against 9 ms thrice: mean difference 0.69212, JAX's var/n 0.0010312 (PyTorch's 0),
    # Welch dof 2, t = 4.3027, half-width 0.13817: exp(0.69212 -+ 0.13817) = [1.740, 2.294]
    c = paired.across(torch, rows[("jax", "unrolled", "plain", "compiled")])
    assert math.isclose(c.ratio, 1.998, rel_tol=1e-3)
    assert math.isclose(c.low, 1.740, rel_tol=1e-3) and math.isclose(c.high, 2.294, rel_tol=1e-3)
    assert paired.across(torch, rows[("jax", "unrolled", "plain", "compiled")], "saved_bytes").reason == \
        "different memory methods", "compiled costs are taken by each framework's own method"
    assert paired.across(torch, rows[("torch", "unrolled", "plain", "eager")]).reason == "not like rows"
    text = (built[0] / "summary.md").read_text()
    assert f"| {SIZE} | compiled | unrolled / scan | plain | 9 | 17.98 | — (scan against loop) |" in text
    assert f"| {SIZE} | compiled | unrolled / unrolled | plain | 9 | 17.98 | 2× [1.74–2.29] |" in text


def test_curve_table_lists_every_point(built) -> None:
    text = (built[0] / "summary.md").read_text()
    table = [x for x in text.splitlines() if x.startswith("| PyTorch |") or x.startswith("| JAX |")]
    assert len(table) == len(curve_rows())
    assert f"| PyTorch | eager | unrolled | {SIZE} | remat_full | 12 [10.8–13.2] | 1.2× [1.15–1.24] | 2 | 6 | 1 |" \
        in table
    assert f"| PyTorch | compiled | unrolled | {SIZE} | budget 0.5 | 9 [8.1–9.9] | {fmt.NO_DIFFERENCE} (1×, 95 % " \
           "interval 0.98–1.02) | 6 | n/a (the live-storage tracker cannot see inside Inductor's kernels) | 1 |" \
        in table


def test_summary_csv_has_the_paired_rows(built) -> None:
    table = pd.read_csv(built[0] / "summary.csv", keep_default_na=False)
    rows = table[table.group != ""]
    assert set(report.COLUMNS) <= set(table.columns)
    # a time row per point, a saved and a flops row per remat point, a peak row where measured
    peaks = sum(r["peak_bytes"] != "" for r in curve_rows())
    assert len(rows) == len(curve_rows()) * 3 + len(paired_rows()) + peaks
    [hooks] = rows[(rows.point == "hooks") & (rows.metric == "time_step")].itertuples()
    assert tuple(map(float, (hooks.ratio, hooks.ratio_ci_low, hooks.ratio_ci_high))) == (1.2, 1.1, 1.3)
    assert float(hooks.value) == pytest.approx(1.2e-3) and json.loads(hooks.process_medians) == [1.2e-3] * 3
    [full] = rows[(rows.point == "remat_full") & (rows.metric == "track_peak_bytes")].itertuples()
    assert float(full.value) == 6 * MIB and full.memory_method == "torch method"
    assert full.variant == "remat_full/eager/unrolled"
    assert (table[table.group == ""].benchmark.str.startswith(("recording.", "remat.", "custom_backward.",
                                                               "inference.", "engine.", "harness."))).all()


def test_curve_figure_written(built) -> None:
    data = (built[0] / f"remat_curve_{SIZE}.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 900 and height >= 700
    assert f"](remat_curve_{SIZE}.png)" in (built[0] / "summary.md").read_text()


def test_curve_figure_rings_the_pareto_points_and_labels_every_point(tmp_path: Path, monkeypatch) -> None:
    table = pd.DataFrame(curve_rows())
    for c in paired.NUMBERS:
        table[c] = pd.to_numeric(table[c].replace("", math.nan))
    seen = {}
    save = __import__("matplotlib.figure", fromlist=["Figure"]).Figure.savefig

    def check(fig, path, *args, **kwargs):
        saved = save(fig, path, *args, **kwargs)
        # panels row by row (eager, compiled), peak on the left, saved bytes on the right
        left, right = fig.axes[0::2], fig.axes[1::2]
        seen["labels"] = (sorted(t.get_text() for ax in left for t in ax.texts),
                          sorted(t.get_text() for ax in right for t in ax.texts))
        # rings: the scatter collections; offsets in (MiB, ms)
        seen["rings"] = sorted(tuple(p) for c in left[0].collections if hasattr(c, "get_sizes")
                               and len(c.get_sizes()) and c.get_sizes()[0] > 100 for p in c.get_offsets())
        seen["fonts"] = min(t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize")
                                                                  and hasattr(a, "get_text") and a.get_text()))
        seen["width"] = fig.get_figwidth()
        return saved

    monkeypatch.setattr("matplotlib.figure.Figure.savefig", check)
    assert curve.draw(table, {}, tmp_path) == [f"remat_curve_{SIZE}.png"]
    left, right = seen["labels"]
    # left: the curves with peaks (PyTorch eager, both JAX); right: every curve, budgets included
    assert left == sorted(["plain", "dots", "full", "every2", "plain", "plain"])
    assert right == sorted(left + ["plain", "b=0.5", "b=0.25", "b=0.1", "b=0"])
    # PyTorch eager peaks: plain (12 MiB, 10 ms), dots (9, 11), full (6, 12) ringed; every2 (7, 14) not
    assert (6.0, pytest.approx(12.0)) in seen["rings"] and all(r[0] != 7.0 for r in seen["rings"])
    assert seen["fonts"] >= 9 and seen["width"] <= 7.5


def test_corrupt_csv_is_one_warning_and_the_report_is_built(tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    rows = [{k: v for k, v in r.items() if k != "ratio_ci_high"} for r in paired_rows()]
    write_csv(results / "paired", rows)
    assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("warning: skipped the paired results") and "ratio_ci_high" in err[0]
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "## recording" in text and "tape-vs-trace paired" not in text
    (results / "paired" / f"{MACHINE}-{COMMIT[:8]}.csv").write_bytes(b"\xff\xfe\x00garbage")
    assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("warning: skipped the paired results") and "Traceback" not in err[0]


def test_the_file_of_the_shown_commit_is_chosen(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    other = [r | {"commit": "f" * 40} for r in paired_rows()]
    write_csv(results / "paired", paired_rows())
    newer = write_csv(results / "paired", other, f"{MACHINE}-ffffffff.csv")
    newer.touch()
    warnings: list[str] = []
    table = report.load_results(results, warnings.append).table
    assert paired.load(results, table, warnings.append)[MACHINE].commit.iloc[0] == COMMIT and not warnings
    (results / "paired" / f"{MACHINE}-{COMMIT[:8]}.csv").unlink()
    assert paired.load(results, table, warnings.append)[MACHINE].commit.iloc[0] == "f" * 40
    assert len(warnings) == 1 and "of commit ffffffff, the asv results of 93acfd55" in warnings[0]
    shutil.rmtree(results / "paired")
    assert paired.load(results, table, warnings.append) == {}


def test_readme_block_lists_the_paired_findings(tmp_path: Path) -> None:
    # The README's results block is what readers see first: the within-framework differences belong there.
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results)
    write_csv(results / "paired", curve_rows() + paired_rows())
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- report:start -->\n<!-- report:end -->\n")
    assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "out"), "--readme",
                     str(readme)]) == 0
    block = readme.read_text()
    assert f"Paired comparisons inside one framework (`tape-vs-trace paired`, commit `{COMMIT[:8]}`" in block
    assert "- PyTorch mlp 64x256x1024 eager: hooks costs 20.0 % more time than no hooks (95 % interval " \
           "10.0–30.0 %) (1.2 ms against 1 ms)" in block
    # After the pillar findings: a blank line, the heading naming the paired file's commit, a blank line, the list.
    lines = block.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Paired comparisons"))
    assert lines[at] == ("Paired comparisons inside one framework (`tape-vs-trace paired`, commit "
                         f"`{COMMIT[:8]}`; the remat curve is in the figures below):")
    assert lines[at - 1] == "" and lines[at - 2].startswith("- ") and lines[at + 1] == ""
    assert lines[at + 2].startswith("- ") and lines[2] == "<!-- report:start -->"  # nothing before it was dropped
