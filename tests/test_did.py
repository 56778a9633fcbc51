"""Difference-in-differences (seed 001, eq. 4-6) on hand-computed series and on a real shifted evaluation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.metrics import difference_in_differences
from rlwrappers.studies import Execution


def test_eq_4_by_hand_per_seed_with_the_standard_error() -> None:
    control = np.array([[1.0, 3.0, 5.0, 7.0], [2.0, 2.0, 2.0, 2.0]])
    treated = np.array([[2.0, 4.0, 1.0, 1.0], [2.0, 2.0, 0.0, 4.0]])
    result = difference_in_differences(treated, control, shift_at=2)
    # seed 0: (1 - 3) - (6 - 2) = -6; seed 1: (2 - 2) - (2 - 2) = 0
    np.testing.assert_array_equal(result.per_seed, [-6.0, 0.0])
    assert result.estimate == -3.0
    assert result.se == pytest.approx(np.std([-6.0, 0.0], ddof=1) / math.sqrt(2))
    np.testing.assert_array_equal(result.pointwise, [(-4.0 - 2.0) / 2, (-6.0 + 2.0) / 2])
    np.testing.assert_array_equal(result.cumulative, [-3.0, -5.0])
    assert not result.pre_identical  # seed 0 differs before the shift: the fixed-seed assumption fails


def test_with_identical_pre_periods_eq_4_is_the_post_difference_of_eq_5() -> None:
    rng = np.random.default_rng(0)
    control = rng.normal(10.0, 2.0, (5, 20))
    treated = control.copy()
    treated[:, 10:] -= rng.uniform(0.0, 3.0, (5, 10))
    result = difference_in_differences(treated, control, shift_at=10)
    assert result.pre_identical
    assert result.estimate == pytest.approx((treated[:, 10:] - control[:, 10:]).mean())
    assert result.cumulative[-1] == pytest.approx(result.pointwise.sum())
    assert math.isnan(difference_in_differences(treated[0], control[0], 10).se)  # one seed


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="same shape"):
        difference_in_differences([[1.0, 2.0]], [[1.0, 2.0, 3.0]], 1)
    with pytest.raises(InvalidArgument, match=r"`shift_at` must be an episode in 1 \.\. 2"):
        difference_in_differences([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 3)
    with pytest.raises(InvalidArgument, match="`shift_at`"):
        difference_in_differences([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 0)
    with pytest.raises(InvalidArgument, match="finite"):
        difference_in_differences([1.0, np.nan], [1.0, 2.0], 1)
    with pytest.raises(InvalidType, match="array of numbers"):
        difference_in_differences("abc", [1.0, 2.0], 1)


def test_a_shift_from_episode_t_in_a_real_evaluation(tmp_path: Path) -> None:
    result = rw.evaluate(
        "ppo-CartPole-v1",
        "CartPole-v1",
        {"late noise": "obs_noise(std=0.5, when=starting(episode=3))"},
        episodes=6,
        seeds=2,
        out=tmp_path,
        execution=Execution(workers=1, progress=False),
    )
    table = result.episodes()
    arm = table[table["shift"] == "late noise"].sort_values(["run_seed", "episode"])
    treated = arm["return"].to_numpy().reshape(2, 6)
    control = arm["baseline_return"].to_numpy().reshape(2, 6)
    did = difference_in_differences(treated, control, shift_at=3)
    assert did.pre_identical  # same seeds, no shift yet: the runs are identical
    assert did.estimate < -100  # the noisy pole falls long before 500 steps
    assert did.cumulative[-1] == pytest.approx(3 * did.estimate)


def test_the_three_panels_draw_the_returns_and_both_impacts() -> None:
    pytest.importorskip("matplotlib")
    from rlwrappers.report import plots

    rng = np.random.default_rng(1)
    control = rng.normal(100.0, 5.0, (3, 40))
    levels = {"mild": control.copy(), "strong": control.copy()}
    levels["mild"][:, 20:] -= 10.0
    levels["strong"][:, 20:] -= 30.0
    fig = plots.impact_panels(levels, control, shift_at=20, window=5)
    returns, pointwise, cumulative = fig.axes
    assert [line.get_label() for line in returns.get_legend().get_lines()] == ["control", "mild", "strong"]
    np.testing.assert_allclose(pointwise.get_lines()[1].get_ydata(), np.full(20, -30.0))
    np.testing.assert_allclose(cumulative.get_lines()[0].get_ydata(), -10.0 * np.arange(1, 21))
    smooth = returns.get_lines()[1].get_ydata()
    np.testing.assert_allclose(smooth, plots.rolling_mean(control.mean(axis=0), 5))
    assert smooth[10] == pytest.approx(control.mean(axis=0)[6:11].mean())
    with pytest.raises(InvalidArgument, match="`treated` must map"):
        plots.impact_panels({}, control, shift_at=20)
    with pytest.raises(InvalidArgument, match="`window`"):
        plots.rolling_mean([1.0], 0)
