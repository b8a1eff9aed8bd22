"""The asv suite: it passes `asv check`, every benchmark method runs once on tiny sizes, and remat is real."""

from __future__ import annotations

import importlib
import inspect
import itertools
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import common, remat
from implementations.frameworks import NAMES as FRAMEWORKS
from implementations.metrics import PILLARS

ROOT = Path(__file__).resolve().parents[1]


def _benchmark_classes():
    for pillar in PILLARS:
        module = importlib.import_module(f"benchmarks.{pillar}")
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and issubclass(cls, common.Benchmark) and not name.startswith("_"):
                if cls.__module__ == module.__name__:
                    yield pillar, name, cls


def _methods(cls) -> list[str]:
    return [m for m in dir(cls) if m.startswith(("time_", "track_"))]


def _tiny_combinations(cls):
    """Every combination with the size replaced by the workload's tiny size; torch.compile only on the mlp (each
    compile takes ~15 s on a 2-core CPU)."""
    names = cls.param_names
    seen = set()
    for combo in itertools.product(*cls.params):
        args = dict(zip(names, combo))
        if "size" in args:
            args["size"] = "tiny"
        if args["framework"] == "torch" and args.get("mode") == "compiled" and args.get("workload") != "mlp":
            continue
        key = tuple(args.values())
        if key not in seen:
            seen.add(key)
            yield args


CASES = [pytest.param(cls, args, id=f"{pillar}.{name}-" + "-".join(map(str, args.values())))
         for pillar, name, cls in _benchmark_classes() for args in _tiny_combinations(cls)]


def test_every_pillar_has_both_frameworks() -> None:
    for pillar in PILLARS:
        classes = [cls for p, _, cls in _benchmark_classes() if p == pillar]
        assert classes, f"benchmarks/{pillar}.py has no benchmark class"
        for cls in classes:
            assert cls.param_names[0] == "framework" and cls.params[0] == list(FRAMEWORKS), cls
            assert cls.version, cls


@pytest.mark.parametrize(("cls", "args"), CASES)
def test_benchmark_runs_once(cls, args: dict) -> None:
    bench = cls()
    params = list(args.values())
    try:
        bench.setup(*params)
    except NotImplementedError as skip:
        # A combination the suite skips on purpose (asv shows n/a): only those listed in SKIPS.
        assert _expected_skip(cls, args), f"unexpected skip: {skip}"
        return
    assert not _expected_skip(cls, args), "expected a skip, but the combination ran"
    for method in _methods(cls):
        value = getattr(bench, method)(*params)
        if method.startswith("track_"):
            assert isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, (method, value)


# Every combination the suite skips on purpose, as (class-name prefix, {param: value}) rules written apart from the
# code that skips them: a wrong skip (a whole pillar n/a, say) or a missing one turns test_benchmark_runs_once red.
SKIPS = [
    ("GradStep_lstm", {"mode": "compiled", "formulation": "unrolled"}),  # compile of the unrolled loop: budget
    ("GradStep_", {"framework": "torch", "formulation": "scan"}),  # PyTorch has no scan form
    ("GradStep_", {"framework": "jax", "mode": "eager", "formulation": "scan"}),  # op-by-op scan recompiles
    ("RematStep_transformer", {"framework": "jax", "mode": "eager"}),  # op-by-op scan recompiles
    ("RematStep_lstm", {"framework": "jax", "mode": "eager"}),
    ("RematStep_lstm", {"framework": "torch", "mode": "compiled"}),  # Dynamo unrolls 127 steps: budget
    ("Forward_", {"framework": "jax", "mode": "inference_mode"}),  # JAX has no inference_mode
    ("EngineStep_", {"framework": "torch", "mode": "compiled"}),
    *(("EngineStep_", {"framework": "jax", "feature": f}) for f in
      ("accumulate_grad_attr", "hooks", "zero_grad_none", "zero_grad_zeros")),
    ("Roofline_", {}),  # no calibration file in the test session (tested apart)
]


def _expected_skip(cls, args: dict) -> bool:
    return any(cls.__name__.startswith(prefix) and all(args.get(k) == v for k, v in rule.items())
               for prefix, rule in SKIPS)


def test_asv_check_passes() -> None:
    result = subprocess.run([sys.executable, "-m", "asv", "check", "-E", f"existing:{sys.executable}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in (result.stdout + result.stderr).lower()


@pytest.mark.parametrize("framework", ["torch", "jax"])
@pytest.mark.parametrize(("workload", "size"), [("transformer", "L4-B4-S64-D128"), ("lstm", "l2-c128-b14")])
def test_remat_recomputes_for_real(framework: str, workload: str, size: str) -> None:
    """Recomputing every block keeps fewer bytes for the backward, lowers the step's peak, and costs flops."""
    costs = {}
    for variant in ("plain", "remat_full"):
        bench = getattr(remat, f"RematCost_{workload}")()
        params = [framework, workload, size, variant, "float32", "highest", common.DEVICE]
        bench.setup(*params)
        costs[variant] = {m: getattr(bench, m)(*params) for m in ("track_saved_bytes", "track_peak_bytes",
                                                                     "track_flops")}
    plain, full = costs["plain"], costs["remat_full"]
    assert full["track_saved_bytes"] < plain["track_saved_bytes"], costs
    assert full["track_peak_bytes"] < plain["track_peak_bytes"], costs
    if not (framework == "torch" and workload == "lstm"):  # FlopCounterMode counts matmuls only; the LSTM has none
        assert full["track_flops"] > plain["track_flops"], costs
