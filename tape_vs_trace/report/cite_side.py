"""`tape-vs-trace cite <side table>`: one citable block per row of a side table (results.side_tables.SPECS; the query
is the table's name), from its spec alone: rows picked by key=value over the spec's key columns (machine= and commit=
too), each machine's rows by the table's newest-file rule unless commit= picks a file, every key column fixed by a
filter or by being the only value left; a block per row naming its values with their intervals, methods, commit,
machine and file; without framework= the JAX/PyTorch ratio of each value by the side tables' like rule, or why it
refuses. A table whose rows say more subclasses `Citation` (cite_distributed, cite_native_peak: DETAILED)."""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from implementations import frameworks
from tape_vs_trace.report import fmt
from tape_vs_trace.report.cite import BASE, OTHER, SELECTORS, CiteError, _some, parse_filters
from tape_vs_trace.results import intervals, side_tables
from tape_vs_trace.results.side_tables import SideTable

# the tables whose citation says more than its spec: their modules' CITATION
DETAILED = {"distributed": "tape_vs_trace.report.cite_distributed",
            "native-peak": "tape_vs_trace.report.cite_native_peak"}


def _order(values: set[str]) -> list[str]:
    """A column's values as an error names them: counts (ranks) by number, anything else as text."""
    return sorted(values, key=lambda v: (len(v), v)) if all(v.isdigit() for v in values) else sorted(values)


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _unit(column: str) -> str:
    return "seconds" if column.endswith("_s") else "bytes" if column.endswith("bytes") else ""


def _text(value: float, unit: str) -> str:
    return fmt.value(value, unit) if unit else fmt.number(value)


class Citation:
    """How one side table is cited: what the spec alone gives; a subclass may read, merge and say more."""

    def __init__(self, spec: SideTable) -> None:
        self.spec = spec

    def read(self, path: Path) -> pd.DataFrame:
        return self.spec.read(path)

    def merge(self, table: pd.DataFrame) -> list[dict]:
        """The rows to cite from a machine's rows: one per key, its repeats (spec.repeats) as lists of values."""
        spec = self.spec
        if not spec.repeats:
            return table.to_dict("records")
        if "status" in table.columns:  # a failed repeat has no value to merge (first-step: its parts did not add up)
            table = table[table.status == "ok"]
        out = []
        for _, group in table.groupby([*spec.key, "commit"], sort=False, dropna=False):
            row = group.iloc[0].to_dict()
            for column in spec.values:
                row[column] = [v for v in map(_number, group[column]) if v is not None]
            out.append(row)
        return out

    def record(self, results: Path, row: dict) -> dict:
        """One row as a JSON-ready object: its key, each value with its 95 % interval, methods and provenance."""
        spec = self.spec
        values = {}
        for column in spec.values:
            found = row[column] if isinstance(row[column], list) else [
                v for v in [_number(row[column])] if v is not None]
            if not found:
                continue
            low, high = (intervals.median_interval(found) if len(found) > 1 else (math.nan, math.nan))
            stem = column.rsplit("_", 1)[0]
            if not spec.repeats and f"{stem}_ci_low" in row:  # an interval the runner wrote beside the value
                low, high = _number(row[f"{stem}_ci_low"]) or math.nan, _number(row[f"{stem}_ci_high"]) or math.nan
            values[column] = {"value": sorted(found)[len(found) // 2], "ci_low": low if math.isfinite(low) else None,
                              "ci_high": high if math.isfinite(high) else None, "repeats": len(found),
                              "all": found}
        return {"result": spec.name, **{k: row[k] for k in spec.key}, "values": values,
                "methods": {m: row[m] for m in spec.method if row[m]}, "commit": row["commit"],
                "machine": row["machine"], "device": row.get("device") or None, "source": row["source"]}

    def title(self, rec: dict) -> str:
        named = ", ".join(f"{k}={rec[k]}" for k in self.spec.key if k != "framework" and rec[k] != "")
        who = f" — {frameworks.label(rec['framework'])}" if rec.get("framework") in frameworks.FRAMEWORKS else ""
        return f"{self.spec.name} {named}{who}"

    def lines(self, rec: dict) -> list[tuple[str, str]]:
        said = []
        for column, v in rec["values"].items():
            unit = _unit(column)
            interval = (f", 95 % interval {_text(v['ci_low'], unit)}–{_text(v['ci_high'], unit)}"
                        if v["ci_low"] is not None else ", no 95 % interval")
            said.append(f"{column} {_text(v['value'], unit)}{interval}")
        repeats = self.spec.repeats
        how = (f"median over each key's {repeats}es; 95 % Student-t interval over them (log scale)" if repeats
               else "one row a key, as the runner wrote it")
        methods = "; ".join(f"{k} {v}" for k, v in rec["methods"].items())
        return [("value", "; ".join(said) or "no value"), ("method", f"{methods}; {how}" if methods else how),
                ("commit", rec["commit"][:8]),
                ("machine", rec["machine"] + (f", device {rec['device']}" if rec["device"] else "")),
                ("source", rec["source"])]

    def ratios(self, rows: list[dict]) -> list[tuple[str, str, str, dict]]:
        """(value, label, text, JSON) of each value's JAX/PyTorch ratio where both frameworks' rows are here."""
        by_fw = {r.get("framework"): r for r in rows}
        if BASE not in by_fw or OTHER not in by_fw:
            return []
        base, other = by_fw[BASE], by_fw[OTHER]
        out = []
        for column in self.spec.values:
            a, b = (self.record(Path(), r)["values"].get(column) for r in (base, other))
            if a is None or b is None or not a["value"]:
                continue
            why = side_tables.unlike(self.spec, base, other, column)
            ratio = None if why else b["value"] / a["value"]
            low, high = (intervals.ratio_interval(b["all"], a["all"]) if self.spec.repeats and not why
                         else (math.nan, math.nan))
            text = f"— ({why})" if why else f"{ratio:.3g}" + (
                f" (95 % interval {low:.3g}–{high:.3g})" if math.isfinite(low) else " (no interval)")
            out.append((column, f"{frameworks.label(OTHER)}/{frameworks.label(BASE)} {column}", text,
                        {"of": f"{OTHER}/{BASE}", "ratio": ratio, "refused": why,
                         "ci_low": low if math.isfinite(low) else None,
                         "ci_high": high if math.isfinite(high) else None}))
        return out


def citation(name: str) -> Citation:
    """The citation of the side table `name`: its DETAILED module's, else the one its spec gives."""
    module = DETAILED.get(name)
    return importlib.import_module(module).CITATION if module else Citation(side_tables.SPECS[name])


def rows(how: Citation, results: Path, commit: str | None, warn: Callable[[str], None]) -> list[dict]:
    """The rows to cite from: each machine's shown by the table's newest-file rule, or every file's with commit=."""
    spec = how.spec
    folder = spec.folder(results)
    if not folder.is_dir():
        raise CiteError(f"no {spec.what}: {folder} is not a folder (run tape-vs-trace {spec.writer()} first)")
    found = side_tables.load(spec, results, warn, how.read)
    if not found:
        raise CiteError(f"no readable {spec.what} in {folder}")
    tables = side_tables.newest_rows(spec, found).values() if commit is None else [
        data.assign(file=path.name, machine=machine) for machine, path, data in found]
    return [{**row, "source": str(folder / row["file"])} for table in tables for row in how.merge(table)]


def select(spec: SideTable, found: list[dict], filters: dict[str, str]) -> list[list[dict]]:
    """Per machine, the rows to cite (one, or one per framework): every key column fixed by a filter or by being the
    only value left."""
    unknown = [k for k in filters if k not in spec.key and k not in SELECTORS]
    if unknown:
        raise CiteError(f"{spec.name} rows have no column {unknown[0]!r}; keys: {', '.join([*spec.key, *SELECTORS])}")
    for key, value in filters.items():
        keep = [r for r in found if (str(r[key]).startswith(value) if key == "commit" else str(r[key]) == value)]
        if not keep:
            have = {str(r[key])[:8] if key == "commit" else str(r[key]) for r in found}
            raise CiteError(f"no {spec.name} row with {key}={value}; {key} takes: {_some(_order(have))}")
        found = keep
    order = {fw: i for i, fw in enumerate(frameworks.NAMES)}
    out = []
    for machine in sorted({r["machine"] for r in found}):
        group = [r for r in found if r["machine"] == machine]
        varying = {k: _order({str(r[k]) for r in group}) for k in (*spec.key, "commit") if k != "framework"}
        varying = {k: v for k, v in varying.items() if len(v) > 1}
        if varying:
            choices = "; ".join(f"{k} takes {', '.join(v if k != 'commit' else [c[:8] for c in v])}"
                                for k, v in varying.items())
            raise CiteError(f"{len(group)} {spec.name} rows left on {machine}: {choices}; add key=value to choose")
        out.append(sorted(group, key=lambda r: order.get(r.get("framework"), len(order))))
    return out


def render(how: Citation, results: Path, groups: list[list[dict]], form: str, both: bool) -> str:
    """The blocks of `groups` in `form` (text, markdown, json); with `both` (no framework= given) the ratios of each
    group, or why the rule refuses them."""
    objects, blocks = [], []
    for group in groups:
        recs = [how.record(results, r) for r in group]
        ratios = how.ratios(group) if both else []
        for rec in recs:
            if ratios:
                rec["ratio"] = {key: obj for key, _, _, obj in ratios}
        objects.extend(recs)
        block = []
        for rec in recs:
            if form == "markdown":
                block += [f"**{how.title(rec)}**", ""] + [f"- {k}: {v}" if k != "dashboard" else f"- {k}: `{v}`"
                                                          for k, v in how.lines(rec)] + [""]
            else:
                block += [how.title(rec)] + [f"  {k:<10} {v}" for k, v in how.lines(rec)]
        block += [f"- {label}: {text}" if form == "markdown" else f"{label}: {text}" for _, label, text, _ in ratios]
        blocks.append("\n".join(block).rstrip())
    if form == "json":
        return json.dumps(objects[0] if len(objects) == 1 else objects, indent=2)
    return "\n\n".join(blocks)


def run(name: str, filters: list[str], results: Path, form: str, warn: Callable[[str], None]) -> str:
    how = citation(name)
    chosen = parse_filters(filters)
    groups = select(how.spec, rows(how, results, chosen.get("commit"), warn), chosen)
    return render(how, results, groups, form, "framework" not in chosen)
