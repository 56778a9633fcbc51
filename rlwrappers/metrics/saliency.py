"""Scores of saliency maps: their similarities, the area of insertion curves, and the parameter search's scores.

From *Benchmarking Perturbation-based Saliency Maps for Explaining Atari Agents* (Huber, Limmer and André 2022),
Sections 3.3-3.4. Pure functions over saliency maps (arrays of shape (H, W)) and the tables built from them;
the parts that run an agent (cascading randomization, the insertion metric, state selection) are in
:mod:`rlwrappers.explain`.

- **Similarities** of two maps (Section 3.3.1): :func:`spearman` (rank correlation), :func:`ssim` (structural
  similarity with a 7 x 7 window on the 2-D maps, both min-max normalized, ``data_range=1``) and
  :func:`hog_pearson` (Pearson correlation of scikit-image HOG descriptors with 3 x 3 pixels per cell).
  With ``sign_invariant=True`` (the default, after Sixt et al. 2020) each is the maximum over ``b`` and ``-b``.
  ``flatten_ssim=True`` runs SSIM on the flattened maps, as the paper's reference code did.
  A constant map has no ranks, no contrast and no gradients: every similarity involving one is NaN.
  :func:`calibration` gives their means over pairs of random maps (uniform and Gaussian), which should be low;
  :func:`sanity_check_summary` averages a sanity check's similarities per randomized layer.
- **Insertion** (Petsiuk et al. 2018): :func:`auc`, the area under an insertion curve by the trapezoid rule
  with the uncovered fraction on the x axis, from 0 to 1.
- **Parameter search** (Section 3.4.1): :func:`standardized_scores` (mean AUC over both substrates,
  standardized across parameter sets, summed over the two measures) and :func:`select` (the best set whose
  time per map fits a budget).

Every draw comes from a generator seeded by the call's ``seed``; numpy's global generator is never touched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "HOG_PIXELS_PER_CELL",
    "INSERTION_COLUMNS",
    "MIN_SIDE",
    "SIMILARITIES",
    "SSIM_WINDOW",
    "auc",
    "calibration",
    "check_map",
    "hog_pearson",
    "min_max",
    "sanity_check_summary",
    "select",
    "similarities",
    "spearman",
    "ssim",
    "standardized_scores",
]

#: The similarity measures of the sanity checks, in the paper's order (the columns of a sanity check's table).
SIMILARITIES: Final = ("spearman", "ssim", "hog_pearson")
#: The SSIM window side (Section 3.3.1).
SSIM_WINDOW: Final = 7
#: The HOG cell size (Section 3.3.1); the other HOG settings are scikit-image's defaults.
HOG_PIXELS_PER_CELL: Final = (3, 3)
#: The insertion metric's four AUCs per state: one per measure (q, advantage) and substrate (black, random).
INSERTION_COLUMNS: Final = ("q_black", "q_random", "advantage_black", "advantage_random")
#: The smallest map side SSIM (7 x 7 window) and HOG (3 x 3 blocks of 3 x 3-pixel cells) take.
MIN_SIDE: Final = 9


# -- similarities ----------------------------------------------------------------------------------------
def check_map(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """``x`` as a finite 2-D float64 map, or raises naming ``name``."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise InvalidArgument(f"`{name}` must be a saliency map of shape (H, W), received shape {a.shape}")
    if not np.isfinite(a).all():
        raise InvalidArgument(f"`{name}` must hold finite values, received {int((~np.isfinite(a)).sum())} non-finite")
    return a


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x, y = check_map(a, "a"), check_map(b, "b")
    if x.shape != y.shape:
        raise InvalidArgument(f"`a` and `b` must have the same shape, received {x.shape} and {y.shape}")
    if min(x.shape) < MIN_SIDE:
        raise InvalidArgument(f"saliency maps must be at least {MIN_SIDE} x {MIN_SIDE}, received {x.shape}")
    return x, y


def _constant(x: NDArray[np.float64]) -> bool:
    return bool(x.max() == x.min())


def min_max(saliency: ArrayLike) -> NDArray[np.float64]:
    """The map scaled to [0, 1]: ``(x - min) / (max - min)``; a constant map has no scale and gives NaN.

    Example:
        >>> min_max([[1.0, 3.0], [2.0, 5.0]]).tolist()
        [[0.0, 0.5], [0.25, 1.0]]
    """
    x = np.asarray(saliency, dtype=np.float64)
    low, high = float(x.min()), float(x.max())
    if high == low:
        return np.full(x.shape, np.nan)
    return (x - low) / (high - low)


def _sign_max(
    measure: Callable[[NDArray[np.float64], NDArray[np.float64]], float],
    a: ArrayLike,
    b: ArrayLike,
    sign_invariant: bool,
) -> float:
    x, y = _pair(a, b)
    if _constant(x) or _constant(y):
        return math.nan
    value = measure(x, y)
    if not sign_invariant:
        return value
    flipped = measure(x, -y)
    return math.nan if math.isnan(value) or math.isnan(flipped) else max(value, flipped)


def _spearman(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    stats = require("scipy.stats", purpose="Spearman rank correlation")
    return float(stats.spearmanr(x.ravel(), y.ravel()).statistic)


def spearman(a: ArrayLike, b: ArrayLike, *, sign_invariant: bool = True) -> float:
    """Spearman rank correlation of two maps' pixels; with ``sign_invariant``, ``max(rho(a, b), rho(a, -b))``.

    Since ``rho(a, -b) = -rho(a, b)``, the sign-invariant value is ``|rho(a, b)|``. NaN if a map is constant.

    Example:
        >>> import numpy as np
        >>> a = np.arange(100.0).reshape(10, 10)
        >>> [round(v, 12) for v in (spearman(a, a), spearman(a, -a), spearman(a, -a, sign_invariant=False))]
        [1.0, 1.0, -1.0]
    """
    return _sign_max(_spearman, a, b, sign_invariant)


def _ssim_of(flatten: bool) -> Callable[[NDArray[np.float64], NDArray[np.float64]], float]:
    metrics = require("skimage.metrics", purpose="SSIM")

    def measure(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
        u, v = min_max(x), min_max(y)
        if flatten:
            u, v = u.ravel(), v.ravel()
        return float(metrics.structural_similarity(u, v, win_size=SSIM_WINDOW, data_range=1.0))

    return measure


def ssim(a: ArrayLike, b: ArrayLike, *, sign_invariant: bool = True, flatten: bool = False) -> float:
    """Structural similarity of two min-max normalized maps: a 7 x 7 window over the 2-D maps, ``data_range=1``.

    Each map is scaled to [0, 1] by :func:`min_max` first, so flipping the sign of ``b`` gives ``1 - b``
    after scaling: the paper's multiplication by -1 and the reference code's ``1 - map`` agree here. The
    other settings are scikit-image's defaults (uniform window, sample covariance, K1 = 0.01, K2 = 0.03).
    ``flatten=True`` runs the window along the flattened maps instead, as the paper's reference code did.
    NaN if a map is constant.

    Example:
        >>> import numpy as np
        >>> a = np.random.default_rng(0).random((12, 12))
        >>> round(ssim(a, a), 6), round(ssim(a, 1 - a), 6), ssim(a, 1 - a, sign_invariant=False) < 0
        (1.0, 1.0, True)
    """
    return _sign_max(_ssim_of(flatten), a, b, sign_invariant)


def _hog(x: NDArray[np.float64]) -> NDArray[np.float64]:
    feature = require("skimage.feature", purpose="HOG descriptors")
    return np.asarray(feature.hog(min_max(x), pixels_per_cell=HOG_PIXELS_PER_CELL), dtype=np.float64)


def _hog_pearson(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    u, v = _hog(x), _hog(y)
    if u.std() == 0 or v.std() == 0:
        return math.nan
    # Sums in an order numpy fixes, not np.corrcoef's BLAS dot, whose order depends on the CPU's kernel.
    du, dv = u - u.mean(), v - v.mean()
    r = float(np.sum(du * dv)) / math.sqrt(float(np.sum(du * du)) * float(np.sum(dv * dv)))
    return min(1.0, max(-1.0, r))


def hog_pearson(a: ArrayLike, b: ArrayLike, *, sign_invariant: bool = True) -> float:
    """Pearson correlation of the HOG descriptors of two min-max normalized maps.

    ``skimage.feature.hog`` with ``pixels_per_cell=(3, 3)`` and its defaults otherwise (9 unsigned orientations,
    3 x 3 cells per block, L2-Hys). Unsigned orientations make HOG blind to a sign flip, so the sign-invariant
    maximum differs from the plain value only by rounding. NaN if a map is constant.

    Example:
        >>> import numpy as np
        >>> a = np.random.default_rng(0).random((12, 12))
        >>> round(hog_pearson(a, a), 6)
        1.0
    """
    return _sign_max(_hog_pearson, a, b, sign_invariant)


def similarities(
    a: ArrayLike, b: ArrayLike, *, sign_invariant: bool = True, flatten_ssim: bool = False
) -> dict[str, float]:
    """The three similarities of the sanity checks: ``{"spearman": ..., "ssim": ..., "hog_pearson": ...}``.

    ``flatten_ssim`` is :func:`ssim`'s ``flatten``: False compares the 2-D maps, True the flattened maps, as the
    paper's reference code did.

    Example:
        >>> import numpy as np
        >>> a = np.random.default_rng(0).random((12, 12))
        >>> {k: round(v, 6) for k, v in similarities(a, a).items()}
        {'spearman': 1.0, 'ssim': 1.0, 'hog_pearson': 1.0}
    """
    return {
        "spearman": spearman(a, b, sign_invariant=sign_invariant),
        "ssim": ssim(a, b, sign_invariant=sign_invariant, flatten=flatten_ssim),
        "hog_pearson": hog_pearson(a, b, sign_invariant=sign_invariant),
    }


def calibration(
    shape: tuple[int, int] = (84, 84),
    pairs: int = 100,
    seed: int = 0,
    *,
    sign_invariant: bool = True,
    flatten_ssim: bool = False,
) -> pd.DataFrame:
    """Mean similarities of pairs of random maps (Adebayo et al. 2018): low values mean the measures discriminate.

    ``pairs`` pairs of independent uniform U[0, 1) maps and ``pairs`` pairs of standard Gaussian maps, drawn
    from ``np.random.default_rng(seed)`` (uniform pairs first). The paper reports (0.0087, 0.0136, 0.0096) for
    uniform and (0.0093, 0.0374, 0.0087) for Gaussian maps of 84 x 84. ``flatten_ssim`` as for
    :func:`similarities`.

    Returns:
        A DataFrame indexed by distribution ("uniform", "gaussian") with the :data:`SIMILARITIES` as columns.

    Example:
        >>> table = calibration((20, 20), pairs=5)
        >>> list(table.index), list(table.columns), bool((table.abs() < 0.3).all().all())
        (['uniform', 'gaussian'], ['spearman', 'ssim', 'hog_pearson'], True)
    """
    pd = require("pandas", purpose="calibration tables")
    if not (isinstance(shape, tuple) and len(shape) == 2):
        raise InvalidArgument(f"`shape` must be a pair (H, W), received {shape!r}")
    for i, side in enumerate(shape):
        _check.integer(f"shape[{i}]", side, minimum=MIN_SIDE)
    pairs = _check.integer("pairs", pairs, minimum=1)
    rng = np.random.default_rng(_check.integer("seed", seed, minimum=0))
    draws: dict[str, Callable[[], NDArray[np.float64]]] = {
        "uniform": lambda: rng.random(shape),
        "gaussian": lambda: rng.standard_normal(shape),
    }
    rows = {}
    for name, draw in draws.items():
        values = [
            similarities(draw(), draw(), sign_invariant=sign_invariant, flatten_ssim=flatten_ssim) for _ in range(pairs)
        ]
        rows[name] = {k: float(np.mean([v[k] for v in values])) for k in SIMILARITIES}
    return pd.DataFrame.from_dict(rows, orient="index")[list(SIMILARITIES)]


def sanity_check_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard error of each similarity per randomized layer, in cascade order (Figures 5-6).

    NaN similarities (constant maps) are left out of the means; ``count`` says how many values remain.

    Returns:
        A DataFrame indexed by (level, layer) with columns ``<similarity>`` (the mean), ``<similarity>_sem`` and
        ``<similarity>_count`` for each of the :data:`SIMILARITIES`.
    """
    missing = [c for c in ("level", "layer", *SIMILARITIES) if c not in table.columns]
    if missing:
        raise InvalidArgument(f"`table` must be a sanity_check table, it lacks the columns {missing}")
    grouped = table.groupby(["level", "layer"], sort=True)[list(SIMILARITIES)]
    means, sems, counts = grouped.mean(), grouped.sem(), grouped.count()
    out = means.copy()
    for name in SIMILARITIES:
        out[f"{name}_sem"] = sems[name]
        out[f"{name}_count"] = counts[name]
    return out


# -- insertion ---------------------------------------------------------------------------------------------
def auc(values: ArrayLike, fractions: ArrayLike | None = None) -> float:
    """Area under an insertion curve by the trapezoid rule, x being the uncovered fraction from 0 to 1.

    ``sum_k (x_{k+1} - x_k) (y_k + y_{k+1}) / 2``; ``fractions`` default to evenly spaced points from 0 to 1, where
    the area is ``(sum_k y_k - (y_0 + y_K) / 2) / K`` for K steps.

    Example:
        >>> round(auc([0.0, 0.5, 1.0, 1.0]), 12)  # (0.25 + 0.75 + 1.0) / 3
        0.666666666667
    """
    y = np.asarray(values, dtype=np.float64).ravel()
    if len(y) < 2:
        raise InvalidArgument(f"`values` must hold at least two points, received {len(y)}")
    x = np.linspace(0.0, 1.0, len(y)) if fractions is None else np.asarray(fractions, dtype=np.float64).ravel()
    if x.shape != y.shape or np.any(np.diff(x) < 0):
        raise InvalidArgument(f"`fractions` must be {len(y)} non-decreasing values, received {x.tolist()!r}")
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


# -- parameter search ------------------------------------------------------------------------------------
def _standardize(x: pd.Series) -> pd.Series:
    """``(x - mean) / std`` with the population std (N, as footnote 4); all 0 when the std is 0."""
    std = float(x.std(ddof=0))
    if not np.isfinite(std) or std == 0:
        return x * 0.0
    return (x - x.mean()) / std


def standardized_scores(auc_table: pd.DataFrame, by: str | Sequence[str] = "params") -> pd.DataFrame:
    """Section 3.4.1: one score per parameter set from its insertion AUCs.

    For each parameter set (rows grouped by ``by``, columns or index levels), ``q`` is the mean AUC of
    ``q_black`` and ``q_random`` over its states and ``advantage`` the same for the advantage columns (NaN AUCs
    are skipped). Across parameter sets each is standardized, ``z = (x - mean) / std`` (footnote 5, population
    std; 0 when every set has the same value), and ``score = z_q + z_advantage``. A ``seconds`` column (time
    per map) is averaged alongside.

    Returns:
        A DataFrame indexed by parameter set with ``q``, ``advantage``, ``z_q``, ``z_advantage``, ``score``
        (and ``seconds``), best score first.

    Example:
        >>> import pandas as pd
        >>> t = pd.DataFrame({"params": ["a", "a", "b", "b"], "q_black": [1.0, 1.0, 0.0, 0.0],
        ...                   "q_random": [1.0, 1.0, 0.0, 0.0], "advantage_black": [0.0, 0.0, 2.0, 2.0],
        ...                   "advantage_random": [0.0, 0.0, 2.0, 2.0]})
        >>> standardized_scores(t)["score"].tolist()
        [0.0, 0.0]
    """
    pd = require("pandas", purpose="parameter search")
    if not isinstance(auc_table, pd.DataFrame):
        raise InvalidType(f"`auc_table` must be a pandas DataFrame, received {type(auc_table).__name__}")
    missing = [c for c in INSERTION_COLUMNS if c not in auc_table.columns]
    if missing:
        raise InvalidArgument(f"`auc_table` lacks the AUC columns {missing}")
    keys = [by] if isinstance(by, str) else list(by)
    grouped = auc_table.groupby(keys, sort=False)
    means = grouped[list(INSERTION_COLUMNS)].mean()
    out = pd.DataFrame(index=means.index)
    out["q"] = (means["q_black"] + means["q_random"]) / 2.0
    out["advantage"] = (means["advantage_black"] + means["advantage_random"]) / 2.0
    out["z_q"] = _standardize(out["q"])
    out["z_advantage"] = _standardize(out["advantage"])
    out["score"] = out["z_q"] + out["z_advantage"]
    if "seconds" in auc_table.columns:
        out["seconds"] = grouped["seconds"].mean()
    return out.sort_values("score", ascending=False, kind="stable")


def select(table: pd.DataFrame, time_budget: float, *, time: str = "seconds") -> pd.Series:
    """The best-scoring parameter set whose time per map is within ``time_budget`` (the paper's 3 seconds).

    Args:
        table: a :func:`standardized_scores` table with a time column.
        time_budget: the most seconds one map may take.
        time: the column holding the time per map.

    Returns:
        The chosen row; its ``name`` is the parameter set.
    """
    budget = _check.nonnegative("time_budget", time_budget)
    for column in ("score", time):
        if column not in table.columns:
            raise InvalidArgument(f"`table` must have a {column!r} column, it has {list(table.columns)}")
    fits = table[table[time] <= budget]
    if fits.empty:
        raise InvalidArgument(
            f"no parameter set takes <= {budget} s per map; the fastest takes {float(table[time].min())} s"
        )
    return fits.sort_values("score", ascending=False, kind="stable").iloc[0]
