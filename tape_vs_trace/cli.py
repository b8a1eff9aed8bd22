"""`tape-vs-trace` command line: machine record and result hygiene for `make bench`, and the report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tape_vs_trace import machine

ENV_NAME = "existing-venv"


def scrub_results(results: Path) -> list[Path]:
    """Rename asv's `existing` environment, which embeds the interpreter's absolute path, to a path-free name.

    asv names the environment `existing-py_<path of python>` in both the result file's name and its JSON; results
    committed to the repository must not carry the path of the machine that produced them.
    """
    renamed = []
    for path in sorted(results.glob("*/*-existing-py_*.json")):
        data = json.loads(path.read_text())
        data["env_name"] = ENV_NAME
        target = path.with_name(f"{path.name.split('-existing-py_', 1)[0]}-{ENV_NAME}.json")
        if target.exists():
            raise SystemExit(f"error: {target} exists already; not overwriting it with {path.name}")
        target.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
        path.unlink()
        renamed.append(target)
    return renamed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tape-vs-trace", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("machine", help="write this machine's asv record to ~/.asv-machine.json and print its name")
    scrub = sub.add_parser("scrub-results", help="remove interpreter paths from asv result files")
    scrub.add_argument("results", type=Path, nargs="?", default=Path("results"))
    args = parser.parse_args(argv)
    if args.command == "machine":
        fields = machine.record()
        machine.write_asv_machine_file(fields)
        print(fields["machine"])
    elif args.command == "scrub-results":
        for path in scrub_results(args.results):
            print(f"renamed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
