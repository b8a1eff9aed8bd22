"""The plan of scripts/gpu_chunks.py: what each chunk still has to run (what this commit's result file holds is
not run again), in parts that fit a contact, their estimates and the time each would end; and how consecutive
contacts work through them. Plain Python, like gpu_chunks.py, which states the arithmetic.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field

import gpu_resume
from gpu_costs import Costs, Estimate, rounds_of
from gpu_costs import estimate as _estimate

from tape_vs_trace.running import profiles
from tape_vs_trace.running.profiles import Chunk, Combo


def select(chunk: Chunk, combos: list[Combo]) -> list[Combo]:
    """The combinations `chunk` selects (the selection rule of tape_vs_trace/running/profiles.py)."""
    return profiles.select(chunk.selection, combos)


def estimate(chunk: Chunk, combos: list[Combo], costs: Costs, runner: str = "worker",
             picked: list[Combo] | None = None) -> Estimate:
    """`chunk`'s wall time under `runner` for `picked` (default: every combination it selects)."""
    return _estimate(select(chunk, combos) if picked is None else picked, chunk.rounds, costs, runner)


@dataclass
class Planned:
    chunk: Chunk
    estimate: Estimate
    cumulative_s: float | None  # None: not run (done, it does not fit in the budget, or selects nothing)
    todo: list[Combo] = field(default_factory=list)  # the combinations still to run
    done: int = 0  # live combinations the results already hold
    failed: int = 0  # of those, failed at this commit more than gpu_resume.RETRIES times: not run again
    retried: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # to run again after a failure: errors
    given_up: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # the `failed` ones, with their errors

    @property
    def empty(self) -> bool:
        return not self.estimate.combinations and not self.done

    @property
    def finished(self) -> bool:
        return bool(self.done) and not self.todo

    @property
    def regex(self) -> str:
        return profiles.names_regex([c.name for c in self.todo])


def split(chunk: Chunk, todo: list[Combo], costs: Costs, runner: str, room_s: float) -> list[list[Combo]]:
    """`todo` in consecutive parts that each fit in `room_s` (a row's frameworks side by side, in the selection's
    order); a part of one row that does not fit alone stays whole."""
    def row(c: Combo) -> tuple:
        first = next(i for i, r in enumerate(chunk.selection) if r.selects(c.benchmark, dict(c.params)))
        return first, c.benchmark, tuple(v for k, v in c.params if k != "framework")

    parts: list[list[Combo]] = []
    for _, group in itertools.groupby(sorted(todo, key=row), key=row):
        group = list(group)
        if parts and estimate(chunk, [], costs, runner, picked=parts[-1] + group).seconds <= room_s:
            parts[-1] += group
        else:
            parts.append(group)
    return parts


def plan(chunks: list[Chunk], combos: list[Combo], costs: Costs, runner: str, budget_s: float = 0,
         spent_s: float = 0.0, held: dict[str, gpu_resume.State] | None = None) -> list[Planned]:
    """Each chunk with what is still to run of it (`held`: what the results for this commit hold), in parts that
    each fit in what a contact has left after `spent_s` (with a budget), each with its estimate and, in order, the
    time at which it would end: a part that would end past `budget_s` (0: no budget) is left out and the next ones
    are tried; so is a chunk that selects nothing or is done."""
    found, at, held = [], spent_s, held or {}
    for chunk in chunks:
        live = [c for c in select(chunk, combos) if not c.skipped]
        todo = [c for c in live if not gpu_resume.done(held.get(c.name), c.kind,
                                                          rounds_of(c, chunk.rounds, runner) * c.repeat)]
        failures = [(c, s) for c in live if (s := held.get(c.name)) is not None and s.failed]
        retried = [(c.name, s.errors) for c, s in failures if c in todo]
        given_up = [(c.name, s.errors) for c, s in failures if c not in todo]
        failed = len(given_up)
        whole = estimate(chunk, combos, costs, runner, picked=todo)
        parts = split(chunk, todo, costs, runner, budget_s - spent_s) \
            if budget_s and whole.seconds > budget_s - spent_s else [todo]
        if all(estimate(chunk, combos, costs, runner, picked=part).seconds > budget_s - spent_s for part in parts):
            parts = [todo]  # no part fits a contact: kept whole, and named once
        for i, part in enumerate(parts):
            named = chunk if len(parts) == 1 else dataclasses.replace(chunk, name=f"{chunk.name}.{i + 1}")
            est = estimate(chunk, combos, costs, runner, picked=part)
            fits = bool(part) and (not budget_s or at + est.seconds <= budget_s)
            if fits:
                at += est.seconds
            found.append(Planned(named, est, at if fits else None, part, len(live) - len(todo), failed,
                                 [r for r in retried if any(c.name == r[0] for c in part)], given_up if i == 0 else []))
    return found


def contacts(planned: list[Planned], budget_s: float, spent_s: float) -> tuple[list[list[Planned]], list[Planned]]:
    """How consecutive contacts of `budget_s` each, `spent_s` of it before the chunks, work through the parts to
    run (gpu_bench.sh's rule: in order, each only while its estimate fits): the parts of each contact, and those
    that fit in none."""
    room = budget_s - spent_s
    left = [p for p in planned if p.todo and p.estimate.seconds <= room]
    never = [p for p in planned if p.todo and p.estimate.seconds > room]
    found = []
    while left:
        at, taken = 0.0, []
        for p in left:
            if at + p.estimate.seconds <= room:
                at += p.estimate.seconds
                taken.append(p)
        found.append(taken)
        left = [p for p in left if p not in taken]
    return found, never
