"""The scores of a robustness card: impact per severity level, the area under the severity curve, stars, recovery.

Over the mean returns of paired arms (clean, and each family of shift at levels 1 to 5, the same seeds and
episodes in every arm):

- impact ``I_l = (R_clean - R_l) / (R_clean - R_random)``, with ``R_random`` a uniform-random policy's mean
  return: 0 is no effect, 1 is as bad as acting at random. There is no rating when ``R_clean <= R_random``.
- normalized return ``n_l = 1 - I_l``; the area under the severity curve ``AUSC = mean_l clip(n_l, 0, 1)``;
  the tolerated level, the largest ``l`` with ``n_k >= 0.9`` for every ``k <= l`` (0 when level 1 is not).
- intervals by a paired bootstrap (:func:`paired_bootstrap`): episode indices resampled within each seed, the
  same indices for every arm, so the pairing survives in every replicate.
- stars from AUSC (:data:`STAR_THRESHOLDS`), and an overall rating, ``min(stars(mean AUSC), 1 + worst stars)``.
- recovery after a shift that ends (:func:`recovery_time`): the first step from which the trailing mean
  reward stays above the clean arm's 5th percentile for a window.

Pure functions of arrays: every argument is checked and a bad one raises a typed error naming it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers.error import InvalidArgument

__all__ = [
    "STAR_THRESHOLDS",
    "TOLERATED",
    "FamilyScores",
    "ausc",
    "family_scores",
    "impact",
    "overall_stars",
    "paired_bootstrap",
    "recovery_band",
    "recovery_time",
    "stars",
    "tolerated_level",
    "trailing_mean",
]

#: The AUSC a family needs for 2, 3, 4 and 5 stars (below the first: 1 star).
STAR_THRESHOLDS: Final = (0.5, 0.7, 0.85, 0.95)
#: The normalized return a level must keep to be tolerated.
TOLERATED: Final = 0.9


def _arm(name: str, returns: ArrayLike) -> NDArray[np.float64]:
    """Returns of one arm as (seeds, episodes), finite."""
    r = _check.finite_array(name, returns)
    if r.ndim == 1:
        r = r[np.newaxis, :]
    if r.ndim != 2 or r.size == 0:
        raise InvalidArgument(f"`{name}` must hold returns of shape (seeds, episodes), received shape {r.shape}")
    return r


def impact(clean: ArrayLike, shifted: ArrayLike, random_return: float) -> float:
    """``(R_clean - R_shifted) / (R_clean - R_random)`` over the arms' mean returns; nan when clean <= random.

    Example:
        >>> impact([500.0, 500.0], [300.0, 400.0], random_return=20.0)
        0.3125
    """
    r_clean, r_shifted = float(np.mean(_arm("clean", clean))), float(np.mean(_arm("shifted", shifted)))
    r_random = _check.number("random_return", random_return)
    if r_clean <= r_random:
        return math.nan
    return (r_clean - r_shifted) / (r_clean - r_random)


def ausc(normalized: ArrayLike) -> float:
    """The area under the severity curve: the mean of the normalized returns, each clipped to [0, 1].

    Example:
        >>> ausc([1.0, 0.75, 0.5, 0.25, -0.5])  # (1 + 0.75 + 0.5 + 0.25 + 0) / 5
        0.5
    """
    n = _check.finite_array("normalized", normalized)
    if n.ndim != 1 or n.size == 0:
        raise InvalidArgument(f"`normalized` must be one value per level, received shape {n.shape}")
    return float(np.mean(np.clip(n, 0.0, 1.0)))


def tolerated_level(normalized: ArrayLike, threshold: float = TOLERATED) -> int:
    """The largest level ``l`` (from 1) with every normalized return up to it at least ``threshold``; 0 if none.

    Example:
        >>> tolerated_level([0.99, 0.93, 0.85, 0.95, 0.5])
        2
    """
    n = _check.finite_array("normalized", normalized)
    below = np.flatnonzero(n < _check.number("threshold", threshold))
    return int(below[0]) if below.size else int(n.size)


def stars(area: float) -> int:
    """1 to 5 stars from an AUSC, by :data:`STAR_THRESHOLDS`.

    Example:
        >>> [stars(a) for a in (0.2, 0.5, 0.72, 0.9, 0.99)]
        [1, 2, 3, 4, 5]
    """
    a = _check.number("area", area)
    return 1 + sum(a >= t for t in STAR_THRESHOLDS)


def overall_stars(ausc_by_family: Mapping[str, float]) -> int:
    """The overall rating: the stars of the mean AUSC, but at most one more than the worst family's.

    Example:
        >>> overall_stars({"obs_noise": 0.99, "dynamics": 0.96, "attack": 0.3})
        2
    """
    if not isinstance(ausc_by_family, Mapping) or not ausc_by_family:
        raise InvalidArgument(f"`ausc_by_family` must map families to their AUSC, received {ausc_by_family!r}")
    areas = [_check.number(f"ausc_by_family[{k!r}]", v) for k, v in ausc_by_family.items()]
    return min(stars(float(np.mean(areas))), 1 + min(stars(a) for a in areas))


def paired_bootstrap(
    arms: Sequence[ArrayLike],
    statistic: Callable[..., float],
    rng: np.random.Generator,
    *,
    reps: int = 2000,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Estimate and percentile interval of ``statistic(*arms)``, resampling episodes within each seed.

    Every arm is (seeds, episodes), episode ``j`` of seed ``s`` paired across arms; each replicate draws, per
    seed, episode indices with replacement and applies the same indices to every arm.

    Returns:
        ``(estimate, low, high)``; ``low`` and ``high`` are nan when the statistic is nan in some replicate (an
        impact whose resampled clean arm does no better than the random policy: the margin is too thin for an
        interval).
    """
    matrices = [_arm(f"arms[{i}]", a) for i, a in enumerate(arms)]
    if not matrices or any(m.shape != matrices[0].shape for m in matrices):
        raise InvalidArgument(f"`arms` must be paired arrays of one shape, received {[m.shape for m in matrices]}")
    _check.integer("reps", reps, minimum=1)
    if not 0.0 < _check.number("confidence", confidence) < 1.0:
        raise InvalidArgument(f"`confidence` must be in (0, 1), received {confidence!r}")
    seeds, episodes = matrices[0].shape
    rows = np.arange(seeds)[:, np.newaxis]
    values = np.empty(reps)
    for k in range(reps):
        picks = rng.integers(0, episodes, size=(seeds, episodes))
        values[k] = statistic(*(m[rows, picks] for m in matrices))
    estimate = float(statistic(*matrices))
    if np.isnan(values).any():
        return estimate, math.nan, math.nan
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return estimate, float(low), float(high)


@dataclass(frozen=True)
class FamilyScores:
    """The scores of one family of shift; see :func:`family_scores`.

    Args:
        impact: per level, ``I_l``.
        normalized: per level, ``n_l = 1 - I_l``.
        impact_ci: per level, the (low, high) interval of ``I_l``.
        ausc: the area under the severity curve.
        ausc_ci: its (low, high) interval.
        tolerated: the tolerated level (0 to the number of levels).
    """

    impact: list[float]
    normalized: list[float]
    impact_ci: list[tuple[float, float]]
    ausc: float
    ausc_ci: tuple[float, float]
    tolerated: int


def family_scores(
    clean: ArrayLike,
    levels: Sequence[ArrayLike],
    random_return: float,
    rng: np.random.Generator,
    *,
    reps: int = 2000,
) -> FamilyScores:
    """Every score of one family: per level its impact with an interval, and the AUSC with an interval.

    Impacts are nan, the AUSC too and nothing tolerated, when ``R_clean <= R_random``: there is no rating. An
    interval is nan when some replicate's clean arm does no better than the random policy (see
    :func:`paired_bootstrap`).
    """
    arms = [_arm("clean", clean), *(_arm(f"levels[{i}]", level) for i, level in enumerate(levels))]
    r_random = _check.number("random_return", random_return)
    impacts = [impact(arms[0], level, r_random) for level in arms[1:]]
    if any(math.isnan(i) for i in impacts):
        nan = [math.nan] * len(impacts)
        return FamilyScores(nan, nan, [(math.nan, math.nan)] * len(impacts), math.nan, (math.nan, math.nan), 0)
    intervals = []
    for level in arms[1:]:
        _, low, high = paired_bootstrap([arms[0], level], lambda c, s: impact(c, s, r_random), rng, reps=reps)
        intervals.append((low, high))

    def area(c: NDArray[np.float64], *shifted: NDArray[np.float64]) -> float:
        normalized = [1.0 - impact(c, s, r_random) for s in shifted]
        return math.nan if any(math.isnan(n) for n in normalized) else ausc(normalized)

    estimate, low, high = paired_bootstrap(arms, area, rng, reps=reps)
    normalized = [1.0 - i for i in impacts]
    return FamilyScores(impacts, normalized, intervals, estimate, (low, high), tolerated_level(normalized))


def trailing_mean(rewards: ArrayLike, window: int) -> NDArray[np.float64]:
    """m_t: per step, the mean reward over the ``window`` steps up to t (fewer at the start).

    Example:
        >>> trailing_mean([1.0, 3.0, 5.0], window=2)
        array([1., 2., 4.])
    """
    r = _check.finite_array("rewards", rewards)
    _check.integer("window", window, minimum=1)
    sums = np.cumsum(r)
    out = np.empty_like(r)
    for t in range(len(r)):
        start = max(0, t - window + 1)
        out[t] = (sums[t] - (sums[start - 1] if start else 0.0)) / (t - start + 1)
    return out


def recovery_band(clean_rewards: Sequence[ArrayLike], window: int, percentile: float = 5.0) -> NDArray[np.float64]:
    """L_t: per step, the ``percentile`` of the clean episodes' trailing mean rewards (those still running)."""
    _check.integer("window", window, minimum=1)
    means = [trailing_mean(_check.finite_array(f"clean_rewards[{i}]", r), window) for i, r in enumerate(clean_rewards)]
    if not means:
        raise InvalidArgument("`clean_rewards` must hold at least one episode")
    longest = max(len(m) for m in means)
    band = np.full(longest, np.nan)
    for t in range(longest):
        alive = [m[t] for m in means if len(m) > t]
        band[t] = np.percentile(alive, percentile)
    return band


def recovery_time(rewards: ArrayLike, band: ArrayLike, shift_end: int, window: int, horizon: int) -> int | None:
    """Steps from the end of a shift until the trailing mean reward holds at or above ``band`` for ``window`` steps.

    The answer ``k`` is the first step ``shift_end + k`` from which ``m_t >= L_t`` holds for ``window`` steps in
    a row. None when the episode ends first, or has not recovered ``horizon`` steps after the shift.

    Example:
        >>> rewards = [1.0] * 10 + [0.0] * 5 + [1.0] * 20
        >>> recovery_time(rewards, [0.9] * 40, shift_end=15, window=2, horizon=10)
        1
    """
    r, lower = _check.finite_array("rewards", rewards), np.asarray(band, dtype=np.float64)
    start = _check.integer("shift_end", shift_end, minimum=0)
    w, h = _check.integer("window", window, minimum=1), _check.integer("horizon", horizon, minimum=0)
    m = trailing_mean(r, w)
    for t in range(start, min(start + h, len(r)) + 1):
        stop = t + w
        if stop > len(r) or stop > len(lower):
            return None
        if np.all(m[t:stop] >= lower[t:stop]):
            return t - start
    return None
