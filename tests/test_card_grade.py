"""card-v2's grade: skill, scores and stars by hand, dominance on constructed tables and on the zoo's agents, the
one paired bootstrap, and bad inputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.metrics import card as relative
from rlwrappers.metrics import grade

RANDOM, REFERENCE = 20.0, 500.0


def table(rng: np.random.Generator, *, seeds: int = 2, episodes: int = 3, low: float = 0.0) -> np.ndarray:
    return rng.uniform(low, REFERENCE, size=(seeds, episodes))


def test_skill_scores_and_stars_by_hand() -> None:
    clean = [[500.0, 500.0]]
    levels = [[[500.0, 500.0]], [[260.0, 260.0]], [[20.0, 20.0]], [[0.0, 0.0]], [[500.0, 20.0]]]
    g = grade.grade(clean, {"noise": levels}, RANDOM, REFERENCE, np.random.default_rng(0), reps=100)
    noise = g.families["noise"]
    assert [e.value for e in noise.skill] == [1.0, 0.5, 0.0, -20.0 / 480.0, 0.5]
    assert noise.score.value == pytest.approx((1.0 + 0.5 + 0.0 + 0.0 + 0.5) / 5)  # clipped at 0
    assert noise.stars == 4  # the stars this family allows: 0.4 reaches FAMILY_STARS' 0.1, 0.25 and 0.4
    assert g.score.value == noise.score.value and g.worst_family == "noise"
    assert g.stars == 3  # the score, 0.4, reaches SCORE_STARS' 0.2 and 0.4
    assert g.clean_skill.value == 1.0 and g.clean_return.value == 500.0
    # card-v1's numbers, beside: impact against the clean return
    assert [e.value for e in noise.impact] == [0.0, 0.5, 1.0, 20.0 / 480.0 + 1.0, 0.5]
    assert noise.relative_ausc.value == pytest.approx((1.0 + 0.5 + 0.0 + 0.0 + 0.5) / 5)
    assert noise.tolerated == 1
    assert g.stars_probability[2] + g.stars_probability[1] + g.stars_probability[3] == pytest.approx(1.0)


def test_a_family_of_sub_families_weighs_each_the_same_and_the_worst_family_caps_the_stars() -> None:
    clean = [[500.0]]
    subs = {"blur": [[[500.0]]] * 5, "jpeg": [[[20.0]]] * 5}
    strong = [[[500.0]]] * 5
    g = grade.grade(clean, {"corruptions": subs, "noise": strong}, RANDOM, REFERENCE, np.random.default_rng(0))
    corruptions = g.families["corruptions"]
    assert corruptions.score.value == 0.5 and [e.value for e in corruptions.skill] == [0.5] * 5
    assert set(corruptions.sub_families) == {"blur", "jpeg"} and corruptions.sub_families["jpeg"].score.value == 0
    assert g.score.value == 0.75  # 4 stars by the score (0.6 <= 0.75 < 0.8)
    assert g.stars == 4 and corruptions.stars == 4  # a family at 0.5 allows 4 stars (0.4 <= 0.5 < 0.6)
    weak = grade.grade(clean, {"a": strong, "b": [[[44.0]]] * 5}, RANDOM, REFERENCE, np.random.default_rng(0))
    assert weak.score.value == pytest.approx(0.525) and int(grade.stars(weak.score.value)) == 3
    assert weak.stars == 1  # but family b, at 0.05, is below the bar of 2 stars


@st.composite
def dominated_pairs(draw: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """An episode table (arms, seeds, episodes) and one that returns at least as much in every episode."""
    families = draw(st.integers(1, 3))
    seeds, episodes = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    arms = 1 + 5 * families
    base = rng.uniform(-100.0, 600.0, size=(arms, seeds, episodes))
    gain = rng.uniform(0.0, 200.0, size=base.shape) * (rng.random(base.shape) < draw(st.floats(0.0, 1.0)))
    return base, base + gain, families


def _grade(t: np.ndarray, families: int, reps: int = 64) -> grade.CardGrade:
    named = {f"f{k}": list(t[1 + 5 * k : 6 + 5 * k]) for k in range(families)}
    return grade.grade(t[0], named, RANDOM, REFERENCE, np.random.default_rng(7), reps=reps)


@settings(max_examples=150, deadline=None)
@given(dominated_pairs())
def test_no_score_or_star_falls_when_every_return_rises(pair: tuple[np.ndarray, np.ndarray, int]) -> None:
    low, high, families = pair
    a, b = _grade(low, families), _grade(high, families)
    assert b.score.value >= a.score.value and b.stars >= a.stars
    assert b.clean_skill.value >= a.clean_skill.value
    assert b.families[b.worst_family].score.value >= a.families[a.worst_family].score.value
    for name in a.families:
        assert b.families[name].score.value >= a.families[name].score.value
        assert b.families[name].stars >= a.families[name].stars
        assert all(y.value >= x.value for x, y in zip(a.families[name].skill, b.families[name].skill, strict=True))
    # The same bootstrap draws: every replicate dominates too, so more stars are at least as likely.
    assert all(sum(b.stars_probability[k:]) >= sum(a.stars_probability[k:]) - 1e-12 for k in range(5)), (
        a.stars_probability,
        b.stars_probability,
    )
    assert b.score.low >= a.score.low and b.score.high >= a.score.high


def test_the_relative_numbers_can_rank_a_dominated_agent_higher_and_the_score_does_not() -> None:
    # The zoo's measurement: an agent at 175 everywhere against one at 500 that falls under noise.
    strong = {"obs_noise": [[[v]] for v in (500.0, 500.0, 451.0, 94.0, 35.0)]}
    weak = {"obs_noise": [[[v]] for v in (177.0, 173.0, 176.0, 152.0, 103.0)]}
    rng = np.random.default_rng(0)
    a = grade.grade([[500.0]], strong, 22.8, REFERENCE, rng, reps=10)
    b = grade.grade([[175.0]], weak, 22.8, REFERENCE, rng, reps=10)
    assert b.families["obs_noise"].relative_ausc.value > a.families["obs_noise"].relative_ausc.value
    assert b.score.value < a.score.value and b.stars <= a.stars


def test_the_bootstrap_pairs_arms_and_does_not_depend_on_how_it_is_split(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    t = rng.normal(size=(4, 3, 5))
    t[1] = t[0] + 1.0
    whole = grade.resampled_means(t, np.random.default_rng(11), reps=50)
    assert whole.shape == (50, 4)
    assert np.allclose(whole[:, 1] - whole[:, 0], 1.0)  # the same episodes in every arm
    monkeypatch.setattr(grade, "_CHUNK", t.size * 3)  # three replicates a chunk
    assert np.array_equal(grade.resampled_means(t, np.random.default_rng(11), reps=50), whole)
    picks = np.random.default_rng(11).integers(0, 5, size=(50, 3, 5))
    by_hand = t[2][np.arange(3)[:, None], picks[17]].mean()
    assert whole[17, 2] == pytest.approx(by_hand, abs=1e-15)


def test_intervals_hold_the_estimate_and_vanish_where_the_margin_is_too_thin() -> None:
    rng = np.random.default_rng(0)
    clean = table(rng, low=400.0)
    levels = [clean - 50.0 * k for k in range(5)]
    g = grade.grade(clean, {"noise": levels}, RANDOM, REFERENCE, np.random.default_rng(1), reps=400)
    for e in [g.score, g.clean_skill, *g.families["noise"].skill]:
        assert e.low <= e.value <= e.high
    thin = grade.grade([[15.0, 30.0]], {"noise": [[[10.0, 10.0]]] * 5}, RANDOM, REFERENCE, np.random.default_rng(0))
    noise = thin.families["noise"]
    assert math.isnan(noise.relative_ausc.low) and not math.isnan(noise.score.low)  # skill needs no margin
    assert noise.tolerated == 0 and not math.isnan(noise.score.value)


def test_an_arm_that_returned_the_same_in_every_episode_takes_the_bounds_its_data_allow() -> None:
    clean = np.full((5, 10), 500.0)
    falls = np.where(np.arange(10) < 5, RANDOM, 500.0) * np.ones((5, 1))  # half the episodes at the random return
    g = grade.grade(clean, {"noise": [clean, falls]}, RANDOM, REFERENCE, np.random.default_rng(0), reps=300)
    share = 1.0 - 0.025 ** (1 / 50)  # the exact 97.5% bound on exceptions when none of 50 episodes is one
    at_cap, varied = g.families["noise"].skill
    assert (at_cap.value, at_cap.high) == (1.0, 1.0)
    assert at_cap.low == pytest.approx(1.0 - share)  # the lowest return on the card is the random one: skill 0
    assert g.clean_return.low == pytest.approx(500.0 - share * (500.0 - RANDOM)) and g.clean_return.high == 500.0
    means = grade.resampled_means(np.stack([clean, clean, falls]), np.random.default_rng(0), reps=300)[:, 2]
    low, high = np.percentile(grade.skill(means, RANDOM, REFERENCE), [2.5, 97.5])
    assert (varied.low, varied.high) == (low, high)  # an arm that varies keeps its bootstrap interval
    subs = {"a": [clean, falls], "b": [clean - 240.0, falls]}
    mixed = grade.grade(clean, {"noise": subs}, RANDOM, REFERENCE, np.random.default_rng(0), reps=300)
    first = mixed.families["noise"]
    lows = [sub.skill[0].low for sub in first.sub_families.values()]
    assert first.skill[0].low == pytest.approx(np.mean(lows)) and lows[0] != lows[1]
    with pytest.raises(InvalidArgument, match="`arms`"):
        grade.unvaried_bounds([1.0, 2.0])


def test_bad_inputs_raise_typed_errors_naming_the_argument() -> None:
    rng = np.random.default_rng(0)
    ok = {"noise": [[[1.0]]] * 5}
    with pytest.raises(InvalidArgument, match=r"`reference_return` must be above `random_return` \(20.0\)"):
        grade.grade([[1.0]], ok, RANDOM, 10.0, rng)
    with pytest.raises(InvalidArgument, match=r"`families\['noise'\]\[1\]` must be paired with `clean`, of shape"):
        grade.grade([[1.0, 2.0]], {"noise": [[[1.0, 2.0]], [[1.0]]]}, RANDOM, REFERENCE, rng)
    with pytest.raises(InvalidType, match=r"`families\['noise'\]` must be a non-empty list"):
        grade.grade([[1.0]], {"noise": []}, RANDOM, REFERENCE, rng)
    with pytest.raises(InvalidArgument, match="`families` must map at least one family"):
        grade.grade([[1.0]], {}, RANDOM, REFERENCE, rng)
    with pytest.raises(InvalidArgument, match=r"`confidence` must be in \(0, 1\), received 1.5"):
        grade.grade([[1.0]], ok, RANDOM, REFERENCE, rng, confidence=1.5)
    with pytest.raises(InvalidArgument, match=r"`arms` must be returns of shape \(arms, seeds, episodes\)"):
        grade.resampled_means(np.zeros((2, 3)), rng, reps=3)
    with pytest.raises(InvalidArgument, match="`clean`"):
        grade.grade([[math.nan]], ok, RANDOM, REFERENCE, rng)


def test_relative_numbers_equal_card_v1s_functions() -> None:
    rng = np.random.default_rng(5)
    clean = table(rng, low=300.0)
    levels = [table(rng) for _ in range(5)]
    g = grade.grade(clean, {"noise": levels}, RANDOM, REFERENCE, np.random.default_rng(0), reps=50)
    v1 = relative.family_scores(clean, levels, RANDOM, np.random.default_rng(0), reps=50)
    assert [e.value for e in g.families["noise"].impact] == pytest.approx(v1.impact, abs=1e-12)
    assert g.families["noise"].relative_ausc.value == pytest.approx(v1.ausc, abs=1e-12)
    assert g.families["noise"].tolerated == v1.tolerated


def test_a_training_methods_runs_are_resampled_before_their_episodes() -> None:
    rng = np.random.default_rng(2)
    runs = np.array([100.0, 300.0, 500.0])[:, None, None] + rng.normal(0.0, 1.0, size=(3, 2, 4))
    t = np.stack([runs, runs - 50.0])  # (arms, runs, seeds, episodes)
    means = grade.resampled_means(t, np.random.default_rng(5), reps=400)
    assert np.allclose(means[:, 0] - means[:, 1], 50.0)  # every arm resamples the same runs and episodes
    assert means[:, 0].min() < 200.0 and means[:, 0].max() > 400.0  # the spread over training seeds shows
    chosen = np.random.default_rng(5).integers(0, 3, size=(400, 3))
    picks = np.random.default_rng(5)
    picks.integers(0, 3, size=(400, 3))
    picks = picks.integers(0, 4, size=(400, 3, 2, 4))
    k = 123
    by_hand = np.mean([t[0, chosen[k, r], s, picks[k, r, s]] for r in range(3) for s in range(2)])
    assert means[k, 0] == pytest.approx(by_hand, abs=1e-12)
    method = grade.grade(runs, {"shift": [runs - 50.0] * 5}, 0.0, 500.0, np.random.default_rng(0), reps=400)
    single = grade.grade(runs[2], {"shift": [runs[2] - 50.0] * 5}, 0.0, 500.0, np.random.default_rng(0), reps=400)
    assert method.clean_return.value == pytest.approx(runs.mean())
    assert method.score.high - method.score.low > 5 * (single.score.high - single.score.low)
