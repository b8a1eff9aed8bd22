"""Why a combination was not run: asv records a skip as NaN without its reason, so the report asks the skip rule
of the suite's benchmark class (``Benchmark.reason_to_skip``, which imports no framework) for the row's parameters.
The rule is this checkout's: a result of another commit is explained by today's rules."""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path

# The checkout this package is part of: the console script's sys.path has the virtualenv's bin folder, not it.
ROOT = Path(__file__).resolve().parents[2]


@cache
def _classes() -> dict[str, type]:
    if (ROOT / "benchmarks" / "common.py").is_file() and str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    try:
        from benchmarks import common, counts
    except ImportError:  # an installed report without the suite's folder: no reasons, the lines say so
        return {}
    return {counts.benchmark_name(cls): cls for cls in common.suite_classes()}


def reason(benchmark: str, params: str) -> str | None:
    """The skip rule's reason for asv benchmark `benchmark` ('<pillar>.<Class>.<method>') at `params` (a row's JSON
    parameters); None where this checkout has no such class or its rule would run the combination."""
    cls = _classes().get(benchmark.rsplit(".", 1)[0])
    if cls is None:
        return None
    from benchmarks import common

    bench, method = cls(), benchmark.rsplit(".", 1)[-1]
    by_method = getattr(bench, "reason_to_skip_method", None)  # one method n/a where the others run (counts.py)
    try:
        case = common.Case(json.loads(params))
        return bench.reason_to_skip(case) or (by_method and by_method(method, case)) or None
    except (AttributeError, KeyError, TypeError, ValueError):  # parameters of another version of the class
        return None
