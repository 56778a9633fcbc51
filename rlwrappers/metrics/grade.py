"""The grade of a card-v2 robustness card: skill, scores that respect dominance, stars and how sure they are.

Over the mean returns of paired arms (the clean arm, and each family of shift at levels 1 to 5, the same seeds
and episodes in every arm) and two returns the env's ladder states, the random policy's ``R_random`` and a
reference ``R_ref`` (an env's maximum return, a published human score, ...):

- **skill** ``s = (R - R_random) / (R_ref - R_random)``: 0 plays as a random policy, 1 as the reference; per
  arm, the clean one too.
- a family's **score**: the mean over its levels (and its sub-families, each weighing the same) of the skill
  clipped to [0, 1]; the card's **score** the mean of its families' scores.
- **stars**: as Euro NCAP rates a car, both the card's score and every family's must reach a star's bar
  (:data:`SCORE_STARS`, :data:`FAMILY_STARS`): ``min(stars(score), stars(worst family's score))``.
- **relative robustness**, card-v1's numbers: per level the impact ``(R_clean - R_l) / (R_clean - R_random)``,
  per family the area under ``clip(1 - impact, 0, 1)``. They are shown and feed nothing: an agent that is poor
  everywhere loses little against its own clean return.

**Dominance.** Every score and the stars are non-decreasing in each arm's mean return: an agent that returns at
least as much as another on every arm never scores or rates lower. Each is a mean or a minimum of clipped skills,
and skill rises with the return; the relative numbers do not have the property, so nothing depends on them.

**Intervals** come from one paired bootstrap for the whole card (:func:`resampled_means`): each replicate draws,
per seed, episode indices with replacement and applies them to every arm, so every number of a replicate, the
stars too, is computed from one resampled card. Percentile intervals, and the stars' distribution over the
replicates (``P(stars = k)``), follow. An arm whose every episode returned the same gives the bootstrap nothing to
resample; its own numbers (its mean return and skill) take the interval of :func:`unvaried_bounds` instead.

Pure functions of arrays: every argument is checked and a bad one raises a typed error naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.metrics import card as relative

__all__ = [
    "FAMILY_STARS",
    "SCORE_STARS",
    "CardGrade",
    "Estimate",
    "FamilyGrade",
    "grade",
    "resampled_means",
    "skill",
    "stars",
    "unvaried_bounds",
]

#: The card's score needed for 2, 3, 4 and 5 stars (below the first: 1 star).
SCORE_STARS: Final = (0.2, 0.4, 0.6, 0.8)
#: The score every family needs for 2, 3, 4 and 5 stars: a card is no better rated than its worst family allows.
FAMILY_STARS: Final = (0.1, 0.25, 0.4, 0.6)
#: The most numbers one chunk of the bootstrap gathers at once (bounds its memory, not its result).
_CHUNK: Final = 4_000_000

Array = NDArray[np.float64]


def skill(mean_return: ArrayLike, random_return: float, reference_return: float) -> Array:
    """``(R - R_random) / (R_ref - R_random)``, elementwise.

    Example:
        >>> skill([500.0, 261.0, 22.0], random_return=22.0, reference_return=500.0)
        array([1. , 0.5, 0. ])

    Raises:
        InvalidArgument: the reference return is not above the random one.
    """
    r_random = _check.number("random_return", random_return)
    r_ref = _check.number("reference_return", reference_return)
    if not r_ref > r_random:
        raise InvalidArgument(
            f"`reference_return` must be above `random_return` ({r_random!r}), received {r_ref!r}: skill measures"
            " the way from the random policy to the reference"
        )
    return (np.asarray(mean_return, dtype=np.float64) - r_random) / (r_ref - r_random)


def stars(values: ArrayLike, thresholds: Sequence[float] = SCORE_STARS) -> NDArray[np.int64]:
    """1 to 5 stars, elementwise: one plus the number of ``thresholds`` each value reaches.

    Example:
        >>> stars([0.1, 0.2, 0.55, 0.99]).tolist()
        [1, 2, 3, 5]
    """
    v = np.asarray(values, dtype=np.float64)
    return 1 + (v[..., np.newaxis] >= np.asarray(thresholds, dtype=np.float64)).sum(axis=-1)


def resampled_means(arms: ArrayLike, rng: np.random.Generator, reps: int) -> Array:
    """Each arm's mean return in ``reps`` paired bootstrap replicates: shape ``(reps, arms)``.

    ``arms`` is ``(arms, seeds, episodes)``, episode ``j`` of seed ``s`` paired across arms. Replicate ``k``
    draws, per seed, ``episodes`` indices with replacement (one ``rng.integers`` call for all replicates, so the
    draws do not depend on how the work is split) and takes every arm's mean over the drawn episodes.

    With ``(arms, runs, seeds, episodes)``, the returns of several trained agents (runs: a training method's
    training seeds), a replicate first draws ``runs`` runs with replacement, as rliable's stratified bootstrap
    draws runs, then episodes within each drawn run's seeds: the interval holds the spread over training seeds.

    Example:
        >>> table = np.array([[[1.0, 3.0]], [[2.0, 4.0]]])  # two arms, one seed, two episodes
        >>> means = resampled_means(table, np.random.default_rng(0), reps=4)
        >>> bool(np.all(means[:, 1] - means[:, 0] == 1.0))  # the same episodes in both arms
        True
    """
    a = _check.finite_array("arms", arms)
    if a.ndim not in (3, 4) or a.size == 0:
        raise InvalidArgument(
            f"`arms` must be returns of shape (arms, seeds, episodes) or (arms, runs, seeds, episodes), received"
            f" shape {a.shape}"
        )
    _check.integer("reps", reps, minimum=1)
    n_arms, episodes = a.shape[0], a.shape[-1]
    out = np.empty((reps, n_arms))
    step = max(1, _CHUNK // a.size)
    if a.ndim == 3:
        seeds = a.shape[1]
        picks = rng.integers(0, episodes, size=(reps, seeds, episodes))
        rows = np.arange(seeds)[:, np.newaxis]
        for start in range(0, reps, step):
            drawn = a[:, rows, picks[start : start + step]]  # (arms, chunk, seeds, episodes)
            out[start : start + step] = drawn.reshape(n_arms, drawn.shape[1], -1).mean(axis=2).T
        return out
    runs, seeds = a.shape[1], a.shape[2]
    chosen = rng.integers(0, runs, size=(reps, runs))
    picks = rng.integers(0, episodes, size=(reps, runs, seeds, episodes))
    rows = np.arange(seeds)[:, np.newaxis]
    for start in range(0, reps, step):
        which = chosen[start : start + step][:, :, np.newaxis, np.newaxis]
        drawn = a[:, which, rows, picks[start : start + step]]  # (arms, chunk, runs, seeds, episodes)
        out[start : start + step] = drawn.reshape(n_arms, drawn.shape[1], -1).mean(axis=2).T
    return out


def unvaried_bounds(arms: ArrayLike, confidence: float = 0.95) -> tuple[NDArray[np.bool_], Array, Array]:
    """Which arms returned the same in every episode, and bounds of their mean return that the data allow.

    An arm of ``n`` episodes that all returned ``v`` has a point bootstrap interval, ``[v, v]``, which a longer
    run misses as soon as one episode in a hundred returns otherwise (CartPole's agent at the cap of 500). The
    data bound how often that happens: by the exact (Clopper-Pearson) bound with no exception seen, at most
    ``p = 1 - ((1 - confidence) / 2) ** (1 / n)`` of the episodes return otherwise. They bound how far, too: no
    further than the lowest and the highest return of any arm of the card. So the mean return lies within
    ``[v - p (v - lowest), v + p (highest - v)]``.

    ``arms`` is ``(arms, ...)``, each arm's episodes in the remaining axes. Returns a mask of the unvaried arms
    and, per arm, the two bounds (nan where the arm varies).

    Example:
        >>> still, low, high = unvaried_bounds([[500.0] * 50, [10.0] * 25 + [500.0] * 25])
        >>> still.tolist(), round(float(low[0]), 1), float(high[0])
        ([True, False], 465.2, 500.0)
    """
    a = _check.finite_array("arms", arms)
    if a.ndim < 2 or a.size == 0:
        raise InvalidArgument(f"`arms` must hold each arm's episodes, of shape (arms, ...), received {a.shape}")
    if not 0.0 < _check.number("confidence", confidence) < 1.0:
        raise InvalidArgument(f"`confidence` must be in (0, 1), received {confidence!r}")
    flat = a.reshape(len(a), -1)
    still = flat.min(axis=1) == flat.max(axis=1)
    share = 1.0 - (0.5 * (1.0 - confidence)) ** (1.0 / flat.shape[1])
    value = flat[:, 0]
    low = np.where(still, value - share * (value - flat.min()), np.nan)
    high = np.where(still, value + share * (flat.max() - value), np.nan)
    return still, low, high


@dataclass(frozen=True)
class Estimate:
    """A number and its interval (bootstrap percentiles, or :func:`unvaried_bounds`); nan ends: no interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class FamilyGrade:
    """One family's (or sub-family's) grade; see :func:`grade`.

    Attributes:
        mean_return: per level, the mean return (for a family of sub-families, the mean of theirs).
        skill: per level, the skill (the mean of the sub-families' skills).
        impact: per level, the relative impact ``(R_clean - R_l) / (R_clean - R_random)`` (the sub-families'
            mean); nan when the clean return is not above the random one.
        score: the family's score.
        stars: the stars of the family's score alone (by :data:`FAMILY_STARS`).
        relative_ausc: the area under ``clip(1 - impact, 0, 1)`` (the sub-families' mean); nan as ``impact``.
        tolerated: the largest level with ``1 - impact >= 0.9`` at it and every level below (0 if none).
        sub_families: the sub-families' grades, by name (empty for a family without).
    """

    mean_return: list[float]
    skill: list[Estimate]
    impact: list[Estimate]
    score: Estimate
    stars: int
    relative_ausc: Estimate
    tolerated: int
    sub_families: dict[str, FamilyGrade]


@dataclass(frozen=True)
class CardGrade:
    """A card's grade; see :func:`grade`.

    Attributes:
        clean_return: the clean arm's mean return.
        clean_skill: its skill.
        families: each family's grade, by name, in the order given.
        score: the card's score, the mean of the families' scores.
        stars: ``min(stars(score), stars(worst family's score))``.
        stars_probability: ``P(stars = k)`` for k = 1 .. 5 over the bootstrap replicates.
        worst_family: the family of the lowest score (the first of equal ones).
        relative_mean_ausc: the mean of the families' relative AUSCs (nan when the clean return is not above
            the random one).
    """

    clean_return: Estimate
    clean_skill: Estimate
    families: dict[str, FamilyGrade]
    score: Estimate
    stars: int
    stars_probability: list[float]
    worst_family: str
    relative_mean_ausc: Estimate


#: A family's levels: a list of arrays of ``clean``'s shape, one per level, or sub-families, by name, of such lists.
FamilyArms = Sequence[ArrayLike] | Mapping[str, Sequence[ArrayLike]]


def _groups(name: str, levels: Any) -> dict[str | None, list[Array]]:
    """A family's arms as ``{sub-family or None: [level arrays]}``."""
    if isinstance(levels, Mapping):
        if not levels:
            raise InvalidArgument(f"`families[{name!r}]` must hold at least one sub-family, received none")
        return {str(sub): _levels(f"families[{name!r}][{sub!r}]", arms) for sub, arms in levels.items()}
    return {None: _levels(f"families[{name!r}]", levels)}


def _levels(where: str, levels: Any) -> list[Array]:
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
        raise InvalidType(f"`{where}` must be a non-empty list of per-level returns, received {levels!r}")
    return [_check.finite_array(f"{where}[{i}]", level) for i, level in enumerate(levels)]


def _matrix(where: str, returns: Array) -> Array:
    r = returns[np.newaxis, :] if returns.ndim == 1 else returns
    if r.ndim not in (2, 3) or r.size == 0:
        raise InvalidArgument(
            f"`{where}` must hold returns of shape (seeds, episodes), or (runs, seeds, episodes) for several"
            f" trained agents, received shape {r.shape}"
        )
    return r


def _interval(values: Array, confidence: float) -> tuple[Array, Array]:
    """Percentile bounds over axis 0; nan where some replicate is nan."""
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(values, [tail, 100.0 - tail], axis=0)
    broken = np.isnan(values).any(axis=0)
    return np.where(broken, np.nan, low), np.where(broken, np.nan, high)


class _Scores:
    """Every number of a grade as a function of the arms' mean returns ``means`` (shape ``(..., arms)``)."""

    def __init__(self, layout: Mapping[str, Mapping[str | None, list[int]]], random: float, reference: float):
        self.layout, self.random, self.reference = layout, random, reference

    def __call__(self, means: Array) -> dict[str, Any]:
        clean = means[..., 0]
        margin = clean - self.random
        with np.errstate(divide="ignore", invalid="ignore"):
            impact_all = np.where(
                margin[..., np.newaxis] > 0, (clean[..., np.newaxis] - means) / margin[..., np.newaxis], np.nan
            )
        skill_all = skill(means, self.random, self.reference)
        out: dict[str, Any] = {"clean_return": clean, "clean_skill": skill_all[..., 0], "families": {}}
        for family, groups in self.layout.items():
            subs = {}
            for sub, columns in groups.items():
                s, i = skill_all[..., columns], impact_all[..., columns]
                subs[sub] = {
                    "mean_return": means[..., columns],
                    "skill": s,
                    "impact": i,
                    "score": np.clip(s, 0.0, 1.0).mean(axis=-1),
                    "relative_ausc": np.clip(1.0 - i, 0.0, 1.0).mean(axis=-1),
                    "subs": {},
                }
            keys = ("mean_return", "skill", "impact", "score", "relative_ausc")
            whole = {key: np.mean([sub[key] for sub in subs.values()], axis=0) for key in keys}
            whole["subs"] = subs if None not in subs else {}
            out["families"][family] = whole
        scores = np.stack([f["score"] for f in out["families"].values()], axis=-1)
        out["score"] = scores.mean(axis=-1)
        out["worst"] = scores.min(axis=-1)
        out["stars"] = np.minimum(stars(out["score"], SCORE_STARS), stars(out["worst"], FAMILY_STARS))
        out["relative_mean_ausc"] = np.mean([f["relative_ausc"] for f in out["families"].values()], axis=0)
        return out


def grade(
    clean: ArrayLike,
    families: Mapping[str, FamilyArms],
    random_return: float,
    reference_return: float,
    rng: np.random.Generator,
    *,
    reps: int = 2000,
    confidence: float = 0.95,
) -> CardGrade:
    """Grades a card from its episode returns: skill, scores, stars and their intervals.

    Args:
        clean: the clean arm's returns, ``(seeds, episodes)``; or ``(runs, seeds, episodes)`` for a training
            method's runs (its trained agents), which the bootstrap resamples too (:func:`resampled_means`).
        families: per family, its levels' returns (each of ``clean``'s shape, paired with it), or its
            sub-families, by name, each a list of levels.
        random_return: the random policy's mean return, skill 0.
        reference_return: the reference return, skill 1.
        rng: the bootstrap's generator.
        reps: bootstrap replicates.
        confidence: the intervals' confidence.

    Example:
        >>> clean = [[500.0, 500.0]]
        >>> g = grade(clean, {"noise": [[[500.0, 400.0]], [[300.0, 100.0]]]}, 0.0, 500.0, np.random.default_rng(0))
        >>> [s.value for s in g.families["noise"].skill], g.score.value, g.stars
        ([0.9, 0.4], 0.65, 4)
    """
    base = _matrix("clean", _check.finite_array("clean", clean))
    if not isinstance(families, Mapping) or not families:
        raise InvalidArgument(f"`families` must map at least one family to its levels, received {families!r}")
    if not 0.0 < _check.number("confidence", confidence) < 1.0:
        raise InvalidArgument(f"`confidence` must be in (0, 1), received {confidence!r}")
    r_random, r_ref = float(random_return), float(reference_return)
    skill(0.0, r_random, r_ref)  # checks the two returns
    columns: list[Array] = [base]
    layout: dict[str, dict[str | None, list[int]]] = {}
    for name, levels in families.items():
        layout[str(name)] = {}
        for sub, arms in _groups(str(name), levels).items():
            where = f"families[{name!r}]" + ("" if sub is None else f"[{sub!r}]")
            start = len(columns)
            for i, arm in enumerate(arms):
                m = _matrix(f"{where}[{i}]", arm)
                if m.shape != base.shape:
                    raise InvalidArgument(
                        f"`{where}[{i}]` must be paired with `clean`, of shape {base.shape}, received {m.shape}"
                    )
                columns.append(m)
            layout[str(name)][sub] = list(range(start, len(columns)))
    table = np.stack(columns)
    scores = _Scores(layout, r_random, r_ref)
    point = scores(table.reshape(len(table), -1).mean(axis=1))
    replicates = scores(resampled_means(table, rng, reps))
    still, *still_return = unvaried_bounds(table, confidence)
    still_skill = [skill(bound, r_random, r_ref) for bound in still_return]

    def bounds(path: Sequence[str | None]) -> tuple[Any, Array, Array]:
        p: Any = point
        r: Any = replicates
        for key in path:
            p, r = p[key], r[key]
        low, high = _interval(np.asarray(r, dtype=np.float64), confidence)
        return p, low, high

    def one(*path: str | None) -> Estimate:
        value, low, high = bounds(path)
        return Estimate(float(value), float(low), float(high))

    def per_level(*path: str | None) -> list[Estimate]:
        values, low, high = bounds(path)
        return [Estimate(float(v), float(lo), float(hi)) for v, lo, hi in zip(values, low, high, strict=True)]

    def unvaried(estimate: Estimate, columns: Sequence[int], bounds: Sequence[Array]) -> Estimate:
        """``estimate``, or ``bounds`` (their mean over ``columns``) where every arm it averages is unvaried."""
        picked = list(columns)
        if not still[picked].all():
            return estimate
        low, high = (float(bound[picked].mean()) for bound in bounds)
        return Estimate(estimate.value, low, high)

    def family(path: tuple[str | None, ...], node: Mapping[str, Any], levels: Sequence[Sequence[int]]) -> FamilyGrade:
        impact, score = per_level(*path, "impact"), one(*path, "score")
        skills = [unvaried(e, c, still_skill) for e, c in zip(per_level(*path, "skill"), levels, strict=True)]
        return FamilyGrade(
            mean_return=[float(v) for v in node["mean_return"]],
            skill=skills,
            impact=impact,
            score=score,
            stars=int(stars(score.value, FAMILY_STARS)),
            relative_ausc=one(*path, "relative_ausc"),
            tolerated=_tolerated([1.0 - e.value for e in impact]),
            sub_families={
                str(sub): family((*path, "subs", sub), child, [[c] for c in layout[str(path[1])][sub]])
                for sub, child in node["subs"].items()
            },
        )

    grades = {
        name: family(("families", name), node, list(zip(*layout[name].values(), strict=True)))
        for name, node in point["families"].items()
    }
    worst = min(grades, key=lambda name: grades[name].score.value)
    counts = np.bincount(np.asarray(replicates["stars"], dtype=np.int64), minlength=6)[1:6]
    return CardGrade(
        clean_return=unvaried(one("clean_return"), [0], still_return),
        clean_skill=unvaried(one("clean_skill"), [0], still_skill),
        families=grades,
        score=one("score"),
        stars=int(point["stars"]),
        stars_probability=[float(c) / reps for c in counts],
        worst_family=worst,
        relative_mean_ausc=one("relative_mean_ausc"),
    )


def _tolerated(normalized: Sequence[float]) -> int:
    """card-v1's tolerated level (:func:`rlwrappers.metrics.card.tolerated_level`); 0 where there is no impact."""
    return 0 if any(math.isnan(n) for n in normalized) else relative.tolerated_level(normalized)
