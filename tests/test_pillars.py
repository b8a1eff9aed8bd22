"""The pillar registry (implementations/pillars.py): every benchmark file is a registered pillar and every pillar a
benchmark file, each family is a class of its file, each pillar's axes are the parameters its classes vary, its
findings and figure read metrics that exist, and every timed family has a regression threshold of its own."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path

import benchmarks
from benchmarks import common
from implementations import metrics, pillars

ROOT = Path(__file__).resolve().parents[1]
NOT_PILLARS = {"common", "counts", "count_processes"}  # the suite's machinery, not benchmark files


def test_every_benchmark_file_is_a_pillar_and_every_pillar_a_file() -> None:
    files = {m.name for m in pkgutil.iter_modules(benchmarks.__path__)} - NOT_PILLARS
    assert files == set(pillars.PILLARS)


def test_each_family_is_a_base_class_of_its_pillar_file() -> None:
    for p in pillars.PILLARS.values():
        module = importlib.import_module(p.module)
        for family in p.families:
            base = getattr(module, f"_{family}", None)
            assert isinstance(base, type) and issubclass(base, common.Benchmark), f"{p.module} has no _{family}"


def test_each_pillars_axes_are_what_its_classes_vary() -> None:
    for cls in common.suite_classes():
        if cls.__name__.split("_")[0] in pillars.PAIRED_FAMILIES:  # read by the paired section, not by the axes
            continue
        p = pillars.PILLARS[cls.__module__.rsplit(".", 1)[-1]]
        varied = [n for n in cls.param_names if n not in pillars.BASE_PARAMS + pillars.PROGRAM_PARAMS]
        assert varied == [a for a in p.axes if a in varied], f"{cls.__name__} varies {varied}, {p.name} {p.axes}"


def test_findings_and_figures_read_known_metrics() -> None:
    for name, rule in pillars.findings():
        assert rule.metric in metrics.METRICS, (name, rule)
    for p in pillars.PILLARS.values():
        assert p.figure.kind in ("values", "changes")
        assert (p.figure.kind == "changes") == bool(p.figure.panels) == bool(p.figure.title), p.name
        assert all(panel.metric in metrics.METRICS for panel in p.figure.panels)


def test_every_family_is_named_once() -> None:
    assert len(pillars.FAMILIES) == len(set(pillars.FAMILIES))
    assert pillars.pillar_of("RematCost").name == "remat"


def test_every_timed_family_has_a_threshold_above_the_exact_catch_all() -> None:
    # asv takes the largest threshold whose pattern matches; the catch-all (".*") is for deterministic counts.
    text = (ROOT / "asv.conf.json").read_text()
    conf = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    thresholds = conf["regressions_thresholds"]
    for cls in common.suite_classes():
        for method in (m for m in dir(cls) if m.startswith("time_")):
            name = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}.{method}"
            matched = [t for pattern, t in thresholds.items() if re.match(pattern, name)]
            assert max(matched) > thresholds[".*"], f"{name} would be judged by the catch-all for exact counts"
