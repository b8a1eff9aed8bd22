"""asv results -> a citable report: one tidy table (summary.csv), a markdown summary with provenance, JAX/PyTorch
ratios and findings written from the data (summary.md), and matplotlib figures.

Every number in the markdown and the figures is computed from the table: nothing is typed by hand.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

PILLARS = ["recording", "custom_backward", "remat", "inference", "engine", "harness"]
FRAMEWORKS = ["torch", "jax"]
LABELS = {"torch": "PyTorch", "jax": "JAX"}
COLORS = {"torch": "#d62728", "jax": "#1f77b4"}
# The parameter that varies within a benchmark class; custom_backward has two (variant and mode): both are kept.
VARIANT_PARAMS = ("variant", "mode", "phase", "path")
COLUMNS = ["pillar", "workload", "size", "variant", "framework", "metric", "unit", "value", "spread", "q25", "q75",
           "type", "params", "benchmark", "commit", "date", "env", "machine", "device", "torch_version", "jax_version",
           "dtype", "precision", "memory_method", "status"]
# Figure file names (stable: the README links them) and the pillar each belongs to.
FIGURES = {"recording.png": "recording", "custom_backward.png": "custom_backward", "remat.png": "remat",
           "remat_tradeoff.png": "remat", "remat_scaling.png": "remat", "inference.png": "inference",
           "engine.png": "engine", "harness.png": "harness"}
OUTPUTS = ["summary.csv", "summary.md", *FIGURES]
# Table and figure order of the metrics, and their names in words.
METRICS = {"time_step": "step time", "time_forward": "forward time", "track_compile_seconds": "compile time",
           "track_peak_bytes": "peak memory", "track_saved_bytes": "saved for backward",
           "track_graph_size": "graph size", "track_flops": "flops"}

Warn = Callable[[str], None]


class ReportError(Exception):
    """Nothing can be reported; the message is one line for the user."""


@dataclass
class Results:
    """The tidy table plus what the provenance header needs beyond it."""

    table: pd.DataFrame
    machines: dict[str, dict] = field(default_factory=dict)  # machine name -> machine.json
    details: dict[tuple[str, str], dict] = field(default_factory=dict)  # (machine, commit) -> "tape_vs_trace" key
    python: dict[tuple[str, str], str] = field(default_factory=dict)  # (machine, commit) -> interpreter
    files: int = 0


# ---------------------------------------------------------------------------------------------------------- loading


def _memory_methods() -> dict[tuple[str, str], str]:
    """benchmarks.common.MEMORY_METHODS: benchmarks/ is not an installed package, so the console script finds it
    next to this package (the project is installed editable)."""
    try:
        from benchmarks.common import MEMORY_METHODS
    except ModuleNotFoundError:
        root = Path(__file__).resolve().parents[1]
        if not (root / "benchmarks" / "common.py").is_file():
            raise ReportError("benchmarks/common.py not found: run the report from a checkout of tape-vs-trace") \
                from None
        sys.path.insert(0, str(root))
        from benchmarks.common import MEMORY_METHODS
    return MEMORY_METHODS


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot be read ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a JSON object")
    return data


def _literal(text: str):
    """asv stores parameter values as their repr ("'torch'"); the report wants the value."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def machine_folders(results: Path) -> list[Path]:
    """Every folder of `results` that asv made for a machine (it holds machine.json); report/ never does."""
    return [d for d in sorted(results.iterdir())
            if d.is_dir() and d.name != "report" and (d / "machine.json").is_file()]


def load_results(results: Path, warn: Warn) -> Results:
    """Read every machine folder and result file of an asv results folder into one tidy table."""
    if not results.exists():
        raise ReportError(f"results folder {results} does not exist")
    if not results.is_dir():
        raise ReportError(f"{results} is not a folder")
    machines = machine_folders(results)
    if not machines:
        raise ReportError(f"no asv results in {results}: no machine folder with a machine.json (run `make bench`)")
    benchmarks_json = results / "benchmarks.json"
    if not benchmarks_json.is_file():
        raise ReportError(f"{benchmarks_json} is missing: asv writes it beside the machine folders, and the report "
                          "needs its parameter names and units")
    benchmarks = _read_json(benchmarks_json)
    methods = _memory_methods()
    out = Results(pd.DataFrame(columns=COLUMNS))
    rows: list[dict] = []
    seen = 0
    for folder in machines:
        try:
            machine = _read_json(folder / "machine.json")
        except ReportError as exc:
            warn(f"skipped machine folder {folder.name}: {exc}")
            continue
        for path in sorted(folder.glob("*.json")):
            if path.name == "machine.json":
                continue
            seen += 1
            try:
                data = _read_json(path)
                new = _result_rows(data, benchmarks, machine, folder.name, methods, warn, path)
            except ReportError as exc:
                warn(f"skipped {exc}")
                continue
            except (KeyError, TypeError, IndexError, ValueError) as exc:
                warn(f"skipped {path}: not an asv result file ({exc.__class__.__name__}: {exc})")
                continue
            out.files += 1
            rows.extend(new)
            key = (folder.name, data["commit_hash"])
            out.machines[folder.name] = machine
            # asv's `existing` environment records the interpreter's path as its python: keep no machine path.
            python = str(data.get("python", ""))
            out.python[key] = "/".join(Path(python).parts[-3:]) if "/" in python else python
            if isinstance(data.get("tape_vs_trace"), dict):
                out.details[key] = data["tape_vs_trace"]
    if not rows:
        found = f"{seen} result file(s), none readable" if seen else "no result files"
        raise ReportError(f"no benchmark results in {results} ({found})")
    out.table = pd.DataFrame(rows, columns=COLUMNS)
    return out


def _result_rows(data: dict, benchmarks: dict, machine: dict, machine_name: str,
                 methods: dict[tuple[str, str], str], warn: Warn, path: Path) -> list[dict]:
    """The rows of one asv result file (format version 2: positional columns named by result_columns)."""
    columns = {name: i for i, name in enumerate(data["result_columns"])}
    run = data.get("params") or {}
    commit = str(data["commit_hash"])
    date = datetime.fromtimestamp(data["date"] / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    device = str(machine.get("device") or run.get("device") or "")
    # An asv environment with a version matrix (asv.matrix.conf.json) records the versions it installed; the
    # machine record has those of .venv.
    requirements = data.get("requirements") or {}
    versions = {fw: str(requirements.get(fw) or machine.get(fw) or run.get(fw) or "") for fw in FRAMEWORKS}
    rows = []
    for name, entry in data["results"].items():
        meta = benchmarks.get(name)
        if meta is None:
            warn(f"{path.name}: {name} is not in benchmarks.json; skipped")
            continue

        def column(key: str, entry=entry):
            i = columns.get(key)
            return entry[i] if i is not None and i < len(entry) else None

        names = meta.get("param_names", [])
        params = column("params") or []
        if len(names) != len(params):
            warn(f"{path.name}: {name} has {len(params)} parameters, benchmarks.json names {len(names)}; skipped")
            continue
        combos = list(itertools.product(*params)) if params else [()]
        values = column("result")
        values = values if isinstance(values, list) else [values] * len(combos)
        q25s = column("stats_q_25") or [None] * len(combos)
        q75s = column("stats_q_75") or [None] * len(combos)
        pillar, cls, metric = name.split(".")[0], name.split(".")[1], name.split(".")[-1]
        kind, unit = meta.get("type", ""), meta.get("unit", "")
        for combo, value, q25, q75 in zip(combos, values, q25s, q75s):
            if isinstance(value, float) and math.isnan(value):
                continue  # asv: skipped (NotImplementedError), not a result
            p = {n: _literal(v) for n, v in zip(names, combo)}
            failed = value is None
            framework = str(p.get("framework", ""))
            if failed:
                value = spread = q25 = q75 = math.nan
            elif kind == "time":
                q25 = math.nan if q25 is None else q25
                q75 = math.nan if q75 is None else q75
                spread = q75 - q25
            elif unit == "seconds":
                q25 = q75 = spread = math.nan  # a compile time: one measurement, its spread is not measured
            else:
                q25 = q75 = value  # counts and bytes are deterministic
                spread = 0.0
            device_kind = str(p.get("device") or ("cpu" if device == "cpu" else "cuda"))
            rows.append({
                "pillar": pillar,
                "workload": str(p.get("workload") or (cls.rsplit("_", 1)[1] if "_" in cls else cls.lower())),
                "size": str(p.get("size", "")),
                "variant": "/".join(str(p[k]) for k in VARIANT_PARAMS if k in p),
                "framework": framework,
                "metric": metric,
                "unit": unit,
                "value": float(value),
                "spread": float(spread),
                "q25": float(q25),
                "q75": float(q75),
                "type": kind,
                "params": json.dumps(p, separators=(",", ":")),
                "benchmark": name,
                "commit": commit,
                "date": date,
                "env": str(data.get("env_name", "")),
                "machine": machine_name,
                "device": device,
                "torch_version": versions["torch"],
                "jax_version": versions["jax"],
                "dtype": str(p.get("dtype", "")),
                "precision": str(p.get("precision", "")),
                "memory_method": methods.get((framework, device_kind), "unknown")
                if metric == "track_peak_bytes" else "",
                "status": "failed" if failed else "ok",
            })
    return rows


# ------------------------------------------------------------------------------------------------------- formatting

_SI = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
_TIME = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]


def fmt_value(value: float, unit: str) -> str:
    """A value with its unit, 4 significant digits (asv keeps 5); bytes and counts exact."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit == "seconds":
        scale, suffix = next(((s, x) for s, x in _TIME if abs(value) >= s), _TIME[-1])
        return f"{value / scale:.4g} {suffix}"
    if unit == "bytes":
        return f"{round(value):,} B"
    if unit == "flops":
        scale, prefix = next(((s, x) for s, x in _SI if abs(value) >= s), _SI[-1])
        return f"{value / scale:.4g} {prefix}FLOP"
    return f"{round(value):,}" if float(value).is_integer() else f"{value:.4g}"


def fmt_pct(change: float) -> str:
    return f"{abs(change) * 100:.1f} %"


def _ratio(row_torch, row_jax) -> tuple[float, float, float]:
    """JAX / PyTorch and its range from the quartiles: JAX q25 / PyTorch q75 .. JAX q75 / PyTorch q25."""
    if row_torch is None or row_jax is None or row_torch["status"] != "ok" or row_jax["status"] != "ok" \
            or not row_torch["value"]:
        return math.nan, math.nan, math.nan
    lo = row_jax["q25"] / row_torch["q75"] if row_torch["q75"] else math.nan
    hi = row_jax["q75"] / row_torch["q25"] if row_torch["q25"] else math.nan
    return row_jax["value"] / row_torch["value"], lo, hi


def fmt_ratio(ratio: float) -> str:
    return "n/a" if not math.isfinite(ratio) else f"{ratio:.3g}×"


def _cell(row, unit: str, key: str = "value") -> str:
    if row is None:
        return "n/a"
    if row["status"] == "failed":
        return "failed"
    return fmt_value(row[key], unit)


# ----------------------------------------------------------------------------------------------------- the markdown


class Cells:
    """Lookup of one machine's latest results by (pillar, metric, workload, size, variant, framework)."""

    def __init__(self, table: pd.DataFrame):
        self.table = table
        self.rows = {(r.pillar, r.metric, r.workload, r.size, r.variant, r.framework): r._asdict()
                     for r in table.itertuples(index=False)}

    def get(self, pillar, metric, workload, size, variant, framework) -> dict | None:
        return self.rows.get((pillar, metric, workload, size, variant, framework))

    def value(self, *key) -> float | None:
        row = self.get(*key)
        return row["value"] if row is not None and row["status"] == "ok" else None

    def cases(self, pillar: str, metric: str) -> list[tuple[str, str]]:
        """(workload, size) pairs of a pillar's metric, in table order."""
        sel = self.table[(self.table.pillar == pillar) & (self.table.metric == metric)]
        return list(dict.fromkeys(zip(sel.workload, sel["size"])))


def latest(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per machine (and asv environment, where a machine has several), the rows of its most recent commit (by
    commit date), keyed by a name for the section and figure folder."""
    groups = list(table.groupby(["machine", "env"], sort=True))
    several_envs = len(groups) > table.machine.nunique()
    out = {}
    for (machine, env), rows in groups:
        commit = rows.sort_values(["date", "commit"]).commit.iloc[-1]
        out[f"{machine}-{env}" if several_envs else machine] = rows[rows.commit == commit]
    return out


def _ordered(rows: pd.DataFrame) -> pd.DataFrame:
    """Time first, then compile time, memory, graph size and flops; asv's order (by benchmark name) within."""
    rank = rows.metric.map({m: i for i, m in enumerate(METRICS)}).fillna(len(METRICS))
    return rows.assign(_rank=rank).sort_values("_rank", kind="stable").drop(columns="_rank")


def base_numerics(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of one dtype and precision (float32 at full precision where present, else the most common pair),
    plus those without one (the harness): findings and figures compare like with like. GPU machines also run
    bfloat16 and TF32 steps; the tables show every pair."""
    pairs = rows[rows.dtype != ""].groupby(["dtype", "precision"]).size()
    if pairs.empty:
        return rows
    base = ("float32", "highest") if ("float32", "highest") in pairs.index else pairs.idxmax()
    return rows[((rows.dtype == base[0]) & (rows.precision == base[1])) | (rows.dtype == "")]


# Metrics whose two frameworks count different things: autograd nodes against jaxpr equations (a scan body once),
# and FlopCounterMode's matmuls against XLA's cost_analysis (elementwise ops too, a scan body once). Their
# JAX/PyTorch ratio is left blank; the values stand for comparisons within a framework (remat against plain).
INCOMPARABLE = {"track_graph_size", "track_flops"}


def pillar_table(rows: pd.DataFrame) -> list[str]:
    """Markdown rows: PyTorch and JAX side by side per (benchmark, parameters), with the ratio and its range."""
    lines = ["| workload | size | variant | dtype, precision | metric | unit | PyTorch | PyTorch IQR | JAX | JAX IQR "
             "| JAX/PyTorch | ratio range |",
             "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    cases: dict[tuple, dict[str, dict]] = {}
    for r in _ordered(rows).itertuples(index=False):
        params = {k: v for k, v in json.loads(r.params).items() if k != "framework"}
        cases.setdefault((r.benchmark, json.dumps(params, sort_keys=True)), {})[r.framework] = r._asdict()
    for by_fw in cases.values():
        any_row = next(iter(by_fw.values()))
        unit = any_row["unit"]
        t, j = by_fw.get("torch"), by_fw.get("jax")
        ratio, lo, hi = _ratio(t, j)
        if any_row["metric"] in INCOMPARABLE:
            ratio = lo = hi = math.nan
        span = "n/a" if not (math.isfinite(lo) and math.isfinite(hi)) else f"{lo:.3g}–{hi:.3g}×"
        numerics = ", ".join(v for v in (any_row["dtype"], any_row["precision"]) if v)
        lines.append(f"| {any_row['workload']} | {any_row['size']} | {any_row['variant']} | {numerics} "
                     f"| {any_row['metric']} "
                     f"| {unit} | {_cell(t, unit)} | {_cell(t, unit, 'spread')} | {_cell(j, unit)} "
                     f"| {_cell(j, unit, 'spread')} | {fmt_ratio(ratio)} | {span} |")
    return lines


def _change(a: float | None, b: float | None) -> float | None:
    """b relative to a, as a fraction (b / a - 1)."""
    return None if a is None or b is None or not a else b / a - 1


def _noise(cells: Cells, *keys: tuple) -> str:
    """' (within noise: ...)' when the two timings' interquartile ranges overlap, else ''. A difference whose IQRs
    overlap is not one a reader should cite; asv's own comparison asks for more (non-overlapping 99 % CIs)."""
    a, b = (cells.get(*key) for key in keys)
    if a is None or b is None or a["status"] != "ok" or b["status"] != "ok":
        return ""
    if a["q75"] < b["q25"] or b["q75"] < a["q25"]:
        return ""
    return " (within noise: the interquartile ranges overlap)"


def findings(cells: Cells) -> dict[str, list[str]]:
    """Sentences written from the table, per pillar; a sentence whose numbers are missing is left out. Timing
    differences whose interquartile ranges overlap are marked as within noise."""
    out: dict[str, list[str]] = {p: [] for p in PILLARS}
    get = cells.value

    # recording: saved bytes and graph size, compiled vs eager, grad recording, compile time
    for w, s in cells.cases("recording", "track_saved_bytes"):
        t, j = get("recording", "track_saved_bytes", w, s, "", "torch"), get("recording", "track_saved_bytes", w, s,
                                                                             "", "jax")
        if t and j is not None:
            out["recording"].append(f"JAX's jax.vjp keeps {j / t:.3g}× the bytes PyTorch's tape saves for {w} plain "
                                    f"at {s} ({fmt_value(j, 'bytes')} vs {fmt_value(t, 'bytes')}; residuals before "
                                    f"XLA, which can fuse some of them away under jit).")
    for w, s in cells.cases("recording", "track_graph_size"):
        t, j = get("recording", "track_graph_size", w, s, "", "torch"), get("recording", "track_graph_size", w, s,
                                                                            "", "jax")
        if t is not None and j is not None:
            out["recording"].append(f"{w} at {s}: PyTorch records {fmt_value(t, '')} autograd nodes, JAX traces "
                                    f"{fmt_value(j, '')} jaxpr equations (forward + backward).")
    for w, s in cells.cases("recording", "time_step"):
        for fw, eager, compiled in (("torch", "eager", "torch.compile"),
                                    ("jax", "op-by-op jax.value_and_grad", "jax.jit")):
            e = get("recording", "time_step", w, s, "eager", fw)
            c = get("recording", "time_step", w, s, "compiled", fw)
            if e and c:
                speed = f"runs {e / c:.3g}× as fast as" if c < e else f"takes {c / e:.3g}× the time of"
                out["recording"].append(f"{compiled} {speed} {eager} on the {w} {s} step "
                                        f"({fmt_value(c, 'seconds')} vs {fmt_value(e, 'seconds')}).")
    for w, s in cells.cases("recording", "time_forward"):
        for fw in FRAMEWORKS:
            change = _change(get("recording", "time_forward", w, s, "no_grad", fw),
                             get("recording", "time_forward", w, s, "record", fw))
            if change is not None:
                verb = "costs" if change >= 0 else "saves"
                noise = _noise(cells, ("recording", "time_forward", w, s, "no_grad", fw),
                               ("recording", "time_forward", w, s, "record", fw))
                out["recording"].append(f"{LABELS[fw]}: grad recording {verb} {fmt_pct(change)} over no_grad for the "
                                        f"{w} forward at size {s}{noise}.")
    compile_rows = cells.table[(cells.table.metric == "track_compile_seconds") & (cells.table.status == "ok")]
    totals = compile_rows[compile_rows.variant == "total"]
    if len(totals):
        top = totals.loc[totals.value.idxmax()]
        how = "first call minus a steady call" if top.framework == "torch" else "trace + lower + compile"
        out["recording"].append(f"Largest compile time: {fmt_value(top.value, 'seconds')} ({LABELS.get(top.framework)}"
                                f" {top.workload} {top['size']}, {how}).")

    # custom backward: the hand-written backward against plain autodiff
    for metric, what in (("track_saved_bytes", "saved bytes"), ("track_peak_bytes", "peak bytes")):
        for w, s in cells.cases("custom_backward", metric):
            for fw in FRAMEWORKS:
                plain = get("custom_backward", metric, w, s, "plain", fw)
                custom = get("custom_backward", metric, w, s, "custom", fw)
                change = _change(plain, custom)
                if change == 0:
                    out["custom_backward"].append(f"The custom backward leaves {LABELS[fw]}'s {w} {what} unchanged "
                                                  f"({fmt_value(plain, 'bytes')}).")
                elif change is not None:
                    verb = "cuts" if change < 0 else "raises"
                    out["custom_backward"].append(
                        f"The custom backward {verb} {LABELS[fw]}'s {w} {what} by {fmt_pct(change)} "
                        f"({fmt_value(plain, 'bytes')} → {fmt_value(custom, 'bytes')}).")
    for w, s in cells.cases("custom_backward", "time_step"):
        for fw in FRAMEWORKS:
            for mode in ("eager", "compiled"):
                change = _change(get("custom_backward", "time_step", w, s, f"plain/{mode}", fw),
                                 get("custom_backward", "time_step", w, s, f"custom/{mode}", fw))
                if change is not None:
                    verb = "slower" if change >= 0 else "faster"
                    noise = _noise(cells, ("custom_backward", "time_step", w, s, f"plain/{mode}", fw),
                                   ("custom_backward", "time_step", w, s, f"custom/{mode}", fw))
                    out["custom_backward"].append(f"{LABELS[fw]} {mode}: the custom {w} step is {fmt_pct(change)} "
                                                  f"{verb} than plain autodiff{noise}.")

    # remat: peak memory saved against step time paid, per policy
    for w, s in cells.cases("remat", "track_peak_bytes"):
        for fw in FRAMEWORKS:
            plain_peak = get("remat", "track_peak_bytes", w, s, "plain", fw)
            plain_time = get("remat", "time_step", w, s, "plain", fw)
            for policy in ("remat_full", "remat_dots"):
                peak = _change(plain_peak, get("remat", "track_peak_bytes", w, s, policy, fw))
                if peak is None:
                    continue
                time = _change(plain_time, get("remat", "time_step", w, s, policy, fw))
                noise = _noise(cells, ("remat", "time_step", w, s, "plain", fw),
                               ("remat", "time_step", w, s, policy, fw))
                cost = "" if time is None else \
                    f", at {fmt_pct(time)} {'more' if time >= 0 else 'less'} step time{noise}"
                if peak == 0:
                    out["remat"].append(f"{policy} leaves {LABELS[fw]}'s {w} {s} peak unchanged{cost}.")
                else:
                    verb = "cuts" if peak < 0 else "raises"
                    out["remat"].append(f"{policy} {verb} {LABELS[fw]}'s {w} {s} peak by {fmt_pct(peak)}{cost}.")

    # inference: the overhead of recording for the backward, per size
    for w, s in cells.cases("inference", "time_forward"):
        for fw in FRAMEWORKS:
            base = get("inference", "time_forward", w, s, "no_grad", fw)
            parts = []
            for mode in ("record", "inference_mode", "compiled"):
                change = _change(base, get("inference", "time_forward", w, s, mode, fw))
                if change is not None:
                    noise = _noise(cells, ("inference", "time_forward", w, s, "no_grad", fw),
                                   ("inference", "time_forward", w, s, mode, fw))
                    parts.append(f"{mode} {'+' if change >= 0 else '−'}{fmt_pct(change)}"
                                 + (" (within noise)" if noise else ""))
            if parts:
                out["inference"].append(f"{LABELS[fw]} {w} forward at size {s}, against no_grad "
                                        f"({fmt_value(base, 'seconds')}): {', '.join(parts)}.")
    for w, s in cells.cases("inference", "track_peak_bytes"):
        for fw in FRAMEWORKS:
            rec = get("inference", "track_peak_bytes", w, s, "record", fw)
            nog = get("inference", "track_peak_bytes", w, s, "no_grad", fw)
            if rec and nog:
                out["inference"].append(f"{LABELS[fw]} {w} {s}: a recording forward peaks at {rec / nog:.3g}× the "
                                        f"no_grad forward ({fmt_value(rec, 'bytes')} vs {fmt_value(nog, 'bytes')}).")

    # engine: each feature against its baseline
    pairs = [("hooks", "no_hooks", "tensor hooks"), ("zero_grad_zeros", "zero_grad_none",
                                                      "zero_grad(set_to_none=False)")]
    for w, s in cells.cases("engine", "time_step"):
        for fw in FRAMEWORKS:
            for mode, base, what in pairs:
                change = _change(get("engine", "time_step", w, s, base, fw), get("engine", "time_step", w, s, mode, fw))
                if change is not None:
                    noise = _noise(cells, ("engine", "time_step", w, s, base, fw),
                                   ("engine", "time_step", w, s, mode, fw))
                    out["engine"].append(f"{LABELS[fw]}: {what} cost {'+' if change >= 0 else '−'}{fmt_pct(change)} "
                                         f"against {base} ({w} {s}){noise}.")
        attr = get("engine", "time_step", w, s, "accumulate_grad_attr", "torch")
        tree = get("engine", "time_step", w, s, "accumulate_tree_add", "torch")
        j = get("engine", "time_step", w, s, "accumulate_tree_add", "jax")
        if attr and tree:
            noise = _noise(cells, ("engine", "time_step", w, s, "accumulate_tree_add", "torch"),
                           ("engine", "time_step", w, s, "accumulate_grad_attr", "torch"))
            out["engine"].append(f"PyTorch, 4 micro-batches: accumulating into .grad takes {attr / tree:.3g}× the time "
                                 f"of adding autograd.grad results ({fmt_value(attr, 'seconds')} vs "
                                 f"{fmt_value(tree, 'seconds')}){noise}.")
        if tree and j:
            out["engine"].append(f"Adding 4 micro-batch gradients: JAX (jitted per micro-batch) takes {j / tree:.3g}× "
                                 f"the time of eager PyTorch ({fmt_value(j, 'seconds')} vs "
                                 f"{fmt_value(tree, 'seconds')}).")

    # harness: the cost of the suite's own synchronised path
    for w, s in cells.cases("harness", "time_step"):
        for fw in FRAMEWORKS:
            raw = get("harness", "time_step", w, s, "raw", fw)
            change = _change(raw, get("harness", "time_step", w, s, "synchronized", fw))
            if change is not None:
                noise = _noise(cells, ("harness", "time_step", w, s, "raw", fw),
                               ("harness", "time_step", w, s, "synchronized", fw))
                out["harness"].append(f"{LABELS[fw]}: the synchronised path adds {'+' if change >= 0 else '−'}"
                                      f"{fmt_pct(change)} to a {fmt_value(raw, 'seconds')} step{noise}.")
    return out


def _provenance_lines(data: Results, rows: pd.DataFrame) -> list[str]:
    first = rows.iloc[0]
    machine, commit = first.machine, first.commit
    info = data.machines.get(machine, {})

    def joined(column: str) -> str:
        return ", ".join(v for v in dict.fromkeys(rows[column]) if v) or "n/a"

    lines = ["| | |", "|---|---|",
             f"| commit | `{commit}` (commit date {first.date}) |",
             f"| machine | {machine}: {info.get('cpu', '?')}, {info.get('num_cpu', '?')} cores, {info.get('ram', '?')}"
             f" RAM, {info.get('os', '?')} {info.get('arch', '')} |",
             f"| device | {first.device} |",
             f"| torch | {first.torch_version} |",
             f"| jax | {first.jax_version} |",
             f"| python | {data.python.get((machine, commit)) or 'n/a'} (asv environment `{first.env}`) |",
             f"| dtype | {joined('dtype')} |",
             f"| matmul precision | {joined('precision')} |"]
    for key, value in sorted(data.details.get((machine, commit), {}).items()):
        lines.append(f"| {key} | {value} |")
    lines += ["", "Measurement methods:", ""]
    peaks = rows[rows.memory_method != ""][["framework", "memory_method"]].drop_duplicates()
    for r in peaks.itertuples(index=False):
        lines.append(f"- peak bytes, {LABELS.get(r.framework, r.framework)}: {r.memory_method}")
    lines += [
        "- step and forward times: asv `time_*` benchmarks; the value is the median over samples, the spread (IQR) "
        "is q75 − q25; every timed call ends in a device synchronisation (torch.cuda.synchronize / "
        "jax.block_until_ready)",
        "- compile seconds: one measurement per process (spread n/a); PyTorch: torch.compile's first call minus a "
        "steady call; JAX: jit(f).trace + .lower + .compile after jax.clear_caches()",
        "- saved bytes: PyTorch saved_tensors_hooks, JAX residuals of jax.vjp (distinct storages, arguments and "
        "parameters left out); graph size: PyTorch autograd nodes, JAX jaxpr equations; flops: PyTorch "
        "FlopCounterMode (matmul-like ops), JAX cost_analysis()",
        "- JAX/PyTorch: the ratio of the two values (below 1: JAX costs less). Ratio range: JAX q25 / PyTorch q75 "
        "to JAX q75 / PyTorch q25, from asv's quartiles (a single value for deterministic counts; n/a for single "
        "measurements)",
    ]
    return lines


def markdown(data: Results, figures: dict[str, list[str]], results_label: str) -> str:
    table = data.table
    groups = latest(table)
    several = len(groups) > 1
    lines = ["# tape-vs-trace report", "",
             f"Built by `tape-vs-trace report` from the asv results in `{results_label}` ({data.files} result file(s), "
             f"{table.machine.nunique()} machine(s), {table.commit.nunique()} commit(s)). Every number below is "
             "computed from `summary.csv` (the same numbers, unrounded), for each machine's latest commit. "
             "`failed` marks a benchmark that ran and failed; `n/a` one that was not run for that framework "
             "(skipped on purpose) or a ratio that cannot be formed.", ""]
    shown = {(r.machine.iloc[0], r.commit.iloc[0]) for r in groups.values()}
    older = sorted(set(zip(table.machine, table.commit)) - shown)
    if older:
        lines += ["Older commits, in summary.csv only: "
                  + ", ".join(f"`{c[:8]}` ({m})" for m, c in older) + ".", ""]
    for group, rows in groups.items():
        h = "##"
        if several:
            lines += [f"## {group}", ""]
            h = "###"
        lines += [f"{h} Provenance", "", *_provenance_lines(data, rows), ""]
        frameworks = set(rows.framework)
        if not frameworks >= set(FRAMEWORKS):
            have = ", ".join(LABELS.get(f, f) for f in sorted(frameworks))
            lines += [f"These results hold {have} only: every JAX/PyTorch ratio is n/a.", ""]
        base = base_numerics(rows)
        found = findings(Cells(base))
        numerics = sorted(set(zip(rows.dtype, rows.precision)) - {("", "")})
        if len(numerics) > 1:
            first = base[base.dtype != ""].iloc[0]
            lines += [f"Findings and figures use {first.dtype} at matmul precision {first.precision}; the tables "
                      "show every dtype and precision.", ""]
        for pillar in [p for p in PILLARS if p in set(rows.pillar)] + sorted(set(rows.pillar) - set(PILLARS)):
            lines += [f"{h} {pillar}", ""]
            for name in figures.get(group, []):
                if FIGURES[Path(name).name] == pillar:
                    lines += [f"![{Path(name).stem}]({name})", ""]
            lines += pillar_table(rows[rows.pillar == pillar]) + [""]
            if found.get(pillar):
                lines += ["Findings:", ""] + [f"- {s}" for s in found[pillar]] + [""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------ the figures


def _axis_scale(unit: str, values: Iterable[float]) -> tuple[float, str]:
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v]
    top = max(finite, default=1.0)
    if unit == "seconds":
        return (1e-6, "µs") if top < 1e-3 else (1e-3, "ms") if top < 10 else (1.0, "s")
    if unit == "bytes":
        return (2.0 ** 30, "GiB") if top >= 2 ** 33 else (2.0 ** 20, "MiB")
    if unit == "flops":
        return 1e9, "GFLOP"
    return 1.0, unit


def _provenance_footer(rows: pd.DataFrame, machine_info: dict) -> str:
    first = rows.iloc[0]
    dtypes = ", ".join(v for v in dict.fromkeys(rows.dtype) if v)
    precisions = ", ".join(v for v in dict.fromkeys(rows.precision) if v)
    return (f"commit {first.commit[:8]} ({first.date[:10]}) · machine {first.machine} ({machine_info.get('cpu', '?')}, "
            f"{machine_info.get('num_cpu', '?')} cores) · device {first.device} · torch {first.torch_version} · "
            f"jax {first.jax_version} · {dtypes} · matmul precision {precisions} · asv results, tape-vs-trace report")


def _figure(n_panels: int, height: float, title: str, footer: str, width: float = 6.4):
    """A figure with its title, the colour legend of the two frameworks (top right) and the provenance footer."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    # At least 11 inches: the provenance footer must fit on one line.
    fig = Figure(figsize=(max(width * n_panels, 11.0), height), dpi=110)
    axes = fig.subplots(1, n_panels, squeeze=False)[0]
    fig.suptitle(title, fontsize=12)
    fig.text(0.5, 0.12 / height, footer, ha="center", va="bottom", fontsize=7, color="0.3")
    fig.legend(handles=[Patch(color=COLORS[f], label=LABELS[f]) for f in FRAMEWORKS], loc="upper right", ncol=2,
               fontsize=9, frameon=False)
    return fig, axes


def _finish(fig, height: float, path: Path) -> None:
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1 - 0.1 / height))
    fig.savefig(path)


def _no_data(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no results for {what}", ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _log_scale(values: Iterable[float]) -> bool:
    """Log scale only where values span more than 30x: on a narrower range it would exaggerate differences."""
    positive = [v for v in values if math.isfinite(v) and v > 0]
    return bool(positive) and max(positive) / min(positive) > 30


def _set_scale(ax, which: str, log: bool) -> None:
    from matplotlib.ticker import NullFormatter

    if log:
        getattr(ax, f"set_{which}scale")("log")
        getattr(ax, f"{which}axis").set_minor_formatter(NullFormatter())


def _barh(ax, rows: pd.DataFrame, xlabel: str) -> None:
    """Horizontal bars, PyTorch and JAX side by side per case, log scale, IQR as error bars, 'failed' written."""
    if rows.empty:
        _no_data(ax, xlabel)
        return
    unit = rows.unit.iloc[0]
    scale, label = _axis_scale(unit, rows.value)
    labels = list(dict.fromkeys(rows.label))
    log = _log_scale(rows.value)
    height = 0.4
    for k, fw in enumerate(FRAMEWORKS):
        cases = rows[rows.framework == fw]
        for missing in set(labels) - set(cases.label):
            ax.text(0.01, labels.index(missing) + (k - 0.5) * height, f"{LABELS[fw]}: n/a (not run)",
                    transform=ax.get_yaxis_transform(), va="center", fontsize=6, color="0.45")
        for r in cases.itertuples(index=False):
            y = labels.index(r.label) + (k - 0.5) * height
            if r.status == "failed":
                ax.text(0.01, y, f"{LABELS[fw]}: failed", transform=ax.get_yaxis_transform(), va="center",
                        fontsize=7, color=COLORS[fw], fontweight="bold")
                continue
            err = None
            if math.isfinite(r.q25) and math.isfinite(r.q75) and r.q75 > r.q25:
                err = [[(r.value - r.q25) / scale], [(r.q75 - r.value) / scale]]
            ax.barh(y, r.value / scale, height, color=COLORS[fw], xerr=err, ecolor="0.2", capsize=2)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    _set_scale(ax, "x", log)
    ax.set_xlabel(f"{xlabel} ({label}{', log scale' if log else ''})")
    ax.grid(axis="x", which="major", alpha=0.3)
    ax.set_axisbelow(True)


def _label(rows: pd.DataFrame, with_metric: bool) -> pd.DataFrame:
    rows = rows.copy()
    parts = rows.workload + " " + rows["size"] + " " + rows.variant
    rows["label"] = (parts + " · " + rows.metric.map(METRICS)) if with_metric else parts
    rows["label"] = rows.label.str.replace(r"\s+", " ", regex=True).str.strip()
    return rows


def pillar_figure(rows: pd.DataFrame, pillar: str, footer: str, path: Path) -> None:
    """Time and memory of one pillar side by side, both frameworks."""
    sel = rows[rows.pillar == pillar]
    panels = [("time", _ordered(sel[sel.type == "time"])),
              ("compile time", sel[sel.metric == "track_compile_seconds"]),
              ("memory", _ordered(sel[sel.unit == "bytes"]))]
    panels = [(t, _label(r, with_metric=r.metric.nunique() > 1)) for t, r in panels if len(r)] \
        or [("results", sel)]
    n = max(len(r.label.unique()) if "label" in r else 1 for _, r in panels)
    height = max(3.5, 0.32 * n + 2.0)
    fig, axes = _figure(len(panels), height, f"{pillar}: PyTorch vs JAX (lower is better)", footer, width=7.0)
    for ax, (title, r) in zip(axes, panels):
        if "label" not in r:
            _no_data(ax, pillar)
            continue
        _barh(ax, r, title)
        ax.set_title(", ".join(METRICS.get(m, m) for m in dict.fromkeys(r.metric)))
    _finish(fig, height, path)


def remat_tradeoff_figure(rows: pd.DataFrame, footer: str, path: Path) -> None:
    """Peak memory against step time per remat policy: one line per framework, one point per policy."""
    cells = Cells(rows)
    cases = [c for c in cells.cases("remat", "track_peak_bytes") if c in cells.cases("remat", "time_step")]
    height = 4.8
    fig, axes = _figure(max(1, len(cases)), height, "remat trade-off: peak memory against step time per policy "
                        "(PyTorch eager step, JAX jitted step)", footer, width=4.6)
    if not cases:
        _no_data(axes[0], "remat")
    sel = rows[rows.pillar == "remat"]
    t_scale, t_label = _axis_scale("seconds", sel[sel.metric == "time_step"].value)
    m_scale, m_label = _axis_scale("bytes", sel[sel.metric == "track_peak_bytes"].value)
    offsets = {"plain": (5, 5), "remat_full": (5, -11), "remat_dots": (-10, 9)}
    for ax, (w, s) in zip(axes, cases):
        for fw in FRAMEWORKS:
            points = []
            for policy in ("plain", "remat_full", "remat_dots"):
                t = cells.get("remat", "time_step", w, s, policy, fw)
                m = cells.value("remat", "track_peak_bytes", w, s, policy, fw)
                if t is not None and t["status"] == "ok" and m is not None:
                    points.append((policy, t, m))
            if not points:
                continue
            xs = [p[1]["value"] / t_scale for p in points]
            ys = [p[2] / m_scale for p in points]
            xerr = [[max(0.0, (p[1]["value"] - p[1]["q25"]) / t_scale) if math.isfinite(p[1]["q25"]) else 0
                     for p in points],
                    [max(0.0, (p[1]["q75"] - p[1]["value"]) / t_scale) if math.isfinite(p[1]["q75"]) else 0
                     for p in points]]
            ax.errorbar(xs, ys, xerr=xerr, color=COLORS[fw], marker="o", label=LABELS[fw], capsize=2)
            for (policy, _, _), x, y in zip(points, xs, ys):
                ax.annotate(policy, (x, y), textcoords="offset points", xytext=offsets[policy], fontsize=7,
                            color=COLORS[fw])
        case = sel[(sel.workload == w) & (sel["size"] == s) & (sel.metric == "time_step")]
        log = _log_scale(case.value)
        _set_scale(ax, "x", log)
        ax.set_title(f"{w} {s}", fontsize=9)
        ax.set_xlabel(f"step time ({t_label}{', log scale' if log else ''})")
        ax.set_ylabel(f"peak memory ({m_label})")
        ax.grid(alpha=0.3)
        ax.margins(0.2)
    _finish(fig, height, path)


def _layers(size: str) -> int | None:
    match = re.match(r"L(\d+)-", size)
    return int(match.group(1)) if match else None


def remat_scaling_figure(rows: pd.DataFrame, footer: str, path: Path) -> None:
    """Peak and saved bytes of the transformer against its layer count, per framework and remat policy."""
    sel = rows[(rows.pillar == "remat") & (rows.workload == "transformer") & (rows.status == "ok")].copy()
    sel["layers"] = sel["size"].map(_layers)
    sel = sel[sel.layers.notna()]
    height = 4.8
    metrics = [("track_peak_bytes", "peak memory"), ("track_saved_bytes", "saved for backward")]
    fig, axes = _figure(2, height, "remat scaling: transformer memory against layer count", footer, width=6.0)
    styles = {"plain": "-", "remat_full": "--", "remat_dots": ":"}
    markers = {"plain": "o", "remat_full": "s", "remat_dots": "^"}
    for ax, (metric, what) in zip(axes, metrics):
        m = sel[sel.metric == metric]
        if m.empty:
            _no_data(ax, f"transformer {what}")
            continue
        scale, label = _axis_scale("bytes", m.value)
        for fw in FRAMEWORKS:
            for policy in styles:
                line = m[(m.framework == fw) & (m.variant == policy)].sort_values("layers")
                if len(line):
                    ax.plot(line.layers, line.value / scale, color=COLORS[fw], linestyle=styles[policy],
                            marker=markers[policy], label=f"{LABELS[fw]} {policy}")
        others = ", ".join(sorted({re.sub(r"^L\d+-", "", s) for s in m["size"]}))
        ax.set_title(f"{what} ({others})", fontsize=9)
        ax.set_xlabel("layers")
        ax.set_xticks(sorted(m.layers.unique()))
        ax.set_ylabel(f"{what} ({label})")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    _finish(fig, height, path)


def inference_figure(rows: pd.DataFrame, footer: str, path: Path) -> None:
    """Forward time per mode at each size (record / no_grad / inference_mode / compiled), and forward peak memory."""
    sel = rows[rows.pillar == "inference"]
    times = sel[sel.metric == "time_forward"]
    sizes = list(dict.fromkeys(zip(times.workload, times["size"])))
    peaks = _label(sel[sel.metric == "track_peak_bytes"], with_metric=False)
    height = 4.8
    fig, axes = _figure(len(sizes) + 1, height, "inference: forward time per mode at each size, and forward peak "
                        "memory", footer, width=5.0)
    modes = ["record", "no_grad", "inference_mode", "compiled"]
    for ax, (w, s) in zip(axes, sizes):
        case = times[(times.workload == w) & (times["size"] == s)]
        scale, label = _axis_scale("seconds", case.value)
        width = 0.38
        for k, fw in enumerate(FRAMEWORKS):
            base = case[(case.framework == fw) & (case.variant == "no_grad") & (case.status == "ok")].value
            for i, mode in enumerate(modes):
                r = case[(case.framework == fw) & (case.variant == mode)]
                x = i + (k - 0.5) * width
                if r.empty or r.iloc[0].status == "failed":
                    ax.text(x, 0.02, "n/a (not run)" if r.empty else "failed", rotation=90, ha="center",
                            va="bottom", fontsize=7, color="0.45" if r.empty else COLORS[fw],
                            transform=ax.get_xaxis_transform())
                    continue
                r = r.iloc[0]
                err = None
                if math.isfinite(r.q25) and math.isfinite(r.q75):
                    err = [[max(0.0, (r.value - r.q25) / scale)], [max(0.0, (r.q75 - r.value) / scale)]]
                ax.bar(x, r.value / scale, width, color=COLORS[fw], yerr=err, ecolor="0.2", capsize=2)
                if len(base) and mode != "no_grad":
                    ax.annotate(f"{r.value / base.iloc[0]:.2f}×", (x, r.value / scale), textcoords="offset points",
                                xytext=(0, 3), ha="center", fontsize=6)
        log = _log_scale(case.value)
        _set_scale(ax, "y", log)
        ax.set_axisbelow(True)
        ax.set_xticks(range(len(modes)), modes, rotation=20, fontsize=8)
        ax.set_ylabel(f"forward time ({label}{', log scale' if log else ''})")
        ax.set_title(f"{w} {s}\n(× = time / no_grad time)", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    if not sizes:
        _no_data(axes[0], "inference forward time")
    _barh(axes[-1], peaks, "forward peak memory")
    axes[-1].set_title("forward peak memory: record vs no_grad", fontsize=9)
    _finish(fig, height, path)


def figures(rows: pd.DataFrame, machine_info: dict, out: Path) -> list[str]:
    """Draw every figure for one machine's rows into `out`; returns their file names."""
    footer = _provenance_footer(rows, machine_info)
    out.mkdir(parents=True, exist_ok=True)
    for pillar in ("recording", "custom_backward", "remat", "engine", "harness"):
        pillar_figure(rows, pillar, footer, out / f"{pillar}.png")
    remat_tradeoff_figure(rows, footer, out / "remat_tradeoff.png")
    remat_scaling_figure(rows, footer, out / "remat_scaling.png")
    inference_figure(rows, footer, out / "inference.png")
    return list(FIGURES)


# ----------------------------------------------------------------------------------------------------- the outputs


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_out(results: Path, out: Path) -> None:
    """Refuse an --out that would write into the results or replace something that is not a report."""
    res, dst = results.resolve(), out.resolve()
    if dst == res:
        raise ReportError(f"--out {out} is the results folder; the report goes into a folder of its own "
                          f"(e.g. {results / 'report'})")
    if _inside(res, dst):
        raise ReportError(f"--out {out} contains the results folder {results}; replacing it would delete them")
    for folder in [dst, *dst.parents]:
        if (folder / "machine.json").exists():
            raise ReportError(f"--out {out} is inside the machine folder {folder}; asv owns that folder")
    if dst.exists() and not dst.is_dir():
        raise ReportError(f"--out {out} exists and is not a folder")
    if dst.is_dir() and any(dst.iterdir()) and not (dst / "summary.md").is_file():
        raise ReportError(f"--out {out} is a non-empty folder without summary.md, not a report; not replacing it")


README_START, README_END = "<!-- report:start -->", "<!-- report:end -->"


def readme_section(data: Results, drawn: dict[str, list[str]], out_label: str) -> str:
    """The README's results section: provenance, the headline table (step times of the recording pillar), a few
    findings per pillar and the figures, for each machine's latest commit. Every number comes from the table."""
    lines = [README_START, "",
             f"_Generated by `tape-vs-trace report --readme` from the committed results; the full report with every "
             f"number is [{out_label}/summary.md]({out_label}/summary.md)._", ""]
    for group, rows in latest(data.table).items():
        first = rows.iloc[0]
        numerics = ", ".join(f"{d} at {p} precision" for d, p in sorted(set(zip(rows.dtype, rows.precision)) - {
            ("", "")}))
        lines += [f"**{first.machine}** (device {first.device}), commit `{first.commit[:8]}` ({first.date}), "
                  f"torch {first.torch_version}, jax {first.jax_version}, {numerics}.", ""]
        base = base_numerics(rows)
        headline = rows[(rows.pillar == "recording") & (rows.metric == "time_step")]
        lines += ["One forward + backward step (`recording.GradStep`): eager = PyTorch's tape / op-by-op "
                  "`jax.value_and_grad`, compiled = `torch.compile` / `jax.jit`.", ""]
        lines += pillar_table(headline) + [""]
        found = findings(Cells(base))
        for pillar in PILLARS:
            if found.get(pillar):
                lines += [f"- **{pillar}**: " + found[pillar][0]] + [f"  {s}" for s in found[pillar][1:3]]
        lines += [""] + [f"![{Path(n).stem}]({out_label}/{n})" for n in drawn.get(group, [])] + [""]
    return "\n".join(lines + [README_END])


def split_readme(readme: Path) -> tuple[str, str]:
    """The README's text before and after its report block; a ReportError if it has no single block."""
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot read {readme}: {exc.strerror}") from None
    if text.count(README_START) != 1 or text.count(README_END) != 1:
        raise ReportError(f"{readme} needs one '{README_START}' and one '{README_END}' line to put the results in")
    head, rest = text.split(README_START)
    return head, rest.split(README_END)[1]


def update_readme(readme: Path, section: str) -> None:
    """Replace the README's report block with `section`."""
    head, tail = split_readme(readme)
    readme.write_text(head + section + tail, encoding="utf-8")


def write_report(results: Path, out: Path, warn: Warn, readme: Path | None = None) -> list[Path]:
    """Build the whole report in a temporary folder beside --out, then swap it in: a failure leaves the old one."""
    check_out(results, out)
    if readme is not None:
        split_readme(readme)  # refuse before building anything
    data = load_results(results, warn)
    present = set(data.table.framework)
    if not present >= set(FRAMEWORKS):
        have = ", ".join(LABELS.get(f, f) for f in sorted(present)) or "no framework"
        warn(f"the results hold {have} only: JAX/PyTorch ratios are n/a")
    if (data.table.status == "failed").any():
        warn(f"{int((data.table.status == 'failed').sum())} result(s) failed; the report marks them 'failed'")
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}-") as tmp:
        staging = Path(tmp) / "new"
        staging.mkdir()
        data.table.to_csv(staging / "summary.csv", index=False)
        groups = latest(data.table)
        drawn: dict[str, list[str]] = {}
        for group, rows in groups.items():
            sub = "" if len(groups) == 1 else f"{group}/"
            names = figures(base_numerics(rows), data.machines.get(rows.machine.iloc[0], {}), staging / sub)
            drawn[group] = [sub + n for n in names]
        (staging / "summary.md").write_text(markdown(data, drawn, results.as_posix()), encoding="utf-8")
        if readme is not None:
            label = Path(os.path.relpath(out, readme.resolve().parent)).as_posix()
            section = readme_section(data, drawn, label)
        if out.exists():
            out.rename(Path(tmp) / "old")
        staging.rename(out)
    if readme is not None:
        update_readme(readme, section)
    return sorted(p for p in out.rglob("*") if p.is_file())
