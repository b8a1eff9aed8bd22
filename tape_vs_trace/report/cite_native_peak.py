"""`tape-vs-trace cite native-peak key=value ...`: one citable block for a case of the CPU native peaks (from the
newest results/native-peak file that holds the case): both frameworks' peaks with the method named, their spread
over processes, the analytic bounds and the suite's own CPU method beside them, and the JAX/PyTorch ratio where
rowkey.like allows it (else why not), with commit, machine and file."""

from __future__ import annotations

import math
from pathlib import Path

from implementations import frameworks
from tape_vs_trace.report.cite import CiteError
from tape_vs_trace.report.native_peak_section import FOLDER, _bounds, _case, _mib, _spread
from tape_vs_trace.results import native_peak_rows as rows
from tape_vs_trace.results.rowkey import RowKey

QUERY = "native-peak"
KEYS = (*rows.PARAMS, "framework", "machine")


def select(lines: list[dict], filters: list[str]) -> list[dict]:
    """The summary lines of one case (one per framework unless framework= is given); CiteError names the keys or
    the values left to choose."""
    for item in filters:
        key, _, value = item.partition("=")
        if key not in KEYS or not _:
            raise CiteError(f"native-peak filters are key=value with key one of: {', '.join(KEYS)}; got {item!r}")
        if not any(str(line[key]) == value for line in lines):
            have = sorted({str(line[key]) for line in lines})
            raise CiteError(f"no native-peak row with {key}={value}; {key} takes: {', '.join(have)}")
        lines = [line for line in lines if str(line[key]) == value]
    cases = {(RowKey.of(rows.like_row(line, 0)).without("framework"), line["machine"]) for line in lines}
    if len(cases) > 1:
        varying = {k: sorted({str(line[k]) for line in lines}) for k in (*rows.PARAMS, "machine")}
        choose = "; ".join(f"{k} takes {', '.join(v)}" for k, v in varying.items() if len(v) > 1)
        raise CiteError(f"{len(cases)} native-peak cases left: {choose}; add key=value to choose")
    return lines


def run(filters: list[str], results: Path) -> str:
    folder = results / FOLDER
    try:
        found = rows.current(folder) if folder.is_dir() else {}
        if not found:
            raise CiteError(f"no native-peak results in {folder} (run tape-vs-trace native-peak first)")
        lines = select([line for lines in found.values() for line in lines], filters)
    except rows.NativePeakError as exc:
        raise CiteError(str(exc)) from None
    first = lines[0]
    out = [f"CPU peak memory, {_case(first)}, {first['mode']}, float32 ({first['machine']}, commit "
           f"{first['commit'][:8]}, {first['file']})", f"  method: {first['method']}"]
    for line in lines:
        other = (f"; the suite's method ({line['other_method']}): {_mib(line['other_peak_bytes'])} MiB"
                 if line["other_peak_bytes"] != "" else "")
        out.append(f"  {frameworks.label(line['framework'])}: {_mib(line['peak_bytes'])} MiB above the step's start "
                   f"({_spread(line)}; bounds {_bounds(line)} MiB, {', '.join(line['verdicts'])}{other})")
    by_framework = {line["framework"]: line for line in lines}
    if set(by_framework) == set(frameworks.NAMES):
        try:
            ratio = rows.divide(by_framework["torch"], by_framework["jax"])
        except rows.NativePeakError as exc:
            out.append(f"  JAX / PyTorch: {exc}")
        else:
            [line] = rows.ratios([by_framework["torch"], by_framework["jax"]])
            interval = (f" (95 % across processes: {line['ratio_low']:.3f}-{line['ratio_high']:.3f})"
                        if math.isfinite(line["ratio_low"]) else " (one process a side: no interval)")
            out.append(f"  JAX / PyTorch: {ratio:.3f}{interval}")
    return "\n".join(out)
