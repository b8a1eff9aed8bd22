"""`tape-vs-trace compare`: the rerun check, against counts worked out by hand on the synthetic results of
tests/report/helpers.py (3 processes per timed combination; 95 % Student-t intervals on the logarithms of the
per-process medians, see that file's docstring).

The folder has 21 rows: 11 timings (GradStep 4, RematStep 4, Forward 3 of which one failed and two ran in one
process) and 10 exact values. JAX/PyTorch ratios whose interval excludes 1: RematStep remat_full (2.1-2.5 against
3.0-3.3 ms: below 1) and saved bytes (1.5, exact); GradStep eager (JAX 3.0-3.4 ms against PyTorch 1.15-2.15 ms)
holds 1, so its direction is no finding; peak bytes are refused (different memory methods), graph size and the
unknown metric count different things.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tape_vs_trace import cli
from tape_vs_trace.report.compare import ACROSS, FLIPPED, ONE_RUN, directions
from tape_vs_trace.report.compare import SAME_WAY as BOTH
from tests.report.helpers import chunk, write_results

SAME_WAY = "2 of 2 directions agree (0 flipped; 2 stated in both runs, 0 in one run only with the other run's ratio " \
    "on the same side of 1, 0 in one run only with the other run's ratio across 1 and its interval overlapping)"

RESULT = Path("box") / "abc12300-existing-venv.json"
SAMPLES = 11  # position of "samples" in the synthetic result_columns
FP = {"cpu": {"vendor": "AuthenticAMD", "model_name": "AMD EPYC 9000", "family": "25", "model": "17",
              "stepping": "1", "flags": ["avx2"], "caches": {"L2": "1024K"}}}
CAL = {"matmul_flops_per_s": {"float32": 1e11}, "copy_bytes_per_s": 1e10,
       "dispatch_seconds_per_op": {"torch": 5e-6, "jax": 2e-5}}


def edit(root: Path, change) -> None:
    path = root / RESULT
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, allow_nan=True))


def run(capsys, *argv: str) -> tuple[int, list[str], str]:
    rc = cli.main(["compare", *argv])
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = write_results(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    return a, b


def slow_torch_eager_and_bigger_peak(data: dict) -> None:
    """Run B: PyTorch's eager GradStep at 5.0-5.4 ms (no overlap with 1.15-2.15 ms, and now faster in JAX), and
    PyTorch's plain peak one MiB larger."""
    grad = data["results"]["recording.GradStep_mlp.time_step"]
    grad[SAMPLES][0] = [x for m in (5.0, 5.2, 5.4) for x in chunk(m)]
    grad[0][0] = 5.2e-3
    data["results"]["remat.RematCost_mlp.track_peak_bytes"][0][0] += 2 ** 20


def test_a_copy_agrees_in_every_row(runs, capsys) -> None:
    a, b = runs
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0
    assert out[-3:] == [SAME_WAY, "11 of 11 timing rows agree", "21 of 21 rows agree"]


def test_disagreements_are_counted_row_by_row(runs, capsys) -> None:
    a, b = runs
    edit(b, slow_torch_eager_and_bigger_peak)
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0  # a report, not a gate
    assert out[-3:] == [directions([BOTH, BOTH, FLIPPED]), "10 of 11 timing rows agree", "19 of 21 rows agree"]
    [line] = [x for x in out if "GradStep_mlp.time_step framework=torch" in x and "mode=eager" in x]
    assert line.startswith("differ") and "95 % intervals do not overlap" in line
    # t intervals on the logs (see tests/report/helpers.py): A [0.7192, 3.405] ms; B: sd of the logs 0.03846,
    # half-width 4.3027 x 0.03846 / sqrt(3) = 0.09554, exp(ln 5.2 -+ 0.09554) = [4.724, 5.719] ms
    assert "A 1.565 ms [0.7192–3.405]" in line and "B 5.197 ms [4.724–5.719]" in line  # geometric means
    [peak] = [x for x in out if "track_peak_bytes framework=torch" in x and "variant=plain" in x]
    assert peak.startswith("differ") and "exact values differ" in peak
    # A 2.04x [0.975-4.28] holds 1, B 0.615x [0.541-0.699] states JAX faster: the intervals do not overlap
    assert any(x.strip().startswith("direction flipped") and "GradStep_mlp" in x for x in out)


def test_a_ratio_across_1_whose_interval_holds_the_other_runs_is_no_flip(runs, capsys) -> None:
    """Run A states JAX faster in the eager GradStep (PyTorch 5.0-5.4 ms); in run B PyTorch's processes spread over
    1.5-5.0 ms, its ratio above 1 with an interval reaching below A's: B states nothing against A."""
    a, b = runs
    edit(a, slow_torch_eager_and_bigger_peak)

    def spread_torch_eager(data: dict) -> None:
        grad = data["results"]["recording.GradStep_mlp.time_step"]
        grad[SAMPLES][0] = [x for m in (1.5, 2.5, 5.0) for x in chunk(m)]
        grad[0][0] = 2.5e-3

    edit(b, spread_torch_eager)
    rc, out, _ = run(capsys, str(a), str(b))
    [line] = [x for x in out if "GradStep_mlp" in x and x.startswith("  ")]
    assert line.strip().startswith(ACROSS) and "A 0.615×" in line, line
    assert out[-3] == directions([BOTH, BOTH, ACROSS])
    assert out[-3].startswith("2 of 3 directions agree (0 flipped;")
    assert out[-3].endswith(", 1 in one run only with the other run's ratio across 1 and its interval overlapping)")


def test_strict_fails_below_95_percent_of_timing_rows(runs, capsys) -> None:
    a, b = runs
    assert run(capsys, str(a), str(b), "--strict")[0] == 0
    edit(b, slow_torch_eager_and_bigger_peak)
    rc, _, err = run(capsys, str(a), str(b), "--strict")
    assert rc == 1 and "10 of 11 timing rows agree" in err


def _times_scaled(factor: float):
    """A change of a results file: every timed result and sample times `factor`."""
    def change(data: dict) -> None:
        for name in ("recording.GradStep_mlp.time_step", "remat.RematStep_mlp.time_step",
                     "inference.Forward_mlp.time_forward"):
            entry = data["results"][name]
            entry[0] = [v if v is None else v * factor for v in entry[0]]
            entry[SAMPLES] = [s if s is None else [x * factor for x in s] for s in entry[SAMPLES]]
    return change


def _hosts(a: Path, b: Path, faster: float) -> None:
    """A on one host; B on another CPU model whose calibrated matmul rate is `faster` times A's and whose times
    are divided by `faster` (every timed result and sample)."""
    def host(fp: dict, cal: dict):
        def change(data: dict) -> None:
            data["tape_vs_trace"] = {"fingerprint": fp, "calibration": cal}
        return change

    edit(a, host(FP, CAL))
    other = {"cpu": {**FP["cpu"], "model_name": "AMD EPYC 9999", "model": "160"}}
    edit(b, host(other, {**CAL, "matmul_flops_per_s": {"float32": CAL["matmul_flops_per_s"]["float32"] * faster}}))

    edit(b, _times_scaled(1 / faster))


def test_different_hosts_under_one_name_are_flagged_not_compared(runs, capsys) -> None:
    a, b = runs
    _hosts(a, b, 2.0)
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0
    [flag] = [x for x in out if x.startswith("different machines")]
    assert "box" in flag and "model_name differs" in flag and "--normalise" in flag
    assert sum(x.startswith("different hosts") for x in out) == 11
    # exact values (bytes, counts) do not depend on the host's speed: still compared
    assert out[-3:] == [SAME_WAY, "0 of 0 timing rows agree", "10 of 10 rows agree"]
    assert "11 timing row(s) on different hosts not compared" in out


def test_one_host_whose_calibration_moved_under_load_is_compared(runs, capsys) -> None:
    """The issue: two make bench runs on one AMD EPYC 2-core host, the first under load (its calibration moved by
    47-74 %), were called two hosts and no timing row was compared. Their records (tests/data/host_records) on the
    synthetic results: the fingerprints decide, every timing row is compared, the moved calibration is a note."""
    records = Path(__file__).parents[1] / "data" / "host_records"
    a, b = runs
    for folder, run_name in ((a, "run-a-loaded"), (b, "run-b-quiet")):
        record = json.loads((records / f"amd-epyc-f25m17-2c-{run_name}.json").read_text())["tape_vs_trace"]
        edit(folder, lambda data, record=record: data.update(tape_vs_trace=record))
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0
    assert not any(x.startswith(("different machines", "different hosts")) for x in out)
    [note] = [x for x in out if x.startswith("note: box @ abc12300: same host by fingerprint (calibration moved")]
    assert "torch dispatch cost (s/op) 4.297e-06 vs 2.932e-06, 47% apart" in note
    assert note.endswith("run under load?); its times are compared")
    assert out[-3:] == [SAME_WAY, "11 of 11 timing rows agree", "21 of 21 rows agree"]


def test_runs_of_another_runner_layout_are_compared_with_a_note(runs, capsys) -> None:
    """Run B's step measured by the worker runner (compiled combinations apart), run A's by asv run (a process per
    combination): the rows are compared, as a check of the runner, and the note says a difference may be the
    layout's."""
    a, b = runs
    layout = {"id": "worker-compiled-apart", "settings": [["highest", False]], "compiled_with_eager": []}
    edit(b, lambda data: data.setdefault("tape_vs_trace", {}).update(
        runner_of={"recording.GradStep_mlp.time_step": "worker"}, worker_runs={"layout": layout}))
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0
    [note] = [x for x in out if x.startswith("note: box @ abc12300: 1 timed benchmark(s) ran in another runner layout")]
    assert "(such as recording.GradStep_mlp.time_step: A one process per combination and round (asv run); B compiled " \
        "combinations in a worker process of their own per framework and round)" in note
    assert out[-3:] == [SAME_WAY, "11 of 11 timing rows agree", "21 of 21 rows agree"]


def test_the_hosts_load_in_each_run_is_a_line_and_a_busier_run_is_asked_about(runs, capsys) -> None:
    """Both runs recorded the host's busy share per worker process: one line with each run's median; run B's
    processes ran on a host 18 points busier, so the line asks whether it shared the host."""
    a, b = runs
    for folder, busy in ((a, (0.62, 0.63, 0.64)), (b, (0.80, 0.81, 0.82))):
        processes = [{"round": 1, "host": {"steal": 0.0, "busy": x}} for x in busy]
        edit(folder, lambda data, p=processes: data.setdefault("tape_vs_trace", {}).update(
            worker_runs={"per_process": p}))
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0
    assert "host load: box @ abc12300: the CPUs busy a median 63% of the time during A's worker processes, 81% " \
        "during B's (their own work included); B shared the host with other work?" in out
    assert out[-3:] == [SAME_WAY, "11 of 11 timing rows agree", "21 of 21 rows agree"]


def test_no_load_line_without_the_records(runs, capsys) -> None:
    rc, out, _ = run(capsys, *map(str, runs))
    assert rc == 0 and not any(x.startswith("host load") for x in out)


def test_normalised_times_are_labelled_calibrated(runs, capsys) -> None:
    a, b = runs
    _hosts(a, b, 2.0)  # twice the matmul rate, half the time: the same work in calibrated units
    rc, out, _ = run(capsys, str(a), str(b), "--normalise", "matmul_float32")
    assert rc == 0
    [line] = [x for x in out if "GradStep_mlp.time_step framework=torch" in x and "mode=eager" in x]
    # 1.565 ms x 1e11 flop/s = 1.565e8 float32 matmul flops, on both hosts
    assert "normalised (float32 matmul flops of this host's torch (calibrated)): A 1.565e+08" in line
    assert "B 1.565e+08" in line and line.endswith(": overlap")
    assert " s " not in line.split("normalised", 1)[1]  # never seconds
    # 8 timings with an interval agree; the two one-process rows and the failed one have no interval
    assert ("8 of 11 timing rows on different hosts agree after normalisation by matmul_float32 "
            "(calibrated units, not seconds)") in out


@pytest.mark.parametrize("damage", ["missing", "corrupt_file", "corrupt_benchmarks", "empty"])
def test_bad_folders_get_one_line_and_exit_1(runs, capsys, tmp_path, damage) -> None:
    a, b = runs
    if damage == "missing":
        b = tmp_path / "nowhere"
    elif damage == "corrupt_file":
        (b / RESULT).write_text('{"commit_hash": ')
    elif damage == "corrupt_benchmarks":
        (b / "benchmarks.json").write_text("[1, 2")
    else:
        b = tmp_path / "empty"
        b.mkdir()
    rc, out, err = run(capsys, str(a), str(b))
    assert rc == 1 and out == []
    # the synthetic folder's warnings (an unknown metric, no roofline inputs); beyond them, one error line
    lines = [x for x in err.splitlines() if not x.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err


def test_older_results_are_a_warning_not_a_failure(runs, capsys) -> None:
    """A benchmark the suite has dropped since a file was written is skipped, as the report skips it: one warning
    line per folder (the same in both runs), not an error, as a corrupt file is."""
    for root in runs:
        edit(root, lambda data: data["results"].update({"remat.RematStep_transformer.time_step": [None]}))
    rc, out, err = run(capsys, *map(str, runs))
    assert rc == 0 and out
    older = [x for x in err.splitlines() if "older" in x]
    assert len(older) == 2 and all(line.startswith(f"warning: 1 older result file(s) in {root} hold 1 benchmark(s) no "
                                                   "longer in the suite") for line, root in zip(older, runs)), older


def _paired_csv(folder: Path, rows: list[tuple[str, float, float, float, float, float, float]]) -> None:
    """results/paired/m-abcdef12.csv with rows (point, time_s, low, high, ratio, ratio_low, ratio_high) of one
    experiment whose baseline is 'plain'."""
    from tape_vs_trace.side import paired

    table = [dict.fromkeys(paired.FIELDS, "") | dict(
        experiment="remat L4 torch eager unrolled", group="remat", framework="torch", point=point,
        baseline="plain", time_s=t, time_ci_low=lo, time_ci_high=hi, ratio=r, ratio_ci_low=rlo, ratio_ci_high=rhi,
        processes=3, commit="abcdef1234", machine="m") for point, t, lo, hi, r, rlo, rhi in rows]
    paired.write(table, folder / "paired", "m", "abcdef1234")


def test_paired_rows_are_compared_by_interval_and_direction(runs, capsys) -> None:
    a, b = runs
    # plain agrees (intervals 9-11 and 10.5-12 ms overlap); remat_full does not (20-22 against 25-27 ms), but its
    # ratio to plain lies above 1 in both runs; remat_dots is a difference below 1 in A and above 1 in B: flipped;
    # remat_names excludes 1 in A only, on the same side in B: in one run only.
    _paired_csv(a, [("plain", 0.010, 0.009, 0.011, 1, 1, 1), ("remat_full", 0.021, 0.020, 0.022, 2.0, 1.9, 2.1),
                    ("remat_dots", 0.009, 0.0085, 0.0095, 0.9, 0.85, 0.95),
                    ("remat_names", 0.012, 0.011, 0.013, 1.2, 1.1, 1.3)])
    _paired_csv(b, [("plain", 0.011, 0.0105, 0.012, 1, 1, 1), ("remat_full", 0.026, 0.025, 0.027, 2.4, 2.3, 2.5),
                    ("remat_dots", 0.012, 0.0115, 0.0125, 1.1, 1.05, 1.15),
                    ("remat_names", 0.013, 0.012, 0.014, 1.1, 0.9, 1.3)])
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0
    assert "paired: " + directions([BOTH, FLIPPED, ONE_RUN]) in out
    assert "paired: 2 of 4 timing rows agree" in out  # remat_full and remat_dots do not overlap
    # half-widths over the value: A 1/10, 1/21, 0.5/9, 1/12 -> median (0.05556 + 0.08333) / 2 = 6.9 %;
    # B 0.75/11, 1/26, 0.5/12, 1/13 -> median (0.04167 + 0.06818) / 2 = 5.5 %
    assert "paired: median 95 % interval half-width, times of 1 ms or more: A 6.9 % (4 rows), B 5.5 % (4 rows)" in out
    assert any(line.startswith("differ") and "remat_full" in line for line in out)
    assert any("direction flipped" in line and "remat_dots" in line for line in out)
    assert any("in one run only" in line and "remat_names" in line for line in out)
    assert out[-3:] == [SAME_WAY, "11 of 11 timing rows agree", "21 of 21 rows agree"]


def test_a_paired_ratio_across_1_overlapping_the_other_runs_interval_is_no_flip(runs, capsys) -> None:
    a, b = runs
    # remat_dots states 0.85 [0.8-0.9] in A; B's 1.05 [0.85-1.3] lies across 1 and holds 0.85; remat_full states 0.85
    # [0.8-0.9] in A and B's 1.05 [0.95-1.15] does not reach it: flipped
    _paired_csv(a, [("plain", 0.010, 0.009, 0.011, 1, 1, 1), ("remat_dots", 0.0085, 0.008, 0.009, 0.85, 0.8, 0.9),
                    ("remat_full", 0.0085, 0.008, 0.009, 0.85, 0.8, 0.9)])
    _paired_csv(b, [("plain", 0.010, 0.009, 0.011, 1, 1, 1), ("remat_dots", 0.0105, 0.009, 0.012, 1.05, 0.85, 1.3),
                    ("remat_full", 0.0105, 0.0095, 0.0115, 1.05, 0.95, 1.15)])
    rc, out, _ = run(capsys, str(a), str(b))
    assert any(line.strip().startswith(ACROSS) and "remat_dots" in line for line in out)
    assert any(line.strip().startswith(FLIPPED) and "remat_full" in line for line in out)
    assert "paired: " + directions([ACROSS, FLIPPED]) in out
    assert "paired: 0 of 2 directions agree (1 flipped;" in "\n".join(out)


def test_paired_results_in_one_run_only_are_said(runs, capsys) -> None:
    a, b = runs
    _paired_csv(a, [("plain", 0.010, 0.009, 0.011, 1, 1, 1)])
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0 and "paired: no paired results of one machine and commit in both runs" in out


def _row(framework: str, metric: str, medians: list[float]) -> dict:
    return {"machine": "m", "env": "e", "commit": "c", "benchmark": "recording.GradStep_mlp." + metric,
            "benchmark_version": "5", "params": json.dumps({"framework": framework, "mode": "compiled"}),
            "framework": framework, "metric": metric, "status": "ok", "comparable": True, "memory_method": "",
            "sampled": True, "basis": "processes", "value": sorted(medians)[1],
            "process_medians": json.dumps(medians)}


def test_directions_leave_out_the_derived_roofline_and_ratios_within_the_resolution() -> None:
    from tape_vs_trace.report import compare

    rows = [_row("torch", "time_step", [1.0, 1.01, 0.99]), _row("jax", "time_step", [1.5, 1.52, 1.48]),
            _row("torch", "time_over_matmul_peak", [2.0, 2.02, 1.98]),
            _row("jax", "time_over_matmul_peak", [3.0, 3.03, 2.97])]
    found = compare._directions({i: r for i, r in enumerate(rows)})
    assert [k[3].benchmark for k in found] == ["recording.GradStep_mlp.time_step"]
    [c] = found.values()
    assert c.differs and c.ratio == pytest.approx(1.5)
    # 5 % slower with a tight interval: within the 10 % a rerun moves a ratio between processes, so not a finding
    rows[1]["process_medians"], rows[1]["value"] = json.dumps([1.05, 1.06, 1.04]), 1.05
    [c] = compare._directions({i: r for i, r in enumerate(rows[:2])}).values()
    assert c.low > 1 and c.differs is False


def test_the_median_half_width_line_counts_the_finite_widths_of_each_run() -> None:
    from tape_vs_trace.report import compare

    assert compare._widths([0.1, 0.3, math.nan], []) == "A 20.0 % (2 rows), B none (0 rows)"


def test_a_shift_of_the_whole_host_is_measured_and_divided_out_but_a_changed_row_is_not(runs, capsys) -> None:
    """Run B on the same host, 4 times faster throughout (every time and sample divided by 4): the rows disagree, the
    shift line names the factor and finds them agreeing once it is divided out; a row changed on its own (PyTorch's
    eager step, 5.0-5.4 ms) still disagrees after the division."""
    a, b = runs
    rc, out, _ = run(capsys, str(a), str(b))
    [same] = [x for x in out if x.startswith("the host's speed")]
    assert same == ("the host's speed between the runs: B's times a median 1× A's over 8 timing rows in seconds; "
                    "with B's divided by that, 8 of 8 agree")
    edit(b, _times_scaled(0.25))
    rc, out, _ = run(capsys, str(a), str(b))
    assert rc == 0
    [shift] = [x for x in out if x.startswith("the host's speed")]
    assert shift == ("the host's speed between the runs: B's times a median 0.25× A's over 8 timing rows in "
                     "seconds; with B's divided by that, 8 of 8 agree")
    assert out[-2] == "2 of 9 timing rows agree"  # still counted as they were measured
    edit(b, slow_torch_eager_and_bigger_peak)
    _, out, _ = run(capsys, str(a), str(b))
    [shift] = [x for x in out if x.startswith("the host's speed")]
    assert shift.endswith("with B's divided by that, 7 of 8 agree")
