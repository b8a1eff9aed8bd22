"""Regenerate the report from committed results at two revisions and print what differs: summary.csv row by row,
every markdown page and the README's results block (figures: which files differ, by bytes).

    .venv/bin/python scripts/report_diff.py BEFORE [AFTER] [--results-rev REV]

Both revisions read the same results (those committed at --results-rev, default AFTER), so only the code differs.
Each revision runs from its own `git worktree` in a temporary folder with this checkout's interpreter; the
checkout's results/ and README are never written. Exit status 0 when nothing differs, 1 when something does."""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- report:start -->", "<!-- report:end -->"  # as tape_vs_trace.report.readme: this script runs alone
# The columns that name a row of summary.csv; the others are its values, compared field by field.
KEY = ("pillar", "workload", "size", "variant", "program", "framework", "metric", "params", "benchmark", "commit",
       "machine", "env", "file", "group", "experiment", "point")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def worktree(rev: str, where: Path) -> Iterator[Path]:
    """A detached checkout of `rev` at `where`, removed afterwards."""
    _git("worktree", "add", "--detach", "--quiet", str(where), rev)
    try:
        yield where
    finally:
        _git("worktree", "remove", "--force", str(where))


def generate(tree: Path, results: Path, folder: Path) -> Path:
    """The report of `tree`'s code over `results`, into folder/report, with folder/README.md (tree's README) edited."""
    folder.mkdir(parents=True)
    readme = folder / "README.md"
    shutil.copyfile(tree / "README.md", readme)
    # the worktree first on the path: the checkout's editable install would otherwise supply the package
    env = {**os.environ, "PYTHONPATH": str(tree)}
    where = subprocess.run([sys.executable, "-c", "import tape_vs_trace; print(tape_vs_trace.__file__)"], cwd=tree,
                           env=env, check=True, capture_output=True, text=True).stdout.strip()
    if not Path(where).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"error: the report code came from {where}, not from the worktree {tree}")
    done = subprocess.run([sys.executable, "-m", "tape_vs_trace.cli", "report", "--results", str(results), "--out",
                           str(folder / "report"), "--readme", str(readme)], cwd=tree, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"error: the report at {tree} failed:\n{done.stderr[-2000:]}")
    return folder


def _rows(path: Path) -> tuple[list[str], dict[tuple[str, ...], dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        rows: dict[tuple[str, ...], dict[str, str]] = {}
        seen: Counter[tuple[str, ...]] = Counter()
        for row in reader:
            key = tuple(row.get(k, "") for k in KEY)
            seen[key] += 1  # a repeated key: told apart by its order
            rows[(*key, str(seen[key] - 1)) if seen[key] > 1 else key] = row
    return list(reader.fieldnames or []), rows


def diff_csv(before: Path, after: Path) -> list[str]:
    """One line per row that only one side has, and per row whose values differ (each differing field)."""
    columns_a, a = _rows(before)
    columns_b, b = _rows(after)
    lines = [] if columns_a == columns_b else [f"columns: {columns_a} -> {columns_b}"]
    name = lambda key: " ".join(f"{k}={v}" for k, v in zip(KEY, key) if v and k != "params")  # noqa: E731
    lines += [f"- only before: {name(k)}" for k in a if k not in b]
    lines += [f"+ only after: {name(k)}" for k in b if k not in a]
    for key in (k for k in a if k in b and a[k] != b[k]):
        fields = [f"{c}: {a[key].get(c)!r} -> {b[key].get(c)!r}" for c in dict.fromkeys([*a[key], *b[key]])
                  if a[key].get(c) != b[key].get(c)]
        lines.append(f"~ {name(key)}: " + "; ".join(fields))
    return lines


def _block(readme: Path) -> list[str]:
    text = readme.read_text()
    return text[text.index(START): text.index(END) + len(END)].splitlines() if START in text else []


def _text_diff(label: str, a: list[str], b: list[str]) -> list[str]:
    import difflib

    return list(difflib.unified_diff(a, b, f"before/{label}", f"after/{label}", lineterm="", n=1))


def compare(before: Path, after: Path) -> list[str]:
    """Every difference between two generated folders, as lines to print."""
    out: list[str] = []
    ra, rb = before / "report", after / "report"
    files_a = {p.relative_to(ra).as_posix() for p in ra.rglob("*") if p.is_file()}
    files_b = {p.relative_to(rb).as_posix() for p in rb.rglob("*") if p.is_file()}
    out += [f"- file only before: {f}" for f in sorted(files_a - files_b)]
    out += [f"+ file only after: {f}" for f in sorted(files_b - files_a)]
    for name in sorted(files_a & files_b):
        if name.endswith(".csv"):
            changed = diff_csv(ra / name, rb / name)
            out += [f"{name}: {len(changed)} row(s) differ", *changed] if changed else []
        elif name.endswith(".md"):
            out += _text_diff(name, (ra / name).read_text().splitlines(), (rb / name).read_text().splitlines())
        elif _digest(ra / name) != _digest(rb / name):
            out.append(f"~ figure bytes differ: {name}")
    out += _text_diff("README.md (results block)", _block(before / "README.md"), _block(after / "README.md"))
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="revision whose code makes the first report")
    parser.add_argument("after", nargs="?", default="HEAD", help="revision whose code makes the second (HEAD)")
    parser.add_argument("--results-rev", help="revision whose committed results/ both read (default: AFTER)")
    parser.add_argument("--keep", type=Path, help="keep both generated folders here instead of deleting them")
    args = parser.parse_args(argv)
    try:
        revs = [_git("rev-parse", "--verify", f"{r}^{{commit}}") for r in (args.before, args.after,
                                                                          args.results_rev or args.after)]
    except subprocess.CalledProcessError as exc:
        print(f"error: not a revision: {exc.stderr.strip()}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="report-diff-") as tmp:
        work = args.keep or Path(tmp)
        with worktree(revs[2], Path(tmp) / "results-tree") as data, worktree(revs[0], Path(tmp) / "a") as a, \
                worktree(revs[1], Path(tmp) / "b") as b:
            before = generate(a, data / "results", work / "before")
            after = generate(b, data / "results", work / "after")
            lines = compare(before, after)
    print(f"report of {revs[0][:8]} against {revs[1][:8]}, both over the results of {revs[2][:8]}")
    print("\n".join(lines) if lines else "no difference: summary.csv, every page and the README block are identical")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
