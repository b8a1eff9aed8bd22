"""A mutation score that fits in a session: every Nth mutant of every mutated file, run by mutmut, then scored.

`make mutate` runs all of mutmut's mutants (6,500 and more over the probes, steps, commons, workload specs and the
report), which takes many hours on a 2-core machine, most of them in the probe, steps and commons mutants, whose
covering tests run torch and JAX. This script takes a systematic sample instead: the mutants of each file in mutmut's
order (by function, then by mutation number), every Nth of them from an offset of N // 2, so every file and every
long function is represented in proportion to its mutants. Sampling mutants this way estimates the full score (Wong
and Mathur, "Reducing the cost of mutation testing: an empirical study", JSS 1995, found a 10 % sample within a few
points of the full mutation score).

Steps: mutmut generates the mutants (its own functions, pinned by pyproject.toml's mutmut==3.8.1), the sample is
written to mutants/sample.txt, `mutmut run` runs exactly those, and the score is read back from mutmut's per-file
results (mutants/**/*.meta) into mutants/sample-score.md. `--score` only reads the results of an earlier run.

    python scripts/mutate_sample.py --every 20 --children 2
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
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


def score(by_file: dict[str, dict], chosen: list[str]) -> list[str]:
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
                        help="only score the sample of an earlier run (mutants/sample.txt)")
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
        table = score(by_file, chosen)
    except SampleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    (MUTANTS / "sample-score.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
