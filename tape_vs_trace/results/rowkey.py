"""A result row's identity, and the one rule for which two rows may be divided.

`RowKey` names what a row measured, from the registries' fields: its asv benchmark (pillar, family and metric),
workload, size, every axis value of its parameters, framework, dtype, precision and device. A ratio across frameworks
is formed only between like rows (`like`): their keys differ in the framework alone, they ran on one machine at one
commit, and the properties of their runs that decide what a number means agree (`unlike_runs`: benchmark version,
what the metric counts, the memory method and the mode a peak was measured in). As pyperf's `compare_to` refuses
benchmarks whose metadata differ, the rule says which property differs, in the words the report prints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from implementations import frameworks, metrics

NOT_LIKE = "not like rows"
# The parameters a key names as fields of their own (pillars.BASE_PARAMS; the framework is the row's column)
NAMED = ("workload", "size", "dtype", "precision", "device")
PLACE = ("machine", "commit")  # where a row ran: two rows are divided only within one run
_ABSENT = object()  # an axis one key has and the other has not differs, whatever its value


def _text(value: object) -> object:
    """A named field's value as text; None for a parameter the benchmark lacks. An empty cell of a side CSV (NaN)
    becomes a marker equal to no other, so two rows that both lack a value are not taken as alike in it."""
    if isinstance(value, float) and math.isnan(value):
        return object()
    return None if value is None else str(value)


def params_of(row: Mapping) -> dict:
    """A row's parameters: its "params" column, a JSON object as the report's table holds it (or a dict)."""
    params = row.get("params") or {}
    return dict(json.loads(params) if isinstance(params, str) else params)


@dataclass(frozen=True)
class RowKey:
    """What one result row measured. A parameter the benchmark does not have is None; `axes` holds every parameter
    beyond the named ones (a pillar's axes, the program's style and attention), sorted by name."""

    benchmark: str  # asv's name, "pillar.Family.metric"
    metric: str
    framework: str
    workload: str | None = None
    size: str | None = None
    dtype: str | None = None
    precision: str | None = None
    device: str | None = None
    axes: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, row: Mapping) -> RowKey:
        """The key of a row of the report's table (report.rows: benchmark, metric, framework and params columns)."""
        params = params_of(row)
        params.pop("framework", None)  # the row's column says it, also for results whose parameters do not
        named = {k: _text(params.pop(k, None)) for k in NAMED}
        return cls(str(row.get("benchmark", "")), str(row.get("metric", "")), str(row.get("framework", "")),
                   **named, axes=tuple(sorted(params.items())))

    @classmethod
    def of_columns(cls, row: Mapping, columns: tuple[str, ...], benchmark: str, metric: str = "") -> RowKey:
        """The key of a side measurement's row (schema: a CSV row whose `columns` name its combination, the
        framework apart), as `benchmark` names the measurement."""
        named = {k: _text(row.get(k)) for k in NAMED if k in columns}
        axes = tuple(sorted((k, row[k]) for k in columns if k not in NAMED and k != "framework"))
        return cls(benchmark, metric, str(row.get("framework", "")), **named, axes=axes)

    @property
    def pillar(self) -> str:
        return self.benchmark.split(".")[0]

    @property
    def family(self) -> str:
        """The benchmark's class ("GradStep_mlp"), '' for a name without one."""
        parts = self.benchmark.split(".")
        return parts[1] if len(parts) > 1 else ""

    def axis(self, name: str, default: object = "") -> object:
        return dict(self.axes).get(name, default)

    def params(self) -> dict:
        """The parameters the key was built from, but the framework, sorted by name."""
        named = {k: getattr(self, k) for k in NAMED if getattr(self, k) is not None}
        return dict(sorted({**named, **dict(self.axes)}.items()))

    def without(self, *names: str) -> RowKey:
        """The key with `names` (fields or axes) left out: the key of a group whose members differ in them alone."""
        blank = {f.name: "" if f.name in ("benchmark", "metric", "framework") else None
                 for f in fields(self) if f.name in names}
        return replace(self, **blank, axes=tuple((k, v) for k, v in self.axes if k not in names))

    def differing(self, other: RowKey) -> set[str]:
        """The names of the fields and axes in which two keys differ."""
        found = {f.name for f in fields(self) if f.name != "axes" and getattr(self, f.name) != getattr(other, f.name)}
        mine, theirs = dict(self.axes), dict(other.axes)
        return found | {k for k in mine.keys() | theirs.keys() if mine.get(k, _ABSENT) != theirs.get(k, _ABSENT)}


def same_place(a: Mapping, b: Mapping) -> bool:
    """Whether two rows ran on one machine at one commit."""
    return all(a.get(k) == b.get(k) for k in PLACE)


def unlike_methods(a: str, b: str, metric: str) -> str | None:
    """Why two values of `metric` measured by methods `a` and `b` are unlike, or None: a peak's two methods must be
    one (frameworks.same_memory_method: on CUDA both allocators' high-water marks are); a count's must be equal."""
    same = frameworks.same_memory_method(a, b) if "peak" in metric else a == b
    return None if same else ("different methods" if "flops" in metric else "different memory methods")


def _peak_mode(row: Mapping) -> str:
    """The mode in which a peak row was measured: the row's own `peak_mode` where it records one (a side
    measurement that runs every mode), else its framework's probe's (frameworks.peak_mode); '' if unknown."""
    if row.get("peak_mode"):
        return str(row["peak_mode"])
    return frameworks.peak_mode(row["framework"]) if row["framework"] in frameworks.FRAMEWORKS else ""


def unlike_runs(a: Mapping, b: Mapping) -> str | None:
    """Why the runs of two rows of one case measured different things, or None: the benchmark version, what the
    metric counts in each framework, the memory method, and for a peak the mode each probe measured it in (on CUDA
    both allocators' high-water marks are one method, but PyTorch's probe runs the tape op by op and JAX's a jitted
    program). The runner layout is a property of a machine's run, not of a row: report.hosts compares it."""
    if a.get("benchmark_version") != b.get("benchmark_version"):
        return NOT_LIKE
    if not (a["comparable"] and b["comparable"]):
        return "counts different things"
    if unlike_methods(a["memory_method"], b["memory_method"], "track_peak_bytes"):
        return "different memory methods"
    if a["memory_method"] and _peak_mode(a) != _peak_mode(b):
        return "unlike modes: " + ", ".join(f"{frameworks.label(r['framework'])} {_peak_mode(r)}" for r in (a, b))
    return metrics.unlike_formulations(a["benchmark"]) or None


# What two machines' runs of one case must share for their ratios to meet in one verdict (report.hosts), in the
# words the report names them: the runner layout is known from a run's record, not from its rows
RUN_PROPERTIES = ("benchmark version", "runner layout", "measurement method")


def run_properties(rows: tuple[Mapping, ...], layout: str | None = None) -> dict[str, str]:
    """The RUN_PROPERTIES of one case's rows on one machine: their benchmark versions, the runner layout where the
    caller gives it (a sampled time; a count does not depend on which processes ran it), and how each was measured."""
    props = {"benchmark version": " / ".join(dict.fromkeys(str(r["benchmark_version"]) for r in rows))}
    if layout is not None:
        props["runner layout"] = layout
    props["measurement method"] = " / ".join(dict.fromkeys(
        "; ".join(str(r.get(k) or "") for k in ("basis", "method", "memory_method")).strip("; ") for r in rows))
    return props


def like(a: Mapping, b: Mapping) -> str | None:
    """THE rule for a ratio across frameworks: None when `b` may be divided by `a` (their keys differ in the framework
    alone, they ran on one machine at one commit, and their runs agree: `unlike_runs`), else why not."""
    if RowKey.of(a).differing(RowKey.of(b)) != {"framework"} or not same_place(a, b):
        return NOT_LIKE
    return unlike_runs(a, b)
