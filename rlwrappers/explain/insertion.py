"""The insertion metric of saliency maps (Petsiuk et al. 2018; seed 003, Section 3.3.2).

:func:`insertion_curve` starts from a fully perturbed observation (black, or uniform noise) and uncovers
``step`` pixels at a time in decreasing saliency; ``measure="q"`` is ``q(I_k, a) / q(I, a)`` and
``measure="advantage"`` is ``q(I_k, a) - mean_a' q(I_k, a')`` (eq. 7). Its area is
:func:`rlwrappers.metrics.saliency.auc`. :func:`insertion` gives the paper's four variants for one state and
:func:`insertion_table` for many. The network is an :class:`rlwrappers.agents.Agent` or a scoring callable
``score(batch) -> (N, A)`` (one row of action scores, q-values or logits, per observation of the batch).
Every draw comes from a generator seeded by the call's ``seed``. The metric uncovers the pixels of one image or
the features of one vector: an Agent whose observation space is a Dict or Tuple space raises
:class:`~rlwrappers.error.IncompatibleSpace` when it is given (:func:`rlwrappers.explain.maps.check_observations`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.agents import Agent
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType
from rlwrappers.explain.maps import action_scores, check_observations
from rlwrappers.metrics.saliency import INSERTION_COLUMNS, auc, check_map

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BATCH",
    "MEASURES",
    "STEP",
    "SUBSTRATES",
    "InsertionCurve",
    "insertion",
    "insertion_curve",
    "insertion_order",
    "insertion_table",
    "scorer",
]

#: The insertion substrates: black (0) and uniform noise.
SUBSTRATES: Final = ("black", "random")
#: What the insertion metric measures: the normalized q-value or the advantage (eq. 7).
MEASURES: Final = ("q", "advantage")
#: Pixels uncovered per insertion step in the paper (about 1.2 % of an 84 x 84 frame).
STEP: Final = 84
#: Observations scored per forward pass by default.
BATCH: Final = 128

Score = Callable[[NDArray[Any]], ArrayLike]


def scorer(agent: Agent) -> Callable[[NDArray[Any]], NDArray[np.float64]]:
    """``score(batch) -> (N, A)``: the agent's action scores (q-values, or logits) for a batch, without gradients.

    Example:
        >>> import gymnasium as gym, numpy as np, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> net = torch.nn.Linear(3, 2)
        >>> score = scorer(TorchAgent(net, gym.spaces.Box(0.0, 1.0, (3,)), gym.spaces.Discrete(2), head="q_values"))
        >>> score(np.zeros((5, 3), np.float32)).shape
        (5, 2)
    """
    if not isinstance(agent, Agent):
        raise InvalidType(f"`agent` must be an rlwrappers Agent, received {type(agent).__name__}")
    check_observations(agent)

    def score(batch: NDArray[Any]) -> NDArray[np.float64]:
        return action_scores(agent, batch)

    return score


def _scoring(score: Score | Agent) -> Score:
    if isinstance(score, Agent):
        return scorer(score)
    if not callable(score):
        raise InvalidType(f"`score` must be an Agent or a callable score(batch) -> (N, A), received {score!r}")
    return score


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Independent generators for the pixel order and the random substrate, from one seed."""
    order, substrate = np.random.SeedSequence(_check.integer("seed", seed, minimum=0)).spawn(2)
    return np.random.default_rng(order), np.random.default_rng(substrate)


def _order(s: NDArray[np.float64], segments: ArrayLike | None, rng: np.random.Generator) -> NDArray[np.int64]:
    flat = s.ravel()
    if segments is None:
        return np.argsort(-flat, kind="stable").astype(np.int64)
    seg = np.asarray(segments)
    if seg.shape != s.shape or not np.issubdtype(seg.dtype, np.integer):
        raise InvalidArgument(
            f"`segments` must be integer labels of the map's shape {s.shape}, received {seg.dtype} {seg.shape}"
        )
    _, inverse = np.unique(seg.ravel(), return_inverse=True)
    relevance = np.bincount(inverse, weights=flat) / np.bincount(inverse)
    parts = [rng.permutation(np.flatnonzero(inverse == label)) for label in np.argsort(-relevance, kind="stable")]
    return np.concatenate(parts).astype(np.int64)


def insertion_order(saliency: ArrayLike, segments: ArrayLike | None = None, seed: int = 0) -> NDArray[np.int64]:
    """The flat pixel indices of the map in the order the insertion metric uncovers them.

    Without ``segments``: decreasing saliency, ties in raster order. With ``segments`` (integer superpixel
    labels of the map's shape, as LIME uses): superpixels by decreasing mean saliency (ties by label), and the
    pixels within each superpixel in a random order drawn from ``seed``.

    Example:
        >>> insertion_order([[0.1, 0.9], [0.5, 0.5]]).tolist()
        [1, 2, 3, 0]
    """
    s = check_map(saliency, "saliency")
    return _order(s, segments, _streams(seed)[0])


@dataclass(frozen=True)
class InsertionCurve:
    """One insertion curve.

    Attributes:
        fractions: the uncovered fraction of the pixels at each point, 0 (fully perturbed) to 1 (the state).
        values: the measure at each point.
        scores: the raw action scores at each point, shape (points, actions).
        action: the action measured.
        substrate: "black" or "random".
        measure: "q" or "advantage".
    """

    fractions: NDArray[np.float64]
    values: NDArray[np.float64]
    scores: NDArray[np.float64]
    action: int
    substrate: str
    measure: str

    @property
    def auc(self) -> float:
        """The area under the curve, :func:`auc`."""
        return auc(self.values, self.fractions)


def _layout(obs: NDArray[Any], shape: tuple[int, ...], layout: str | None) -> str:
    """Where the map's (H, W) axes lie in the observation: "hw", "chw" or "hwc"."""
    fits = {
        "hw": obs.shape == shape,
        "chw": obs.ndim == 3 and obs.shape[1:] == shape,
        "hwc": obs.ndim == 3 and obs.shape[:2] == shape,
    }
    if layout is not None:
        _check.choice("layout", layout, tuple(fits))
        if not fits[layout]:
            raise IncompatibleSpace(f"an observation of shape {obs.shape} has no {layout!r} layout for a {shape} map")
        return layout
    matching = [name for name, ok in fits.items() if ok]
    if not matching:
        raise IncompatibleSpace(
            f"the saliency map's shape {shape} is not the (H, W) of the observation's shape {obs.shape}"
        )
    if len(matching) > 1:
        raise InvalidArgument(f"observation {obs.shape} and map {shape} fit layouts {matching}: pass `layout=`")
    return matching[0]


def _substrate(
    obs: NDArray[Any], kind: str, bounds: tuple[float, float] | None, rng: np.random.Generator
) -> NDArray[Any]:
    """The fully perturbed observation: zeros, or uniform noise in ``bounds`` of the observation's dtype."""
    if kind == "black":
        return np.zeros_like(obs)
    if bounds is None:
        if obs.dtype == np.uint8:
            bounds = (0, 255)
        elif np.issubdtype(obs.dtype, np.floating):
            bounds = (0.0, 1.0)
        else:
            raise InvalidArgument(f"`bounds` is required for a random substrate of dtype {obs.dtype}")
    low, high = bounds
    if not low < high:
        raise InvalidArgument(f"`bounds` must be (low, high) with low < high, received {bounds!r}")
    if np.issubdtype(obs.dtype, np.integer):
        return rng.integers(int(low), int(high), size=obs.shape, endpoint=True).astype(obs.dtype)
    return rng.uniform(low, high, size=obs.shape).astype(obs.dtype)


def _insertion_scores(
    score: Score,
    obs: NDArray[Any],
    saliency: ArrayLike,
    substrates: Iterable[str],
    *,
    step: int,
    segments: ArrayLike | None,
    seed: int,
    bounds: tuple[float, float] | None,
    batch_size: int,
    layout: str | None,
) -> tuple[NDArray[np.float64], dict[str, NDArray[np.float64]]]:
    """The uncovered fractions and, per substrate, the scores of every insertion step, (K + 1, A)."""
    s = np.asarray(saliency, dtype=np.float64)
    if s.ndim == 1:  # a vector observation's feature relevances: one "pixel" per feature
        if not np.isfinite(s).all():
            raise InvalidArgument("`saliency` must hold finite values")
    else:
        s = check_map(s, "saliency")
    where = _layout(obs, s.shape, layout)
    step = _check.integer("step", step, minimum=1)
    batch_size = _check.integer("batch_size", batch_size, minimum=1)
    order_rng, substrate_rng = _streams(seed)
    n = s.size
    rank = np.empty(n, np.int64)
    rank[_order(s, segments, order_rng)] = np.arange(n)
    rank_map = rank.reshape(s.shape)
    counts = np.minimum(np.arange(-(-n // step) + 1) * step, n)
    out = {}
    for kind in substrates:
        base = _substrate(obs, kind, bounds, substrate_rng)
        chunks = []
        for start in range(0, len(counts), batch_size):
            shown = rank_map[None] < counts[start : start + batch_size].reshape(-1, *([1] * s.ndim))  # (b, *map)
            shown = {"hw": shown, "chw": shown[:, None], "hwc": shown[..., None]}[where]
            batch = np.where(shown, obs[None], base[None])
            scores = np.asarray(score(batch), dtype=np.float64)
            if scores.ndim != 2 or scores.shape[0] != len(batch):
                raise InvalidArgument(
                    f"`score` must return one row of action scores per observation, shape ({len(batch)}, A),"
                    f" received {scores.shape}"
                )
            chunks.append(scores)
        out[kind] = np.concatenate(chunks)
    return counts / n, out


def _measure(scores: NDArray[np.float64], action: int, measure: str) -> NDArray[np.float64]:
    """The measured values of one curve: ``q / t`` (``t`` the state's own score, NaN if 0) or the advantage."""
    q = scores[:, action]
    if measure == "advantage":
        return q - scores.mean(axis=1)
    t = q[-1]
    return np.full(q.shape, np.nan) if t == 0 else q / t


def _action(scores: NDArray[np.float64], action: int | None) -> int:
    if action is None:
        return int(np.argmax(scores[-1]))
    a = _check.integer("action", action, minimum=0)
    if a >= scores.shape[1]:
        raise InvalidArgument(f"`action` must be < {scores.shape[1]} (the number of scores), received {a}")
    return a


def insertion_curve(
    score: Score | Agent,
    obs: ArrayLike,
    saliency: ArrayLike,
    *,
    action: int | None = None,
    substrate: str = "black",
    measure: str = "q",
    step: int = STEP,
    segments: ArrayLike | None = None,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
    batch_size: int = BATCH,
    layout: str | None = None,
) -> InsertionCurve:
    """The insertion curve of one saliency map (Section 3.3.2).

    The curve starts from the fully perturbed observation I_0 and uncovers ``step`` pixels per step in
    :func:`insertion_order`, every channel of a pixel at once (the stacked frames), until the observation
    I_K = I itself: K = ceil(H W / step) steps and K + 1 points. All points are scored in batches of
    ``batch_size`` observations.

    Substrates: ``"black"`` is 0 (not the observation's minimum, as in Quantus); ``"random"`` is uniform noise
    drawn once per curve, per pixel and channel: U{0, ..., 255} for uint8 observations (the paper's U[0, 1] on
    inputs scaled to [0, 1]), U[0, 1) for float observations, or U over ``bounds`` when given.

    Measures, with ``a`` the action and ``t = q(I, a)`` the state's own score: ``"q"`` is ``q(I_k, a) / t``
    (every curve ends at 1; all NaN when t = 0; a negative t flips the curve), ``"advantage"`` is
    ``q(I_k, a) - mean_a' q(I_k, a')``, unnormalized (eq. 7).

    Args:
        score: ``score(batch) -> (N, A)`` action scores for a batch of observations (given in ``obs``'s dtype),
            or an :class:`Agent`, scored by :func:`scorer`.
        obs: one observation: (H, W), channel-first (C, H, W) or channel-last (H, W, C); or a vector (n,).
        saliency: its map, shape (H, W), or (n,) for a vector (one feature per "pixel": pass ``step=1``);
            larger means more relevant.
        action: the action the map explains (default: the highest-scoring action on ``obs``).
        substrate: "black" or "random".
        measure: "q" or "advantage".
        step: pixels uncovered per step (the paper's 84).
        segments: superpixel labels of shape (H, W) for maps that are constant per superpixel (LIME).
        seed: seeds the pixel order within superpixels and the random substrate (separate streams).
        bounds: (low, high) of the random substrate.
        batch_size: observations per call of ``score``.
        layout: "hw", "chw" or "hwc", when the shapes alone cannot tell.
    """
    _check.choice("substrate", substrate, SUBSTRATES)
    _check.choice("measure", measure, MEASURES)
    x = np.asarray(obs)
    fractions, scores = _insertion_scores(
        _scoring(score),
        x,
        saliency,
        [substrate],
        step=step,
        segments=segments,
        seed=seed,
        bounds=bounds,
        batch_size=batch_size,
        layout=layout,
    )
    a = _action(scores[substrate], action)
    values = _measure(scores[substrate], a, measure)
    return InsertionCurve(fractions, values, scores[substrate], a, substrate, measure)


def insertion(
    score: Score | Agent,
    obs: ArrayLike,
    saliency: ArrayLike,
    *,
    action: int | None = None,
    step: int = STEP,
    segments: ArrayLike | None = None,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
    batch_size: int = BATCH,
    layout: str | None = None,
) -> dict[str, float]:
    """The paper's four insertion AUCs of one map (Section 3.3.2.3): {q, advantage} x {black, random}.

    Arguments as :func:`insertion_curve`; both measures share each substrate's forward passes.

    Returns:
        ``{"action": a, "q_black": ..., "q_random": ..., "advantage_black": ..., "advantage_random": ...}``.
    """
    x = np.asarray(obs)
    fractions, scores = _insertion_scores(
        _scoring(score),
        x,
        saliency,
        SUBSTRATES,
        step=step,
        segments=segments,
        seed=seed,
        bounds=bounds,
        batch_size=batch_size,
        layout=layout,
    )
    a = _action(scores["black"], action)
    out: dict[str, float] = {"action": a}
    for column in INSERTION_COLUMNS:
        measure, _, substrate = column.partition("_")
        out[column] = auc(_measure(scores[substrate], a, measure), fractions)
    return out


def insertion_table(
    score: Score | Agent,
    states: ArrayLike,
    maps: ArrayLike,
    *,
    actions: ArrayLike | None = None,
    step: int = STEP,
    segments: Sequence[ArrayLike] | None = None,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
    batch_size: int = BATCH,
    layout: str | None = None,
) -> pd.DataFrame:
    """:func:`insertion` for many states: one row per state, ``state`` (its index), ``action`` and the four AUCs.

    State i uses ``seed + i``, ``actions[i]`` (default: each state's highest-scoring action) and
    ``segments[i]`` when given.
    """
    pd = require("pandas", purpose="insertion tables")
    xs, ms = np.asarray(states), np.asarray(maps)
    if len(xs) != len(ms):
        raise InvalidArgument(f"`states` and `maps` must have one entry each, received {len(xs)} and {len(ms)}")
    acts = None if actions is None else np.asarray(actions).ravel()
    for name, given in (("actions", acts), ("segments", segments)):
        if given is not None and len(given) != len(xs):
            raise InvalidArgument(f"`{name}` must have one entry per state ({len(xs)}), received {len(given)}")
    fn = _scoring(score)
    rows = []
    for i, (x, m) in enumerate(zip(xs, ms, strict=True)):
        row = insertion(
            fn,
            x,
            m,
            action=None if acts is None else int(acts[i]),
            step=step,
            segments=None if segments is None else segments[i],
            seed=seed + i,
            bounds=bounds,
            batch_size=batch_size,
            layout=layout,
        )
        rows.append({"state": i, **row})
    return pd.DataFrame(rows, columns=["state", "action", *INSERTION_COLUMNS])
