"""Statistics against hand-computed and textbook values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sabre_prior.analysis.stats import (
    bootstrap_interval,
    bootstrap_p_value,
    discordant_counts,
    holm_adjust,
    macro_interval,
    mcnemar_exact,
    paired_replicates,
    percentile_interval,
    replicate_means,
    resample_indices,
    split_rng,
)


# ---------------------------------------------------------------- McNemar
@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (1, 9, 22 / 1024),  # 2 * (C(10,0) + C(10,1)) / 2^10
        (9, 1, 22 / 1024),  # symmetric
        (0, 6, 2 / 64),  # 2 * (1/2)^6
        (2, 12, 2 * (1 + 14 + 91) / 2**14),
        (5, 5, 1.0),  # capped at 1
        (0, 0, 1.0),  # no discordant units
        (3, 4, 1.0),
    ],
)
def test_mcnemar_exact_hand_values(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_exact_matches_textbook_binomial_table() -> None:
    # Two-sided exact binomial test, n=20 discordant, 5 vs 15: P(X<=5) = 21700/2^20; p = 0.04138947
    assert mcnemar_exact(5, 15) == pytest.approx(0.0413894653, abs=1e-9)
    # and the 2x2 table [[a, b], [c, d]] = [[30, 5], [15, 50]] gives the same via its discordant cells
    table = np.array([[30, 5], [15, 50]])
    a = np.array([1] * 30 + [1] * 5 + [0] * 15 + [0] * 50, dtype=bool)
    bb = np.array([1] * 30 + [0] * 5 + [1] * 15 + [0] * 50, dtype=bool)
    assert discordant_counts(a, bb) == (table[0, 1], table[1, 0])


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


# ---------------------------------------------------------------- bootstrap
def test_percentile_interval_of_known_replicates() -> None:
    reps = np.arange(101, dtype=float)  # quantiles fall on the values themselves
    assert percentile_interval(reps, 0.90) == (5.0, 95.0)
    assert percentile_interval(reps, 0.50) == (25.0, 75.0)
    with pytest.raises(ValueError):
        percentile_interval(reps, 1.0)


def test_constant_sample_has_degenerate_interval() -> None:
    rng = np.random.default_rng(1)
    assert bootstrap_interval(np.ones(20), resamples=200, confidence=0.95, rng=rng).as_dict() == {
        "estimate": 1.0, "low": 1.0, "high": 1.0,
    }  # fmt: skip
    assert bootstrap_interval(np.zeros(20), resamples=200, confidence=0.95, rng=rng).high == 0.0


def test_interval_width_matches_normal_approximation() -> None:
    values = np.array([1] * 40 + [0] * 60)
    iv = bootstrap_interval(values, resamples=4000, confidence=0.95, rng=np.random.default_rng(7))
    assert iv.estimate == pytest.approx(0.40)
    expected_half = 1.96 * math.sqrt(0.4 * 0.6 / 100)  # 0.096
    assert iv.low < 0.40 < iv.high
    assert (iv.high - iv.low) / 2 == pytest.approx(expected_half, abs=0.012)


def test_bootstrap_coverage_on_simulated_binomial_is_about_95_percent() -> None:
    true_p, n, datasets = 0.3, 100, 400
    rng = np.random.default_rng(2026)
    covered = 0
    for _ in range(datasets):
        sample = rng.random(n) < true_p
        iv = bootstrap_interval(sample, resamples=1000, confidence=0.95, rng=rng)
        covered += iv.low <= true_p <= iv.high
    coverage = covered / datasets
    # binomial noise of the coverage estimate: sd = sqrt(.95 * .05 / 400) = 0.011
    assert 0.915 <= coverage <= 0.98, coverage


def test_resampling_is_deterministic_per_seed_and_split() -> None:
    a = resample_indices(50, 100, split_rng(0, "context"))
    b = resample_indices(50, 100, split_rng(0, "context"))
    c = resample_indices(50, 100, split_rng(0, "texture"))
    d = resample_indices(50, 100, split_rng(1, "context"))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, d)
    assert a.shape == (100, 50) and a.min() >= 0 and a.max() < 50


def test_replicate_means_uses_the_indices() -> None:
    values = np.array([0.0, 1.0, 1.0])
    idx = np.array([[0, 0, 0], [1, 2, 1], [0, 1, 2]])
    assert replicate_means(values, idx).tolist() == [0.0, 1.0, pytest.approx(2 / 3)]


def test_macro_interval_averages_replicates_of_independent_splits() -> None:
    split_values = [np.ones(10), np.zeros(10)]
    reps = [np.full(5, 1.0), np.array([0.0, 0.1, 0.2, 0.3, 0.4])]
    iv = macro_interval(split_values, reps, confidence=0.5)
    assert iv.estimate == 0.5
    # macro replicates: 0.5, 0.55, 0.6, 0.65, 0.7 -> quartiles 0.55 and 0.65
    assert (iv.low, iv.high) == (pytest.approx(0.55), pytest.approx(0.65))


# ---------------------------------------------------------------- paired
def test_paired_bootstrap_sign_follows_the_better_model() -> None:
    a = np.array([1] * 40 + [0] * 60, dtype=bool)
    b = a.copy()
    b[:12] = False  # b loses 12 units a gets right, gains none
    idx = resample_indices(100, 2000, split_rng(3, "x"))
    d_ab = paired_replicates(a, b, idx)
    d_ba = paired_replicates(b, a, idx)
    assert np.all(d_ab >= 0) and d_ab.mean() == pytest.approx(0.12, abs=0.01)
    assert np.array_equal(d_ba, -d_ab)
    low, high = percentile_interval(d_ab, 0.95)
    assert 0 < low < 0.12 < high
    assert bootstrap_p_value(d_ab) < 0.01
    assert discordant_counts(a, b) == (12, 0)


def test_paired_bootstrap_of_identical_models_is_zero() -> None:
    a = np.array([1, 0, 1, 1, 0], dtype=bool)
    d = paired_replicates(a, a, resample_indices(5, 300, split_rng(0, "x")))
    assert np.all(d == 0)
    assert bootstrap_p_value(d) == 1.0


def test_bootstrap_p_value_add_one_rule() -> None:
    assert bootstrap_p_value(np.full(999, 0.1)) == pytest.approx(2 / 1000)
    assert bootstrap_p_value(np.array([-1.0, 1.0])) == 1.0


def test_paired_samples_must_have_equal_size() -> None:
    with pytest.raises(ValueError, match="differ in size"):
        paired_replicates(np.ones(3), np.ones(4), np.zeros((2, 3), dtype=int))


# ---------------------------------------------------------------- Holm
def test_holm_adjustment_hand_values() -> None:
    # sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> monotone max .06
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust([0.5, 0.9]) == [1.0, 1.0]
    assert holm_adjust([]) == []
