"""`tape-vs-trace` command line: machine record and result hygiene for `make bench`, and the report."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

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


def scrub_results(results: Path) -> list[Path]:
    """Remove the machine's paths from asv result files, and record the machine details that are no series key.

    asv names an `existing` environment `existing-py_<path of python>`, in the result file's name and in its JSON,
    and records the interpreter's path as `python`: committed results must not carry the path of the machine that
    produced them. The environment becomes `existing-venv` and `python` the interpreter's version. Files renamed
    now come from a run on this machine: they also get its details (kernel, driver, CUDA, threads) under
    "tape_vs_trace", which asv ignores and the report prints.
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
            data.setdefault("tape_vs_trace", machine.details())
        target = path.with_name(f"{path.name.split('-existing-py_', 1)[0]}-{ENV_NAME}.json") if fresh else path
        if fresh and target.exists():
            raise SystemExit(f"error: {target} exists already; not overwriting it with {path.name}")
        target.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
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
    rep = sub.add_parser("report", help="summary.csv, summary.md and figures from asv results",
                         description="Read every machine folder and commit of an asv results folder and write "
                                     "summary.csv, summary.md and PNG figures into --out (replaced only once the "
                                     "new report is complete).")
    rep.add_argument("--results", type=Path, default=Path("results"), help="asv results folder (default: results)")
    rep.add_argument("--out", type=Path, default=Path("results/report"),
                     help="report folder (default: results/report)")
    rep.add_argument("--readme", type=Path, help="also put the headline table, findings and figures between the "
                     "report markers of this README")
    saved = sub.add_parser("saved", help="bytes each framework keeps for the backward pass, by producing op",
                           description="Run PyTorch and JAX, each in its own process, on the loss of one workload "
                                       "and print what each keeps for the backward pass, grouped by the op that "
                                       "produced it.")
    saved.add_argument("workload")
    saved.add_argument("--size", help="workload size (default: its test size)")
    saved.add_argument("--variant", default="plain")
    saved.add_argument("--dtype", default="float32")
    saved.add_argument("--format", choices=("text", "csv"), default="text")
    args = parser.parse_args(argv)
    if args.command == "machine":
        fields = machine.record()
        machine.write_asv_machine_file(fields)
        print(fields["machine"])
    elif args.command == "scrub-results":
        for path in scrub_results(args.results):
            print(f"scrubbed {path}")
    elif args.command == "report":
        return _report(args.results, args.out, args.readme)
    elif args.command == "saved":
        return _saved(args.workload, args.size, args.variant, args.dtype, args.format)
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
    print(f"wrote {len(written)} files to {out}: " + ", ".join(p.relative_to(out.resolve()).as_posix()
                                                             for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
