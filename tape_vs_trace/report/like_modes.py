"""The mechanisms and memory in like modes, across machines: on the front page (summary.md) a line per mechanism with
its verdicts counted over the like machines, and the bytes kept for the backward in two lines; on PAGE every workload
and machine, a cell each (report.front.grid)."""

from __future__ import annotations

from tape_vs_trace.report import front, headline, hosts
from tape_vs_trace.report.front import caption, grid, machine_order, unlike_line
from tape_vs_trace.report.headline import Headline, Row

MECHANISMS = "Mechanisms, each in like modes"
MODE_NAMES = ("compiled program", "dispatch cost")  # MODES' names: the mode is in the name
PAGE = "like-modes.md"  # every workload and machine of the front page's mechanisms and memory
# the like-mode step times by mode, each named for what it measures (the eager pair is Python dispatch per op)
MODES = {"compiled": "compiled program: `torch.compile` against `jax.jit`",
         "eager": "dispatch cost: PyTorch's eager tape against un-jitted JAX, "
                  "so it measures per-op dispatch, not a jitted program"}
MEMORY = ("Bytes kept for the backward, exact counts: PyTorch's saved tensors (deduplicated by storage) against "
          "`jax.vjp`'s residuals before XLA (XLA may keep fewer or more).")


def is_default(case: tuple[str, ...]) -> bool:
    """A workload's default program: its default style and written attention, where it has those axes."""
    return case[4] in ("", "default") and case[5] in ("", "written")


def like_mode_rows(top: Headline) -> list[Row]:
    """The step times of the like-mode table, compiled first: each workload's default program (`is_default`)."""
    return [r for mode in MODES for r in top.rows if r.measure == "step time" and r.case[2] == mode
            and is_default(r.case)]


def mechanism_table(top: Headline, details: dict) -> tuple[list[str], dict]:
    """The like-mode step times in one table across machines (`like_mode_rows`), compiled first, the eager pair named
    as dispatch cost; then one line per other mechanism (headline.MECHANISMS), its verdicts counted over every
    machine; also, per machine left out of a verdict, why."""
    rows = like_mode_rows(top)
    if not rows:
        return [], {}
    table, left = grid(rows, machine_order(top), details,
                       lambda case, _: [MODES[case[2]].split(":")[0], *front.program(case)],
                       ("measures", "workload", "program"))
    modes = ". ".join(m[0].upper() + m[1:] for m in MODES.values()) + " (default programs; all on the machine pages)"
    lines = [f"{caption(top)} {modes}.", "", *table, ""]
    said = [f"- **{name}** ({what}): {headline.told_by_mode(rs)}." for name, what, _, _ in headline.MECHANISMS
            if (rs := [r for r in top.extra if r.measure == name])]
    return lines + ([*said, ""] if said else []), left


def memory_table(top: Headline, details: dict) -> tuple[list[str], dict]:
    """The bytes kept for the backward across machines, with the method ('before XLA'); one column where every
    machine agrees; also, per machine left out of a verdict, why."""
    rows = saved_rows(top)
    if not rows:
        return [], {}
    table, left = grid(rows, machine_order(top), details, front.program, ("workload", "program"))
    if alike(table):  # exact and alike everywhere: one column
        n = len({r.machine for r in rows})
        table = [f"| workload | program | JAX/PyTorch on all {n} machines | verdict (machines) |",
                 "|---|---|---:|---|",  # every count exact: the caption says so once
                 *["| " + " | ".join([*(cells := line.strip("| ").split(" | "))[:2],
                                      cells[2].removesuffix(" (exact)"), cells[-1]]) + " |" for line in table[2:]]]
    return [f"{caption(top)} {MEMORY}", "", *table, ""], left


def saved_rows(top: Headline) -> list[Row]:
    return [r for r in top.rows if r.measure == "saved for backward"]


def alike(table: list[str]) -> bool:
    """Whether every row of a `grid` table has one cell on every machine."""
    return all(len(set(line.split(" | ")[2:-1])) == 1 for line in table[2:])


def page(top: Headline, details: dict) -> str:
    """PAGE: every workload and machine of the front page's mechanisms and memory, with why a machine marked UNLIKE
    is left out of its verdicts; empty without either."""
    (mechanisms, left), (memory, more) = mechanism_table(top, details), memory_table(top, details)
    if not mechanisms and not memory:
        return ""
    lines = ["# Like modes, every workload and machine", "", "The tables behind the front page's mechanisms and "
             "memory ([summary.md](summary.md)).", ""]
    lines += ([f"## {MECHANISMS}", "", *mechanisms] if mechanisms else []) + (["## Memory", "", *memory] if memory
                                                                                else [])
    return "\n".join([*lines, *unlike_line(left | more)]).rstrip() + "\n"


def like_only(rows: list[Row], details: dict) -> list[Row]:
    """Of `rows`, those of the machines that meet in each case's verdict (hosts.like_machines): the front page counts
    no unlike run (UNLIKE) in a verdict."""
    by_case: dict[tuple, dict[str, Row]] = {}
    for r in rows:
        by_case.setdefault((r.measure, r.case), {})[r.machine] = r
    keep = {(key, m) for key, by_machine in by_case.items() for m in hosts.like_machines(by_machine, details)[0]}
    return [r for r in rows if ((r.measure, r.case), r.machine) in keep]


# the front page's verdict words of a count: JAX is the column's subject
COUNTED = {"JAX slower": "slower", "JAX faster": "faster", "JAX keeps more": "keeps more",
           "JAX keeps less": "keeps less", headline.NOT_BEYOND: "within a rerun's band",
           "no difference measurable": "no difference"}
# what each mechanism of the summary compares, in a few words
COMPARES = {"compiled program": "`torch.compile`, `jax.jit`: step time",
            "dispatch cost": "eager tape, un-jitted JAX: per-op dispatch",
            "custom backward": "`autograd.Function`, `custom_vjp`: step time",
            "remat": "`checkpoint`, `jax.checkpoint`: saved bytes", "no-grad inference": "forward time",
            "transforms": "`torch.func`, JAX's transforms: step time"}


def counted(rows: list[Row], mode_named: bool) -> str:
    """'eager: slower 12 (2.08–16×) of 12, 3 machines; compiled: ...': per mode, how many ratios say each verdict
    (headline.tally) and the range of the findings; the mode left out where the mechanism's name says it."""
    parts = []
    for mode in dict.fromkeys(r.case[2] for r in rows):
        sel = [r for r in rows if r.case[2] == mode]
        said = ", ".join(f"{COUNTED.get(word, word)} {len(rs)}" + (f" ({headline.extremes(rs)})"
                                                                   if word.startswith("JAX") else "")
                         for word, rs in headline.tally(sel))
        n = len({r.machine for r in sel})
        parts.append(f"{mode + ': ' if mode and not mode_named else ''}{said} of {len(sel)}, "
                     f"{n} machine{'s' if n > 1 else ''}")
    return "; ".join(parts)


def mechanism_summary(top: Headline, details: dict) -> list[str]:
    """1c on the front page: a line per mechanism, each in like modes and named for what it measures (compiled
    program, then the eager pair as dispatch cost, then headline.MECHANISMS), its verdicts counted over the like
    machines by mode (`counted`); every workload and machine on PAGE."""
    like = like_mode_rows(top)
    named = [(MODES[mode].split(":")[0], [r for r in like if r.case[2] == mode]) for mode in MODES]
    named += [(name, [r for r in top.extra if r.measure == name]) for name, _, _, _ in headline.MECHANISMS]
    lines = [f"| {name} | {COMPARES.get(name, '')} | {counted(kept, name in MODE_NAMES)} |"
             for name, rows in named if (kept := like_only(rows, details))]
    if not lines:
        return []
    return [f"## {MECHANISMS}", "", f"{caption(top)} JAX against PyTorch, each mechanism in like modes (compiled "
            f"program and dispatch cost: each workload's default program); every workload and machine: "
            f"[{PAGE}]({PAGE}).", "",
            "| measures | compares | JAX's ratios: how many say each verdict (range), of how many |", "|---|---|---|",
            *lines, ""]


def memory_summary(top: Headline, details: dict, more: str = "") -> list[str]:
    """1d on the front page: the bytes kept for the backward with their method ('before XLA'), each verdict counted
    over the programs where every like machine agrees, else over the ratios (`counted`); `more`: the sentences after
    it (the CPU peaks' page, the GPU's allocator peaks)."""
    rows = like_only(saved_rows(top), details)
    if not rows:
        return []
    table, _ = grid(rows, machine_order(top), details, front.program, ("workload", "program"))
    machines = len({r.machine for r in rows})
    if alike(table):
        one = list({r.case: r for r in rows}.values())
        said = ", ".join(f"{'JAX ' * word.startswith('JAX')}{COUNTED.get(word, word)} in {len(rs)}"
                         + (f" ({headline.extremes(rs)})" if word.startswith("JAX") else "")
                         for word, rs in headline.tally(one))
        said += f" of {len(one)} programs, alike on all {machines} machines"
    else:
        said = counted(rows, False)
    return ["## Memory", "", " ".join(w for w in (caption(top), MEMORY) if w), "",
            f"- **Saved for the backward**: {said}; per program: [{PAGE}]({PAGE}#memory).",
            *([f"- {more}"] if more else []), ""]
