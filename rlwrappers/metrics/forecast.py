"""Damped-trend forecasts of per-episode returns and seed 001's significance rule (Appendix A).

Seed 001's observational protocol aggregates each episode's return over seeds (Appendix A, Definition 1),
fits Holt's linear trend with a damped trend to that series, forecasts the next episodes with 99% prediction
intervals, and calls agent A **significantly better** than agent B when A's forecast is higher and the two
intervals never overlap.

- :func:`episode_series` aggregates a (seeds, episodes) array per episode: the mean, or the IQM.
- :func:`damped_trend_forecast` fits statsmodels' ``ETSModel`` (additive error, additive damped trend, no
  season), whose prediction intervals for this model are exact (closed form), not simulated. Fit it to the
  raw per-episode series: a rolling mean (for display) would smooth the noise away and narrow the intervals.
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

__all__ = ["AGGREGATES", "Forecast", "damped_trend_forecast", "episode_series", "significantly_better"]

#: How :func:`episode_series` aggregates the seeds of one episode.
AGGREGATES = ("mean", "iqm")


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
        params: the fitted smoothing parameters: ``smoothing_level`` (alpha), ``smoothing_trend`` (beta),
            ``damping_trend`` (phi), ``initial_level`` and ``initial_trend``.
        converged: whether the maximum-likelihood fit converged; when False the parameters are the optimizer's
            last ones (statsmodels' ConvergenceWarning is kept here instead of being printed).
    """

    mean: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    level: float
    params: dict[str, float]
    converged: bool = True


def damped_trend_forecast(series: ArrayLike, horizon: int = 100, level: float = 0.99) -> Forecast:
    """Fits Holt's linear damped trend (additive errors) to ``series`` and forecasts ``horizon`` more episodes.

    Args:
        series: one return per episode, e.g. :func:`episode_series` of the runs; at least 10 episodes.
        horizon: episodes to forecast (seed 001: 100).
        level: the prediction intervals' coverage, in (0, 1) (seed 001: 0.99).

    Returns:
        A :class:`Forecast`; the same series gives the same forecast.

    Raises:
        InvalidArgument: fewer than 10 episodes, non-finite returns, a horizon < 1 or a level outside (0, 1).
    """
    y = _check.finite_array("series", series)
    if y.ndim != 1 or len(y) < 10:
        raise InvalidArgument(f"`series` must be one return per episode, at least 10, received shape {y.shape}")
    if not isinstance(horizon, (int, np.integer)) or isinstance(horizon, bool) or horizon < 1:
        raise InvalidArgument(f"`horizon` must be an int >= 1, received {horizon!r}")
    if not isinstance(level, (int, float)) or isinstance(level, bool) or not 0.0 < level < 1.0:
        raise InvalidArgument(f"`level` must lie in (0, 1), received {level!r}")
    pd = require("pandas", purpose="forecasts")
    ets = require("statsmodels.tsa.exponential_smoothing.ets", purpose="damped-trend forecasts")
    # A pandas series: statsmodels 0.15's prediction results need an index.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", require("statsmodels.tools.sm_exceptions").ConvergenceWarning)
        fitted = ets.ETSModel(pd.Series(y), error="add", trend="add", damped_trend=True).fit(disp=False)
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


def significantly_better(a: Forecast, b: Forecast) -> bool:
    """Seed 001's rule: A beats B when its forecast is higher and the intervals never overlap.

    That is, A's lower bound lies above B's upper bound at every forecast episode.
    """
    if not isinstance(a, Forecast) or not isinstance(b, Forecast):
        raise InvalidType(f"`a` and `b` must be Forecasts, received {type(a).__name__} and {type(b).__name__}")
    if a.mean.shape != b.mean.shape or a.level != b.level:
        raise InvalidArgument("`a` and `b` must forecast the same horizon at the same level")
    return bool(np.all(a.mean > b.mean) and np.all(a.lower > b.upper))
