"""Builders shared by the report's tests: a small synthetic asv results folder in asv's format 2 with
--record-samples (per-process medians chosen so that every interval can be worked out by hand), rows of the paired
CSV that `tape-vs-trace paired` writes, and rows of summary.csv as load.py writes them."""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from implementations import metrics
from tape_vs_trace.report.load import COLUMNS
from tape_vs_trace.side.paired import FIELDS

FIXTURE = Path(__file__).parents[1] / "data" / "asv_fixture"  # real, scrubbed asv output (see its README)
PROGRESS_LINE = re.compile(r"^\[[\w-]+ \d+ s\] ")  # tape_vs_trace.progress: "[report 3 s] writing summary.csv"
MS = 1e-3
MIB = 2 ** 20


ASV_COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
               "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]

@contextlib.contextmanager
def unrendered():
    """Figures built but not laid out or rendered: each PNG an empty file. For tests of the report's text alone,
    where rendering is most of a build's time; test_figures and the report's own build tests render."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "tight_layout", lambda self, *args, **kwargs: None)
        patch.setattr(Figure, "savefig", lambda self, path, *args, **kwargs: Path(path).write_bytes(b""))
        yield


FW = ["'torch'", "'jax'"]

TAIL = [["'float32'"], ["'highest'"], ["'cpu'"]]

# Per-process medians (ms) of the timed benchmarks: GradStep by (framework, mode), RematStep by (framework, variant).
GRAD = {("torch", "eager"): [1.15, 2.15, 1.55], ("torch", "compiled"): [1.0, 1.2, 1.4],
        ("jax", "eager"): [3.0, 3.2, 3.4], ("jax", "compiled"): [1.1, 1.3, 0.9]}

REMAT = {("torch", "plain"): [2.0, 2.1, 2.2], ("torch", "remat_full"): [3.0, 3.1, 3.3],
         ("jax", "plain"): [2.0, 2.4, 2.2], ("jax", "remat_full"): [2.1, 2.3, 2.5]}


def messages(lines: list[str]) -> list[str]:
    """stderr's warnings and errors: its lines but the progress ones."""
    return [line for line in lines if not PROGRESS_LINE.match(line)]


def chunk(median: float) -> list[float]:
    """Four samples of one process whose median is `median` (one outlier, which the median ignores)."""
    return [median * MS, median * MS, median * 0.99 * MS, median * 5 * MS]


def bench(name: str, kind: str, unit: str, names: list[str], params: list[list[str]], **extra) -> dict:
    return {"name": name, "type": kind, "unit": unit, "param_names": names, "params": params, "version": "3",
            "code": "", "timeout": 600, **extra}


def entry(params: list[list[str]], results: list, samples: list | None = None) -> list:
    n = len(results)
    return [results, params, "3", 1700000000000, 1.0, [None] * n, [None] * n, [None] * n, [None] * n, [1] * n,
            [4] * n, samples, None]


def timed(params: list[list[str]], medians: dict) -> list:
    """A time benchmark's entry: asv's own result (the pooled median) and 3 processes x 4 samples per combo."""
    results, samples = [], []
    for combo in itertools.product(*params):
        key = (combo[0].strip("'"), combo[3].strip("'"))
        s = [x for m in medians[key] for x in chunk(m)]
        samples.append(s)
        results.append(float(pd.Series(s).median()))
    return entry(params, results, samples)


def write_results(root: Path, fingerprint: dict | None = None) -> Path:
    """The synthetic results folder under `root`: machine box, one commit, GradStep, RematStep, Forward, RematCost,
    GraphCost and an unknown metric, both frameworks."""
    names = ["framework", "workload", "size", "mode", "dtype", "precision", "device"]
    vnames = ["framework", "workload", "size", "variant", "dtype", "precision", "device"]
    grad = [FW, ["'mlp'"], ["'s'"], ["'eager'", "'compiled'"], *TAIL]
    remat = [FW, ["'mlp'"], ["'s'"], ["'plain'", "'remat_full'"], *TAIL]
    remat_step = [*remat[:4], ["'compiled'"], *TAIL]  # a mode, not one of the remat pillar's axes: rows read "plain"
    snames = [*vnames[:4], "mode", *vnames[4:]]
    fwd = [FW, ["'mlp'"], ["'s'"], ["'no_grad'", "'record'"], *TAIL]
    cost = [FW, ["'mlp'"], ["'s'"], *TAIL]
    benchmarks = {
        "recording.GradStep_mlp.time_step": bench("recording.GradStep_mlp.time_step", "time", "seconds", names, grad,
                                                  rounds=3, repeat=4),
        "remat.RematStep_mlp.time_step": bench("remat.RematStep_mlp.time_step", "time", "seconds", snames,
                                               remat_step, rounds=3, repeat=4),
        "inference.Forward_mlp.time_forward": bench("inference.Forward_mlp.time_forward", "time", "seconds", names,
                                                    fwd, rounds=1, repeat=4),
        "remat.RematCost_mlp.track_peak_bytes": bench("remat.RematCost_mlp.track_peak_bytes", "track", "bytes",
                                                      vnames, remat),
        "recording.GraphCost_mlp.track_saved_bytes": bench("recording.GraphCost_mlp.track_saved_bytes", "track",
                                                           "bytes", names[:3] + names[4:], cost),
        "recording.GraphCost_mlp.track_graph_size": bench("recording.GraphCost_mlp.track_graph_size", "track",
                                                          "count", names[:3] + names[4:], cost),
        "harness.Overhead_mlp.track_mystery": bench("harness.Overhead_mlp.track_mystery", "track", "widgets",
                                                    names[:3] + names[4:], cost),
        "version": 2,
    }
    results = {
        "recording.GradStep_mlp.time_step": timed(grad, GRAD),
        "remat.RematStep_mlp.time_step": timed(remat_step, REMAT),
        # one process each; JAX's record mode was skipped (asv's NaN) and PyTorch's record failed (None)
        "inference.Forward_mlp.time_forward": entry(fwd, [1e-3, None, 2e-3, math.nan],
                                                    [chunk(1.0), None, chunk(2.0), None]),
        "remat.RematCost_mlp.track_peak_bytes": entry(remat, [4 * 2 ** 20, 2 ** 20, 6 * 2 ** 20, 3 * 2 ** 20]),
        "recording.GraphCost_mlp.track_saved_bytes": entry(cost, [2 ** 20, 3 * 2 ** 19]),
        "recording.GraphCost_mlp.track_graph_size": entry(cost, [8, 22]),
        "harness.Overhead_mlp.track_mystery": entry(cost, [5, 7]),
    }
    machine = {"machine": "box", "cpu": "Test CPU 9000", "num_cpu": "4", "ram": "8 GB", "os": "Linux",
               "arch": "x86_64", "device": "cpu", "torch": "2.9", "jax": "0.10", "version": 1}
    (root / "box").mkdir(parents=True)
    (root / "benchmarks.json").write_text(json.dumps(benchmarks))
    (root / "box" / "machine.json").write_text(json.dumps(machine))
    data = {"commit_hash": "abc123" + "0" * 34, "env_name": "existing-venv", "date": 1700000000000,
            "params": {"machine": "box", "device": "cpu"}, "python": "3.11", "requirements": {}, "env_vars": {},
            "result_columns": ASV_COLUMNS, "results": results, "durations": {}, "version": 2,
            "tape_vs_trace": {"kernel": "6.1", "fingerprint": fingerprint or {"cpu_model": "Test CPU 9000"},
                              "calibration": {"matmul_gflops": 123.0}}}
    (root / "box" / "abc12300-existing-venv.json").write_text(json.dumps(data, allow_nan=True))
    return root


def md_table(text: str, metric: str) -> dict[str, list[str]]:
    """The rows (by case) of the table whose heading names `metric`."""
    block = text.split(f"(`{metric}`,", 1)[1]
    rows = {}
    for line in block.splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] not in ("case", "---"):
            rows[cells[0]] = cells
    return rows


def table_row(table: pd.DataFrame, framework: str, variant: str, benchmark: str = "", metric: str = "") -> pd.Series:
    """The one row of a read summary.csv of `framework` and `variant` whose benchmark ends in `benchmark` (and whose
    metric is `metric`, if given)."""
    [r] = [r for _, r in table.iterrows() if r.benchmark.endswith(benchmark) and (not metric or r.metric == metric)
           and r.framework == framework and r.variant == variant]
    return r


MACHINE = "cpu-amd-epyc-2c"

COMMIT = "93acfd557dc6d3533c8d26b62e737c3b1f3b0e8b"  # the fixture's commit

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


def summary_row(framework: str, value: float = 2e-3, workload: str = "mlp", size: str = "small", variant: str = "",
        metric: str = "time_step", unit: str = "seconds", machine: str = "box") -> dict:
    """One ok, sampled row of summary.csv without an interval (asv's median only)."""
    return {c: "" for c in COLUMNS} | {
        "pillar": "recording", "workload": workload, "size": size, "variant": variant, "framework": framework,
        "metric": metric, "unit": unit, "value": value, "spread": math.nan, "ci_low": math.nan,
        "ci_high": math.nan, "processes": math.nan, "samples": math.nan, "basis": "asv median", "sampled": True,
        "comparable": True, "params": f'{{"framework": "{framework}"}}', "benchmark": f"recording.{metric}",
        "commit": "abc123" + "0" * 34, "date": "2023-11-14", "run_date": "2023-11-14 22:13:20 UTC",
        "env": "existing-venv", "machine": machine, "device": "cpu", "torch_version": "2.5.1",
        "jax_version": "0.4.35", "dtype": "float32", "precision": "highest", "benchmark_version": "v1",
        "status": "ok"}


def curve_point(framework: str, mode: str, formulation: str, point: str, time: tuple, ratio: tuple, saved: float,
                peak: float, peak_method: str, gflop: float, group: str = "remat", attention: str = "") -> dict:
    """A row of the paired table; time (s, low, high), ratio (ratio, low, high), memory in MiB."""
    return {"group": group, "framework": framework, "mode": mode, "formulation": formulation, "size": "S",
            "attention": attention,
            "point": point, "baseline": "plain", "time_s": time[0], "time_ci_low": time[1], "time_ci_high": time[2],
            "ratio": ratio[0], "ratio_ci_low": ratio[1], "ratio_ci_high": ratio[2], "saved_bytes": saved * MIB,
            "peak_bytes": peak * MIB, "peak_method": peak_method, "flops": gflop * 1e9}


# --- what a figure shows a reader: the texts it draws, where, and the metrics its axes name ---------------------

METRIC_NAMES = tuple(sorted({m.display for m in metrics.METRICS.values()}, key=len, reverse=True))
UNIT = re.compile(r"\((MiB|s|ms|µs|ns|%)[,;)]")  # a unit in parentheses: "(MiB, from zero)", "(%)", "(ms, log)"


def drawn_texts(fig) -> list[tuple[str, Bbox]]:
    """(text, its box in pixels) of every non-empty text a draw of `fig` puts on the page: tick labels, axis labels,
    titles, legend entries, annotations (the text, not its leader line), notes. Recorded as drawn, so a tick label
    outside the axis' range, which matplotlib keeps but does not draw, is not one."""
    seen: list[tuple[str, Bbox]] = []
    draw = Text.draw

    def record(self, renderer) -> None:
        draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            seen.append((self.get_text(), Text.get_window_extent(self, renderer)))

    canvas = FigureCanvasAgg(fig)
    Text.draw = record
    try:
        canvas.draw()
    finally:
        Text.draw = draw
    return seen


def overlapping(fig) -> list[tuple[str, str]]:
    """The pairs of drawn texts whose boxes intersect (touching edges do not)."""
    return [(a, b) for (a, p), (b, q) in itertools.combinations(drawn_texts(fig), 2)
            if p.x0 < q.x1 and q.x0 < p.x1 and p.y0 < q.y1 and q.y0 < p.y1]


def off_the_page(fig) -> list[str]:
    """The drawn texts that run over an edge of the figure (more than a pixel)."""
    width, height = fig.bbox.width, fig.bbox.height
    return [t for t, box in drawn_texts(fig)
            if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1]


def unnamed_axes(fig) -> list[str]:
    """The axes that show data but whose x and y labels name no metric of the registry with its unit."""
    out = []
    for ax in fig.axes:
        if not ax.has_data():
            continue
        label = f"{ax.get_xlabel()} | {ax.get_ylabel()}"
        if not (any(name in label for name in METRIC_NAMES) and UNIT.search(label)):
            out.append(label)
    return out


def captured_figures(monkeypatch) -> dict[str, object]:
    """From here on, each Figure that is saved is kept by the name of its file instead of being written."""
    figs: dict[str, object] = {}
    monkeypatch.setattr("matplotlib.figure.Figure.savefig",
                        lambda self, path, *args, **kwargs: figs.update({Path(path).name: self}))
    return figs


def saved_groups(ax) -> dict[str, list[str]]:
    """A saved-bytes figure's groups of side-by-side bars: the case named under each group -> the frameworks (tick
    labels) whose bars stand in it, left to right."""
    frameworks_at = {round(x): t.get_text() for x, t in zip(ax.get_xticks(), ax.get_xticklabels())}
    cases = list(zip(ax.get_xticks(minor=True), (t.get_text() for t in ax.get_xticklabels(minor=True))))
    out: dict[str, list[str]] = {case: [] for _, case in cases}
    for x in sorted({round(bar.get_x() + bar.get_width() / 2) for bar in ax.patches if bar.get_height()}):
        case = min(cases, key=lambda c: abs(c[0] - x))[1]
        out[case].append(frameworks_at[x])
    return out


# --- rows of the distributed CSV that `tape-vs-trace distributed` writes ---------------------------------------

def distributed_row(framework: str, form: str, mode: str, ranks: int, medians: list[float], peak: float | str = "",
                    comm: float | str = "", analytic: float = 2 * MIB, workload: str = "mlp",
                    size: str = "64x256x1024", status: str = "ok", reason: str = "") -> dict:
    """One row of the distributed CSV; medians (per launch) in ms, memory in MiB; the time is their median and the
    interval stats.median_interval's, as the command writes them."""
    import statistics

    from tape_vs_trace.report import stats
    from tape_vs_trace.side.distributed_run import FIELDS as DISTRIBUTED_FIELDS

    low, high = stats.median_interval([m * 1e-3 for m in medians]) if medians else ("", "")
    measured = {"torch": ("torch live-storage tracking (TorchDispatchMode), the largest rank's", "gloo (loopback)"),
                "jax": ("jax compiled.memory_analysis; of the sharded executable, per device", "XLA CPU")}[framework]
    row = {f: "" for f in DISTRIBUTED_FIELDS} | {
        "framework": framework, "workload": workload, "size": size, "dtype": "float32", "variant": "plain",
        "form": form, "mode": mode, "ranks": ranks, "status": status, "reason": reason, "device": "cpu",
        "commit": COMMIT, "commit_date": "2026-12-02T10:00:00+00:00", "machine": MACHINE, "launches": len(medians)}
    if status != "ok":
        return row
    return row | {
        "time_s": statistics.median(medians) * 1e-3, "time_ci_low": low, "time_ci_high": high, "repeat": 5,
        "warmup": 1, "launch_medians": ";".join(f"{m * 1e-3:.6g}" for m in medians), "compile_s": 1.5,
        "peak_bytes": peak if peak == "" else peak * MIB,
        "peak_method": measured[0] if peak != "" else "not measured: the method cannot see this step",
        "comm_bytes": comm if comm == "" else comm * MIB, "analytic_bytes": 0 if ranks == 1 else analytic,
        "collectives_method": "counted" if comm != "" else "none: op by op there is no one program",
        "backend": measured[1], "mesh_shape": f"ranks={ranks}", "timing": "the slowest rank's",
        "note": "on a CPU host the ranks share its cores"}


def report_text(out: Path) -> str:
    """summary.md followed by each machine's page and its page of every table: the front links them, the detail is
    there."""
    pages = sorted([*out.glob("*/summary.md"), *out.glob("*/tables.md")])
    own = [out / name for name in ("summary.md", "tables.md") if (out / name).exists()]  # a machine's folder
    return "\n".join(p.read_text() for p in [*own, *pages])
