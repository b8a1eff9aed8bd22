"""`tape-vs-trace` command line: run the suite, report and cite its results, and the plumbing of `make bench`."""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap

from tape_vs_trace.cli.commands import COMMANDS, Command

PLUMBING = "(plumbing for make bench)"


# Every TVT_* variable the code, the Makefile and the scripts read, by who reads it (tests/cli/test_cli.py checks the
# list against the sources): the top-level --help prints them.
ENVIRONMENT: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("the suite and tape-vs-trace (make bench sets the first five)", (
        ("TVT_DEVICE", "cpu or cuda: the grid run, the machine's name, calibrate's device (default: cuda where "
                       "nvidia-smi is)"),
        ("TVT_INPUT_CACHE", "folder keeping the generated workload inputs between processes (unset: generated in "
                            "each)"),
        ("TVT_COMPILE_CACHE", "folder of both frameworks' persistent compilation caches (unset: each one's default)"),
        ("TVT_CALIBRATION", "calibration file scrub-results stores in fresh results (default: .asv/calibration.json)"),
        ("TVT_COMPILE_CACHE_STATE", "file of the caches' state at the run's start, which scrub-results stores"),
        ("TVT_TORCH_COMPILE_MODE", "torch.compile's mode for every compiled step: default, or reduce-overhead (CUDA "
                                   "graphs)"),
        ("TVT_INJECT_FAILURE", "tests only: torch or jax, whose loading then fails as out of memory would"),
        ("TVT_COUNT_ROOTS", "internal: the package folders benchmarks/counts.py hands its count processes"),
        ("TVT_INJECT_RANK_FAILURE", "tests only: raise:<index> or hang:<index>, whose rank worker of a distributed "
                                    "step then raises or hangs"),
        ("TVT_RANK_DEADLINE_S", "internal: seconds a distributed step's rank worker runs before it stops itself"),
        ("TVT_RANK_PARENT", "internal: the process a rank worker watches; it stops once that one is gone"),
        ("TVT_REPLACED_ALLOCATOR_SETTINGS", "internal: the allocator presets isolate_allocators replaced, for the "
                                            "record of every process after it"),
    )),
    ("make setup", (
        ("TVT_OFFLINE", "1: set up .venv without network, reusing the installed torch and jax (also "
                        "scripts/gpu_bench.sh)"),
    )),
    ("scripts/setup_offline.sh", (
        ("TVT_VENV", "the virtual environment it makes (default: .venv)"),
        ("TVT_WHEELS", "folder of local wheels of requirements/h200.txt (default: .whl)"),
    )),
    ("scripts/download_wheels.sh", (
        ("TVT_WHEEL_PYTHON", "the Python version whose wheels it fetches (default 3.12, the H200's)"),
    )),
    ("scripts/gpu_bench.sh", (
        ("TVT_BUDGET_S", "seconds the quick profile may take, set-up included (default 510; full: no budget)"),
        ("TVT_RUNNER", "worker (tape-vs-trace run, the default) or asv (asv run)"),
        ("TVT_GPU_BENCHMARKS", "\"regex ...\": these chunks instead of the profile's"),
        ("TVT_CHUNKS", "\"name ...\": these chunks of the profile alone (its plan and resumption still apply)"),
        ("TVT_PLANNED_ONLY", "1: run only the chunks the plan fits, not also those that fit in the time left"),
        ("TVT_CHUNK_TIMEOUT_S", "seconds each of those chunks may take (default 600)"),
        ("TVT_COSTS", "cost file to plan the chunks from, instead of a pre-flight"),
        ("TVT_PREFLIGHT", "0: plan from the stated defaults, without a pre-flight"),
        ("TVT_PREFLIGHT_S", "seconds the pre-flight may take (default 60)"),
        ("TVT_CURVE", "0: no tape-vs-trace paired (paired comparisons, remat curve) after the chunks"),
        ("TVT_PAIRED_TIMEOUT_S", "seconds tape-vs-trace paired may take (default 3600)"),
        ("TVT_SETUP", "0: no set-up step"),
        ("TVT_CALIBRATE", "0: no calibration step"),
        ("TVT_PEAKCHECK", "0: no allocator peak check (tape_vs_trace.side.gpucheck)"),
        ("TVT_PYTHON", "the interpreter (default: .venv/bin/python)"),
        ("TVT_ASV", "the asv command (default: .venv/bin/asv)"),
        ("TVT_CLI", "the tape-vs-trace command (default: the interpreter's -m tape_vs_trace.cli)"),
    )),
)


def _epilog() -> str:
    width = max(len(name) for _, names in ENVIRONMENT for name, _ in names)
    lines = ["environment variables:"]
    for reader, names in ENVIRONMENT:
        lines.append(f"  read by {reader}:")
        lines += [textwrap.fill(meaning, 100, initial_indent=f"    {name:<{width}}  ",
                                subsequent_indent=" " * (width + 6)) for name, meaning in names]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    """The commands a user runs first, then the plumbing, each marked so."""
    parser = argparse.ArgumentParser(prog="tape-vs-trace", description=__doc__, epilog=_epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for command in sorted(COMMANDS, key=lambda c: c.plumbing):
        text = f"{PLUMBING} {command.help}" if command.plumbing else command.help
        sub_parser = sub.add_parser(command.name, help=text, description=command.description or text)
        for argument in command.arguments:
            sub_parser.add_argument(*argument.flags, **argument.options)
        sub_parser.set_defaults(run=command)
    return parser


def _error_types(names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    """The classes named "module:Class", looked up once the handler raised: by then it has imported their modules."""
    return tuple(getattr(importlib.import_module(module), cls) for module, cls in (n.split(":") for n in names))


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; its bad input or failed step is one line on stderr and exit status 1, not a traceback."""
    args = _parser().parse_args(argv)
    command: Command = args.run
    try:
        return command.handler(args)
    except Exception as exc:
        if not isinstance(exc, _error_types(command.errors)):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
