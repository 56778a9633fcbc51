"""Damped-trend forecasts of per-episode returns and seed 001's significance rule (Appendix A).

Seed 001's observational protocol aggregates each episode's return over seeds (Appendix A, Definition 1),
fits Holt's linear trend with a damped trend to that series, forecasts the next episodes with 99% prediction
intervals, and calls agent A **significantly better** than agent B when A's forecast is higher and the two
intervals never overlap.

- :func:`episode_series` aggregates a (seeds, episodes) array per episode: the mean, or the IQM.
- :func:`damped_trend_forecast` fits statsmodels' ``ETSModel`` (additive error, additive damped trend, no
  season), whose prediction intervals for this model are exact (closed form), not simulated. Fit it to the
  raw per-episode series: a rolling mean (for display) would smooth the noise away and narrow the intervals.
  Two things differ from seed 001's Appendix A.1. The damping phi is bounded to [0.8, 0.98], statsmodels'
  range and the one Hyndman and Athanasopoulos advise; the paper allows 0 < phi < 1, which
  ``damping_bounds=PAPER_DAMPING_BOUNDS`` gives. And the trend's smoothing parameter is reported as statsmodels
  gives it, ``smoothing_trend`` = alpha * beta*; the paper's beta* is ``smoothing_trend / smoothing_level``.
- :func:`significantly_better` applies the rule.

statsmodels comes with the ``causal`` extra.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.metrics.reproducibility import iqm

__all__ = [
    "AGGREGATES",
    "DAMPING_BOUNDS",
    "PAPER_DAMPING_BOUNDS",
    "Forecast",
    "damped_trend_forecast",
    "episode_series",
    "significantly_better",
]

#: How :func:`episode_series` aggregates the seeds of one episode.
AGGREGATES = ("mean", "iqm")
#: The range the damping phi is fitted in by default: statsmodels' (seed 001 allows 0 < phi < 1).
DAMPING_BOUNDS = (0.8, 0.98)
#: Seed 001's 0 < phi < 1, kept 0.0001 from its ends as statsmodels keeps its other smoothing parameters.
PAPER_DAMPING_BOUNDS = (0.0001, 0.9999)


def episode_series(returns: ArrayLike, how: str = "mean") -> NDArray[np.float64]:
    """Per episode, the mean (or IQM) over seeds of a (seeds, episodes) array of returns (Definition 1).

    Example:
        >>> episode_series([[1.0, 2.0], [3.0, 6.0]]).tolist()
        [2.0, 4.0]
    """
    if how not in AGGREGATES:
        raise InvalidArgument(f"`how` must be one of {AGGREGATES}, received {how!r}")
    array = _check.finite_array("returns", returns)
    if array.ndim != 2 or array.size == 0:
        raise InvalidArgument(f"`returns` must have shape (seeds, episodes), received {array.shape}")
    if how == "mean":
        return array.mean(axis=0)
    return np.array([iqm(column) for column in array.T])


@dataclass(frozen=True)
class Forecast:
    """A damped-trend forecast of the episodes after a series.

    Attributes:
        mean: the point forecast for each of the next ``horizon`` episodes.
        lower: the lower end of the prediction interval at each.
        upper: its upper end.
        level: the intervals' coverage (0.99 for seed 001's 99%).
        params: the fitted parameters, as statsmodels names them: ``smoothing_level`` (alpha),
            ``smoothing_trend`` (alpha * beta*, where beta* is the paper's trend smoothing in Appendix A.1's
            component form), ``damping_trend`` (phi, within the fit's ``damping_bounds``), ``initial_level``
            and ``initial_trend`` (the level and trend before the first episode).
        converged: whether the maximum-likelihood fit converged; when False the parameters are the optimizer's
            last ones (statsmodels' ConvergenceWarning is kept here instead of being printed).
    """

    mean: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    level: float
    params: dict[str, float]
    converged: bool = True


def damped_trend_forecast(
    series: ArrayLike,
    horizon: int = 100,
    level: float = 0.99,
    *,
    damping_bounds: tuple[float, float] = DAMPING_BOUNDS,
) -> Forecast:
    """Fits Holt's linear damped trend (additive errors) to ``series`` and forecasts ``horizon`` more episodes.

    The fit is statsmodels' state-space form: with ``e_t = y_t - (l_{t-1} + phi b_{t-1})``, the level is
    ``l_t = l_{t-1} + phi b_{t-1} + alpha e_t`` and the trend ``b_t = phi b_{t-1} + beta e_t``, where
    ``beta = alpha * beta*`` (``smoothing_trend``) makes it seed 001's component form (Appendix A.1). The
    forecast h episodes on is ``l_n + (phi + ... + phi^h) b_n``.

    Args:
        series: one return per episode, e.g. :func:`episode_series` of the runs; at least 10 episodes.
        horizon: episodes to forecast (seed 001: 100).
        level: the prediction intervals' coverage, in (0, 1) (seed 001: 0.99).
        damping_bounds: the range phi is fitted in, high < 1: statsmodels' [0.8, 0.98] by default;
            :data:`PAPER_DAMPING_BOUNDS`, [0.0001, 0.9999], is the paper's 0 < phi < 1 (statsmodels keeps its
            other smoothing parameters 0.0001 from their ends too; at phi = 1 its intervals are undefined).

    Returns:
        A :class:`Forecast`; the same series gives the same forecast.

    Raises:
        InvalidArgument: fewer than 10 episodes, non-finite returns, a horizon < 1, a level outside (0, 1) or
            damping bounds outside [0, 1).
    """
    y = _check.finite_array("series", series)
    if y.ndim != 1 or len(y) < 10:
        raise InvalidArgument(f"`series` must be one return per episode, at least 10, received shape {y.shape}")
    if not isinstance(horizon, (int, np.integer)) or isinstance(horizon, bool) or horizon < 1:
        raise InvalidArgument(f"`horizon` must be an int >= 1, received {horizon!r}")
    if not isinstance(level, (int, float)) or isinstance(level, bool) or not 0.0 < level < 1.0:
        raise InvalidArgument(f"`level` must lie in (0, 1), received {level!r}")
    low, high = _damping_bounds(damping_bounds)
    pd = require("pandas", purpose="forecasts")
    ets = require("statsmodels.tsa.exponential_smoothing.ets", purpose="damped-trend forecasts")
    # A pandas series: statsmodels 0.15's prediction results need an index.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", require("statsmodels.tools.sm_exceptions").ConvergenceWarning)
        model = ets.ETSModel(
            pd.Series(y), error="add", trend="add", damped_trend=True, bounds={"damping_trend": (low, high)}
        )
        fitted = model.fit(disp=False)
    frame = fitted.get_prediction(start=len(y), end=len(y) + int(horizon) - 1).summary_frame(alpha=1.0 - level)
    names = ("smoothing_level", "smoothing_trend", "damping_trend", "initial_level", "initial_trend")
    return Forecast(
        mean=frame["mean"].to_numpy(np.float64),
        lower=frame["pi_lower"].to_numpy(np.float64),
        upper=frame["pi_upper"].to_numpy(np.float64),
        level=float(level),
        params={name: float(value) for name, value in zip(names, fitted.params, strict=True)},
        converged=bool(fitted.mle_retvals.get("converged", True)),
    )


def _damping_bounds(bounds: object) -> tuple[float, float]:
    """``bounds`` as a (low, high) pair with 0 <= low <= high < 1."""
    if not isinstance(bounds, tuple) or len(bounds) != 2:
        raise InvalidArgument(f"`damping_bounds` must be a pair (low, high), received {bounds!r}")
    low, high = (_check.number(f"damping_bounds[{i}]", v) for i, v in enumerate(bounds))
    if not 0.0 <= low <= high < 1.0:
        raise InvalidArgument(f"`damping_bounds` must satisfy 0 <= low <= high < 1, received {bounds!r}")
    return low, high


def significantly_better(a: Forecast, b: Forecast) -> bool:
    """Seed 001's rule: A beats B when its forecast is higher and the intervals never overlap.

    That is, A's lower bound lies above B's upper bound at every forecast episode.
    """
    if not isinstance(a, Forecast) or not isinstance(b, Forecast):
        raise InvalidType(f"`a` and `b` must be Forecasts, received {type(a).__name__} and {type(b).__name__}")
    if a.mean.shape != b.mean.shape or a.level != b.level:
        raise InvalidArgument("`a` and `b` must forecast the same horizon at the same level")
    return bool(np.all(a.mean > b.mean) and np.all(a.lower > b.upper))
