"""Damped-trend forecasts with prediction intervals and seed 001's significance rule."""

from __future__ import annotations

import numpy as np
import pytest

from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.metrics import damped_trend_forecast, episode_series, significantly_better
from rlwrappers.metrics.forecast import PAPER_DAMPING_BOUNDS

pytest.importorskip("statsmodels")


def _series(start: float, slope: float, noise: float, seed: int, n: int = 80) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return start + slope * np.arange(n) + rng.normal(0.0, noise, n)


def test_episode_series_takes_the_mean_or_the_iqm_over_seeds() -> None:
    returns = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [100.0, 40.0]])
    np.testing.assert_array_equal(episode_series(returns), [26.5, 25.0])
    np.testing.assert_array_equal(episode_series(returns, "iqm"), [2.5, 25.0])  # the middle two of four


def test_the_forecast_follows_a_damped_trend_inside_widening_intervals() -> None:
    series = _series(200.0, -1.0, 2.0, seed=0)
    forecast = damped_trend_forecast(series, horizon=50)
    assert forecast.mean.shape == forecast.lower.shape == forecast.upper.shape == (50,)
    assert np.all(forecast.lower < forecast.mean) and np.all(forecast.mean < forecast.upper)
    assert forecast.mean[0] < series[-10:].mean() + 5  # it goes on from where the series ends
    assert np.all(np.diff(forecast.mean) <= 1e-9)  # still falling, no faster than the trend
    width = forecast.upper - forecast.lower
    assert np.all(np.diff(width) > 0)  # uncertainty grows with the horizon
    assert 0.0 < forecast.params["damping_trend"] <= 1.0
    again = damped_trend_forecast(series, horizon=50)
    np.testing.assert_array_equal(again.upper, forecast.upper)  # the same series, the same forecast
    narrow = damped_trend_forecast(series, horizon=50, level=0.5)
    assert np.all(narrow.upper - narrow.lower < width)


def test_the_forecast_is_the_papers_damped_holt_recursion_with_the_fitted_parameters() -> None:
    series = _series(200.0, -1.0, 2.0, seed=0)
    forecast = damped_trend_forecast(series, horizon=20)
    p = forecast.params
    alpha, phi = p["smoothing_level"], p["damping_trend"]
    beta_star = p["smoothing_trend"] / alpha  # statsmodels reports alpha * beta*
    level, trend = p["initial_level"], p["initial_trend"]
    for y in series:  # seed 001, Appendix A.1, component form
        previous = level
        level = alpha * y + (1.0 - alpha) * (previous + phi * trend)
        trend = beta_star * (level - previous) + (1.0 - beta_star) * phi * trend
    by_hand = [level + sum(phi**k for k in range(1, h + 1)) * trend for h in range(1, 21)]
    np.testing.assert_allclose(forecast.mean, by_hand, rtol=1e-12)
    assert 0.8 <= phi <= 0.98 and 0.0 < beta_star < 1.0


def test_the_damping_is_bounded_to_statsmodels_range_unless_told_the_papers() -> None:
    series = _series(200.0, -1.0, 2.0, seed=0)
    assert damped_trend_forecast(series).params["damping_trend"] == pytest.approx(0.98)  # at the upper bound
    paper = damped_trend_forecast(series, damping_bounds=PAPER_DAMPING_BOUNDS)
    assert 0.98 < paper.params["damping_trend"] < 1.0 and np.all(np.isfinite(paper.upper))
    with pytest.raises(InvalidArgument, match="`damping_bounds` must satisfy"):
        damped_trend_forecast(series, damping_bounds=(0.5, 1.0))  # phi = 1 gives no interval
    with pytest.raises(InvalidArgument, match="a pair"):
        damped_trend_forecast(series, damping_bounds=0.9)  # type: ignore[arg-type]


def test_significance_needs_intervals_that_never_overlap() -> None:
    high = damped_trend_forecast(_series(100.0, 0.0, 1.0, seed=1))
    low = damped_trend_forecast(_series(50.0, 0.0, 1.0, seed=2))
    close = damped_trend_forecast(_series(99.0, 0.0, 10.0, seed=3))
    assert significantly_better(high, low) and not significantly_better(low, high)
    assert not significantly_better(high, close) and not significantly_better(close, high)


def test_bad_input_is_refused() -> None:
    series = _series(0.0, 0.0, 1.0, seed=4)
    with pytest.raises(InvalidArgument, match="at least 10"):
        damped_trend_forecast(series[:5])
    with pytest.raises(InvalidArgument, match="`level` must lie in"):
        damped_trend_forecast(series, level=99)
    with pytest.raises(InvalidArgument, match="`horizon`"):
        damped_trend_forecast(series, horizon=0)
    with pytest.raises(InvalidArgument, match="finite"):
        damped_trend_forecast(np.r_[series, np.nan])
    with pytest.raises(InvalidArgument, match="`how`"):
        episode_series([[1.0]], "median")
    with pytest.raises(InvalidType, match="Forecasts"):
        significantly_better(damped_trend_forecast(series), series)  # type: ignore[arg-type]
