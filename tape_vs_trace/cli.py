"""`tape-vs-trace` command line: run the suite, report and cite its results, and the plumbing of `make bench`."""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from implementations.frameworks import DEVICES
from tape_vs_trace import distributed_run, host_check, machine, profiles
from tape_vs_trace.progress import Progress

PLUMBING = "(plumbing for make bench)"


@dataclass(frozen=True)
class Argument:
    """One `add_argument` call: its flags (or positional name) and options."""

    flags: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)


def _arg(*flags: str, **options: Any) -> Argument:
    return Argument(flags, options)


@dataclass(frozen=True)
class Command:
    """A subcommand: `handler` gets the parsed arguments and returns the exit status. `errors` names the exception
    types ("module:Class") that mean bad input or a failed step, printed as one line; they are looked up only once
    raised, so a subcommand imports its module (pandas, asv, a framework) only when it runs."""

    name: str
    help: str
    handler: Callable[[argparse.Namespace], int]
    arguments: tuple[Argument, ...] = ()
    errors: tuple[str, ...] = ()
    description: str | None = None
    plumbing: bool = False  # a step of `make bench`, listed after the commands a user runs


def _warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")  # one write: a progress line from another thread cannot split it


def _machine(args: argparse.Namespace) -> int:
    fields = machine.record()
    machine.write_asv_machine_file(fields)
    print(fields["machine"])
    return 0


def _scrub_results(args: argparse.Namespace) -> int:
    from tape_vs_trace import asv_results

    for path in asv_results.scrub_results(args.results):
        print(f"scrubbed {path}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from tape_vs_trace import calibrate

    print(f"wrote {calibrate.run(args.out, args.device)}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from tape_vs_trace import report  # pandas and matplotlib: only this subcommand pays for them

    with Progress("report") as step:
        written = report.write_report(args.results, args.out, _warn, args.readme, args.verbose, step)
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(p.relative_to(args.out.resolve()).as_posix()
                                                                  for p in written))
    return 0


def _publish(args: argparse.Namespace) -> int:
    from tape_vs_trace import publish

    with Progress("publish") as step:
        folder, pages = publish.publish(args.config, args.results, args.out, step, _warn)
    print(f"wrote the dashboard to {folder}: {len(pages)} pages, scripts and stylesheets in {publish.ASSET_DIR}/")
    return 0


def _saved(args: argparse.Namespace) -> int:
    from tape_vs_trace import saved

    print(saved.run(args.workload, args.size, args.variant, args.dtype, args.format))
    return 0


def _paired(args: argparse.Namespace) -> int:
    from tape_vs_trace import paired

    print(f"wrote {paired.run(args.out, args.results, args.only)}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from tape_vs_trace import suite_runner

    chosen = profiles.get(args.profile) if args.profile else None
    bench = args.bench or (list(chosen.bench) if chosen else None) or None
    rounds = args.rounds if args.rounds is not None else chosen.rounds if chosen else None
    budget = args.budget if args.budget is not None else chosen.budget_s if chosen else None
    if chosen:
        print(f"[run] profile {chosen.name}: {chosen.summary if not args.bench else 'the -b selection'}, "
              f"{rounds} rounds" + (f", within a {budget:.0f} s budget" if budget else ""), flush=True)
    done = suite_runner.run(args.results, bench, rounds, args.machine, timeout=args.worker_timeout, budget=budget,
                            profile=chosen.name if chosen and not args.bench else None)
    print(f"wrote {done.path}")
    return 2 if done.failed else 0  # as asv run: failed benchmarks are recorded, and the status says so


def _saved_all(args: argparse.Namespace) -> int:
    from tape_vs_trace import saved

    with Progress("saved-all") as step:
        path = saved.run_all(args.out, step=step)
    print(f"wrote {path}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from tape_vs_trace import compare

    return compare.run(args.results_a, args.results_b, args.normalise, args.strict, _warn, args.verbose)


def _distributed(args: argparse.Namespace) -> int:
    from tape_vs_trace import distributed_run

    if args.plan:
        print("\n".join(distributed_run.plan_lines(distributed_run.plan(
            args.frameworks, args.workloads, args.forms, args.modes, args.ranks, args.size, args.processes,
            args.repeat, args.warmup, args.device))))
        return 0
    with Progress("distributed") as step:
        path, failed = distributed_run.run(args.out, args.frameworks, args.workloads, args.forms, args.modes,
                                           args.ranks, args.size, args.processes, args.repeat, args.warmup,
                                           args.timeout, step, _warn, device=args.device)
    print(f"wrote {path}" + (f" ({failed} failed row(s), each with its reason)" if failed else ""))
    return 2 if failed else 0  # as run: failed rows are recorded, and the status says so


def _cite(args: argparse.Namespace) -> int:
    from tape_vs_trace import cite, cite_distributed

    if args.query == cite_distributed.QUERY:  # its own rows and rule: no asv results are read for them
        print(cite_distributed.run(args.filters, args.results, args.format, _warn))
    else:
        print(cite.run(args.query, args.filters, args.results, args.format, _warn, args.verbose))
    return 0


REPORT_ERROR = "tape_vs_trace.report.load:ReportError"
VERBOSE = _arg("--verbose", action="store_true",
               help="one warning per older result file, naming its skipped benchmarks, instead of one line for all")

COMMANDS: tuple[Command, ...] = (
    Command("cite", "one citable block for a benchmark result, with its provenance", _cite,
            description="QUERY is a benchmark name or a unique part of one; key=value narrows its parameters "
                        "(commit=, machine= too). Latest commit per machine by default. QUERY `distributed` cites "
                        "a row of results/distributed instead (keys: framework, workload, size, dtype, variant, "
                        "form, mode, ranks), and without framework= both frameworks and their JAX/PyTorch ratios.",
            arguments=(_arg("query", help="a benchmark name or a unique part of one, e.g. GradStep_mlp.time_step; "
                                          "or distributed, for a row of the distributed results"),
                       _arg("filters", nargs="*", metavar="key=value",
                            help="parameter values that narrow the rows, e.g. mode=eager dtype=float32; commit= and "
                                 "machine= too"),
                       _arg("--results", type=Path, default=Path("results"),
                            help="asv results folder (default: results)"),
                       _arg("--format", choices=("text", "markdown", "json"), default="text",
                            help="text (default), markdown to paste, or json"),
                       VERBOSE),
            errors=(REPORT_ERROR, "tape_vs_trace.cite:CiteError")),
    Command("compare", "rerun check: two results folders of the same commit, row by row", _compare,
            description="For every row in both folders: both values with their intervals and whether they agree; "
                        "the direction of every JAX/PyTorch ratio that excludes 1; times of different hosts under "
                        "one machine name are flagged, not compared.",
            arguments=(_arg("results_a", type=Path, help="asv results folder of the first run"),
                       _arg("results_b", type=Path, help="asv results folder of the rerun, same commit"),
                       _arg("--normalise", choices=host_check.NORMALISATION_KINDS,
                            help="compare times of different hosts in this calibrated unit instead of not at all"),
                       _arg("--strict", action="store_true", help="exit 1 if fewer than 95 %% of timing rows agree"),
                       VERBOSE),
            errors=(REPORT_ERROR,)),
    Command("report", "summary.csv, summary.md and figures from asv results", _report,
            description="Read every machine folder and commit of an asv results folder and write summary.csv, "
                        "summary.md and PNG figures into --out (replaced only once the new report is complete).",
            arguments=(_arg("--results", type=Path, default=Path("results"),
                            help="asv results folder (default: results)"),
                       _arg("--out", type=Path, default=Path("results/report"),
                            help="report folder (default: results/report)"),
                       _arg("--readme", type=Path, help="also put the headline table, findings and figures between "
                                                        "the report markers of this README"),
                       VERBOSE),
            errors=(REPORT_ERROR,)),
    Command("run", "the asv suite measured by worker processes (a process per framework and round), saved as asv "
                   "results", _run,
            description="Every asv benchmark (or those -b selects, with asv's regex rule) measured by one worker "
                        "process per framework and round, combinations interleaved, the order rotated; results are "
                        "saved through asv's results API after every round. `asv run` stays the reference path "
                        "(one process per combination).",
            arguments=(_arg("--results", type=Path, default=Path("results"),
                            help="asv results folder (default: results)"),
                       _arg("-b", "--bench", action="append", default=None,
                            help="regex of the benchmarks to run, as asv run -b (repeatable; default: the profile's, "
                                 "else all)"),
                       _arg("--rounds", type=int, default=None,
                            help="processes per timed combination (default: the profile's, else each benchmark's "
                                 "own rounds)"),
                       _arg("--profile", default=None,
                            help="what to run: " + "; ".join(
                                f"{p.name} ({p.summary}, {p.rounds} rounds"
                                + (f" within {p.budget_s:.0f} s)" if p.budget_s else ")")
                                for p in profiles.PROFILES.values())
                                 + "; -b, --rounds and --budget override its parts"),
                       _arg("--budget", type=float, default=None,
                            help="seconds for the whole run: a round after the third starts only while it is "
                                 "expected to end within them (default: the profile's, else none)"),
                       _arg("--machine", default=None, help="machine name (default: tape-vs-trace machine's)"),
                       _arg("--worker-timeout", type=float, default=3600.0,
                            help="seconds one worker process may take before it is stopped (default 3600)")),
            errors=("tape_vs_trace.suite_runner:RunError", "tape_vs_trace.profiles:ProfileError")),
    Command("publish", "asv's dashboard, working offline", _publish,
            description="Run asv publish and point every page's CDN scripts and stylesheets at copies shipped in the "
                        "output folder, so the dashboard works without internet.",
            arguments=(_arg("--results", type=Path, help="asv results folder (default: the config's results_dir)"),
                       _arg("--config", type=Path, default=Path("asv.conf.json"),
                            help="asv config (default: asv.conf.json)"),
                       _arg("--out", type=Path, help="dashboard folder, replaced if it holds an earlier dashboard "
                                                     "(default: the config's html_dir)")),
            errors=("tape_vs_trace.publish:PublishError", "builtins:OSError")),
    Command("saved", "bytes each framework keeps for the backward pass, by producing op", _saved,
            description="Run PyTorch and JAX, each in its own process, on the loss of one workload and print what "
                        "each keeps for the backward pass, grouped by the op that produced it.",
            arguments=(_arg("workload", help="a workload of implementations.workloads, e.g. mlp, transformer"),
                       _arg("--size", help="workload size (default: its test size)"),
                       _arg("--variant", default="plain",
                            help="what is differentiated: plain (default) or one of the workload's variants, e.g. "
                                 "remat_full, custom"),
                       _arg("--dtype", default="float32", help="float32 (default), float64 or bfloat16"),
                       _arg("--format", choices=("text", "csv"), default="text", help="text (default) or csv")),
            errors=("tape_vs_trace.saved:SavedError",)),
    Command("paired", "paired comparisons inside one framework and the remat trade-off curve", _paired,
            description="Every experiment of implementations.experiments: each point's samples from tape-vs-trace "
                        "run's results of HEAD on this machine, divided by the baseline's pass by pass within each "
                        "worker process, with the remat points' costs (a process per framework); writes "
                        "OUT/<machine>-<commit8>.csv, which the report reads.",
            arguments=(_arg("--out", type=Path, default=Path("results/paired"),
                            help="folder of the CSV (default: results/paired)"),
                       _arg("--results", type=Path, default=Path("results"),
                            help="asv results folder written by tape-vs-trace run (default: results)"),
                       _arg("--only", default=None, help="only the experiments whose name contains this text")),
            errors=("tape_vs_trace.paired:PairedError",)),
    Command("distributed", "one gradient step over N ranks per form and mode, timed inside the ranks, as CSV",
            _distributed,
            description="For each framework x workload (the specs' 'distributed' grid) x form (ddp, shard_map, "
                        "fsdp) x mode (eager, compiled) x N ranks: PROCESSES launches, each timing REPEAT steps "
                        "inside the ranks after its first call and warm-up; writes OUT/<machine>-<commit8>.csv "
                        "(merged with the rows already there), which the report reads. The ranks run on the GPUs "
                        "where there are at least 2 (NCCL; JAX's first N GPUs), at the grid's CUDA sizes, else on "
                        "the CPU, whose ranks share its cores: the times there describe overhead, not scaling.",
            arguments=(_arg("--out", type=Path, default=Path("results/distributed"),
                            help="folder of the CSV (default: results/distributed)"),
                       _arg("--frameworks", help="comma-separated frameworks (default: all)"),
                       _arg("--workloads", help="comma-separated workloads of the grid (default: all of it)"),
                       _arg("--forms", help="comma-separated forms (default: ddp,shard_map,fsdp)"),
                       _arg("--modes", help="comma-separated modes (default: eager,compiled)"),
                       _arg("--ranks", help="comma-separated rank counts N (default: "
                            f"{','.join(map(str, distributed_run.RANKS))} on the CPU, "
                            f"{','.join(map(str, distributed_run.GPU_RANKS))} up to the GPUs on GPUs; "
                            "1,2,4 for four)"),
                       _arg("--device", choices=distributed_run.DEVICES, default="auto",
                            help="where the ranks run: auto (default: the GPUs where nvidia-smi -L lists at least "
                                 f"{distributed_run.MIN_GPUS}, else the CPU), cpu, or cuda"),
                       _arg("--plan", action="store_true",
                            help="print the rows a run would make (framework, workload, size, form, mode, N, "
                                 "backend, device) and their count, and run nothing"),
                       _arg("--size", help="one size for every chosen workload, e.g. tiny (default: the grid's)"),
                       _arg("--processes", type=int, default=distributed_run.PROCESSES,
                            help="launches per row, fresh rank processes each; the interval is across them "
                                 "(default %(default)s, at least 2)"),
                       _arg("--repeat", type=int, default=distributed_run.REPEAT,
                            help="timed steps per launch (default %(default)s)"),
                       _arg("--warmup", type=int, default=distributed_run.WARMUP,
                            help="untimed calls per launch after the first, which compiles (default %(default)s)"),
                       _arg("--timeout", type=float, default=distributed_run.TIMEOUT_S,
                            help="seconds one launch may take before its ranks are killed and its row fails "
                                 "(default %(default)s)")),
            errors=("tape_vs_trace.distributed_run:DistributedError",)),
    Command("calibrate", "measure this host's matmul rate, copy bandwidth and dispatch cost", _calibrate,
            description="Fresh process per framework; writes the calibration that scrub-results stores with every "
                        "result and the roofline divides by.",
            arguments=(_arg("--out", type=Path, default=Path(".asv/calibration.json"),
                            help="calibration file (default: .asv/calibration.json)"),
                       _arg("--device", choices=DEVICES, help="default: TVT_DEVICE, else cuda where nvidia-smi is")),
            errors=("tape_vs_trace.calibrate:CalibrationError",)),
    Command("machine", "write this machine's asv record to ~/.asv-machine.json and print its name", _machine,
            errors=("builtins:ValueError",), plumbing=True),  # a bad TVT_TORCH_COMPILE_MODE
    Command("saved-all", "the saved-bytes breakdown of every workload the suite costs, as CSV", _saved_all,
            plumbing=True,
            description="PyTorch and JAX, one process each for the whole list, on the loss of every workload whose "
                        "saved bytes the suite reports; writes OUT/<machine>-<commit8>.csv.gz, which the report reads.",
            arguments=(_arg("--out", type=Path, default=Path("results/saved"),
                            help="folder of the gzip-compressed CSV (default: results/saved)"),),
            errors=("tape_vs_trace.saved:SavedError",)),
    Command("scrub-results", "remove interpreter paths from asv result files; store the host's fingerprint, "
                             "calibration and compile-cache state in fresh ones", _scrub_results, plumbing=True,
            arguments=(_arg("results", type=Path, nargs="?", default=Path("results"),
                            help="asv results folder (default: results)"),)),
)


# Every TVT_* variable the code, the Makefile and the scripts read, by who reads it (tests/test_cli.py checks the list
# against the sources): the top-level --help prints them.
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
        ("TVT_BUDGET_S", "seconds the quick profile may take, set-up included (default 420; full: no budget)"),
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
        ("TVT_PEAKCHECK", "0: no allocator peak check (tape_vs_trace.gpucheck)"),
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
