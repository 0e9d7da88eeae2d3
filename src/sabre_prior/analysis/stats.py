"""Statistics for 100-unit accuracies: bootstrap intervals, paired tests.

Method (documented in the README's analysis section as well):

* **Percentile bootstrap.**  A split's units (pairs for context/texture,
  questions otherwise) are resampled with replacement ``B`` times; the
  interval is the ``(1-c)/2`` and ``(1+c)/2`` quantiles (numpy's default
  linear interpolation) of the ``B`` resampled accuracies.
* **Macro average.**  Each split is resampled independently; replicate ``b``
  of the macro is the mean of the splits' replicates ``b``.
* **Paired bootstrap.**  Two models are scored on the same units, so the
  same resampled indices are applied to both and the interval is taken on
  the difference of accuracies.
* **Exact McNemar.**  On the discordant units (one model right, the other
  wrong), the two-sided exact binomial test with p = 1/2.
* **Seeds.**  Every split draws from its own generator, seeded by
  ``(seed, crc32(split))``: the output does not depend on which other splits
  or models are analysed, and all models share the same resamples.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..formatting import Interval


def split_rng(seed: int, split: str) -> np.random.Generator:
    """The generator for one split: independent of other splits, stable across runs."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(split.encode("utf-8"))]))


def resample_indices(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``resamples x n`` indices drawn with replacement from ``range(n)``."""
    if n < 1:
        raise ValueError("cannot resample an empty sample")
    if resamples < 1:
        raise ValueError("resamples must be positive")
    return rng.integers(0, n, size=(resamples, n))


def replicate_means(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Mean of ``values`` for each row of resampled ``indices``."""
    return np.asarray(np.asarray(values, dtype=float)[indices].mean(axis=1))


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` interval of bootstrap replicates."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    tail = round((1.0 - confidence) / 2.0, 12)  # 0.05, not 0.04999999999999999
    low, high = np.quantile(np.asarray(replicates, dtype=float), [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_interval(
    values: Sequence[float] | np.ndarray, *, resamples: int, confidence: float, rng: np.random.Generator
) -> Interval:
    """Percentile bootstrap interval of the mean of ``values`` (e.g. 0/1 outcomes)."""
    arr = np.asarray(values, dtype=float)
    reps = replicate_means(arr, resample_indices(arr.size, resamples, rng))
    low, high = percentile_interval(reps, confidence)
    return Interval(float(arr.mean()), low, high)


def macro_interval(
    split_values: Sequence[np.ndarray], split_replicates: Sequence[np.ndarray], confidence: float
) -> Interval:
    """Macro average of splits resampled independently (replicate b = mean of splits' replicate b)."""
    if not split_values:
        raise ValueError("no splits")
    estimate = float(np.mean([np.asarray(v, dtype=float).mean() for v in split_values]))
    reps = np.mean(np.vstack(split_replicates), axis=0)
    low, high = percentile_interval(reps, confidence)
    return Interval(estimate, low, high)


def paired_replicates(a: np.ndarray, b: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Bootstrap replicates of ``mean(a) - mean(b)`` using the same indices for both."""
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"paired samples differ in size: {a_arr.shape} vs {b_arr.shape}")
    return np.asarray((a_arr - b_arr)[indices].mean(axis=1))


def bootstrap_p_value(replicates: np.ndarray) -> float:
    """Two-sided bootstrap p-value for 'the difference is zero' (add-one corrected)."""
    reps = np.asarray(replicates, dtype=float)
    b = reps.size
    below = (int(np.sum(reps <= 0.0)) + 1) / (b + 1)
    above = (int(np.sum(reps >= 0.0)) + 1) / (b + 1)
    return min(1.0, 2.0 * min(below, above))


def discordant_counts(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """``(a right and b wrong, a wrong and b right)`` over paired 0/1 outcomes."""
    a_arr, b_arr = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"paired samples differ in size: {a_arr.shape} vs {b_arr.shape}")
    return int(np.sum(a_arr & ~b_arr)), int(np.sum(~a_arr & b_arr))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``.

    Under the null each discordant unit falls either way with probability 1/2:
    ``p = min(1, 2 * P(X <= min(b, c)))`` for ``X ~ Binomial(b + c, 1/2)``,
    computed in exact rational arithmetic.  No discordant units gives 1.
    """
    if b < 0 or c < 0:
        raise ValueError("counts must be non-negative")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (family-wise error) of ``p_values``, in input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[i])))
        adjusted[i] = running
    return adjusted
