"""Result files merged and written after a run (`make bench`, the runner's save): a fresh asv file's machine paths
scrubbed, and a second run of the same commit merged into the first without losing a value or its provenance. The
run's own record (host fingerprint, calibration, interpreter version) comes from results.run_record, which calls
`scrub`."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path

from tape_vs_trace.results import asv_files, folder, host_check

ENV_NAME = folder.ENV_NAME


def _per_combination(column: str) -> bool:
    """Columns holding one item per parameter combination (the others hold one item per benchmark)."""
    return column in ("result", "samples") or column.startswith("stats_")


def _expanded(entry: list, columns: list[str], count: int) -> list:
    """`entry` with a value for every column, a per-combination column's None (asv's all-None) as `count` Nones."""
    full = list(entry) + [None] * (len(columns) - len(entry))
    return [[None] * count if value is None and _per_combination(column) else value
            for column, value in zip(columns, full)]


def _compressed(entry: list, columns: list[str]) -> list:
    """asv's own form of an entry: an all-None per-combination list as None, trailing Nones dropped."""
    out = [None if _per_combination(c) and isinstance(v, list) and all(x is None for x in v) else v
           for c, v in zip(columns, entry)]
    while out and out[-1] is None:
        out.pop()
    return out


def _take_old(new: object, old: object, chosen: bool | None) -> bool:
    """Whether a combination keeps the old run's item. Not chosen by the new run: the old one, whatever it is (a
    value, a failure, a skip). Chosen: the new one, unless the new run failed where the old one measured. A file
    that does not say what it chose (asv run's: NaN for a skip and for a combination -b left out alike): its NaN
    never replaces a value or a failure."""
    if chosen is False:
        return True
    now = asv_files.outcome(new, chosen)
    if now == asv_files.FAILED:
        return asv_files.outcome(old, None) == asv_files.MEASURED
    return now == asv_files.NOT_RUN and asv_files.attempted(old)


def _merge_entry(previous: list, entry: list, columns: list[str], chosen: set[int] | None) -> tuple[list, list[int]]:
    """`entry` with the old run's items put back per combination (`_take_old`; `chosen`: the new run's choice, None
    where its file does not say); returns it and the combinations whose value or failure is the old run's."""
    count = len(_values(entry))
    new, old = _expanded(entry, columns, count), _expanded(previous, columns, count)
    take = [_take_old(n, o, None if chosen is None else j in chosen)
            for j, (n, o) in enumerate(zip(new[0], old[0]))]
    for i, column in enumerate(columns):
        if _per_combination(column) and len(new[i]) == len(old[i]) == count:
            new[i] = [o if t else n for n, o, t in zip(new[i], old[i], take)]
    return _compressed(new, columns), [j for j, t in enumerate(take) if t and asv_files.attempted(old[0][j])]


def _values(entry: list) -> list:
    """An entry's value per combination (asv writes None for "all failed")."""
    return entry[0] if entry[0] is not None else [None] * (math.prod(len(p) for p in entry[1]) if entry[1] else 1)


def _chosen_or_attempted(data: dict) -> dict[str, list[int]]:
    """A file's choice; for one that does not say, the combinations it has a value or a failure for (its skips
    cannot be told from what it left out)."""
    chosen = asv_files.choice(data.get("tape_vs_trace"))
    if chosen is not None:
        return chosen
    return {name: _attempted(entry) for name, entry in data.get("results", {}).items()}


def _attempted(entry: list) -> list[int]:
    """The combinations of an entry the run measured or failed (asv_files.attempted)."""
    return [j for j, v in enumerate(_values(entry)) if asv_files.attempted(v)]


def merge_results(old: dict, new: dict) -> tuple[dict, dict[str, list[int]]]:
    """`new` (a later run of the same commit and environment) laid over `old`, combination by combination: what
    the new run chose and measured (or skipped) replaces the old item; a combination it did not choose, or failed
    where the old run measured, keeps the old item (value, samples, statistics); a benchmark it did not run keeps
    the old entry. An entry of another benchmark version or parameter grid replaces the old one whole (its
    positions mean other things). The merged record's "chosen" is every run's choice together: a combination
    outside it was not run. Returns the merged data and, per benchmark, the combinations whose value or failure
    still comes from `old`."""
    merged = dict(new)
    merged["results"] = dict(old.get("results", {}))
    merged["durations"] = {**old.get("durations", {}), **new.get("durations", {})}
    kept = {name: _attempted(entry) for name, entry in merged["results"].items() if name not in new.get("results", {})}
    columns = new.get("result_columns", [])
    same_columns = columns == old.get("result_columns") and columns[:3] == ["result", "params", "version"]
    choice, before, now = (asv_files.choice(new.get("tape_vs_trace")), _chosen_or_attempted(old),
                           _chosen_or_attempted(new))
    for name, entry in new.get("results", {}).items():
        previous = merged["results"].get(name)
        merged["results"][name] = entry
        # Elementwise only for the same parameter grid and benchmark version: otherwise positions mean other things.
        if previous is None or not same_columns or previous[1:3] != entry[1:3]:
            before.pop(name, None)
            continue
        chosen = None if choice is None else set(choice.get(name, []))
        merged["results"][name], from_old = _merge_entry(previous, entry, columns, chosen)
        if from_old:
            kept[name] = from_old
    union = {name: sorted(set(before.get(name, [])) | set(now.get(name, []))) for name in merged["results"]}
    merged["tape_vs_trace"] = {**new.get("tape_vs_trace", {}), "chosen": union,
                               "failures": merged_failures(old.get("tape_vs_trace"), new.get("tape_vs_trace"))}
    return merged, {name: idx for name, idx in sorted(kept.items()) if idx}


def merged_failures(old: dict | None, new: dict | None) -> dict[str, list[dict]]:
    """Every run's failures of each combination (id -> [{run, error}]), old first, each run's once: a GPU contact
    retries a combination that failed once and leaves it out after its second failure (scripts/gpu_resume.py)."""
    found: dict[str, list[dict]] = {}
    for record in (old or {}, new or {}):
        for combo, entries in (record.get("failures") or {}).items():
            have = found.setdefault(combo, [])
            have += [e for e in entries if e not in have and all(e.get("run") != h.get("run") for h in have)]
    return found


def _merge_into(target: Path, data: dict) -> dict:
    """`data` merged into the result file `target` already holds, the older run's record kept where its values
    are."""
    old = json.loads(target.read_text())
    data, kept = merge_results(old, data)
    earlier = old.get("tape_vs_trace", {})
    runs = earlier.pop("earlier_runs", [])
    ours = data["tape_vs_trace"]
    # Chunks of one run (gpu_bench.sh scrubs after each) share a record: keep one, not one per chunk.
    same_run = earlier.get("calibration") == ours.get("calibration") and host_check.same_host(earlier, ours)[0]
    if kept and not same_run:
        runs.append({**earlier, "benchmarks_kept": sorted(kept), "combinations_kept": kept})
    before, now = earlier.get("worker_runs") or {}, ours.get("worker_runs") or {}
    # another invocation of the runner in one run (its own start) adds to the parts before it; a later round's save
    # of the same invocation rewrites its own part, added to the same earlier parts again
    if same_run and before.get("started") and now.get("started"):
        if before["started"] != now["started"]:
            ours["worker_runs"] = _joined_runs(before, now)
        elif before.get("earlier_parts"):
            ours["worker_runs"] = _joined_runs(before["earlier_parts"], now)
    data["tape_vs_trace"]["earlier_runs"] = runs
    data["tape_vs_trace"]["runner_of"] = {**earlier.get("runner_of", {}), **ours.get("runner_of", {})}
    return data


def _joined_runs(first: dict, then: dict) -> dict:
    """The runner's records of two parts of one run (chunks, or make compile-series' parts) as one: their worker
    processes, walls and per-process records added up, the most rounds either ran, the later part's stop and
    layout; `parts` counts them, so a reader is told of every process, not the last part's alone. `earlier_parts`
    keeps what came before the later part, to which its next round's save is added again."""
    first = {k: v for k, v in first.items() if k != "earlier_parts"}
    return {**then, "earlier_parts": first, "parts": int(first.get("parts", 1)) + int(then.get("parts", 1)),
            "selection": [*(first.get("selection") or []), *(then.get("selection") or [])],
            "processes": int(first.get("processes") or 0) + int(then.get("processes") or 0),
            "wall_s": round(float(first.get("wall_s") or 0.0) + float(then.get("wall_s") or 0.0), 1),
            "rounds": max(int(first.get("rounds") or 0), int(then.get("rounds") or 0)),
            "per_process": [*(first.get("per_process") or []), *(then.get("per_process") or [])],
            "graphs": {**(first.get("graphs") or {}), **(then.get("graphs") or {})}}


def scrub(results: Path, python_version: Callable[[str], str], run_details: Callable[[], dict]) -> list[Path]:
    """Remove the machine's paths from asv result files, and record the machine details that are no series key.

    asv names an `existing` environment `existing-py_<path of python>`, in the result file's name and in its JSON,
    and records the interpreter's path as `python`: committed results must not carry the path of the machine that
    produced them. The environment becomes `existing-venv` and `python` the interpreter's version. Files renamed
    now come from a run on this machine: they also get its fingerprint and the run's calibration under
    "tape_vs_trace", which asv ignores and the report prints. `python_version`: the version of an interpreter asv
    recorded; `run_details`: this run's record (results.run_record gives both).

    Safe to run twice and after a second run of the same commit: a fresh file whose scrubbed name exists already
    is merged into it (`merge_results`); an older run's record (another fingerprint or calibration) moves to
    "tape_vs_trace"["earlier_runs"] with the benchmarks whose values still come from it, so no saved value is lost
    and none loses its provenance.
    """
    changed = []
    for path in sorted(p for p in results.glob("*/*.json") if p.name != "machine.json"):
        data = json.loads(path.read_text())
        fresh = "-existing-py_" in path.name
        if not fresh and "/" not in str(data.get("python", "")):
            continue
        data["env_name"] = ENV_NAME if fresh else data["env_name"]
        data["python"] = python_version(str(data.get("python", "")))
        data.setdefault("params", {})["python"] = data["python"]
        if fresh:
            ours = data.get("tape_vs_trace", {})
            # Which runner measured each benchmark: tape-vs-trace run says so in its file; asv run's files say nothing.
            runner = ours.pop("runner", "asv")
            data["tape_vs_trace"] = {**ours, **run_details(),
                                     "runner_of": {name: runner for name in data.get("results", {})}}
        target = path.with_name(f"{path.name.split('-existing-py_', 1)[0]}-{ENV_NAME}.json") if fresh else path
        if fresh and target.exists():
            data = _merge_into(target, data)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
        os.replace(tmp, target)
        if target != path:
            path.unlink()
        changed.append(target)
    return changed
