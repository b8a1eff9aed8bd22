"""`tape-vs-trace saved`: what each framework keeps for the backward pass of one workload, grouped by the op that
produced it, PyTorch beside JAX (report.breakdown.saved_figure draws them as stacked bars); and `tape-vs-trace
saved-all`, the records of every workload the suite costs, as data beside the asv results
(results/saved/<machine>-<commit8>.csv.gz).

Each framework runs in its own subprocess (``python -m tape_vs_trace.side.saved FRAMEWORK ...`` prints its records as
JSON), so torch and jax never share a process. The function measured is the benchmarks' loss,
``sum(forward * cotangent)``, on the CPU; the records come from ``probe.saved_breakdown``.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from implementations import frameworks, workloads
from tape_vs_trace.progress import Step, quiet
from tape_vs_trace.results.schema import SAVED_FIELDS as ALL_FIELDS
from tape_vs_trace.results.schema import SAVED_LOOP as LOOP
from tape_vs_trace.results.schema import SAVED_VARIANTS as SUITE_VARIANTS

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ("framework", "op", "count", "bytes", "is_argument")
CASE_LINE = "saved-case:"  # how the subprocess marks, on stderr, the case it starts: the parent's progress


def programs(workload: str) -> list[str]:
    """Every program of `workload` as the report names them (report.load.program_name): each style and attention
    it has, joined with "/" ("matched/fused"); [""] for a workload with neither axis."""
    s = workloads.spec(workload)
    return ["/".join(p) for p in itertools.product(*(axis for axis in (s.styles, s.attentions) if axis))]


def with_program(inputs: workloads.Inputs, program: str) -> workloads.Inputs:
    """`inputs` running `program` (one of programs(workload)); "" leaves them as they are."""
    s, parts = workloads.spec(inputs.workload), iter(program.split("/") if program else [])
    style = next(parts) if s.styles and program else None
    attention = next(parts, None) if s.attentions and program else None
    return workloads.program_of(inputs, style, attention)


def suite_cases(device: str = "cpu") -> list[tuple[str, str, str, str, str]]:
    """The (workload, size, variant, dtype, program) cases of the specs' 'saved' grid: every size it names, in
    float32, with each of SUITE_VARIANTS the workload has, in every program (programs) of the plain variant (the
    custom backward is written the same in every style)."""
    return [(w, size, v, "float32", p) for w, sizes in workloads.runs("saved", device).items() for size in sizes
            for v in SUITE_VARIANTS if v in workloads.spec(w).variants
            for p in (programs(w) if v == "plain" else [_matched(w)])]


def _matched(workload: str) -> str:
    """The matched program with written attention (what the classes without program axes run), as named."""
    s = workloads.spec(workload)
    return "/".join(value for value, axis in (("matched", s.styles), ("written", s.attentions)) if axis)


class SavedError(Exception):
    """Bad input or a failed framework subprocess: one line for the user."""


def _records(framework: str, workload: str, size: str, variant: str, dtype: str, program: str = "") -> list[dict]:
    """saved_breakdown of the workload's loss in this process (the subprocess side)."""
    return _batch_records(framework, [[workload, size, variant, dtype, program]])[0]


def _batch_records(framework: str, cases: list[list[str]]) -> list[list[dict]]:
    """saved_breakdown of every case in this one process: the framework is imported and configured once."""
    fw = frameworks.load(framework, "highest", float64=any(case[3] == "float64" for case in cases))
    out = []
    for i, (workload, size, variant, dtype, *program) in enumerate(cases, 1):
        named = " ".join(filter(None, (workload, size, variant, dtype, *program)))
        print(f"{CASE_LINE} case {i} of {len(cases)}, {named}", file=sys.stderr, flush=True)
        loop = LOOP if workloads.spec(workload).formulations else None
        inputs = with_program(workloads.make_inputs(workload, size, dtype), "".join(program))
        fn, args = fw.steps.loss_fn(inputs, variant, "cpu", loop)
        out.append([{"op": r.op, "shape": list(r.shape), "dtype": r.dtype, "nbytes": r.nbytes,
                     "is_argument": r.is_argument} for r in fw.probe.saved_breakdown(fn, *args)])
    return out


def _subprocess(argv: list[str], step: Step = quiet) -> list:
    """The subprocess's JSON answer; each case it starts is a step. SavedError with its last line if it fails."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    # stdout into a file, stderr read as it comes: no pipe fills up unread while the other is read
    with tempfile.TemporaryFile("w+", encoding="utf-8") as stdout:
        with subprocess.Popen([sys.executable, "-m", "tape_vs_trace.side.saved", *argv], stdout=stdout,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT) as child:
            other = []
            for line in child.stderr:
                if line.startswith(CASE_LINE):
                    step(f"{frameworks.label(argv[0])}: {line.removeprefix(CASE_LINE).strip()}")
                elif line.strip():
                    other.append(line.strip())
        if child.returncode != 0:
            raise SavedError(f"{frameworks.label(argv[0])} failed: {(other or ['no output'])[-1]}")
        stdout.seek(0)
        return json.load(stdout)


def collect(framework: str, workload: str, size: str, variant: str, dtype: str) -> list[dict]:
    """The records of one framework, from a fresh subprocess."""
    return _subprocess([framework, workload, size, variant, dtype])


def collect_all(framework: str, cases: Iterable[tuple[str, str, str, str]], step: Step = quiet) -> list[list[dict]]:
    """The records of every case for one framework, from one fresh subprocess (one import of the framework)."""
    return _subprocess([framework, "--batch", json.dumps([list(c) for c in cases])], step)


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SavedError(f"cannot name the commit: git rev-parse HEAD failed in {ROOT}")
    return done.stdout.strip()


def run_all(out: Path, cases: Iterable[tuple[str, str, str, str]] | None = None, machine_name: str | None = None,
            commit: str | None = None, step: Step = quiet) -> Path:
    """Write every case's records, both frameworks, to OUT/<machine>-<commit8>.csv.gz (replaced whole); returns it.
    `step` hears each framework's start and each case as its process starts it."""
    from tape_vs_trace.results import machine

    cases = suite_cases() if cases is None else list(cases)
    cases = [(*c, "") if len(c) == 4 else tuple(c) for c in cases]
    for workload, size, variant, dtype, program in cases:
        try:
            workloads.validate(workload, size, dtype, variant)
            if program and program not in programs(workload):
                raise ValueError(f"unknown program {program!r} for {workload}; valid choices: "
                                 f"{', '.join(programs(workload))}")
        except ValueError as exc:
            raise SavedError(str(exc)) from None
    try:  # before the framework processes run: a folder that cannot be made fails at once
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SavedError(f"cannot create {out}: {exc.strerror or exc}") from None
    commit = commit or _commit()
    machine_name = machine_name or machine.record()["machine"]
    rows = []
    for name in frameworks.NAMES:
        step(f"{frameworks.label(name)}: {len(cases)} case(s) in one process (importing {frameworks.label(name)})")
        answers = collect_all(name, cases, step)
        if len(answers) != len(cases):
            raise SavedError(f"{frameworks.label(name)} answered {len(answers)} of {len(cases)} cases")
        for case, records in zip(cases, answers):
            rows += [dict(zip(ALL_FIELDS[:5], case), framework=name, op=r["op"], shape="x".join(map(str, r["shape"])),
                          tensor_dtype=r["dtype"], nbytes=r["nbytes"], is_argument=r["is_argument"], commit=commit)
                     for r in records]
    return write_all(out / f"{machine_name}-{commit[:8]}.csv.gz", rows)


def write_all(path: Path, rows: Iterable[Mapping]) -> Path:
    """The records as a gzip-compressed CSV (no name or time in its header, so the same rows give the same bytes);
    an uncompressed CSV of the same name, as earlier commits wrote, is removed so that one file holds the commit."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=ALL_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    try:
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(text.getvalue().encode("utf-8"))
        os.replace(tmp, path)
        path.with_name(path.name.removesuffix(".gz")).unlink(missing_ok=True)
    except OSError as exc:
        raise SavedError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def rows_by_op(framework: str, records: Iterable[Mapping]) -> list[dict]:
    """One row per producing op: how many saved storages/residuals it made and their bytes."""
    grouped: dict[str, dict] = {}
    for r in records:
        row = grouped.setdefault(r["op"], {"framework": framework, "op": r["op"], "count": 0, "bytes": 0,
                                           "is_argument": r["is_argument"]})
        row["count"] += 1
        row["bytes"] += r["nbytes"]
    return sorted(grouped.values(), key=lambda row: (row["is_argument"], -row["bytes"], row["op"]))


def format_text(rows: list[dict], title: str) -> str:
    names = [name for name in frameworks.NAMES if any(r["framework"] == name for r in rows)]
    totals = ("total", "extra (not argument)")
    width = max([*map(len, totals), *(len(r["op"]) for r in rows)])
    lines = [title, f"{'op':<{width}}" + "".join(f"  {frameworks.label(n):>22}" for n in names)]

    def cell(count: int | None, nbytes: int | None) -> str:
        return f"  {'':>22}" if count is None else f"  {f'{nbytes:,} B ({count})':>22}"

    for op in dict.fromkeys(r["op"] for r in sorted(rows, key=lambda r: (r["is_argument"], -r["bytes"], r["op"]))):
        found = {r["framework"]: r for r in rows if r["op"] == op}
        lines.append(f"{op:<{width}}" + "".join(cell(found[n]["count"], found[n]["bytes"]) if n in found
                                                else cell(None, None) for n in names))
    for label, keep in zip(totals, (lambda r: True, lambda r: not r["is_argument"])):
        sums = [[r for r in rows if r["framework"] == n and keep(r)] for n in names]
        lines.append(f"{label:<{width}}" + "".join(cell(sum(r["count"] for r in s), sum(r["bytes"] for r in s))
                                                    for s in sums))
    return "\n".join(lines)


def format_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: r[k] for k in FIELDS} for r in rows)
    return out.getvalue()


def run(workload: str, size: str | None, variant: str, dtype: str, fmt: str) -> str:
    """The report of `tape-vs-trace saved`; a SavedError names the valid choices for bad input."""
    try:
        spec = workloads.spec(workload)
        size = spec.test_size if size is None else size
        workloads.validate(workload, size, dtype, variant)
    except ValueError as exc:
        raise SavedError(str(exc)) from None
    rows = [row for name in frameworks.NAMES for row in rows_by_op(name, collect(name, workload, size, variant,
                                                                                     dtype))]
    if fmt == "csv":
        return format_csv(rows)
    return format_text(rows, f"saved for the backward pass of sum({workload} * cotangent), size {size}, variant "
                             f"{variant}, {dtype}; bytes (records) per producing op")


if __name__ == "__main__":
    if sys.argv[2:3] == ["--batch"]:
        json.dump(_batch_records(sys.argv[1], json.loads(sys.argv[3])), sys.stdout)
    else:
        json.dump(_records(*sys.argv[1:6]), sys.stdout)
