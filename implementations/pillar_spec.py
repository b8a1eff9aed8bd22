"""What a pillar of the suite declares (implementations/pillars.py holds the table): its findings' rules, its figure,
the metrics the report reads by use (`Role`) and its paired comparisons (`Paired`). Imports nothing of the project."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Change:
    """Finding: within each framework, `variant` against `base` on `metric` (a cost in %)."""

    metric: str
    base: str
    variant: str
    what: str
    ops: bool = False  # name the ops that make the difference (saved bytes, from the breakdown)
    # a paired experiment too (implementations.experiments): set pair by pair, as an eager/compiled pair moves its
    # compiled combinations into the eager process (running.plan.paired_across_modes)
    paired: bool = False


@dataclass(frozen=True)
class Across:
    """Finding: JAX against PyTorch on like rows of `variant` (the one ratio rule, report.stats.compare)."""

    metric: str
    variant: str
    what: str
    ops: bool = False


@dataclass(frozen=True)
class Side:
    """Finding: two values that count different things, side by side without a ratio."""

    metric: str
    variant: str
    what: str


@dataclass(frozen=True)
class ProgramChange:
    """Finding: within each framework and variant, the program with `axis` ("style" or "attention") at `variant`
    against the same program at `base` (workloads.STYLES, ATTENTIONS), on `metric` (a change in %)."""

    metric: str
    axis: str
    base: str
    variant: str
    what: str
    ops: bool = False


Rule = Change | Across | Side | ProgramChange


@dataclass(frozen=True)
class Panel:
    """One panel of a 'changes' figure: each of `variants` against `base` on `metric`, in %."""

    metric: str
    base: str
    variants: tuple[str, ...]
    label: str


@dataclass(frozen=True)
class Figure:
    """A pillar's figure, ``<pillar>.png``: 'values' (times as dots with intervals, memory as bars) or 'changes'
    (one panel per `panels` entry, each variant's change against its base)."""

    kind: str
    title: str = ""  # '' for a 'values' figure: "<pillar>: PyTorch and JAX (lower is better)"
    panels: tuple[Panel, ...] = ()


@dataclass(frozen=True)
class Role:
    """A metric the report reads for what it is used for (the headline's step time, the roofline's flops): a family of
    the pillar's benchmark file and one of its methods."""

    family: str
    metric: str


@dataclass(frozen=True)
class Paired:
    """A pillar's paired comparisons (its findings marked `paired`): the kind of step their points run
    (experiments.Point.kind), the specs' grid that chooses their workloads and sizes, and the family and metric that
    time a point."""

    kind: str
    grid: str
    family: str
    metric: str


@dataclass(frozen=True)
class Pillar:
    """One benchmark file of the suite, ``benchmarks/<name>.py``."""

    name: str
    title: str
    torch: str  # what the PyTorch side runs, in words
    jax: str  # what the JAX side runs, in words
    families: tuple[str, ...]  # its per-workload benchmark classes, `<Family>_<workload>`; sized by the specs' grid
    axes: tuple[str, ...]  # the parameters beyond BASE_PARAMS, in the order a variant's name joins them
    figure: Figure
    findings: tuple[Rule, ...] = field(default=())
    roles: tuple[tuple[str, Role], ...] = ()  # (use, metric): what the report reads by use, each declared once
    paired: Paired | None = None
    docs: str = ""  # where its details are, a page under docs/ ('' for docs/metrics.md alone)

    @property
    def module(self) -> str:
        return f"benchmarks.{self.name}"

    def benchmark(self, family: str, workload: str, metric: str) -> str:
        """The asv benchmark name of `family`'s `metric` on `workload`."""
        return f"{self.name}.{family}_{workload}.{metric}"
