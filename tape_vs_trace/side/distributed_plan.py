"""Which rows `tape-vs-trace distributed` makes (tape_vs_trace.side.distributed_run): the device its ranks run on, the
grid's workloads, sizes, forms, modes and rank counts, each choice checked before any process starts."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from implementations import frameworks, rank_processes, workloads

FAMILY = "distributed"  # the specs' grid family
# --device: 'auto' runs the ranks on GPUs where there are MIN_GPUS of them, else on the CPU.
DEVICES = ("auto", *frameworks.DEVICES)
MIN_GPUS = 2  # one GPU has nothing to communicate with: its ranks would share it
DTYPE = "float32"
VARIANT = "plain"
RANKS = (1, 2)  # on the CPU
GPU_RANKS = (1, 2, 4, 8)  # on GPUs, those up to the number present
PROCESSES = 3  # launches per row: the interval is formed across them
REPEAT = 5  # timed steps per launch
WARMUP = 1  # untimed calls per launch after the first


class DistributedError(Exception):
    """Bad input, or a run that cannot start or save: one line."""


@dataclass(frozen=True)
class Case:
    """One row of the CSV, and the device its ranks run on."""

    framework: str
    workload: str
    size: str
    form: str
    mode: str
    ranks: int
    device: str = "cpu"

    @property
    def backend(self) -> str:
        return rank_processes.BACKENDS[self.framework][self.device]

    def __str__(self) -> str:
        return f"{frameworks.label(self.framework)} {self.workload} {self.size} {self.form} {self.mode} N={self.ranks}"


def cases(device: str = "cpu", ranks: Sequence[int] = RANKS, names: Sequence[str] = frameworks.NAMES,
          chosen: Sequence[str] | None = None, forms: Sequence[str] = rank_processes.FORMS,
          modes: Sequence[str] = rank_processes.MODES, size: str | None = None) -> list[Case]:
    """Every combination of the workloads whose spec runs the 'distributed' family on `device` (or `chosen` of
    them), at their grid's sizes (or at `size`), framework x form x mode x ranks; workload-major."""
    sizes = workloads.runs(FAMILY, device)
    found = []
    for workload in sizes if chosen is None else chosen:
        for s in (size,) if size else sizes[workload]:
            found += [Case(fw, workload, s, form, mode, n, device) for fw in names for form in forms
                      for mode in modes for n in ranks]
    return found


def gpu_count() -> int:
    """The GPUs `nvidia-smi -L` lists, one line each; 0 without it (it starts no framework in this process)."""
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in done.stdout.splitlines()) if done.returncode == 0 else 0


def rank_device(device: str = "auto", gpus: int | None = None) -> str:
    """The device the ranks run on for --device `device` on a machine of `gpus` GPUs (None: gpu_count()): 'cuda'
    where it has MIN_GPUS, else 'cpu'; asking for 'cuda' without them is a DistributedError."""
    if device not in DEVICES:
        raise DistributedError(f"unknown device {device!r}; valid choices: {', '.join(DEVICES)}")
    if device == "cpu":
        return device
    gpus = gpu_count() if gpus is None else gpus
    if device == "cuda" and gpus < MIN_GPUS:
        raise DistributedError(f"--device cuda needs at least {MIN_GPUS} GPUs; nvidia-smi -L lists {gpus}")
    return "cuda" if gpus >= MIN_GPUS else "cpu"


def default_ranks(device: str, gpus: int) -> tuple[int, ...]:
    """The grid's N on `device`: RANKS on the CPU, GPU_RANKS up to `gpus` on GPUs."""
    return RANKS if device == "cpu" else tuple(n for n in GPU_RANKS if n <= gpus)


def _listed(kind: str, text: str | None, valid: Sequence[str]) -> list[str]:
    """A comma-separated choice of `valid` (None: all of them), each checked."""
    if text is None:
        return list(valid)
    chosen = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in chosen if v not in valid]
    if bad or not chosen:
        raise DistributedError(f"unknown {kind} {bad[0] if bad else text!r}; valid choices: {', '.join(valid)}")
    return chosen


def _counts(text: str) -> list[int]:
    try:
        found = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        found = []
    if not found or any(n < 1 for n in found):
        raise DistributedError(f"--ranks must be positive integers separated by commas, like 1,2,4, not {text!r}")
    return found


def plan(framework_names: str | None = None, workload_names: str | None = None, forms: str | None = None,
         modes: str | None = None, ranks: str | None = None, size: str | None = None,
         processes: int = PROCESSES, repeat: int = REPEAT, warmup: int = WARMUP, device: str = "auto",
         gpus: int | None = None) -> list[Case]:
    """The cases a run makes on a machine of `gpus` GPUs (None: gpu_count()), each with its rank device
    (rank_device) and backend, every one checked before any process starts: a DistributedError names the first
    choice that is not valid, with the valid ones. `ranks` None is the device's grid (default_ranks)."""
    if processes < 2:
        raise DistributedError(f"--processes must be at least 2, not {processes}: the interval is formed across "
                               "launches")
    if repeat < 1 or warmup < 0:
        raise DistributedError(f"--repeat must be at least 1 and --warmup at least 0, not {repeat} and {warmup}")
    gpus = gpu_count() if gpus is None and device != "cpu" else gpus or 0
    on = rank_device(device, gpus)
    counts = default_ranks(on, gpus) if ranks is None else _counts(ranks)
    if on == "cuda" and max(counts) > gpus:
        raise DistributedError(f"N={max(counts)} needs {max(counts)} GPUs, one per rank; nvidia-smi -L lists {gpus}")
    grid = workloads.runs(FAMILY, on)
    chosen = _listed("workload", workload_names, list(grid))
    found = cases(on, counts, _listed("framework", framework_names, frameworks.NAMES), chosen,
                  _listed("form", forms, rank_processes.FORMS), _listed("mode", modes, rank_processes.MODES), size)
    for workload, s in dict.fromkeys((c.workload, c.size) for c in found):
        try:  # from the spec alone: the GPU sizes' arrays take seconds and gigabytes to generate
            workloads.validate(workload, s, DTYPE, VARIANT)
            spec = workloads.spec(workload)
            for n in sorted({c.ranks for c in found}):
                rank_processes.check_split(workload, s, spec.output_shape(spec.sizes[s])[0], n)
        except ValueError as exc:
            raise DistributedError(str(exc)) from None
    return found


def plan_lines(found: list[Case]) -> list[str]:
    """`--plan`: one line per case (framework, workload, size, form, mode, N, backend, device), then the count."""
    lines = [f"{c.framework} {c.workload} {c.size} {c.form} {c.mode} N={c.ranks} {c.backend} {c.device}"
             for c in found]
    devices = ", ".join(dict.fromkeys(c.device for c in found))
    return [*lines, f"{len(found)} rows ({devices})"]
