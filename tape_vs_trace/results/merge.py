"""Result files merged and written after a run (`make bench`, the runner's save): a fresh asv file's machine paths
scrubbed, and a second run of the same commit merged into the first without losing a value or its provenance. The
run's own record (host fingerprint, calibration, interpreter version) comes from results.run_record, which calls
`scrub`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from tape_vs_trace.results import asv_files, entries, folder, host_check

ENV_NAME = folder.ENV_NAME


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


Choices = dict[str, set[entries.Values]]  # per benchmark, combinations by their values


def _chosen_or_attempted(data: dict, found: dict[str, entries.Entry]) -> Choices:
    """A file's choice; for one that does not say, the combinations it has a value or a failure for (its skips
    cannot be told from what it left out)."""
    chosen = asv_files.choice(data.get("tape_vs_trace"))
    if chosen is None:
        return {name: _attempted(entry) for name, entry in found.items()}
    return {name: {combos[i] for i in indices if 0 <= i < len(combos)} for name, indices in chosen.items()
            if name in found for combos in [found[name].combinations()]}


def _attempted(entry: entries.Entry) -> set[entries.Values]:
    """The combinations of an entry the run measured or failed (asv_files.attempted)."""
    return {c for c in entry.combinations() if asv_files.attempted(entry.value(c))}


def _indices(entry: entries.Entry, combos: set[entries.Values]) -> list[int]:
    """The positions in `entry`'s grid of those of `combos` it has."""
    return [i for i, c in enumerate(entry.combinations()) if c in combos]


def merge_results(old: dict, new: dict) -> tuple[dict, dict[str, list[int]]]:
    """`new` (a later run of the same commit and environment) laid over `old`, combination by combination, each
    paired with the same combination of the old run by its parameter values (results.entries), never by position:
    what the new run chose and measured (or skipped) replaces the old item; a combination it did not choose or does
    not have, or failed where the old run measured, keeps the old item (value, samples, statistics); a benchmark it
    did not run keeps the old entry. An entry's grid is both runs' (a value one of them lacks added), so no value is
    lost. An entry of another benchmark version or number of parameters replaces the old one whole (its values mean
    other things). The merged record's "chosen" is every run's choice together: a combination outside it was not
    run. Returns the merged data and, per benchmark, the combinations whose value or failure still comes from `old`
    (positions in the merged grid)."""
    olds, news = entries.read_all(old), entries.read_all(new)
    mine, theirs = list(new.get("result_columns") or []), list(old.get("result_columns") or [])
    columns = [*mine, *(c for c in theirs if c not in mine)]
    choice, before, now = (asv_files.choice(new.get("tape_vs_trace")), _chosen_or_attempted(old, olds),
                           _chosen_or_attempted(new, news))
    merged_entries = dict(olds)
    kept = {name: _attempted(entry) for name, entry in olds.items() if name not in news}
    for name, entry in news.items():
        previous = merged_entries.get(name)
        merged_entries[name] = entry
        if previous is None or previous.version != entry.version or len(previous.grid) != len(entry.grid):
            before.pop(name, None)  # another version or grid shape: the old values mean other things
            continue
        chosen = None if choice is None else now.get(name, set())

        def take(combo: entries.Values, n: dict, o: dict, chosen: set | None = chosen) -> bool:
            return _take_old(n.get("result"), o.get("result"), None if chosen is None else combo in chosen)

        merged_entries[name], from_old = entries.laid_over(entry, previous, take)
        kept[name] = {c for c in from_old if asv_files.attempted(previous.value(c))}
    merged = {**new, "result_columns": columns, "durations": {**old.get("durations", {}), **new.get("durations", {})},
              "results": {name: e.row(columns) for name, e in merged_entries.items()}}
    union = {name: _indices(e, before.get(name, set()) | now.get(name, set())) for name, e in merged_entries.items()}
    failures = merged_failures(_reindexed(old.get("tape_vs_trace"), olds, merged_entries),
                               _reindexed(new.get("tape_vs_trace"), news, merged_entries))
    merged["tape_vs_trace"] = {**new.get("tape_vs_trace", {}), "chosen": union, "failures": failures}
    found = {name: _indices(merged_entries[name], combos) for name, combos in sorted(kept.items())}
    return merged, {name: idx for name, idx in found.items() if idx}


def _reindexed(record: dict | None, found: dict[str, entries.Entry], merged: dict[str, entries.Entry]) -> dict:
    """A run's record with its failures' ids (`name-index`, positions in its own file's grid) moved to the same
    combination's position in the merged grid; an id of no such combination stays as it was."""
    record = dict(record or {})
    moved = {}
    for combo, runs in (record.get("failures") or {}).items():
        name, _, index = combo.rpartition("-")
        if name in found and name in merged and index.isdigit() and int(index) < len(found[name].items):
            values = found[name].combinations()[int(index)]
            if values in merged[name].items:
                combo = f"{name}-{merged[name].index(values)}"
        moved[combo] = runs
    record["failures"] = moved
    return record


def merged_failures(old: dict | None, new: dict | None) -> dict[str, list[dict]]:
    """Every run's failures of each combination (id -> [{run, error}]), old first, each run's once: a GPU contact
    retries a combination that failed once and leaves it out after its second failure (scripts/gpu_resume.py)."""
    found: dict[str, list[dict]] = {}
    for record in (old or {}, new or {}):
        for combo, entries_ in (record.get("failures") or {}).items():
            have = found.setdefault(combo, [])
            have += [e for e in entries_ if e not in have and all(e.get("run") != h.get("run") for h in have)]
    return found


def _merge_into(target: Path, data: dict) -> dict:
    """`data` merged into the result file `target` already holds, the older run's record kept where its values
    are."""
    old = folder.read_json(target)
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
        data = folder.read_json(path)
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
