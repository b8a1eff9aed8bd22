"""What the host did while a worker process ran: the share of CPU time the hypervisor stole (a virtual machine's
`steal`) and the share other work took, from /proc/stat's totals read before and after the process. A process that
ran while the host was taken slows every combination in it alike, which no setting of the frameworks changes; the
runner records both shares per process, so a reader (and the report) can tell a host's disturbance from a framework's
spread."""

from __future__ import annotations

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
