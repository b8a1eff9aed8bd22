"""The experiments of `tape-vs-trace paired`: which asv combinations each comparison divides, point by point, for
this device (`asv_combination`); tape-vs-trace run measures them. Beside the specs and the pillar registry, which it
derives from: the asv suite (the remat curve's `point` axis) and the tooling both read it, and the suite imports no
tooling.

The two-point experiments (two variants of one framework, paired call by call) are the registry's findings marked
`paired` (pillars.Change.paired), each in every framework that runs both its points: the finding names the
experiment and its points, the pillar's axes make a point's asv combination.

Which workloads and sizes run each kind of experiment comes from the specs' grid (implementations/workload_table.py):
'RematCurve' (the trade-off curve, remat.RematCurve_*: every policy at the first size, the granularity at the second),
'paired.inference', 'paired.engine', 'paired.custom' and 'paired.transforms' (each pillar's `paired`: its grid).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from implementations import frameworks, pillars, workloads

# torch.compile's memory budgets (torch._functorch.config.activation_memory_budget) on the compiled PyTorch curve.
# 1.0 is the default and the 'plain' point; JAX's counterpart is its choice of policy.
BUDGETS = (0.5, 0.25, 0.1, 0.0)
# The transformer's remat policies, ordered from saving everything to saving least (implementations/jax/common.py
# has the table of what each saves on both sides). 'remat_every<k>' checkpoints groups of k layers.
POLICIES = ("plain", "remat_dots", "remat_names", "remat_every2", "remat_full")


def point_id(point: Point) -> str:
    """The point's value on the remat curve's `point` axis (remat.RematCurve_*): its policy, or `budget_<b>`."""
    return point.variant if point.budget is None else f"budget_{point.budget:g}"


def point_ids(device: str) -> list[str]:
    """Every value of the curve's `point` axis on this device, in the curve's order."""
    return list(dict.fromkeys(point_id(p) for e in experiments(device) if e.group == "remat" for p in e.points))


def asv_combination(experiment: Experiment, point: Point, device: str) -> tuple[str, dict[str, str]]:
    """The asv benchmark and parameters that time `point` of `experiment`: the paired comparisons are asv
    combinations, measured by tape-vs-trace run, whose worker takes every combination of a benchmark in turn, pass
    by pass, in one process per framework and round."""
    e = experiment
    head = {"framework": e.framework, "workload": e.workload, "size": e.size}
    # the program the classes run where they have no program axis of their own (benchmarks.common.Benchmark)
    spec = workloads.spec(e.workload)
    attention = {"attention": e.attention or "written"} if spec.attentions else {}
    tail = {**({"style": "matched"} if spec.styles else {}), **attention,
            "dtype": "float32", "precision": "highest", "device": device}
    if e.group == "remat":
        loop = {"formulation": e.formulation} if spec.formulations else {}
        return (pillars.role_benchmark("curve step time", e.workload),
                {**head, "mode": point.mode, **loop, "point": point_id(point), **tail})
    # a paired point: its pillar's family, its axes' values in the pillar's order (Point names its fields alike)
    pillar = pillars.paired_by_kind(point.kind)
    return (pillar.benchmark(pillar.paired.family, e.workload, pillar.paired.metric),
            {**head, **{axis: getattr(point, axis) for axis in pillar.axes}, **tail})


@dataclass(frozen=True)
class Point:
    label: str  # what the report prints
    kind: str = "grad"  # grad (grad_step), forward (forward_step), engine (engine_step), transform (transform_step)
    variant: str = "plain"  # the workload variant (a remat policy for the remat curve)
    mode: str = "eager"  # grad and engine modes; the forward kind's own mode (no_grad, inference_mode, ...)
    budget: float | None = None  # torch.compile's activation memory budget (compiled PyTorch only)
    feature: str = ""  # engine kind: the engine feature
    transform: str = ""  # transform kind: the transform (frameworks.TRANSFORMS)


@dataclass(frozen=True)
class Experiment:
    name: str
    group: str  # 'remat' (the trade-off curve, costs taken) or 'paired' (two variants of one framework)
    framework: str
    workload: str
    size: str
    mode: str  # the mode the report prints for the experiment ('eager', 'compiled', or the forward modes')
    formulation: str  # 'unrolled' (a Python loop over layers) or 'scan' (JAX's lax.scan); '' without a loop
    points: tuple[Point, ...] = field(default_factory=tuple)
    attention: str = ""  # the transformer's attention (workloads.ATTENTIONS) on the remat curve; '' for written

    @property
    def baseline(self) -> Point:
        return self.points[0]


def _remat(framework: str, workload: str, size: str, mode: str, formulation: str, policies: tuple[str, ...],
           budgets: tuple[float, ...] = (), attention: str = "") -> Experiment:
    points = [Point(p, variant=p, mode=mode) for p in policies]
    points += [Point(f"budget {b:g}", variant="plain", mode=mode, budget=b) for b in budgets]
    name = " ".join(filter(None, ("remat", size, framework, mode, formulation, attention and f"{attention} attention")))
    return Experiment(name, "remat", framework, workload, size, mode, formulation, tuple(points), attention)


def _pair(framework: str, workload: str, size: str, mode: str, a: Point, b: Point, name: str) -> Experiment:
    return Experiment(f"{name} {workload} {framework} {mode}", "paired", framework, workload, size, mode,
                      "", (a, b))


def _remat_curve(workload: str, sizes: tuple[str, ...], cuda: bool) -> list[Experiment]:
    """Every policy at the first size; at the second (twice the depth), the granularity (k layers per checkpoint)
    beside none and per layer, so the sqrt(n) schedule shows. remat_names has no torch.compile form
    (torch.steps.grad_step); op-by-op JAX runs the loop form only (an un-jitted lax.scan is compiled anew on every
    call). Where the workload has fused attention, the first size's policies again with it, compiled on both sides
    and in the loop form (the program a user who fuses attention runs, a like pair of loops)."""
    spec = workloads.spec(workload)
    # the policies the workload has (a layer-group policy, remat_every<k>, where it has one at all)
    policies = tuple(p for p in POLICIES if p in spec.variants or p.startswith("remat_every") and any(
        v.startswith("remat_every") for v in spec.variants))
    offload = ("remat_offload",) if cuda and "remat_offload" in spec.variants else ()
    every = tuple(p for p in policies if p != "remat_names")
    grain = ("plain", "remat_every2", "remat_every4", "remat_full")
    loop, scan = ("unrolled", "scan" in spec.formulations) if spec.formulations else ("", False)
    found = []
    for size in sizes[:1]:
        found += [
            _remat("torch", workload, size, "eager", loop, policies + offload),
            _remat("torch", workload, size, "compiled", loop, every, BUDGETS),
            _remat("jax", workload, size, "eager", loop, policies),
            _remat("jax", workload, size, "compiled", loop, policies + offload),
            *([_remat("jax", workload, size, "compiled", "scan", policies)] if scan else []),
        ]
        if "fused" in spec.attentions:
            found += [
                _remat("torch", workload, size, "compiled", loop, every, attention="fused"),
                _remat("jax", workload, size, "compiled", loop, policies, attention="fused"),
            ]
    for size in sizes[1:2]:
        # PyTorch both ways, JAX as the scan (jitted straight-line code lets XLA:CPU undo the remat, which the loop
        # form at the first depth already shows).
        found += [
            _remat("torch", workload, size, "eager", loop, grain),
            _remat("torch", workload, size, "compiled", loop, grain),
            _remat("jax", workload, size, "compiled", "scan" if scan else loop, grain),
        ]
    return found


def paired_findings() -> list[tuple[str, pillars.Change]]:
    """The registry's findings that are paired experiments too (`Change.paired`), as (pillar, finding)."""
    return [(p, rule) for p, rule in pillars.findings() if isinstance(rule, pillars.Change) and rule.paired]


def finding_point(pillar: str, label: str) -> Point:
    """A finding's base or variant (its values of the pillar's axes joined by '/') as a point of the paired runner."""
    axes = pillars.PILLARS[pillar].axes
    return Point(label, pillars.PILLARS[pillar].paired.kind, **dict(zip(axes, label.split("/"), strict=True)))


def _runs(framework: str, point: Point, device: str) -> bool:
    """Whether the suite has `framework`'s combination of `point` (the benchmark classes' skips, from the same data)."""
    if point.kind == "transform":
        return not frameworks.transform_skip(framework, point.transform, point.mode, device)
    if point.kind == "engine":
        return point.feature in frameworks.get(framework).engine_features
    return not (point.kind == "forward" and frameworks.forward_skip(framework, point.mode))


def _pairs(pillar: str, rule: pillars.Change, workload: str, size: str, device: str) -> list[Experiment]:
    """A paired finding's experiments, base against variant, for each framework that runs both points; the mode the
    experiment names is the variant's ('forward' for the forward's own modes)."""
    a, b = finding_point(pillar, rule.base), finding_point(pillar, rule.variant)
    mode = "forward" if b.kind == "forward" else b.mode
    return [_pair(fw, workload, size, mode, a, b, rule.what) for fw in frameworks.NAMES
            if _runs(fw, a, device) and _runs(fw, b, device)]


def experiments(device: str) -> list[Experiment]:
    """Every experiment of this device, both frameworks, from the specs' grid."""
    cuda = device == "cuda"
    found = [e for w, sizes in workloads.runs("RematCurve", device).items() for e in _remat_curve(w, sizes, cuda)]
    found += [e for pillar, rule in paired_findings()
              for w, sizes in workloads.runs(pillars.PILLARS[pillar].paired.grid, device).items()
              for size in sizes for e in _pairs(pillar, rule, w, size, device)]
    return found
