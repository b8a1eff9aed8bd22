"""The device machine's limits and what a plan of GPU contacts spends of them: one command's limit, a lease's device
time with its machine start and idle waits, the margin a quick contact's plan keeps; and the leases that hold a run
of contacts, per kind of machine (tape_vs_trace.results.machine.DEVICE_KINDS). Plain Python, like gpu_chunks.py.
"""

from __future__ import annotations

from gpu_costs import Costs

from tape_vs_trace.results import machine

# The device's limits (docs/gpu.md): one command runs at most COMMAND_LIMIT_S, its machine's start and the transfers
# not counted; a lease holds the machine for at most LEASE_S of device time, its start, every call and the idle wait
# after each call included; a machine given back is gone with what was installed on it.
COMMAND_LIMIT_S = 600
LEASE_S = 900
IDLE_S = 30
# A quick contact's plan ends MARGIN short of the command's limit: estimates from defaults may run long, and the
# rest of the command copies the results out before the device stops it.
MARGIN = 0.15
QUICK_BUDGET_S = int(COMMAND_LIMIT_S * (1 - MARGIN))


def leases(ends: list[int], start_s: float) -> list[list[int]]:
    """The contacts (their indices) each lease of the machine holds, in order: a lease starts the machine and takes
    calls while its start, every call (to its planned end) and the idle wait after each fit in LEASE_S."""
    found: list[list[int]] = []
    used = LEASE_S
    for i, end in enumerate(ends):
        if used + end + IDLE_S > LEASE_S:
            found.append([])
            used = start_s
        found[-1].append(i)
        used += end + IDLE_S
    return found


def lease_lines(kind: machine.DeviceKind, ends: list[int], costs: Costs) -> list[str]:
    """One kind's leases for the contacts ending at `ends`: each lease's device time, start and idle included."""
    held = leases(ends, kind.start_s)
    basis = f"this machine's pre-flight ({costs.source})" if costs.measured else kind.costs
    lines = [f"  on {kind.kind} ({kind.machine}; costs: {basis}; machine start {kind.start_s:.0f} s, assumed): "
             f"{len(held)} leases of at most {LEASE_S} s of device time"]
    for n, calls in enumerate(held, 1):
        spent = kind.start_s + sum(ends[i] + IDLE_S for i in calls)
        lines.append(f"    lease {n}: start {kind.start_s:.0f} s + "
                     + " + ".join(f"contact {i + 1} {ends[i]} s + idle {IDLE_S} s" for i in calls)
                     + f" = {spent:.0f} s of {LEASE_S}")
    return lines
