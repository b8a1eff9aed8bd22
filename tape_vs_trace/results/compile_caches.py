"""The state of both frameworks' persistent compilation caches (TVT_COMPILE_CACHE) when a run starts, recorded with
its results: a compile served from a cache is faster, so a reader must know whether a run started warm or cold.

`make bench` writes the state before asv runs (`python -m tape_vs_trace.results.compile_caches OUT`) and hands the file
to `scrub-results` (TVT_COMPILE_CACHE_STATE), which stores it under "compile_caches" in every result file of the run.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from implementations import frameworks

ROOT = Path(__file__).resolve().parents[2]
STATE_ENV = "TVT_COMPILE_CACHE_STATE"
# Where each framework keeps one cache entry: Inductor's FX graphs under fxgraph/<2 chars>/<key>/ and its
# AOTAutograd entries under aotautograd/<key>/; JAX's executables as <key>-cache files.
_ENTRY_GLOBS = {"torch": ("fxgraph/*/*", "aotautograd/*"), "jax": ("*-cache",)}


def _shown(directory: Path, root: Path) -> str:
    """`directory` relative to the repository, or its name alone: committed results carry no path of the machine."""
    try:
        return str(directory.resolve().relative_to(root.resolve()))
    except ValueError:
        return f"(outside the repository)/{directory.name}"


def framework_state(directory: Path, name: str) -> dict[str, int]:
    """Cache entries and bytes of every file (kernels, autotuning results too) in one framework's folder."""
    files = [p for p in directory.rglob("*") if p.is_file()] if directory.is_dir() else []
    entries = sum(1 for pattern in _ENTRY_GLOBS[name] for _ in directory.glob(pattern)) if files else 0
    return {"entries": entries, "bytes": sum(p.stat().st_size for p in files)}


def state(root: Path = ROOT) -> dict[str, Any]:
    """The caches' state now: their folder (as `_shown`), each framework's `framework_state`, and "cold" when both
    folders hold no file, "warm" otherwise; "defaults" without TVT_COMPILE_CACHE."""
    if not os.environ.get(frameworks.COMPILE_CACHE_ENV):
        return {"dir": None, "state": "defaults",
                "note": "TVT_COMPILE_CACHE unset: Inductor's caches in its own folder, JAX's persistent cache off"}
    found: dict[str, Any] = {"dir": _shown(Path(os.environ[frameworks.COMPILE_CACHE_ENV]), root)}
    for name in frameworks.NAMES:
        found[name] = framework_state(Path(str(frameworks.compile_cache_dir(name))), name)
    found["state"] = "warm" if any(found[name]["bytes"] for name in frameworks.NAMES) else "cold"
    return found


def recorded() -> dict[str, Any]:
    """The state file TVT_COMPILE_CACHE_STATE names (written at the start of the run), or a record saying why
    there is none."""
    path = os.environ.get(STATE_ENV)
    if not path:
        return {"state": "not recorded", "note": f"{STATE_ENV} unset"}
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        return {"state": "not recorded", "note": f"unreadable {STATE_ENV}: {error.__class__.__name__}"}


def main(argv: list[str]) -> int:
    """`python -m tape_vs_trace.results.compile_caches OUT`: write `state()` to OUT and print it."""
    if len(argv) != 1:
        print("usage: python -m tape_vs_trace.results.compile_caches OUT", file=sys.stderr)
        return 2
    found = state()
    try:
        Path(argv[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(argv[0]).write_text(json.dumps(found, indent=1) + "\n")
    except OSError as error:
        print(f"error: cannot write {argv[0]}: {error.strerror}", file=sys.stderr)
        return 1
    print(f"compile caches: {found['state']}" + (f" ({found['dir']})" if found["dir"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
