"""Policy reproducibility (Flageat et al. 2023, "Beyond Expected Return"): performance, dispersion, LCB.

Every function is pure and reduces over the **last axis**, which holds the N evaluation returns of one policy;
leading axes are kept (policies, seeds, shifts). Functions that sample take an explicit generator.

- performance P: the mean or the median of the returns;
- dispersion sigma: the MAD, ``median(|R - median(R)|)`` with scale 1 (no 1.4826 factor, as in the paper),
  the IQR ``Q3 - Q1`` (linear interpolation between order statistics, numpy's and SciPy's default), or the
  standard deviation (population, ``ddof=0``);
- ``LCB(alpha) = P - alpha * sigma`` over a range of alpha >= 0;
- behavioural MAD: the MAD of the distances between every two distinct evaluations' behaviour
  representations (descriptors, or the states of :func:`state_marginals`: visitation histograms, or each
  episode's states concatenated as in the paper's Appendix D.2), L2 by default;
- IQM with stratified bootstrap confidence intervals across seeds, as in rliable (50,000 replicates);
- the Pareto front of performance (higher is better) against dispersion (lower is better).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PERFORMANCE",
    "DISPERSION",
    "STATE_FORMS",
    "BOOTSTRAP_REPS",
    "performance",
    "dispersion",
    "mad",
    "iqr",
    "lcb",
    "behavioural_mad",
    "state_marginals",
    "iqm",
    "stratified_bootstrap_ci",
    "pareto_front",
    "reproducibility_table",
]

PERFORMANCE: Final = ("mean", "median")
DISPERSION: Final = ("mad", "iqr", "std")
#: The forms of :func:`state_marginals`: visitation histograms, or the states concatenated (seed 002, App. D.2).
STATE_FORMS: Final = ("histogram", "concatenated")
#: rliable's number of bootstrap replicates, the default of :func:`stratified_bootstrap_ci`.
BOOTSTRAP_REPS: Final = 50_000


def _returns(returns: ArrayLike, name: str = "returns") -> NDArray[np.float64]:
    array = np.asarray(returns, dtype=np.float64)
    if array.ndim == 0 or array.shape[-1] == 0:
        raise InvalidArgument(f"`{name}` needs at least one value along its last axis, received shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidArgument(f"`{name}` must be finite, received {array.size - np.isfinite(array).sum()} non-finite")
    return array


def mad(returns: ArrayLike) -> NDArray[np.float64] | float:
    """Median absolute deviation with scale 1: ``median(|R - median(R)|)``, over the last axis.

    Example:
        >>> mad([1.0, 2.0, 3.0, 4.0, 100.0])
        1.0
    """
    r = _returns(returns)
    centre = np.median(r, axis=-1, keepdims=True)
    return _scalar(np.median(np.abs(r - centre), axis=-1))


def iqr(returns: ArrayLike) -> NDArray[np.float64] | float:
    """Inter-quartile range ``Q3 - Q1`` over the last axis (linear interpolation of the quartiles).

    Example:
        >>> iqr([1.0, 2.0, 3.0, 4.0, 5.0])
        2.0
    """
    r = _returns(returns)
    q1, q3 = np.percentile(r, [25.0, 75.0], axis=-1)
    return _scalar(q3 - q1)


def performance(returns: ArrayLike, kind: str = "mean") -> NDArray[np.float64] | float:
    """P: the mean or median of the returns over the last axis."""
    _check.choice("kind", kind, PERFORMANCE)
    r = _returns(returns)
    return _scalar(np.mean(r, axis=-1) if kind == "mean" else np.median(r, axis=-1))


def dispersion(returns: ArrayLike, kind: str = "mad") -> NDArray[np.float64] | float:
    """Sigma: the MAD, IQR or standard deviation (ddof=0) of the returns over the last axis."""
    _check.choice("kind", kind, DISPERSION)
    if kind == "mad":
        return mad(returns)
    if kind == "iqr":
        return iqr(returns)
    return _scalar(np.std(_returns(returns), axis=-1))


def lcb(
    returns: ArrayLike, alpha: ArrayLike = 1.0, *, performance_kind: str = "mean", dispersion_kind: str = "mad"
) -> NDArray[np.float64] | float:
    """Lower confidence bound ``P - alpha * sigma``; an array of alphas adds a last axis.

    Example:
        >>> lcb([1.0, 2.0, 3.0, 4.0, 100.0], alpha=[0.0, 2.0])
        array([22., 20.])
    """
    alphas = np.asarray(alpha, dtype=np.float64)
    if not np.all(np.isfinite(alphas)) or np.any(alphas < 0):
        raise InvalidArgument(f"`alpha` must be finite and >= 0, received {alpha!r}")
    p = np.asarray(performance(returns, performance_kind))
    sigma = np.asarray(dispersion(returns, dispersion_kind))
    if alphas.ndim == 0:
        return _scalar(p - alphas * sigma)
    return p[..., np.newaxis] - alphas * sigma[..., np.newaxis]


def behavioural_mad(
    behaviours: ArrayLike,
    distance: Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]] | None = None,
) -> float:
    """Behavioural MAD: the MAD of the distances between every two distinct evaluations' behaviours.

    Args:
        behaviours: shape (N, d): one behaviour descriptor (or state-marginal histogram) per evaluation.
        distance: takes two (M, d) arrays and returns M distances; L2 by default.

    Example:
        >>> behavioural_mad([[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]])  # distances 5, 0, 5
        0.0
    """
    b = np.asarray(behaviours, dtype=np.float64)
    if b.ndim != 2 or b.shape[0] < 2:
        raise InvalidArgument(f"`behaviours` must have shape (N >= 2, d), received {b.shape}")
    i, j = np.triu_indices(b.shape[0], k=1)
    d = np.linalg.norm(b[i] - b[j], axis=1) if distance is None else np.asarray(distance(b[i], b[j]))
    return float(mad(d))


def state_marginals(
    episodes: Sequence[ArrayLike],
    bins: int | Sequence[int] | None = None,
    ranges: Sequence[tuple[float, float]] | None = None,
    *,
    form: str = "histogram",
) -> NDArray[np.float64]:
    """One state representation per episode, for :func:`behavioural_mad`: a histogram, or the concatenated states.

    ``form="histogram"`` (the default) gives each episode's normalized state-visitation histogram, flattened:
    shape (N, prod(bins)). ``form="concatenated"`` is seed 002's representation (Appendix D.2): each episode's
    states one after the other in one vector, every episode truncated to the shortest one's T steps: shape
    (N, T * k). The histogram is a distribution over states, and any lengths compare; the concatenation compares
    the episodes step by step.

    Args:
        episodes: N arrays of shape (T_i, k): the states (or a chosen k of their dimensions) of each episode.
        bins: bins per dimension (an int for all); histogram only.
        ranges: (low, high) per dimension, states outside falling in the edge bins; histogram only.
        form: "histogram" or "concatenated".

    Example:
        >>> state_marginals([[[0.0], [3.0], [1.0]], [[1.0], [2.0]]], form="concatenated").tolist()
        [[0.0, 3.0], [1.0, 2.0]]
    """
    _check.choice("form", form, STATE_FORMS)
    if form == "concatenated":
        if bins is not None or ranges is not None:
            raise InvalidArgument("`bins` and `ranges` are for form='histogram', received them with 'concatenated'")
        states = [_states(n, s, None) for n, s in enumerate(episodes)]
        sizes = sorted({s.shape[1] for s in states})
        if len(sizes) != 1:
            raise InvalidArgument(f"`episodes` must be at least one, all of one state size, received sizes {sizes}")
        shortest = min(len(s) for s in states)
        return np.array([s[:shortest].ravel() for s in states])
    if bins is None or ranges is None:
        raise InvalidArgument("`bins` and `ranges` are needed for form='histogram'")
    out = []
    low, high = np.array(ranges, dtype=np.float64).T
    for n, episode in enumerate(episodes):
        s = _states(n, episode, len(ranges))
        clipped = np.clip(s, low, np.nextafter(high, low))
        hist, _ = np.histogramdd(clipped, bins=bins, range=list(ranges))
        out.append(hist.ravel() / len(s))
    return np.array(out)


def _states(n: int, states: ArrayLike, k: int | None) -> NDArray[np.float64]:
    s = np.asarray(states, dtype=np.float64)
    if s.ndim != 2 or len(s) == 0 or (k is not None and s.shape[1] != k):
        shape = "(T > 0, k)" if k is None else f"(T > 0, {k}) to match `ranges`"
        raise InvalidArgument(f"`episodes[{n}]` must have shape {shape}, received {s.shape}")
    return s


def iqm(scores: ArrayLike) -> float:
    """Interquartile mean of all scores: the mean of the middle 50% (rliable's definition, trimming 25% per side).

    Example:
        >>> iqm([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0])
        4.5
    """
    s = np.sort(_returns(np.ravel(np.asarray(scores, dtype=np.float64)), "scores"))
    n = len(s)
    cut = int(np.floor(0.25 * n))
    return float(np.mean(s[cut : n - cut]))


def stratified_bootstrap_ci(
    scores: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], float],
    rng: np.random.Generator,
    *,
    reps: int = BOOTSTRAP_REPS,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap interval, resampling runs within each task (stratified).

    Args:
        scores: shape (num_runs, num_tasks), e.g. one score per seed and shift.
        statistic: maps a (num_runs, num_tasks) array to a number, e.g. :func:`iqm`.
        rng: the generator for the resampling.
        reps: bootstrap replicates; 50,000 as in rliable (about a third of a second for the IQM of 10 seeds x
            8 shifts). Say how many wherever the interval is shown.
        confidence: interval size, in (0, 1).

    Returns:
        ``(estimate, low, high)``.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = s[:, np.newaxis]
    if s.ndim != 2 or s.shape[0] < 1:
        raise InvalidArgument(f"`scores` must have shape (num_runs, num_tasks), received {s.shape}")
    _check.integer("reps", reps, minimum=1)
    if not 0.0 < _check.number("confidence", confidence) < 1.0:
        raise InvalidArgument(f"`confidence` must be in (0, 1), received {confidence!r}")
    runs, tasks = s.shape
    columns = np.arange(tasks)
    values = np.array([statistic(s[rng.integers(0, runs, size=(runs, tasks)), columns]) for _ in range(reps)])
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(statistic(s)), float(low), float(high)


def pareto_front(performances: ArrayLike, dispersions: ArrayLike) -> NDArray[np.bool_]:
    """Which points are Pareto-optimal: no other point has performance >= and dispersion <=, one strictly.

    Example:
        >>> pareto_front([10.0, 8.0, 9.0, 7.0], [5.0, 1.0, 6.0, 2.0]).tolist()
        [True, True, False, False]
    """
    p = np.asarray(performances, dtype=np.float64)
    d = np.asarray(dispersions, dtype=np.float64)
    if p.shape != d.shape or p.ndim != 1:
        raise InvalidArgument(
            f"`performances` and `dispersions` must be 1-d of one length, received {p.shape}, {d.shape}"
        )
    at_least = (p[np.newaxis, :] >= p[:, np.newaxis]) & (d[np.newaxis, :] <= d[:, np.newaxis])
    strictly = (p[np.newaxis, :] > p[:, np.newaxis]) | (d[np.newaxis, :] < d[:, np.newaxis])
    dominated = np.any(at_least & strictly, axis=1)
    return ~dominated


def _scalar(value: Any) -> Any:
    """A 0-d result as a Python float, anything else unchanged."""
    array = np.asarray(value)
    return float(array) if array.ndim == 0 else array


def reproducibility_table(runs: Mapping[str, ArrayLike], alphas: Sequence[float] = (0.5, 1.0, 2.0)) -> pd.DataFrame:
    """One row per run: episodes, mean, median, MAD, IQR, std and LCB(alpha) = mean - alpha * MAD.

    Example:
        >>> table = reproducibility_table({"clean": [10.0, 10.0, 12.0], "noisy": [2.0, 10.0, 12.0]}, alphas=[1.0])
        >>> list(table.columns)
        ['episodes', 'mean', 'median', 'MAD', 'IQR', 'std', 'LCB(1.0)']
        >>> table.loc["noisy", ["median", "MAD", "LCB(1.0)"]].tolist()
        [10.0, 2.0, 6.0]
    """
    pd = require("pandas", purpose="reproducibility tables")
    rows: dict[str, dict[str, Any]] = {}
    for name, returns in runs.items():
        r = np.asarray(returns, dtype=np.float64)
        row: dict[str, Any] = {
            "episodes": len(r),
            "mean": float(np.mean(r)),
            "median": float(np.median(r)),
            "MAD": mad(r),
            "IQR": iqr(r),
            "std": float(np.std(r)),
        }
        row.update({f"LCB({a})": v for a, v in zip(alphas, np.atleast_1d(lcb(r, list(alphas))), strict=True)})
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")
