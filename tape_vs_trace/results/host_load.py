"""What the host did while a worker process ran: the share of CPU time the hypervisor stole (a virtual machine's
`steal`) and the share other work took, from /proc/stat's totals read before and after the process. A process that
ran while the host was taken slows every combination in it alike, which no setting of the frameworks changes; the
runner records both shares per process, so a reader (and the report) can tell a host's disturbance from a framework's
spread."""

from __future__ import annotations

import statistics
from pathlib import Path

STAT = Path("/proc/stat")
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal guest guest_nice (USER_HZ ticks)
IDLE, IOWAIT, STEAL = 3, 4, 7


def cpu_ticks(stat: Path = STAT) -> list[int] | None:
    """The all-CPU line's counters, or None where the file does not exist (not Linux) or cannot be read."""
    try:
        line = stat.read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    fields = line.split()
    if not fields or fields[0] != "cpu":
        return None
    return [int(v) for v in fields[1:11]] + [0] * max(0, 10 - len(fields[1:11]))


def shares(before: list[int] | None, after: list[int] | None) -> dict[str, float] | None:
    """Of the CPU time between two readings: `steal` (taken by the hypervisor) and `busy` (not idle, not steal, which
    includes the worker itself); None without two readings or where no tick passed."""
    if before is None or after is None:
        return None
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(delta[:8])  # guest time is counted inside user already
    if total <= 0:
        return None
    steal = delta[STEAL] / total
    idle = (delta[IDLE] + delta[IOWAIT]) / total
    return {"steal": round(steal, 4), "busy": round(1.0 - idle - steal, 4)}


# Two runs' median busy shares this far apart: one of them shared the host with other work. Runs of one profile on
# an undisturbed 2-core host stay within a few points of each other (docs/history.md).
BUSIER = 0.10


def run_busy(details: dict | None) -> float | None:
    """The median `busy` share over a run's worker processes (the result file's tape_vs_trace.worker_runs), None
    where the run recorded none (asv run, older files, no /proc/stat)."""
    processes = ((details or {}).get("worker_runs") or {}).get("per_process") or []
    busy = [p["host"]["busy"] for p in processes if (p.get("host") or {}).get("busy") is not None]
    return statistics.median(busy) if busy else None


def load_line(label: str, details_a: dict | None, details_b: dict | None) -> str | None:
    """For the rerun check: how busy the host was during each run's worker processes, and a question where one run
    was busier by BUSIER or more; None unless both runs recorded it."""
    a, b = run_busy(details_a), run_busy(details_b)
    if a is None or b is None:
        return None
    line = (f"host load: {label}: the CPUs busy a median {a:.0%} of the time during A's worker processes, {b:.0%} "
            "during B's (their own work included)")
    if round(abs(b - a), 4) >= BUSIER:  # the shares are recorded to 4 places; so is their difference
        line += f"; {'B' if b > a else 'A'} shared the host with other work?"
    return line
