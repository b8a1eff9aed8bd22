"""What each `tape-vs-trace` subcommand does with its parsed arguments: returns the exit status. Each imports its
module (pandas, asv, a framework) only when it runs."""

from __future__ import annotations

import argparse
import sys

from tape_vs_trace.progress import Progress
from tape_vs_trace.results import machine
from tape_vs_trace.running import profiles


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")  # one write: a progress line from another thread cannot split it


def handle_machine(args: argparse.Namespace) -> int:
    fields = machine.record()
    machine.write_asv_machine_file(fields)
    print(fields["machine"])
    return 0


def handle_scrub_results(args: argparse.Namespace) -> int:
    from tape_vs_trace.results import run_record

    for path in run_record.scrub_results(args.results):
        print(f"scrubbed {path}")
    return 0


def handle_calibrate(args: argparse.Namespace) -> int:
    from tape_vs_trace.running import calibrate

    print(f"wrote {calibrate.run(args.out, args.device, args.processes)}")
    return 0


def handle_report(args: argparse.Namespace) -> int:
    from tape_vs_trace import report  # pandas and matplotlib: only this subcommand pays for them

    with Progress("report") as step:
        written = report.write_report(args.results, args.out, warn, args.readme, args.verbose, step)
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(p.relative_to(args.out.resolve()).as_posix()
                                                                  for p in written))
    return 0


def handle_publish(args: argparse.Namespace) -> int:
    from tape_vs_trace.report import publish

    with Progress("publish") as step:
        folder, pages = publish.publish(args.config, args.results, args.out, step, warn)
    print(f"wrote the dashboard to {folder}: {len(pages)} pages, scripts and stylesheets in {publish.ASSET_DIR}/")
    return 0


def handle_saved(args: argparse.Namespace) -> int:
    from tape_vs_trace.side import saved

    print(saved.run(args.workload, args.size, args.variant, args.dtype, args.format))
    return 0


def handle_paired(args: argparse.Namespace) -> int:
    from tape_vs_trace.side import paired

    print(f"wrote {paired.run(args.out, args.results, args.only)}")
    return 0


def handle_first_step(args: argparse.Namespace) -> int:
    from implementations import frameworks
    from tape_vs_trace.side import first_step

    names = tuple(args.frameworks.split(",")) if args.frameworks else frameworks.NAMES
    print(f"wrote {first_step.run(args.out, args.profile, args.processes, names)}")
    return 0


def handle_run(args: argparse.Namespace) -> int:
    from tape_vs_trace.running import runner

    chosen = profiles.get(args.profile) if args.profile else None
    bench = args.bench or None
    rows = chosen.selection if chosen and not args.bench else ()
    rounds = args.rounds if args.rounds is not None else chosen.rounds if chosen else None
    budget = args.budget if args.budget is not None else chosen.budget_s if chosen else None
    if chosen:
        print(f"[run] profile {chosen.name}: {chosen.summary if not args.bench else 'the -b selection'}, "
              f"{rounds} rounds" + (f", within a {budget:.0f} s budget" if budget else ""), flush=True)
    done = runner.run(args.results, bench, rounds, args.machine, timeout=args.worker_timeout, budget=budget,
                            profile=chosen.name if chosen and not args.bench else None, extend=args.extend, rows=rows)
    print(f"wrote {done.path}")
    return 2 if done.failed else 0  # as asv run: failed benchmarks are recorded, and the status says so


def handle_saved_all(args: argparse.Namespace) -> int:
    from tape_vs_trace.side import saved

    with Progress("saved-all") as step:
        path = saved.run_all(args.out, step=step)
    print(f"wrote {path}")
    return 0


def handle_native_peak(args: argparse.Namespace) -> int:
    from tape_vs_trace.side import native_peaks

    with Progress("native-peak") as step:
        path = native_peaks.run_all(args.out, args.select, args.processes, step=step)
    print(f"wrote {path}")
    return 0


def handle_compare(args: argparse.Namespace) -> int:
    from tape_vs_trace.report import compare

    return compare.run(args.results_a, args.results_b, args.normalise, args.strict, warn, args.verbose)


def handle_distributed(args: argparse.Namespace) -> int:
    from tape_vs_trace.side import distributed_plan, distributed_run

    if args.plan:
        print("\n".join(distributed_plan.plan_lines(distributed_plan.plan(
            args.frameworks, args.workloads, args.forms, args.modes, args.ranks, args.size, args.processes,
            args.repeat, args.warmup, args.device))))
        return 0
    with Progress("distributed") as step:
        path, failed = distributed_run.run(args.out, args.frameworks, args.workloads, args.forms, args.modes,
                                           args.ranks, args.size, args.processes, args.repeat, args.warmup,
                                           args.timeout, step, warn, device=args.device)
    print(f"wrote {path}" + (f" ({failed} failed row(s), each with its reason)" if failed else ""))
    return 2 if failed else 0  # as run: failed rows are recorded, and the status says so


def handle_cite(args: argparse.Namespace) -> int:
    from tape_vs_trace.report import cite, cite_side
    from tape_vs_trace.results.side_tables import SPECS

    if args.query in SPECS:  # a side table's rows, by its spec: no asv results are read for them
        print(cite_side.run(args.query, args.filters, args.results, args.format, warn))
    else:
        print(cite.run(args.query, args.filters, args.results, args.format, warn, args.verbose))
    return 0
