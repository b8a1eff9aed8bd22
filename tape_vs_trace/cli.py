"""`tape-vs-trace` command line: machine record and result hygiene for `make bench`, and the report."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from implementations.frameworks import DEVICES
from tape_vs_trace import machine

ENV_NAME = "existing-venv"


def _python_version(value: str) -> str:
    """'3.11' for an interpreter path asv recorded (asking that interpreter), the value itself otherwise."""
    if "/" not in value:
        return value
    try:
        return subprocess.run([value, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _calibration() -> dict | None:
    """This run's calibration: the file named by TVT_CALIBRATION (what make bench gives scrub-results), else
    .asv/calibration.json; None when there is none or it is unreadable (the record then says so)."""
    path = Path(os.environ.get("TVT_CALIBRATION") or ".asv/calibration.json")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_details() -> dict:
    """The "tape_vs_trace" entry of a fresh result file: the host's fingerprint and the run's calibration."""
    info = machine.details()
    info["calibration"] = _calibration()
    return info


def _failed(value: object) -> bool:
    return value is None


def merge_results(old: dict, new: dict) -> tuple[dict, list[str]]:
    """`new` (a later run of the same commit and environment) laid over `old`: a benchmark the new run measured
    takes the new values; one it did not run keeps the old ones; where the new run failed a parameter combination
    (null) that the old run measured, the old value stays. Returns the merged data and the benchmarks whose values
    (some or all) still come from `old`."""
    merged = dict(new)
    merged["results"] = dict(old.get("results", {}))
    merged["durations"] = {**old.get("durations", {}), **new.get("durations", {})}
    kept_old = [name for name in merged["results"] if name not in new.get("results", {})]
    columns = new.get("result_columns", [])
    same_columns = columns == old.get("result_columns")
    for name, entry in new.get("results", {}).items():
        previous = merged["results"].get(name)
        if previous is None or not same_columns or len(columns) < 3:
            merged["results"][name] = entry
            continue
        # Elementwise only for the same parameter grid and benchmark version: otherwise positions mean other things.
        if previous[1:3] != entry[1:3] or not isinstance(entry[0], list) or not isinstance(previous[0], list):
            merged["results"][name] = entry
            continue
        keep = [_failed(a) and not _failed(b) for a, b in zip(entry[0], previous[0])]
        if not any(keep):
            merged["results"][name] = entry
            continue
        combined = list(entry)
        for i, (column, value) in enumerate(zip(columns, entry)):
            if isinstance(value, list) and column not in ("params",) and i < len(previous) \
                    and isinstance(previous[i], list) and len(value) == len(keep) == len(previous[i]):
                combined[i] = [p if k else v for v, p, k in zip(value, previous[i], keep)]
        merged["results"][name] = combined
        kept_old.append(name)
    return merged, sorted(kept_old)


def scrub_results(results: Path) -> list[Path]:
    """Remove the machine's paths from asv result files, and record the machine details that are no series key.

    asv names an `existing` environment `existing-py_<path of python>`, in the result file's name and in its JSON,
    and records the interpreter's path as `python`: committed results must not carry the path of the machine that
    produced them. The environment becomes `existing-venv` and `python` the interpreter's version. Files renamed
    now come from a run on this machine: they also get its fingerprint and the run's calibration under
    "tape_vs_trace", which asv ignores and the report prints.

    Safe to run twice and after a second run of the same commit: a fresh file whose scrubbed name exists already
    is merged into it (`merge_results`); an older run's record (another fingerprint or calibration) moves to
    "tape_vs_trace"["earlier_runs"] with the benchmarks whose values still come from it, so no saved value is lost
    and none loses its provenance.
    """
    changed = []
    for path in sorted(p for p in results.glob("*/*.json") if p.name != "machine.json"):
        data = json.loads(path.read_text())
        fresh = "-existing-py_" in path.name
        if not fresh and "/" not in str(data.get("python", "")):
            continue
        data["env_name"] = ENV_NAME if fresh else data["env_name"]
        data["python"] = _python_version(str(data.get("python", "")))
        data.setdefault("params", {})["python"] = data["python"]
        if fresh:
            data["tape_vs_trace"] = {**data.get("tape_vs_trace", {}), **run_details()}
        target = path.with_name(f"{path.name.split('-existing-py_', 1)[0]}-{ENV_NAME}.json") if fresh else path
        if fresh and target.exists():
            old = json.loads(target.read_text())
            data, kept = merge_results(old, data)
            earlier = old.get("tape_vs_trace", {})
            runs = earlier.pop("earlier_runs", [])
            ours = data["tape_vs_trace"]
            # Chunks of one run (gpu_bench.sh scrubs after each) share a record: keep one, not one per chunk.
            same_run = earlier.get("calibration") == ours.get("calibration") and machine.same_host(earlier, ours)[0]
            if kept and not same_run:
                runs.append({**earlier, "benchmarks_kept": kept})
            data["tape_vs_trace"]["earlier_runs"] = runs
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
        os.replace(tmp, target)
        if target != path:
            path.unlink()
        changed.append(target)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tape-vs-trace", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("machine", help="write this machine's asv record to ~/.asv-machine.json and print its name")
    scrub = sub.add_parser("scrub-results", help="remove interpreter paths from asv result files")
    scrub.add_argument("results", type=Path, nargs="?", default=Path("results"))
    cal = sub.add_parser("calibrate", help="measure this host's matmul rate, copy bandwidth and dispatch cost",
                         description="Fresh process per framework; writes the calibration that scrub-results "
                                     "stores with every result and the roofline divides by.")
    cal.add_argument("--out", type=Path, default=Path(".asv/calibration.json"),
                     help="calibration file (default: .asv/calibration.json)")
    cal.add_argument("--device", choices=DEVICES, help="default: TVT_DEVICE, else cuda where nvidia-smi is")
    rep = sub.add_parser("report", help="summary.csv, summary.md and figures from asv results",
                         description="Read every machine folder and commit of an asv results folder and write "
                                     "summary.csv, summary.md and PNG figures into --out (replaced only once the "
                                     "new report is complete).")
    rep.add_argument("--results", type=Path, default=Path("results"), help="asv results folder (default: results)")
    rep.add_argument("--out", type=Path, default=Path("results/report"),
                     help="report folder (default: results/report)")
    rep.add_argument("--readme", type=Path, help="also put the headline table, findings and figures between the "
                     "report markers of this README")
    pub = sub.add_parser("publish", help="asv's dashboard, working offline",
                         description="Run asv publish and point every page's CDN scripts and stylesheets at copies "
                                     "shipped in the output folder, so the dashboard works without internet.")
    pub.add_argument("--results", type=Path, help="asv results folder (default: the config's results_dir)")
    pub.add_argument("--config", type=Path, default=Path("asv.conf.json"), help="asv config (default: asv.conf.json)")
    pub.add_argument("--out", type=Path, help="dashboard folder, replaced if it holds an earlier dashboard "
                     "(default: the config's html_dir)")
    saved = sub.add_parser("saved", help="bytes each framework keeps for the backward pass, by producing op",
                           description="Run PyTorch and JAX, each in its own process, on the loss of one workload "
                                       "and print what each keeps for the backward pass, grouped by the op that "
                                       "produced it.")
    saved.add_argument("workload")
    saved.add_argument("--size", help="workload size (default: its test size)")
    saved.add_argument("--variant", default="plain")
    saved.add_argument("--dtype", default="float32")
    saved.add_argument("--format", choices=("text", "csv"), default="text")
    paired = sub.add_parser("paired", help="paired comparisons inside one framework and the remat trade-off curve",
                            description="Every experiment of tape_vs_trace.paired: each framework's points built in "
                                        "one process and timed call by call, alternating, in ROUNDS processes per "
                                        "framework; writes OUT/<machine>-<commit8>.csv, which the report reads.")
    paired.add_argument("--out", type=Path, default=Path("results/paired"),
                        help="folder of the CSV (default: results/paired)")
    paired.add_argument("--rounds", type=int, default=3, help="processes per framework (default 3, at least 2)")
    paired.add_argument("--only", default=None, help="run only the experiments whose name contains this text")
    paired.add_argument("--stage", choices=("all", "first", "rest"), default="all",
                        help="all: every round now (default); first: round 1 only, kept in --raw; rest: the other "
                             "rounds, then the CSV with round 1 from --raw (make bench runs 'first' before asv and "
                             "'rest' after it, so the processes of a point lie minutes apart)")
    paired.add_argument("--raw", type=Path, default=None, help="folder that keeps the first round between the stages")
    all_saved = sub.add_parser("saved-all", help="the saved-bytes breakdown of every workload the suite costs, as CSV",
                               description="PyTorch and JAX, one process each for the whole list, on the loss of "
                                           "every workload whose saved bytes the suite reports; writes "
                                           "OUT/<machine>-<commit8>.csv, which the report reads.")
    all_saved.add_argument("--out", type=Path, default=Path("results/saved"),
                           help="folder of the CSV (default: results/saved)")
    cmp = sub.add_parser("compare", help="rerun check: two results folders of the same commit, row by row",
                         description="For every row in both folders: both values with their intervals and whether "
                                     "they agree; the direction of every JAX/PyTorch ratio that excludes 1; times of "
                                     "different hosts under one machine name are flagged, not compared.")
    cmp.add_argument("results_a", type=Path)
    cmp.add_argument("results_b", type=Path)
    cmp.add_argument("--normalise", choices=machine.NORMALISATION_KINDS,
                     help="compare times of different hosts in this calibrated unit instead of not at all")
    cmp.add_argument("--strict", action="store_true", help="exit 1 if fewer than 95 %% of timing rows agree")
    cite = sub.add_parser("cite", help="one citable block for a benchmark result, with its provenance",
                          description="QUERY is a benchmark name or a unique part of one; key=value narrows its "
                                      "parameters (commit=, machine= too). Latest commit per machine by default.")
    cite.add_argument("query")
    cite.add_argument("filters", nargs="*", metavar="key=value")
    cite.add_argument("--results", type=Path, default=Path("results"), help="asv results folder (default: results)")
    cite.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    args = parser.parse_args(argv)
    if args.command == "machine":
        try:
            fields = machine.record()
        except ValueError as exc:  # a bad TVT_TORCH_COMPILE_MODE
            print(f"error: {exc}", file=sys.stderr)
            return 1
        machine.write_asv_machine_file(fields)
        print(fields["machine"])
    elif args.command == "scrub-results":
        for path in scrub_results(args.results):
            print(f"scrubbed {path}")
    elif args.command == "calibrate":
        from tape_vs_trace import calibrate

        return calibrate.run(args.out, args.device)
    elif args.command == "report":
        return _report(args.results, args.out, args.readme)
    elif args.command == "publish":
        return _publish(args.config, args.results, args.out)
    elif args.command == "saved":
        return _saved(args.workload, args.size, args.variant, args.dtype, args.format)
    elif args.command == "paired":
        return _paired(args.out, args.rounds, args.only, args.stage, args.raw)
    elif args.command == "saved-all":
        return _saved_all(args.out)
    elif args.command == "compare":
        return _compare(args.results_a, args.results_b, args.normalise, args.strict)
    elif args.command == "cite":
        return _cite(args.query, args.filters, args.results, args.format)
    return 0


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _compare(results_a: Path, results_b: Path, normalise: str | None, strict: bool) -> int:
    """Missing or corrupt folders get one line on stderr and exit status 1, never a traceback."""
    from tape_vs_trace import compare
    from tape_vs_trace.report import ReportError

    try:
        return compare.run(results_a, results_b, normalise, strict, _warn)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _cite(query: str, filters: list[str], results: Path, fmt: str) -> int:
    """An ambiguous or empty query, or bad results, get one line on stderr and exit status 1."""
    from tape_vs_trace import cite
    from tape_vs_trace.report import ReportError

    try:
        print(cite.run(query, filters, results, fmt, _warn))
    except (ReportError, cite.CiteError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _saved(workload: str, size: str | None, variant: str, dtype: str, fmt: str) -> int:
    """Bad input or a failed framework process gets one line on stderr and exit status 1, never a traceback."""
    from tape_vs_trace import saved

    try:
        print(saved.run(workload, size, variant, dtype, fmt))
    except saved.SavedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _paired(out: Path, rounds: int, only: str | None, stage: str = "all", raw: Path | None = None) -> int:
    """Bad input or a failed worker gets one line on stderr and exit status 1; an older CSV is left whole."""
    from tape_vs_trace import paired

    try:
        path = paired.run(out, rounds, only, stage, raw)
    except paired.PairedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if stage == "first":
        print(f"kept round 1 of {rounds} in {path}: `tape-vs-trace paired --stage rest --raw {raw}` takes the rest")
    else:
        print(f"wrote {path}")
    return 0


def _saved_all(out: Path) -> int:
    """A failed framework process or an unwritable folder gets one line on stderr and exit status 1."""
    from tape_vs_trace import saved

    try:
        path = saved.run_all(out)
    except saved.SavedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


def _report(results: Path, out: Path, readme: Path | None = None) -> int:
    """Bad input gets one line on stderr and exit status 1, never a traceback."""
    from tape_vs_trace import report  # pandas and matplotlib: only this subcommand pays for them

    def warn(message: str) -> None:
        print(f"warning: {message}", file=sys.stderr)

    try:
        written = report.write_report(results, out, warn, readme)
    except report.ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a folder that cannot be written, a disk that is full: one line, not a traceback
        print(f"error: cannot write the report to {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} files to {out}: " + ", ".join(p.relative_to(out.resolve()).as_posix()
                                                             for p in written))
    return 0


def _publish(config: Path, results: Path | None, out: Path | None) -> int:
    """Bad input gets one line on stderr and exit status 1, never a traceback."""
    from tape_vs_trace import publish

    try:
        folder, pages = publish.publish(config, results, out)
    except (publish.PublishError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote the dashboard to {folder}: {len(pages)} pages, scripts and stylesheets in {publish.ASSET_DIR}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
