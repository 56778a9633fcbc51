"""Policy-reproducibility metrics against hand computations and SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from rlwrappers import metrics
from rlwrappers.error import InvalidArgument, UnknownName
from rlwrappers.logs import episode_returns

R = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]  # median 3.5; |R - 3.5| = .5 2.5 .5 2.5 1.5 5.5 1.5 2.5 -> median 2.0


def test_mad_iqr_std_against_hand_values_and_scipy():
    assert metrics.mad(R) == 2.0
    assert metrics.mad(R) == scipy.stats.median_abs_deviation(R, scale=1.0)
    assert metrics.iqr(R) == pytest.approx(scipy.stats.iqr(R))  # Q1 = 1.75, Q3 = 5.25
    assert metrics.iqr(R) == pytest.approx(3.5)
    assert metrics.dispersion(R, "std") == pytest.approx(np.std(R))


def test_performance_and_lcb_over_a_range_of_alpha():
    assert metrics.performance(R) == pytest.approx(31 / 8)
    assert metrics.performance(R, "median") == 3.5
    out = metrics.lcb(R, alpha=[0.0, 0.5, 2.0])
    np.testing.assert_allclose(out, [31 / 8, 31 / 8 - 1.0, 31 / 8 - 4.0])
    assert metrics.lcb(R, 1.0, performance_kind="median", dispersion_kind="iqr") == pytest.approx(0.0)


def test_metrics_reduce_the_last_axis_and_keep_the_others():
    batch = np.array([R, [x * 2 for x in R]])
    np.testing.assert_allclose(metrics.mad(batch), [2.0, 4.0])
    assert metrics.lcb(batch, alpha=[0.0, 1.0]).shape == (2, 2)


def test_behavioural_mad_uses_every_pair_of_distinct_evaluations():
    # points on a line at 0, 1, 3: distances 1, 3, 2 -> median 2, deviations 1, 1, 0 -> MAD 1
    assert metrics.behavioural_mad([[0.0], [1.0], [3.0]]) == 1.0
    manhattan = metrics.behavioural_mad([[0.0, 0.0], [1.0, 1.0], [3.0, 3.0]], lambda a, b: np.abs(a - b).sum(axis=1))
    assert manhattan == 2.0


def test_state_marginals_are_normalized_histograms():
    h = metrics.state_marginals([[[0.1], [0.9], [0.95]], [[0.5], [0.5]]], bins=2, ranges=[(0.0, 1.0)])
    np.testing.assert_allclose(h, [[1 / 3, 2 / 3], [0.0, 1.0]])
    assert metrics.behavioural_mad(h) == 0.0  # two rollouts: one distance, no spread


def test_concatenated_states_are_appendix_d2_truncated_to_the_shortest_episode():
    episodes = [[[1.0, 2.0], [3.0, 4.0]], [[0.0, 0.0], [0.0, 1.0], [9.0, 9.0]], [[1.0, 2.0], [3.0, 3.0]]]
    vectors = metrics.state_marginals(episodes, form="concatenated")
    np.testing.assert_array_equal(vectors, [[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 1.0], [1.0, 2.0, 3.0, 3.0]])
    # L2 distances: |(1, 2, 3, 3)| = sqrt(23) between the first two, 1 between the first and the last,
    # |(1, 2, 3, 2)| = sqrt(18) between the last two; median sqrt(18), deviations sqrt(23) - sqrt(18),
    # 0 and sqrt(18) - 1, so the MAD is sqrt(23) - sqrt(18).
    assert metrics.behavioural_mad(vectors) == pytest.approx(np.sqrt(23.0) - np.sqrt(18.0))
    with pytest.raises(InvalidArgument, match="for form='histogram'"):
        metrics.state_marginals(episodes, bins=2, ranges=[(0.0, 1.0)] * 2, form="concatenated")
    with pytest.raises(InvalidArgument, match="are needed"):
        metrics.state_marginals(episodes)


def test_the_bootstrap_draws_rliables_50000_replicates_by_default():
    calls = []

    def mean(x):
        calls.append(1)
        return float(np.mean(x))

    # Two runs of one task: a replicate's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2 and 1/4, so the
    # 2.5th percentile is 0 and the 97.5th is 1.
    result = metrics.stratified_bootstrap_ci([[0.0], [1.0]], mean, np.random.default_rng(0))
    assert result == (0.5, 0.0, 1.0)
    assert len(calls) == 50_000 + 1  # every replicate, then the estimate


def test_iqm_and_a_seeded_stratified_bootstrap():
    assert metrics.iqm([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0]) == 4.5
    assert metrics.iqm(np.arange(8.0)) == pytest.approx(scipy.stats.trim_mean(np.arange(8.0), 0.25))
    scores = np.arange(20.0).reshape(10, 2)
    a = metrics.stratified_bootstrap_ci(scores, metrics.iqm, np.random.default_rng(0), reps=200)
    b = metrics.stratified_bootstrap_ci(scores, metrics.iqm, np.random.default_rng(0), reps=200)
    assert a == b and a[1] <= a[0] <= a[2]
    constant = metrics.stratified_bootstrap_ci(np.ones((5, 3)), metrics.iqm, np.random.default_rng(1), reps=50)
    assert constant == (1.0, 1.0, 1.0)


def test_pareto_front_keeps_the_non_dominated_points():
    front = metrics.pareto_front([10.0, 8.0, 9.0, 7.0, 10.0], [5.0, 1.0, 6.0, 2.0, 5.0])
    assert front.tolist() == [True, True, False, False, True]  # equal points do not dominate each other


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: metrics.lcb(R, alpha=-1.0), InvalidArgument, "`alpha` must be finite and >= 0"),
        (lambda: metrics.mad([]), InvalidArgument, "`returns` needs at least one value"),
        (lambda: metrics.mad([1.0, np.nan]), InvalidArgument, "must be finite"),
        (lambda: metrics.dispersion(R, "madd"), UnknownName, "Did you mean `mad`"),
        (lambda: metrics.behavioural_mad([[1.0]]), InvalidArgument, r"shape \(N >= 2, d\)"),
        (lambda: metrics.pareto_front([1.0], [1.0, 2.0]), InvalidArgument, "one length"),
        (
            lambda: metrics.stratified_bootstrap_ci(R, metrics.iqm, np.random.default_rng(0), confidence=1.5),
            InvalidArgument,
            "`confidence`",
        ),
    ],
)
def test_bad_input_raises_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_metrics_from_a_recorded_log(tmp_path):
    import gymnasium as gym

    import rlwrappers as rw

    env = rw.Recorder(rw.RewardNoise(gym.make("CartPole-v1"), std=1.0), tmp_path / "run")
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(int(obs[2] + 0.5 * obs[3] > 0))
            done = terminated or truncated
    env.reset(seed=99)
    env.step(0)  # an episode cut short by close(): left out
    env.close()
    log = rw.read_log(tmp_path / "run")
    returns = episode_returns(log)
    assert len(returns) == 4
    np.testing.assert_allclose(returns, log.steps.groupby("episode")["reward"].sum().to_numpy()[:4])
    table = metrics.reproducibility_table({"reward noise": returns}, alphas=[1.0])
    assert table.loc["reward noise", "MAD"] == metrics.mad(returns)


def test_a_log_without_complete_episodes_has_no_returns(tmp_path):
    import gymnasium as gym

    import rlwrappers as rw

    env = rw.Recorder(gym.make("CartPole-v1"), tmp_path / "run")
    env.reset(seed=0)
    env.step(0)
    env.close()
    with pytest.raises(rw.error.LogError, match="no complete episode"):
        episode_returns(rw.read_log(tmp_path / "run"))
