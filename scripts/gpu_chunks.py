"""The chunks of `scripts/gpu_bench.sh`: which benchmarks each asv run selects, in which order, under which timeout.

asv saves a run's results only when the run ends, and `timeout` kills a chunk that overruns, losing that chunk:
chunks are therefore small, the most cited first, and gpu_bench.sh copies the results out after every one.

    python scripts/gpu_chunks.py quick     # a line per chunk, tab-separated: name, timeout s, estimated s,
                                           # rounds (0: the benchmarks' own), asv -b regex
    python scripts/gpu_chunks.py full
    python scripts/gpu_chunks.py estimate  # processes and estimated seconds per chunk of both profiles

asv matches a parametrised benchmark's `-b` regex against `module.Class.method(param, ...)`, each parameter as its
repr (`'torch'`), so one chunk can pick a mode, a dtype or a precision. Plain Python: it imports the benchmark
files (never a framework) to list the grid of a CUDA machine.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# One H200, everything included: set-up, calibration, the chunks, the copies.
QUICK_BUDGET_S = 420
# What every quick run spends outside the chunks: offline set-up, machine record, calibration (two framework
# processes) and the results copies, as measured on the H200 (docs/history.md).
QUICK_RESERVE_S = 40

# Per-process wall time on a GPU machine (imports, CUDA initialisation, inputs, asv's samples), inferred from asv's
# progress lines on one H200 (docs/history.md), with a margin above them; a count process's cost and the compiles of
# the compiled modes are assumed (no compiled chunk ran within the budget).
PROCESS_S = {"time": 25.0, "track": 10.0}
COMPILE_S = {("torch", "mlp"): 10.0, ("torch", "transformer"): 40.0, ("jax", "mlp"): 2.0, ("jax", "transformer"): 8.0}
DISCOVERY_S = 10.0  # asv imports every benchmark file once per run, i.e. once per chunk

# Float32 at full precision and at TF32, and bfloat16 (at "highest": bfloat16 with tf32 is the same arithmetic).
_NOT_BF16_TF32 = r"(?!.*'bfloat16', 'tf32')"
_F32 = r"'float32', 'highest'"


@dataclass(frozen=True)
class Chunk:
    name: str
    regex: str  # asv -b
    timeout_s: int
    rounds: int = 0  # asv -a rounds=N (processes per combination); 0: each benchmark's own


# In priority order: gpu_bench.sh starts a chunk only while its estimate fits in what is left of the quick budget,
# so the last ones are the first to go. Timings run in 2 processes per combination, the fewest that give a
# between-process interval (3 in the full profile). At the planned costs the first three fill the 7 minutes:
# float32 eager steps of mlp and transformer and the remat peaks. The compiled modes (a cold torch.compile of the
# L12 transformer in every process) and the remat trade-off curve do not fit: they belong to the full profile.
QUICK: tuple[Chunk, ...] = (
    Chunk("gradstep-mlp-eager", rf"recording\.GradStep_mlp\.time_step\(.*'eager', {_F32}", 180, 2),
    Chunk("gradstep-transformer-eager",
          rf"recording\.GradStep_transformer\.time_step\(.*'eager', 'unrolled', {_F32}", 180, 2),
    Chunk("remat-costs", r"remat\.RematCost_\w+\.track_peak_bytes\(", 200),
    Chunk("custom-swiglu", rf"custom_backward\.CustomStep_swiglu\.time_step\(.*'eager', {_F32}", 300, 2),
    Chunk("inference-transformer", r"inference\.\w+_transformer\.", 120),
    Chunk("gradstep-eager-precisions",
          rf"recording\.GradStep_(mlp|transformer)\.time_step\({_NOT_BF16_TF32}.*'eager', ('unrolled', )?"
          r"('float32', 'tf32'|'bfloat16')", 600, 2),
)

# The full profile: one chunk per benchmark class, these first (most cited), then every other class discovered.
FULL_FIRST = ("harness.", "recording.GradStep_mlp", "recording.GradStep_transformer",
              "remat.RematCost_mlp", "custom_backward.CustomStep_swiglu",
              "custom_backward.CustomMemory", "inference.")
FULL_MIN_TIMEOUT_S = 600  # asv's own per-benchmark timeout (asv.conf.json): a chunk may always finish one


def discover() -> list[str]:
    """asv's names of every benchmark x parameter combination of this process's grid (TVT_DEVICE decides it)."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:  # `python scripts/gpu_chunks.py` puts scripts/ on the path, not the repository
        sys.path.insert(0, root)
    from benchmarks import common

    names = []
    for cls in common.suite_classes():
        for method in sorted(m for m in dir(cls) if m.startswith(("time_", "track_", "peakmem_", "mem_"))):
            base = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}.{method}"
            params = getattr(cls, "params", None) or []
            if not params:
                names.append(base)
                continue
            if not isinstance(params[0], list):  # asv allows one flat list for a single parameter
                params = [params]
            rounds = int(getattr(cls, "rounds", 1))
            for combo in itertools.product(*params):
                names.extend([f"{base}({', '.join(repr(p) for p in combo)})"] * rounds)
    return names


def select(chunk: Chunk, names: list[str]) -> list[str]:
    """The processes asv starts for `chunk`: a combination appears once per round (its class's `rounds`, or the
    chunk's override)."""
    pattern = re.compile(chunk.regex)
    picked = [n for n in names if pattern.search(n)]
    if chunk.rounds:
        picked = [n for n in dict.fromkeys(picked) for _ in range(chunk.rounds)]
    return picked


def process_seconds(name: str) -> float:
    """Estimated wall time of one benchmark process (see the MEASURED and ASSUMED constants)."""
    framework = next((fw for fw in ("torch", "jax") if f"('{fw}'" in name), "torch")
    workload = next((w for w in ("transformer", "mlp") if f"_{w}." in name), "")
    compiled = "'compiled'" in name or "CompileSeconds" in name
    timed = ".time_" in name or compiled
    return PROCESS_S["time" if timed else "track"] + (COMPILE_S.get((framework, workload), 10.0) if compiled else 0.0)


def estimate(chunk: Chunk, names: list[str]) -> float:
    return DISCOVERY_S + sum(process_seconds(n) for n in select(chunk, names))


def full(names: list[str]) -> list[Chunk]:
    """One chunk per class, FULL_FIRST order first; each timeout twice its estimate, never under asv's own."""
    classes = list(dict.fromkeys(n.split("(")[0].rsplit(".", 1)[0] for n in names))
    first = [c for prefix in FULL_FIRST for c in classes if c.startswith(prefix)]
    ordered = list(dict.fromkeys(first + classes))
    chunks = []
    for cls in ordered:
        chunk = Chunk(cls, rf"^{re.escape(cls)}\.", 0)
        chunks.append(Chunk(cls, chunk.regex, max(FULL_MIN_TIMEOUT_S, round(2 * estimate(chunk, names)))))
    return chunks


def profile(name: str, names: list[str] | None = None) -> list[Chunk]:
    """The chunks of profile `name` ('quick' or 'full'); a ValueError names the valid profiles."""
    if name == "quick":
        return list(QUICK)
    if name == "full":
        return full(discover() if names is None else names)
    raise ValueError(f"unknown profile {name!r}; valid choices: quick, full")


def main(argv: list[str]) -> int:
    os.environ.setdefault("TVT_DEVICE", "cuda")
    if argv[:1] == ["estimate"]:
        names = discover()
        for prof in ("quick", "full"):
            chunks = profile(prof, names)
            total = sum(estimate(c, names) for c in chunks)
            processes = sum(len(select(c, names)) for c in chunks)
            print(f"{prof}: {len(chunks)} chunks, {processes} processes, about {total / 60:.0f} min of benchmarks")
            for c in chunks:
                print(f"  {c.name:40} {len(select(c, names)):4} processes  ~{estimate(c, names):5.0f} s  "
                      f"(timeout {c.timeout_s} s)")
        return 0
    try:
        chunks = profile(argv[0] if argv else "full")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    names = discover()
    for c in chunks:
        print(f"{c.name}\t{c.timeout_s}\t{round(estimate(c, names))}\t{c.rounds}\t{c.regex}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
