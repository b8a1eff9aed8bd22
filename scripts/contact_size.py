"""What a device contact sends, measured: the files that travel (tracked, and untracked that git does not ignore)
and the ignored paths a call carries (scripts/gpu_bench.sh prepare's: the commit in .gpu-contact/ and the wheels of
requirements/h200.txt), against the tool's limit and the suite's budget; with the largest folders, so a reader sees
where the bytes are. `.git` does not travel (the device tool's limit counts the tree, shared/ and carried paths).
Exits 1 when the tree is over the budget.

    python scripts/contact_size.py [--root DIR] [--carry .gpu-contact .whl ...] [--budget-mib 48]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MIB = 64  # the device tool refuses a larger tree
BUDGET_MIB = 48.0  # the suite's own: room under the limit for the results of a few contacts
MIB = 1 << 20


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def measure(root: Path, carry: list[str]) -> dict[str, int]:
    """Bytes by part: each top-level folder of the travelling files and each carried path."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=root, capture_output=True,
                            check=True).stdout.decode().split("\0")
    parts: Counter[str] = Counter()
    for name in filter(None, listed):
        path = root / name
        if path.is_file() and not path.is_symlink():
            parts[name.split("/", 1)[0] if "/" in name else "(top-level files)"] += path.stat().st_size
    for path in carry:
        parts[f"carried {path}"] = _size(root / path) if (root / path).exists() else 0
    return dict(parts)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/contact_size.py", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--carry", nargs="*", default=[".gpu-contact", ".whl"],
                        help="ignored paths a call carries (default: prepare's, .gpu-contact .whl)")
    parser.add_argument("--budget-mib", type=float, default=BUDGET_MIB,
                        help=f"the size to stay under (default {BUDGET_MIB:g})")
    args = parser.parse_args(argv)
    parts = measure(args.root, args.carry)
    total = sum(parts.values())
    for name, size in sorted(parts.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {name:30} {size / MIB:8.1f} MiB")
    within = total <= args.budget_mib * MIB
    print(f"a contact sends {total / MIB:.1f} MiB: {'within' if within else 'over'} the {args.budget_mib:g} MiB "
          f"budget (the tool's limit: {LIMIT_MIB} MiB)")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
