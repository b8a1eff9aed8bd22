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
if str(ROOT) not in sys.path:  # the checkout's rowkey names the rows; the reports come from each worktree's code
    sys.path.insert(0, str(ROOT))

from tape_vs_trace.results.rowkey import RowKey, params_of  # noqa: E402

START, END = "<!-- report:start -->", "<!-- report:end -->"  # as tape_vs_trace.report.readme: this script runs alone
# Where a row of summary.csv comes from; its RowKey names it there (a side row's experiment and point among its axes).
# The other columns are its values, compared field by field.
SOURCE = ("commit", "machine", "env", "file", "group")
SIDE = ("experiment", "point")
Key = tuple  # the SOURCE columns' values, then the row's RowKey


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


def key(row: dict[str, str]) -> Key:
    """A summary row's source and RowKey (its benchmark, metric, framework and parameters)."""
    params = {**params_of(row), **{c: row[c] for c in SIDE if row.get(c)}}
    return (*(row.get(c, "") for c in SOURCE), RowKey.of({**row, "params": params}))


def _name(k: Key) -> str:
    """A key as the lines name it: the RowKey's fields and parameters, then the source; empty ones left out."""
    *source, rk = k[:len(SOURCE) + 1]
    named = {"benchmark": rk.benchmark, "metric": rk.metric, "framework": rk.framework, **rk.params(),
             **dict(zip(SOURCE, source))}
    again = f" (repeat {k[-1]})" if len(k) > len(SOURCE) + 1 else ""
    return " ".join(f"{n}={v}" for n, v in named.items() if v) + again


def _rows(path: Path) -> tuple[list[str], dict[Key, dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        rows: dict[Key, dict[str, str]] = {}
        seen: Counter[Key] = Counter()
        for row in reader:
            k = key(row)
            seen[k] += 1  # a repeated key: told apart by its order
            rows[(*k, str(seen[k] - 1)) if seen[k] > 1 else k] = row
    return list(reader.fieldnames or []), rows


def diff_csv(before: Path, after: Path) -> list[str]:
    """One line per row that only one side has, and per row whose values differ (each differing field)."""
    columns_a, a = _rows(before)
    columns_b, b = _rows(after)
    lines = [] if columns_a == columns_b else [f"columns: {columns_a} -> {columns_b}"]
    lines += [f"- only before: {_name(k)}" for k in a if k not in b]
    lines += [f"+ only after: {_name(k)}" for k in b if k not in a]
    for k in (k for k in a if k in b and a[k] != b[k]):
        fields = [f"{c}: {a[k].get(c)!r} -> {b[k].get(c)!r}" for c in dict.fromkeys([*a[k], *b[k]])
                  if a[k].get(c) != b[k].get(c)]
        lines.append(f"~ {_name(k)}: " + "; ".join(fields))
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
