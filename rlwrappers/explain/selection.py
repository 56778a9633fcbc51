"""Choosing the states to explain (seed 003, Section 3.4.2): HIGHLIGHTS' importance, HIGHLIGHTS-DIV, random subsets."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument

__all__ = ["diversity_threshold", "highlights_div", "importance", "random_subsets"]


def importance(q_values: ArrayLike) -> NDArray[np.float64]:
    """HIGHLIGHTS' state importance (Amir and Amir 2018): ``max_a q(s, a) - min_a q(s, a)`` per state.

    Example:
        >>> importance([[1.0, 3.0, 2.0], [0.5, 0.5, 0.6]]).round(2).tolist()
        [2.0, 0.1]
    """
    q = np.asarray(q_values, dtype=np.float64)
    if q.ndim != 2 or q.shape[1] < 2:
        raise InvalidArgument(f"`q_values` must have shape (states, actions >= 2), received {q.shape}")
    return q.max(axis=1) - q.min(axis=1)


def _features(features: ArrayLike, n: int | None = None) -> NDArray[np.float64]:
    f = np.asarray(features, dtype=np.float64)
    if f.ndim < 2 or len(f) < 2:
        raise InvalidArgument(f"`features` must hold at least two states, one row each, received shape {f.shape}")
    if n is not None and len(f) != n:
        raise InvalidArgument(f"`features` must have one row per state ({n}), received {len(f)}")
    return f.reshape(len(f), -1)


def _distances(f: NDArray[np.float64]) -> NDArray[np.float64]:
    distance = require("scipy.spatial.distance", purpose="HIGHLIGHTS-DIV")
    return np.asarray(distance.squareform(distance.pdist(f, "euclidean")), dtype=np.float64)


def diversity_threshold(features: ArrayLike, percentile: float) -> float:
    """Footnote 6's n-percentile of the states' pairwise Euclidean distances: n/100 of the way from min to max.

    ``features`` holds one row per state (any trailing shape, flattened).

    This is not the usual percentile of the distribution (``np.percentile``): it depends on the two extremes.

    Example:
        >>> round(diversity_threshold([[0.0], [1.0], [3.0], [10.0]], 30), 12)  # distances 1 ... 10
        3.7
    """
    p = _check.number("percentile", percentile)
    if not 0 <= p <= 100:
        raise InvalidArgument(f"`percentile` must be in [0, 100], received {percentile!r}")
    d = _distances(_features(features))
    pairs = d[np.triu_indices(len(d), 1)]
    low, high = float(pairs.min()), float(pairs.max())
    return low + p / 100.0 * (high - low)


def highlights_div(
    importance: ArrayLike, features: ArrayLike, k: int = 10, threshold: float = 30.0
) -> NDArray[np.int64]:
    """HIGHLIGHTS-DIV (Amir and Amir 2018): important states, each far enough from those already chosen.

    States are visited by decreasing importance (ties in stream order); a state joins the summary when its
    Euclidean distance to every state already in it exceeds the diversity threshold, until ``k`` are chosen.
    The threshold is :func:`diversity_threshold` at the percentile ``threshold`` (footnote 6; 30 did best in
    the paper). A high threshold may leave fewer than ``k`` states. ``features`` are what the distance compares:
    the flattened observations or the network's features (a hidden layer's activations).

    Returns:
        The indices of the chosen states, in the order they were chosen (decreasing importance).

    Example:
        >>> imp = [5.0, 4.9, 1.0, 3.0]
        >>> pts = [[0.0, 0.0], [0.1, 0.0], [10.0, 0.0], [5.0, 5.0]]  # state 1 sits next to state 0
        >>> highlights_div(imp, pts, k=3).tolist()
        [0, 3, 2]
    """
    imp = np.asarray(importance, dtype=np.float64).ravel()
    f = _features(features, len(imp))
    k = _check.integer("k", k, minimum=1)
    limit = diversity_threshold(f, threshold)
    d = _distances(f)
    chosen: list[int] = []
    for i in np.argsort(-imp, kind="stable"):
        if all(d[i, j] > limit for j in chosen):
            chosen.append(int(i))
            if len(chosen) == k:
                break
    return np.asarray(chosen, dtype=np.int64)


def random_subsets(n_states: int, k: int, count: int, seed: int = 0) -> NDArray[np.int64]:
    """``count`` random subsets of ``k`` distinct states out of ``n_states``, each sorted; shape (count, k).

    Drawn from ``np.random.default_rng(seed)``, one subset after the other.

    Example:
        >>> random_subsets(1000, 10, 3, seed=0).shape
        (3, 10)
    """
    n = _check.integer("n_states", n_states, minimum=1)
    k = _check.integer("k", k, minimum=1)
    count = _check.integer("count", count, minimum=1)
    if k > n:
        raise InvalidArgument(f"`k` must be <= {n} (the number of states), received {k}")
    rng = np.random.default_rng(_check.integer("seed", seed, minimum=0))
    return np.stack([np.sort(rng.choice(n, size=k, replace=False)) for _ in range(count)]).astype(np.int64)
