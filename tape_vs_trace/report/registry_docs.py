"""The docs' tables of pillars and workloads, generated from the registries (implementations/pillars.py and the
workload specs) so that they cannot drift: README.md and docs/metrics.md hold each between two markers, which
`python -m tape_vs_trace.report.registry_docs` rewrites and `--check` compares (tests/test_docs.py runs the check)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from implementations import pillars, workloads

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _number(n: int) -> str:
    return NUMBERS[n] if n < len(NUMBERS) else str(n)


def readme_pillars() -> str:
    """The README's sentence: every pillar by its title, with its page where it has one."""
    found = list(pillars.PILLARS.values())
    names = [f"**{p.title}**" + (f" ([{p.docs.removesuffix('.md')}](docs/{p.docs}))" if p.docs else "")
             for p in found]
    return (f"{_number(len(found)).capitalize()} pillars, each one benchmark file ([what each side runs]"
            f"(docs/metrics.md#the-pillars)): {', '.join(names[:-1])} and {names[-1]}.")


def readme_workloads() -> str:
    """The README's sentence naming every workload."""
    names = [f"`{name}`" for name in workloads.WORKLOADS]
    return (f"{_number(len(names)).capitalize()} workloads: {', '.join(names[:-1])} and {names[-1]} "
            "([what each computes](docs/metrics.md#the-workloads)).")


def metrics_pillars() -> str:
    """docs/metrics.md's table: a row per pillar."""
    rows = ["| pillar | PyTorch | JAX | benchmarks |", "|---|---|---|---|"]
    for p in pillars.PILLARS.values():
        page = f" ([{p.docs.removesuffix('.md')}]({p.docs}))" if p.docs else ""
        jax = p.jax if p.jax != p.torch else "the same"
        rows.append(f"| {p.title} | {p.torch} | {jax} | `benchmarks/{p.name}.py`{page} |")
    return "\n".join(rows)


def metrics_workloads() -> str:
    """docs/metrics.md's table: a row per workload, what it computes, the pillars and the side measurements that run
    it (its spec's grid)."""
    rows = ["| workload | what it computes | pillars | side measurements |", "|---|---|---|---|"]
    for name, spec in workloads.WORKLOADS.items():
        runs = [pillars.pillar_of(f).title for f in spec.grid if f not in pillars.SIDE_GRIDS]
        side = [f for f in spec.grid if f in pillars.SIDE_GRIDS]
        rows.append(f"| `{name}` | {spec.description.replace('|', '/')} | {', '.join(dict.fromkeys(runs)) or '-'} "
                    f"| {', '.join(side) or '-'} |")
    return "\n".join(rows)


# (file, block name) -> its generator
BLOCKS = {("README.md", "pillars"): readme_pillars, ("README.md", "workloads"): readme_workloads,
          ("docs/metrics.md", "pillars"): metrics_pillars, ("docs/metrics.md", "workloads"): metrics_workloads}


def _pattern(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- registry:{name} -->\n)(.*?)(<!-- /registry:{name} -->)", re.S)


def render(text: str, name: str, body: str) -> str:
    """`text` with block `name` holding `body`; a ValueError where the file has no such block."""
    pattern = _pattern(name)
    if not pattern.search(text):
        raise ValueError(f"no '<!-- registry:{name} -->' block")
    return pattern.sub(lambda m: f"{m.group(1)}{body}\n{m.group(3)}", text, count=1)


def drift(root: Path | None = None) -> list[str]:
    """The blocks whose text differs from what the registries give, as 'file: block'."""
    root = ROOT if root is None else root
    return [f"{file}: {name}" for (file, name), make in BLOCKS.items()
            if render(text := (root / file).read_text(), name, make()) != text]


def write(root: Path | None = None) -> list[str]:
    """Rewrite every drifted block; the ones rewritten."""
    root = ROOT if root is None else root
    changed = drift(root)
    for (file, name), make in BLOCKS.items():
        path = root / file
        path.write_text(render(path.read_text(), name, make()))
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which blocks drifted; exit 1 if any")
    args = parser.parse_args(argv)
    try:
        changed = drift() if args.check else write()
    except ValueError as e:
        print(f"registry_docs: {e}", file=sys.stderr)
        return 2
    for block in changed:
        print(f"{'drifted' if args.check else 'rewritten'}: {block}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
