"""The robustness card's scores, computed by hand on small paired episode tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlwrappers.error import InvalidArgument
from rlwrappers.metrics import card
from rlwrappers.metrics.reproducibility import stratified_bootstrap_ci

CLEAN = [[100.0, 80.0], [90.0, 110.0]]  # 2 seeds x 2 episodes: mean 95
RANDOM = 15.0


def test_impact_and_the_family_scores_by_hand() -> None:
    levels = [
        [[100.0, 80.0], [90.0, 110.0]],  # mean 95: impact 0
        [[92.0, 80.0], [86.0, 98.0]],  # mean 89: impact 6 / 80 = 0.075
        [[70.0, 60.0], [80.0, 70.0]],  # mean 70: impact 25 / 80 = 0.3125
        [[40.0, 30.0], [20.0, 30.0]],  # mean 30: impact 65 / 80 = 0.8125
        [[10.0, 10.0], [10.0, 10.0]],  # mean 10: impact 85 / 80 = 1.0625, below random
    ]
    impacts = [0.0, 0.075, 0.3125, 0.8125, 1.0625]
    assert [card.impact(CLEAN, level, RANDOM) for level in levels] == pytest.approx(impacts)
    scores = card.family_scores(CLEAN, levels, RANDOM, np.random.default_rng(0), reps=500)
    normalized = [1.0, 0.925, 0.6875, 0.1875, -0.0625]
    assert scores.normalized == pytest.approx(normalized)
    assert scores.ausc == pytest.approx((1.0 + 0.925 + 0.6875 + 0.1875 + 0.0) / 5)  # 0.56
    assert scores.tolerated == 2  # levels 1 and 2 keep 0.9 of the clean return
    low, high = scores.ausc_ci
    assert low <= scores.ausc <= high
    assert scores.impact_ci[0] == (0.0, 0.0)  # level 1 equals clean in every replicate
    assert card.stars(scores.ausc) == 2


def test_no_rating_when_clean_is_no_better_than_random() -> None:
    assert math.isnan(card.impact([10.0, 10.0], [5.0, 5.0], random_return=12.0))
    scores = card.family_scores([[10.0, 10.0]], [[[5.0, 5.0]]], 12.0, np.random.default_rng(0), reps=10)
    assert math.isnan(scores.ausc) and scores.tolerated == 0


def test_a_clean_margin_too_thin_for_an_interval_keeps_the_estimate_and_gives_no_interval() -> None:
    # Clean 6 against a random 5: a replicate that draws clean's zeros does no better than random, and its
    # impact is undefined. The estimate stands; the interval is nan rather than built from the other replicates.
    clean, shifted = [[12.0, 0.0], [12.0, 0.0]], [[8.0, 0.0], [8.0, 0.0]]
    estimate, low, high = card.paired_bootstrap(
        [clean, shifted], lambda c, s: card.impact(c, s, 5.0), np.random.default_rng(0), reps=200
    )
    assert estimate == pytest.approx(2.0 / 1.0) and math.isnan(low) and math.isnan(high)
    scores = card.family_scores(clean, [shifted] * 5, 5.0, np.random.default_rng(0), reps=200)
    assert scores.ausc == 0.0 and all(math.isnan(x) for x in scores.ausc_ci)
    assert scores.impact == [2.0] * 5 and all(math.isnan(low) for low, _ in scores.impact_ci)


def test_the_paired_bootstrap_resamples_the_same_episodes_in_every_arm() -> None:
    clean = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    shifted = clean - 1.0  # every episode one lower: any paired replicate differs by exactly 1
    estimate, low, high = card.paired_bootstrap(
        [clean, shifted], lambda c, s: float(np.mean(c - s)), np.random.default_rng(0), reps=200
    )
    assert (estimate, low, high) == (1.0, 1.0, 1.0)
    # Within-seed resampling keeps each seed's mean spread: seed 0's episodes never mix with seed 1's.
    _, low, high = card.paired_bootstrap([clean], lambda c: float(c[0].max()), np.random.default_rng(0), reps=200)
    assert high <= 3.0


def test_the_interval_matches_the_stratified_bootstrap_where_they_coincide() -> None:
    # One arm, one seed: resampling episodes within the seed is the stratified bootstrap over runs of one task
    # (tests/test_card_rliable.py checks both against rliable itself).
    returns = np.random.default_rng(1).normal(100.0, 10.0, size=40)
    ours = card.paired_bootstrap([returns[np.newaxis, :]], lambda a: float(a.mean()), np.random.default_rng(7))
    theirs = stratified_bootstrap_ci(
        returns[:, np.newaxis], lambda a: float(a.mean()), np.random.default_rng(7), reps=2000
    )
    assert ours[0] == pytest.approx(theirs[0])
    assert ours[1] == pytest.approx(theirs[1], abs=0.5) and ours[2] == pytest.approx(theirs[2], abs=0.5)


def test_stars_and_the_overall_rating() -> None:
    assert [card.stars(a) for a in (0.0, 0.49, 0.5, 0.69, 0.7, 0.849, 0.85, 0.949, 0.95, 1.0)] == [
        1, 1, 2, 2, 3, 3, 4, 4, 5, 5,
    ]  # fmt: skip
    assert card.overall_stars({"a": 0.96, "b": 0.97}) == 5
    assert card.overall_stars({"a": 0.99, "b": 0.99, "c": 0.99, "d": 0.1}) == 2  # one weak family caps it
    with pytest.raises(InvalidArgument, match="must map families"):
        card.overall_stars({})


def test_recovery_after_a_shift_by_hand() -> None:
    clean = [np.ones(30), np.ones(30), np.full(30, 0.8)]
    band = card.recovery_band(clean, window=3, percentile=5.0)
    assert band[10] == pytest.approx(0.8 + 0.05 * 2 * 0.2)  # the 5th percentile of (0.8, 1, 1), interpolated
    shifted = np.concatenate([np.ones(10), np.zeros(5), np.ones(15)])  # shift on steps 10-14
    # m_t over 3 steps after the shift: t=15: 1/3, t=16: 2/3, t=17: 1, then 1: recovered at 17, 2 steps after.
    assert card.recovery_time(shifted, band, shift_end=15, window=3, horizon=10) == 2
    assert card.recovery_time(shifted, band, shift_end=15, window=3, horizon=1) is None  # not within 1 step
    never = np.concatenate([np.ones(10), np.zeros(20)])
    assert card.recovery_time(never, band, shift_end=15, window=3, horizon=10) is None
    short = np.concatenate([np.ones(10), np.zeros(5), np.ones(2)])  # ends before holding for 3 steps
    assert card.recovery_time(short, band, shift_end=15, window=3, horizon=10) is None
