"""95 % intervals over per-process values, the between-process statistics that the runners write into their result
files (tape-vs-trace paired, distributed) and the report (report.stats) forms from asv's samples: one definition
for both, below either."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

CONFIDENCE = 0.95
WIDTH_FLOOR_S = 1e-3  # half_width's times: 1 ms or more (shorter ones are nearer the timer's resolution)


def median_interval(per_process: list[float]) -> tuple[float, float]:
    """95 % interval of a timing across processes; NaN for fewer than two.

    Student's t on the logarithms of the per-process medians (n - 1 degrees of freedom), back-transformed: times
    are positive and their noise multiplicative. With the suite's three processes a percentile bootstrap can only
    return the range of the three values, which covers far less than 95 % (two ranges of three draws from one
    distribution miss each other one time in ten); the t interval is the standard small-sample answer.
    """
    logs = np.log(np.asarray(per_process, dtype=float))
    if len(logs) < 2 or not np.all(np.isfinite(logs)):
        return math.nan, math.nan
    sem = sps.sem(logs)
    if not sem > 0:  # equal values (a baseline's paired ratio to itself): the point, without scipy's 0 x inf warning
        return (float(np.exp(logs.mean())),) * 2
    low, high = sps.t.interval(CONFIDENCE, len(logs) - 1, loc=logs.mean(), scale=sem)
    return float(np.exp(low)), float(np.exp(high))


def projected_half_width(log_sd: float, processes: int) -> float:
    """median_interval's half-width on the log scale (about the relative one) for `processes` per-process medians
    whose logarithms have the standard deviation `log_sd`: what a further process narrows. inf for fewer than two."""
    if processes < 2:
        return math.inf
    return float(sps.t.ppf(0.5 + CONFIDENCE / 2, processes - 1) * log_sd / math.sqrt(processes))


# The resolution of a ratio: what one pair of values in it was measured against.
ACROSS_PROCESSES = "across processes"  # two independent sets of per-process medians
WITHIN_PROCESS = "within one process"  # per process, per-pass times of the two sides taken in the same passes
RESOLUTIONS = (ACROSS_PROCESSES, WITHIN_PROCESS)


def paired_ratios(numerator: list, denominator: list) -> list[float]:
    """Per process, the median of the per-pass ratios numerator / denominator (pass j of both taken in one sweep of
    process i: noise that hits both cancels), as exp of the median log ratio."""
    return [float(np.exp(np.median(np.log(np.asarray(n, dtype=float) / np.asarray(d, dtype=float)))))
            for n, d in zip(numerator, denominator, strict=True)]


def ratio_interval(numerator: list, denominator: list,
                   resolution: str = ACROSS_PROCESSES) -> tuple[float, float]:
    """THE 95 % interval of numerator / denominator, at either resolution; NaN where it cannot be formed.

    ACROSS_PROCESSES: numerator and denominator are per-process medians of two independent sets of processes;
    Welch's t interval on the difference of the mean logarithms (unequal variances, Welch-Satterthwaite degrees
    of freedom), back-transformed. WITHIN_PROCESS: they are per process the per-pass values of the two sides,
    paired pass by pass; per process the median of the per-pass log ratios (paired_ratios), then Student's t
    across processes on those (median_interval).
    """
    if resolution == WITHIN_PROCESS:
        return median_interval(paired_ratios(numerator, denominator))
    if resolution != ACROSS_PROCESSES:
        raise ValueError(f"unknown resolution {resolution!r}; one of {RESOLUTIONS}")
    return product_interval([numerator], [denominator])


def product_interval(over: list, under: list) -> tuple[float, float]:
    """95 % interval of the product of the `over` quantities divided by the product of the `under` ones, each given
    as the per-process values of an independent set of processes (ratio_interval's across-process ratio is one over
    one; a predicted change between two hosts, two over two); NaN where a set has fewer than two values.

    On the logarithms: the sum of the sets' means with their signs, its variance the sum of each set's squared
    standard error, Welch-Satterthwaite degrees of freedom, Student's t; back-transformed.
    """
    sets = [(sign, np.log(np.asarray(v, dtype=float))) for sign, group in ((1, over), (-1, under)) for v in group]
    if not sets or any(len(x) < 2 or not np.all(np.isfinite(x)) for _, x in sets):
        return math.nan, math.nan
    centre = sum(sign * x.mean() for sign, x in sets)
    parts = [x.var(ddof=1) / len(x) for _, x in sets]
    if sum(parts) == 0:  # identical values in every process: the quantity is exact
        return float(np.exp(centre)), float(np.exp(centre))
    dof = sum(parts) ** 2 / sum(p ** 2 / (len(x) - 1) for p, (_, x) in zip(parts, sets, strict=True))
    half = sps.t.ppf(0.5 + CONFIDENCE / 2, dof) * math.sqrt(sum(parts))
    return float(np.exp(centre - half)), float(np.exp(centre + half))


def half_width(value: float, low: float, high: float) -> float:
    """Half the 95 % interval as a share of the value, for a time of 1 ms or more (NaN otherwise): the width the
    suite aims to keep near 10 % on a 2-core machine."""
    finite = all(math.isfinite(v) for v in (value, low, high))
    return (high - low) / 2 / value if finite and value >= WIDTH_FLOOR_S else math.nan
