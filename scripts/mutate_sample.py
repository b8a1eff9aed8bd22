"""A mutation score that fits in a session: every Nth mutant of every mutated file, run by mutmut, then scored.

`make mutate` runs all of mutmut's mutants of the measurement code (pyproject.toml's only_mutate: the probes, the
steps, the report's statistics, loading and ratio rule), which takes hours on a 2-core machine, most of them in the
probe and steps mutants, whose covering tests run torch and JAX. This script takes a systematic sample instead: the
mutants of each file in mutmut's order (by function, then by mutation number), every Nth of them from an offset of
N // 2, so every file and every long function is represented in proportion to its mutants. Sampling mutants this way
estimates the full score (Wong and Mathur, "Reducing the cost of mutation testing: an empirical study", JSS 1995,
found a 10 % sample within a few points of the full mutation score).

Mutants that no selected test reaches ("no test") are run with `--outside` against OUTSIDE_TESTS, the tests that
reach them but that pyproject.toml keeps out of mutmut's selection (they break under mutmut's tracing run, or need
scripts/): each mutant is switched on by MUTANT_UNDER_TEST in mutants/, as mutmut does, after a run with none
switched on has passed. Their results go to mutants/outside.json and into a second table of the score.

Steps: mutmut generates the mutants (its own functions, pinned by pyproject.toml's mutmut==3.8.1), the sample is
written to mutants/sample.txt, `mutmut run` runs exactly those, and the score is read back from mutmut's per-file
results (mutants/**/*.meta) into mutants/sample-score.md. `--score` only reads the results of an earlier run.

    python scripts/mutate_sample.py --every 20 --children 2 --outside
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
# mutmut's exit codes (mutmut.stats.status_by_exit_code), folded into the columns of the score.
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no test", 33: "no test", 36: "timeout", -24: "timeout",
          24: "timeout", 152: "timeout", 255: "timeout", None: "not run"}
COLUMNS = ("killed", "survived", "timeout", "no test", "not run", "other")
# The tests that reach the mutants mutmut's selection cannot: torch.compile's graph counts, deselected in
# pyproject.toml (the tracing run breaks Dynamo's graph), the slow compiled-probe tests (deselected by `-m "not slow"`),
# the CUDA fakes of tests/test_gpu_paths.py (ignored there: most of that file runs subprocesses) and the shared
# counts. A mutant is killed when this run fails with it switched on.
OUTSIDE_TESTS = (
    "tests/test_remat.py::test_budget_zero_recomputes_and_budget_one_does_not",
    "tests/test_remat.py::test_torch_compiled_transformer_is_one_graph",
    "tests/test_remat.py::test_two_budgets_compile_two_graphs",
    "tests/test_remat.py::test_every_budget_of_the_curve_runs_its_own_graph",
    "tests/test_compile_probe.py",
    "tests/test_gpu_paths.py::test_torch_cuda_peak_counts_the_cublas_workspace_inside",
    "tests/test_benchmarks.py::test_cached_counts_equal_the_direct_probe_values",
)
OUTSIDE_SECONDS = 600  # per mutant; the run with none switched on takes under a minute on the 2-core machine


class SampleError(Exception):
    """Printed as one line, exit status 2."""


def generate(children: int) -> None:
    """mutmut's mutant generation alone (the first step of `mutmut run`), in the repository root."""
    os.chdir(ROOT)
    from mutmut import __main__ as mm
    from mutmut.mutation.trampoline import set_mutant_under_test

    set_mutant_under_test("mutant_generation")
    MUTANTS.mkdir(exist_ok=True)
    mm.copy_src_dir()
    mm.copy_also_copy_files()
    mm.setup_source_paths()
    mm.store_lines_covered_by_tests()
    mm.create_mutants(children)


def results(files: str = "*") -> dict[str, dict[str, int | None]]:
    """{mutated file: {mutant name: mutmut's exit code or None}}, from mutants/**/*.meta, for the files matching the
    glob `files` (relative to the repository root, e.g. 'implementations/*')."""
    found = {}
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        if not fnmatch.fnmatch(str(meta.relative_to(MUTANTS).with_suffix("")), files):
            continue
        try:
            codes = json.loads(meta.read_text())["exit_code_by_key"]
        except (OSError, ValueError, KeyError) as exc:
            raise SampleError(f"cannot read mutmut's results {meta}: {exc}") from None
        if codes:
            found[str(meta.relative_to(MUTANTS).with_suffix(""))] = codes
    if not found:
        raise SampleError(f"no mutants of {files!r} under {MUTANTS}: run without --score first, or check --files")
    return found


def _order(name: str) -> tuple[str, int]:
    """mutmut's order: function, then mutation number (x_f__mutmut_10 after x_f__mutmut_9)."""
    head, _, number = name.rpartition("__mutmut_")
    return head, int(number) if number.isdigit() else 0


def sample(by_file: dict[str, dict], every: int) -> list[str]:
    """Every `every`-th mutant of each file in mutmut's order, from offset every // 2."""
    if every < 1:
        raise SampleError(f"--every must be 1 or more, not {every}")
    chosen = []
    for codes in by_file.values():
        chosen += sorted(codes, key=_order)[every // 2::every]
    return chosen


def _outside_run(mutant: str) -> subprocess.CompletedProcess:
    """OUTSIDE_TESTS in mutants/ with `mutant` switched on (mutmut's trampoline reads MUTANT_UNDER_TEST)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-x", "-m", "", "-p", "no:cacheprovider", *OUTSIDE_TESTS]
    try:
        return subprocess.run(argv, cwd=MUTANTS, env={**os.environ, "MUTANT_UNDER_TEST": mutant}, capture_output=True,
                              text=True, timeout=OUTSIDE_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"timed out after {OUTSIDE_SECONDS} s")


def _verdict(done: subprocess.CompletedProcess) -> str:
    """'survived', or 'killed by' the first test pytest names as failed (its short summary's FAILED/ERROR line)."""
    if done.returncode == 0:
        return "survived"
    for line in (done.stdout + done.stderr).splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return f"killed by {line.split()[1]}"
    return f"killed (pytest status {done.returncode})"


def outside(by_file: dict[str, dict], chosen: list[str]) -> dict[str, str]:
    """Run the sampled 'no test' mutants against OUTSIDE_TESTS; {name: 'killed by TEST' or 'survived'}, saved to
    mutants/outside.json. The run with no mutant switched on must pass first."""
    wanted = set(chosen)
    untested = sorted((n for codes in by_file.values() for n, c in codes.items()
                       if n in wanted and STATUS.get(c) == "no test"), key=_order)
    if not untested:
        return {}
    if (ROOT / "scripts").is_dir():  # tests/test_gpu_paths.py reads scripts/, which mutmut does not copy
        shutil.copytree(ROOT / "scripts", MUTANTS / "scripts", dirs_exist_ok=True)
    clean = _outside_run("none")
    if clean.returncode != 0:
        last = ((clean.stdout + clean.stderr).strip().splitlines() or ["no output"])[-1]
        raise SampleError(f"the tests outside the selection fail with no mutant switched on: {last}")
    found = {}
    for i, name in enumerate(untested, 1):
        found[name] = _verdict(_outside_run(name))
        print(f"mutate_sample: outside the selection {i}/{len(untested)}: {name} {found[name]}", flush=True)
    (MUTANTS / "outside.json").write_text(json.dumps(found, indent=1) + "\n")
    return found


def score(by_file: dict[str, dict], chosen: list[str], beyond: dict[str, str] | None = None) -> list[str]:
    """The score of the sampled mutants, per file and in all, as a markdown table, and the survivors by name."""
    wanted = set(chosen)
    lines = ["| file | sampled | " + " | ".join(COLUMNS) + " | killed of those with a test |",
             "|---|" + "---:|" * (len(COLUMNS) + 2)]
    total: Counter = Counter()
    survivors = []
    for path, codes in by_file.items():
        counts = Counter(STATUS.get(code, "other") for name, code in codes.items() if name in wanted)
        survivors += sorted((n for n, c in codes.items() if n in wanted and STATUS.get(c) in ("survived", "timeout")),
                            key=_order)
        if counts:
            total += counts
            lines.append(_line(path, counts))
    lines.append(_line("**all**", total))
    lines += ["", f"Survivors and timeouts ({len(survivors)}):", *[f"- `{n}`" for n in survivors]]
    beyond = {n: r for n, r in (beyond or {}).items() if n in wanted}
    if beyond:
        killed = sum(r.startswith("killed") for r in beyond.values())
        tested = sum(total[c] for c in ("killed", "survived", "timeout"))
        share = f"{total['killed'] + killed} of {tested + len(beyond)}"
        lines += ["", f"No test in the selection, run against the tests outside it (OUTSIDE_TESTS): {killed} of "
                      f"{len(beyond)} killed; with them, {share} "
                      f"({100 * (total['killed'] + killed) / (tested + len(beyond)):.1f} %) of the sample killed.",
                  *[f"- `{n}`: {r}" for n, r in sorted(beyond.items(), key=lambda item: _order(item[0]))]]
    return lines


def _line(label: str, counts: Counter) -> str:
    tested = sum(counts[c] for c in ("killed", "survived", "timeout"))
    share = f"{counts['killed']} of {tested} ({100 * counts['killed'] / tested:.1f} %)" if tested else "—"
    return f"| {label} | {sum(counts.values())} | " + " | ".join(str(counts[c]) for c in COLUMNS) + f" | {share} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=20, help="take every Nth mutant of each file (default 20)")
    parser.add_argument("--children", type=int, default=2, help="mutmut's --max-children (default 2)")
    parser.add_argument("--files", default="*", help="only the mutated files matching this glob (default: all)")
    parser.add_argument("--score", action="store_true",
                        help="only score the sample of an earlier run (mutants/sample.txt, mutants/outside.json)")
    parser.add_argument("--outside", action="store_true",
                        help="also run the sampled mutants no selected test reaches against OUTSIDE_TESTS")
    args = parser.parse_args(argv)
    try:
        if not args.score:
            generate(args.children)
        by_file = results(args.files)
        saved = MUTANTS / "sample.txt"
        chosen = saved.read_text().split() if args.score and saved.is_file() else sample(by_file, args.every)
        if not args.score:
            (MUTANTS / "sample.txt").write_text("\n".join(chosen) + "\n")
            print(f"mutate_sample: {len(chosen)} of {sum(map(len, by_file.values()))} mutants "
                  f"(every {args.every}th of each file)", flush=True)
            done = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.children),
                                   *chosen], cwd=ROOT, check=False)
            if done.returncode != 0:
                raise SampleError(f"mutmut run failed (status {done.returncode}; its output is above)")
            by_file = results(args.files)
        kept = MUTANTS / "outside.json"
        if args.outside:
            beyond = outside(by_file, chosen)
        elif args.score and kept.is_file():
            try:
                beyond = json.loads(kept.read_text())
            except ValueError as exc:
                raise SampleError(f"cannot read {kept}: {exc}") from None
        else:
            beyond = {}
        table = score(by_file, chosen, beyond)
    except SampleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    (MUTANTS / "sample-score.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
