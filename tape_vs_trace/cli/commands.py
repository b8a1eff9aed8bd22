"""The subcommands of `tape-vs-trace`: each one's handler, arguments and the errors that are its bad input."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from implementations.frameworks import DEVICES
from tape_vs_trace.cli import handlers
from tape_vs_trace.results import host_check
from tape_vs_trace.running import calibrate, profiles
from tape_vs_trace.side import distributed_plan, distributed_run


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


REPORT_ERROR = "tape_vs_trace.report.load:ReportError"
VERBOSE = _arg("--verbose", action="store_true",
               help="one warning per older result file, naming its skipped benchmarks, instead of one line for all")

COMMANDS: tuple[Command, ...] = (
    Command("cite", "one citable block for a benchmark result, with its provenance", handlers.handle_cite,
            description="QUERY is a benchmark name or a unique part of one; key=value narrows its parameters "
                        "(commit=, machine= too). Latest commit per machine by default. QUERY a side table's name "
                        "(distributed, native-peak, paired, saved, first_step) cites a row of results/<name> instead, "
                        "key=value over its key columns (e.g. distributed: framework, workload, size, dtype, "
                        "variant, form, mode, ranks), each machine's newest rows by the table's rule; without "
                        "framework= both frameworks and their JAX/PyTorch ratios where the rows are like.",
            arguments=(_arg("query", help="a benchmark name or a unique part of one, e.g. GradStep_mlp.time_step; "
                                          "or a side table's name (distributed, native-peak, ...) for its rows"),
                       _arg("filters", nargs="*", metavar="key=value",
                            help="parameter values that narrow the rows, e.g. mode=eager dtype=float32; commit= and "
                                 "machine= too"),
                       _arg("--results", type=Path, default=Path("results"),
                            help="asv results folder (default: results)"),
                       _arg("--format", choices=("text", "markdown", "json"), default="text",
                            help="text (default), markdown to paste, or json"),
                       VERBOSE),
            errors=(REPORT_ERROR, "tape_vs_trace.report.cite:CiteError")),
    Command("compare", "rerun check: two results folders of the same commit, row by row", handlers.handle_compare,
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
    Command("report", "summary.csv, summary.md and figures from asv results", handlers.handle_report,
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
                   "results", handlers.handle_run,
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
                       _arg("--extend", action="store_true",
                            help="add to this commit's result file only the rounds each selected combination lacks "
                                 "(a GPU contact after one that was cut); what it holds whole is not run"),
                       _arg("--worker-timeout", type=float, default=3600.0,
                            help="seconds one worker process may take before it is stopped (default 3600)")),
            errors=("tape_vs_trace.running.runner:RunError", "tape_vs_trace.running.profiles:ProfileError")),
    Command("publish", "asv's dashboard, working offline", handlers.handle_publish,
            description="Run asv publish and point every page's CDN scripts and stylesheets at copies shipped in the "
                        "output folder, so the dashboard works without internet.",
            arguments=(_arg("--results", type=Path, help="asv results folder (default: the config's results_dir)"),
                       _arg("--config", type=Path, default=Path("asv.conf.json"),
                            help="asv config (default: asv.conf.json)"),
                       _arg("--out", type=Path, help="dashboard folder, replaced if it holds an earlier dashboard "
                                                     "(default: the config's html_dir)")),
            errors=("tape_vs_trace.report.publish:PublishError", "builtins:OSError")),
    Command("saved", "bytes each framework keeps for the backward pass, by producing op", handlers.handle_saved,
            description="Run PyTorch and JAX, each in its own process, on the loss of one workload and print what "
                        "each keeps for the backward pass, grouped by the op that produced it.",
            arguments=(_arg("workload", help="a workload of implementations.workloads, e.g. mlp, transformer"),
                       _arg("--size", help="workload size (default: its test size)"),
                       _arg("--variant", default="plain",
                            help="what is differentiated: plain (default) or one of the workload's variants, e.g. "
                                 "remat_full, custom"),
                       _arg("--dtype", default="float32", help="float32 (default), float64 or bfloat16"),
                       _arg("--format", choices=("text", "csv"), default="text", help="text (default) or csv")),
            errors=("tape_vs_trace.side.saved:SavedError",)),
    Command("paired", "paired comparisons inside one framework and the remat trade-off curve", handlers.handle_paired,
            description="Every experiment of implementations.experiments: each point's samples from tape-vs-trace "
                        "run's results of HEAD on this machine, divided by the baseline's pass by pass within each "
                        "worker process, with the remat points' costs (a process per framework); writes "
                        "OUT/<machine>-<commit8>.csv, which the report reads.",
            arguments=(_arg("--out", type=Path, default=Path("results/paired"),
                            help="folder of the CSV (default: results/paired)"),
                       _arg("--results", type=Path, default=Path("results"),
                            help="asv results folder written by tape-vs-trace run (default: results)"),
                       _arg("--only", default=None, help="only the experiments whose name contains this text")),
            errors=("tape_vs_trace.side.paired:PairedError",)),
    Command("distributed", "one gradient step over N ranks per form and mode, timed inside the ranks, as CSV",
            handlers.handle_distributed,
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
                            f"{','.join(map(str, distributed_plan.RANKS))} on the CPU, "
                            f"{','.join(map(str, distributed_plan.GPU_RANKS))} up to the GPUs on GPUs; "
                            "1,2,4 for four)"),
                       _arg("--device", choices=distributed_plan.DEVICES, default="auto",
                            help="where the ranks run: auto (default: the GPUs where nvidia-smi -L lists at least "
                                 f"{distributed_plan.MIN_GPUS}, else the CPU), cpu, or cuda"),
                       _arg("--plan", action="store_true",
                            help="print the rows a run would make (framework, workload, size, form, mode, N, "
                                 "backend, device) and their count, and run nothing"),
                       _arg("--size", help="one size for every chosen workload, e.g. tiny (default: the grid's)"),
                       _arg("--processes", type=int, default=distributed_plan.PROCESSES,
                            help="launches per row, fresh rank processes each; the interval is across them "
                                 "(default %(default)s, at least 2)"),
                       _arg("--repeat", type=int, default=distributed_plan.REPEAT,
                            help="timed steps per launch (default %(default)s)"),
                       _arg("--warmup", type=int, default=distributed_plan.WARMUP,
                            help="untimed calls per launch after the first, which compiles (default %(default)s)"),
                       _arg("--timeout", type=float, default=distributed_run.TIMEOUT_S,
                            help="seconds one launch may take before its ranks are killed and its row fails "
                                 "(default %(default)s)")),
            errors=("tape_vs_trace.side.distributed_plan:DistributedError",)),
    Command("first-step", "time to a first gradient step from a fresh process, cold and warm caches, as CSV",
            handlers.handle_first_step,
            description="Per framework, workload and size of the profile: the compiled step with empty caches and "
                        "with the warm caches an earlier process left, and the eager step, each in PROCESSES fresh "
                        "processes; the wait from the interpreter's start to the first step done, split into "
                        "import, harness, backend and compiler start, the step's compile phases and the rest; "
                        "writes OUT/<machine>-<commit8>.csv, which the report reads.",
            arguments=(_arg("--out", type=Path, default=Path("results/first_step"),
                            help="folder of the CSV (default: results/first_step)"),
                       _arg("--profile", default="cited",
                            help="cited (default: the chain at depth 8) or full (every depth of the chain's and "
                                 "the transformer's compile-time series)"),
                       _arg("--processes", type=int, default=3,
                            help="fresh processes per point, at least 2 (default %(default)s)"),
                       _arg("--frameworks", help="comma-separated frameworks (default: all)")),
            errors=("tape_vs_trace.side.first_step:FirstStepError",)),
    Command("calibrate", "measure this host's matmul rate, copy bandwidth and dispatch cost", handlers.handle_calibrate,
            description="Fresh processes per framework, taking turns; writes the calibration (each value the "
                        "median over the processes, and every process's, for the report's intervals) that "
                        "scrub-results stores with every result and the roofline divides by.",
            arguments=(_arg("--out", type=Path, default=Path(".asv/calibration.json"),
                            help="calibration file (default: .asv/calibration.json)"),
                       _arg("--processes", type=int, default=calibrate.PROCESSES,
                            help="fresh processes per framework; 2 or more give an interval (default %(default)s)"),
                       _arg("--device", choices=DEVICES, help="default: TVT_DEVICE, else cuda where nvidia-smi is")),
            errors=("tape_vs_trace.running.calibrate:CalibrationError",)),
    Command("machine", "write this machine's asv record to ~/.asv-machine.json and print its name",
            handlers.handle_machine, errors=("builtins:ValueError",), plumbing=True),  # a bad TVT_TORCH_COMPILE_MODE
    Command("saved-all", "the saved-bytes breakdown of every workload the suite costs, as CSV",
            handlers.handle_saved_all, plumbing=True,
            description="PyTorch and JAX, one process each for the whole list, on the loss of every workload whose "
                        "saved bytes the suite reports; writes OUT/<machine>-<commit8>.csv.gz, which the report reads.",
            arguments=(_arg("--out", type=Path, default=Path("results/saved"),
                            help="folder of the gzip-compressed CSV (default: results/saved)"),),
            errors=("tape_vs_trace.side.saved:SavedError",)),
    Command("native-peak", "one CPU peak-memory method for both frameworks in every mode (memray), as CSV",
            handlers.handle_native_peak, plumbing=True,
            description="Each framework and case in fresh processes under PYTHONMALLOC=malloc: memray's native heap "
                        "peak of one call after the warm-ups, above its start, with the step's analytic bounds, the "
                        "suite's own CPU method where it sees the step and the tracker's overhead; writes "
                        "OUT/<machine>-<commit8>.csv, which the report reads.",
            arguments=(_arg("--out", type=Path, default=Path("results/native-peak"),
                            help="folder of the CSV (default: results/native-peak)"),
                       _arg("--select", nargs="+", default=["check"], metavar="SELECTION",
                            help="check (default: the GPU check's workloads, bounds checked), bench (its mlp, "
                                 "compiled on both sides: make bench), curve (the CPU remat curve), pillars "
                                 "(inference, custom backward, transforms)"),
                       _arg("--processes", type=int, default=2,
                            help="fresh processes per framework and case (default: 2)")),
            errors=("tape_vs_trace.results.native_peak_rows:NativePeakError",)),
    Command("scrub-results", "remove interpreter paths from asv result files; store the host's fingerprint, "
                             "calibration and compile-cache state in fresh ones", handlers.handle_scrub_results,
            plumbing=True,
            arguments=(_arg("results", type=Path, nargs="?", default=Path("results"),
                            help="asv results folder (default: results)"),)),
)
