"""implementations.experiments' two-point experiments, derived from the pillar registry's paired findings: the set
follows the registry (a finding marked paired is an experiment, one removed is gone), the asv combinations they
divide are those the hand-declared pairs divided, and results written under the old names read as today's."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest

from implementations import experiments, pillars
from implementations.pillars import Change
from tape_vs_trace.report import paired_results
from tape_vs_trace.results.schema import PAIRED_FIELDS
from tape_vs_trace.running import plan

DEVICES = ("cpu", "cuda")
CONSTANT = {"dtype": "float32", "precision": "highest", "style": "matched"}
# Every pair of asv combinations the paired experiments divided while each pair was declared by hand (engine,
# inference and custom) beside the transforms pillar's derived ones, as `_compact` writes them: written out by
# running that code, not by reading it. Framework, workload, size, class; then per point the values of its other
# parameters in name order (mode, transform, variant, feature), the constant ones left out.
BEFORE = {
    "cpu": {f"{fw} {rest}" for fw, rests in (("torch", (
        "gmm d10-K25-n1000 CustomStep compiled,plain -> compiled,custom",
        "gmm d10-K25-n1000 CustomStep eager,plain -> eager,custom",
        "mlp 16x64x256 TransformStep eager,grad -> compiled,grad",
        "mlp 16x64x256 TransformStep eager,grad_autograd -> eager,grad",
        "mlp 16x64x256 TransformStep eager,grad_backward -> eager,grad",
        "mlp 16x64x256 TransformStep eager,hvp_fwd_rev -> compiled,hvp_fwd_rev",
        "mlp 16x64x256 TransformStep eager,hvp_fwd_rev -> eager,hvp_double_backward",
        "mlp 16x64x256 TransformStep eager,hvp_fwd_rev -> eager,hvp_rev_fwd",
        "mlp 16x64x256 TransformStep eager,hvp_fwd_rev -> eager,hvp_rev_rev",
        "mlp 16x64x256 TransformStep eager,jacfwd_wide -> eager,jacrev_wide",
        "mlp 16x64x256 TransformStep eager,jacrev_tall -> eager,jacfwd_tall",
        "mlp 16x64x256 TransformStep eager,jvp_dual -> eager,jvp",
        "mlp 16x64x256 TransformStep eager,per_example_loop -> eager,per_example_vmap",
        "mlp 64x256x1024 EngineStep accumulate_tree_add,eager -> accumulate_grad_attr,eager",
        "mlp 64x256x1024 EngineStep no_hooks,eager -> hooks,eager",
        "mlp 64x256x1024 EngineStep zero_grad_none,eager -> zero_grad_zeros,eager",
        "mlp 64x256x1024 Forward no_grad -> inference_mode",
        "swiglu 64x256x1024 CustomStep compiled,plain -> compiled,custom",
        "swiglu 64x256x1024 CustomStep eager,plain -> eager,custom")), ("jax", (
        "gmm d10-K25-n1000 CustomStep compiled,plain -> compiled,custom",
        "gmm d10-K25-n1000 CustomStep eager,plain -> eager,custom",
        "mlp 16x64x256 TransformStep compiled,hvp_fwd_rev -> compiled,hvp_rev_rev",
        "mlp 16x64x256 TransformStep compiled,jacfwd_wide -> compiled,jacrev_wide",
        "mlp 16x64x256 TransformStep compiled,jacrev_tall -> compiled,jacfwd_tall",
        "mlp 16x64x256 TransformStep compiled,per_example_loop -> compiled,per_example_vmap",
        "mlp 16x64x256 TransformStep eager,grad -> compiled,grad",
        "mlp 16x64x256 TransformStep eager,hvp_fwd_rev -> compiled,hvp_fwd_rev",
        "mlp 16x64x256 TransformStep eager,hvp_fwd_rev -> eager,hvp_rev_fwd",
        "mlp 16x64x256 TransformStep eager,hvp_fwd_rev -> eager,hvp_rev_rev",
        "mlp 16x64x256 TransformStep eager,jacfwd_wide -> eager,jacrev_wide",
        "mlp 16x64x256 TransformStep eager,jacrev_tall -> eager,jacfwd_tall",
        "mlp 16x64x256 TransformStep eager,per_example_loop -> eager,per_example_vmap",
        "swiglu 64x256x1024 CustomStep compiled,plain -> compiled,custom",
        "swiglu 64x256x1024 CustomStep eager,plain -> eager,custom"))) for rest in rests},
    "cuda": {f"{fw} {rest}" for fw, rests in (("torch", (
        "gmm d64-K100-n10000 CustomStep compiled,plain -> compiled,custom",
        "gmm d64-K100-n10000 CustomStep eager,plain -> eager,custom",
        "mlp 2048x4096x16384 Forward no_grad -> inference_mode",
        "mlp 512x1024x4096 EngineStep accumulate_tree_add,eager -> accumulate_grad_attr,eager",
        "mlp 512x1024x4096 EngineStep no_hooks,eager -> hooks,eager",
        "mlp 512x1024x4096 EngineStep zero_grad_none,eager -> zero_grad_zeros,eager",
        "mlp 64x256x1024 TransformStep compiled,hvp_fwd_rev -> compiled,hvp_rev_rev",
        "mlp 64x256x1024 TransformStep compiled,jacfwd_wide -> compiled,jacrev_wide",
        "mlp 64x256x1024 TransformStep compiled,jacrev_tall -> compiled,jacfwd_tall",
        "mlp 64x256x1024 TransformStep compiled,per_example_loop -> compiled,per_example_vmap",
        "mlp 64x256x1024 TransformStep eager,grad -> compiled,grad",
        "mlp 64x256x1024 TransformStep eager,grad_autograd -> eager,grad",
        "mlp 64x256x1024 TransformStep eager,grad_backward -> eager,grad",
        "mlp 64x256x1024 TransformStep eager,hvp_fwd_rev -> compiled,hvp_fwd_rev",
        "mlp 64x256x1024 TransformStep eager,hvp_fwd_rev -> eager,hvp_double_backward",
        "mlp 64x256x1024 TransformStep eager,hvp_fwd_rev -> eager,hvp_rev_fwd",
        "mlp 64x256x1024 TransformStep eager,hvp_fwd_rev -> eager,hvp_rev_rev",
        "mlp 64x256x1024 TransformStep eager,jacfwd_wide -> eager,jacrev_wide",
        "mlp 64x256x1024 TransformStep eager,jacrev_tall -> eager,jacfwd_tall",
        "mlp 64x256x1024 TransformStep eager,jvp_dual -> eager,jvp",
        "mlp 64x256x1024 TransformStep eager,per_example_loop -> eager,per_example_vmap",
        "swiglu 2048x1024x4096 CustomStep compiled,plain -> compiled,custom",
        "swiglu 2048x1024x4096 CustomStep eager,plain -> eager,custom")), ("jax", (
        "gmm d64-K100-n10000 CustomStep compiled,plain -> compiled,custom",
        "gmm d64-K100-n10000 CustomStep eager,plain -> eager,custom",
        "mlp 64x256x1024 TransformStep compiled,hvp_fwd_rev -> compiled,hvp_rev_rev",
        "mlp 64x256x1024 TransformStep compiled,jacfwd_wide -> compiled,jacrev_wide",
        "mlp 64x256x1024 TransformStep compiled,jacrev_tall -> compiled,jacfwd_tall",
        "mlp 64x256x1024 TransformStep compiled,per_example_loop -> compiled,per_example_vmap",
        "mlp 64x256x1024 TransformStep eager,grad -> compiled,grad",
        "mlp 64x256x1024 TransformStep eager,hvp_fwd_rev -> compiled,hvp_fwd_rev",
        "mlp 64x256x1024 TransformStep eager,hvp_fwd_rev -> eager,hvp_rev_fwd",
        "mlp 64x256x1024 TransformStep eager,hvp_fwd_rev -> eager,hvp_rev_rev",
        "mlp 64x256x1024 TransformStep eager,jacfwd_wide -> eager,jacrev_wide",
        "mlp 64x256x1024 TransformStep eager,jacrev_tall -> eager,jacfwd_tall",
        "mlp 64x256x1024 TransformStep eager,per_example_loop -> eager,per_example_vmap",
        "swiglu 2048x1024x4096 CustomStep compiled,plain -> compiled,custom",
        "swiglu 2048x1024x4096 CustomStep eager,plain -> eager,custom"))) for rest in rests},
}


def _paired(device: str) -> list[experiments.Experiment]:
    return [e for e in experiments.experiments(device) if e.group == "paired"]


def _compact(e: experiments.Experiment, device: str) -> str:
    """An experiment's asv combinations in one line (BEFORE's form); both points share framework, workload, size and
    class."""
    combos = [experiments.asv_combination(e, p, device) for p in e.points]
    [(cls, *head)] = {(b.split(".")[1].split("_")[0], p["framework"], p["workload"], p["size"]) for b, p in combos}
    values = [",".join(str(v) for k, v in sorted(p.items()) if k not in ("framework", "workload", "size")
                       and CONSTANT.get(k) != v and not (k == "device" and v == device)) for _, p in combos]
    return f"{' '.join(head)} {cls} {' -> '.join(values)}"


def _findings_of(found: list[experiments.Experiment]) -> set[tuple[str, str, str]]:
    """(what, base, variant) of each experiment: its name's head and its two points' labels."""
    return {(e.name.rsplit(" ", 3)[0], *(p.label for p in e.points)) for e in found}


@pytest.mark.parametrize("device", DEVICES)
def test_the_paired_experiments_are_the_registrys_paired_findings(device: str) -> None:
    expected = {(rule.what, rule.base, rule.variant) for _, rule in experiments.paired_findings()}
    assert _findings_of(_paired(device)) == expected
    # a paired ratio divides two samples of one sweep: only timed findings, of the pillars the runner can run
    assert all(rule.metric.startswith("time_") and pillars.PILLARS[p].paired
               for p, rule in experiments.paired_findings())


@pytest.mark.parametrize("device", DEVICES)
def test_the_asv_combinations_paired_are_those_of_the_hand_declared_pairs(device: str) -> None:
    found = [_compact(e, device) for e in _paired(device)]
    assert len(found) == len(set(found)) and set(found) == BEFORE[device]
    # so no combination moves process: the compiled rows kept with the eager ones are still the transforms' alone
    assert plan.paired_across_modes(device) == {"transforms.TransformStep_mlp.time_step"}


def test_a_finding_marked_paired_is_an_experiment_and_one_removed_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = pillars.PILLARS["engine"]
    added = Change("time_step", "no_hooks/eager", "retain_graph_twice/eager", "retaining the graph", paired=True)
    unpaired = Change("time_step", "accumulate_tree_add/eager", "retain_graph_twice/eager", "not paired")
    kept = tuple(r for r in engine.findings if r.what != "tensor hooks")
    monkeypatch.setitem(pillars.PILLARS, "engine", dataclasses.replace(engine, findings=(*kept, added, unpaired)))
    names = {e.name for e in _paired("cpu")}
    # both frameworks have both features, so both run it; PyTorch alone has hooks
    assert {"retaining the graph mlp torch eager", "retaining the graph mlp jax eager"} <= names
    assert not any(n.startswith(("not paired", "tensor hooks")) for n in names)
    [e] = [e for e in _paired("cpu") if e.name == "retaining the graph mlp jax eager"]
    assert [(p.kind, p.feature, p.mode) for p in e.points] == [("engine", "no_hooks", "eager"),
                                                              ("engine", "retain_graph_twice", "eager")]


def test_a_finding_point_takes_the_pillars_axes() -> None:
    assert experiments.finding_point("custom_backward", "custom/compiled") == experiments.Point(
        "custom/compiled", "grad", variant="custom", mode="compiled")
    assert experiments.finding_point("inference", "inference_mode") == experiments.Point(
        "inference_mode", "forward", mode="inference_mode")
    with pytest.raises(ValueError):  # a value per axis, no more
        experiments.finding_point("inference", "no_grad/eager")


# The committed paired results name these as they were named before the pairs were derived.
OLD = [("hooks against none mlp torch eager", "eager", ("no hooks", "hooks")),
       ("zero_grad to zeros against None mlp torch eager", "eager", ("zero_grad to None", "zero_grad to zeros")),
       ("accumulation into .grad against a sum mlp torch eager", "eager", ("sum of grads", "into .grad")),
       ("inference_mode against no_grad mlp torch forward", "forward", ("no_grad", "inference_mode")),
       ("custom against autodiff swiglu jax eager", "eager", ("autodiff", "custom")),
       ("custom against autodiff gmm torch compiled", "compiled", ("autodiff", "custom")),
       ("compiling the gradient mlp torch compiled", "compiled", ("grad/eager", "grad/compiled"))]


def _old_csv(path: Path) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=PAIRED_FIELDS)
        writer.writeheader()
        for name, mode, (base, point) in OLD:
            framework, workload = name.split()[-2], name.split()[-3]
            for label in (base, point):
                writer.writerow({f: "" for f in PAIRED_FIELDS} | {
                    "experiment": name, "group": "paired", "framework": framework, "workload": workload,
                    "size": "s", "mode": mode, "point": label, "variant": "plain", "baseline": base, "time_s": "0.001",
                    "ratio": "1.0", "processes": "3", "process_medians": "0.001", "device": "cpu", "commit": "c" * 40,
                    "machine": "m"})
    return path


def test_a_csv_of_the_old_names_reads_as_todays_experiments_and_points(tmp_path: Path) -> None:
    table = paired_results.read(_old_csv(tmp_path / "m-cccccccc.csv"))
    today = {(e.name, p.label) for e in _paired("cpu") for p in e.points}
    assert set(zip(table.experiment, table.point)) <= today
    assert set(zip(table.experiment, table.baseline)) <= today
    assert table.experiment.iloc[0] == "tensor hooks mlp torch eager" and table.point.iloc[1] == "hooks/eager"
    assert list(table.experiment[-2:]) == ["compiling the gradient mlp torch compiled"] * 2  # named so already
    assert paired_results.renamed(table).equals(table)  # today's names are kept
