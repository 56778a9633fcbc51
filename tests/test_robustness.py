"""Offline robustness R (seed 000): Algorithm 1 by hand, the generalized JSD, sampling, the matrix and summaries."""

from __future__ import annotations

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlwrappers.agents import CallableAgent, TorchAgent
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType
from rlwrappers.metrics.robustness import (
    OVERALL,
    generalized_jsd_robustness,
    normalized_robustness,
    offline_robustness,
    pipeline_summary,
)
from rlwrappers.studies.offline import action_distributions, robustness_matrix, sampled_robustness

OBS = gym.spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
TWO = gym.spaces.Discrete(2)


class CountingPolicy(torch.nn.Module):
    """A linear policy with seeded weights that counts its forward passes and the batch sizes it sees."""

    def __init__(self, seed: int, n_actions: int = 3) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.linear = torch.nn.Linear(4, n_actions)
        with torch.no_grad():
            self.linear.weight.copy_(torch.randn(n_actions, 4, generator=generator))
            self.linear.bias.copy_(torch.randn(n_actions, generator=generator))
        self.calls = 0
        self.batch_sizes: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.batch_sizes.append(len(x))
        return self.linear(x)


class ConstantLogits(torch.nn.Module):
    """The same action logits for every observation."""

    logits: torch.Tensor

    def __init__(self, logits: list[float]) -> None:
        super().__init__()
        self.register_buffer("logits", torch.tensor(logits))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits.expand(len(x), -1)


def counting_agents(n: int, *, deterministic: bool = True) -> list[TorchAgent]:
    return [
        TorchAgent(CountingPolicy(seed), OBS, gym.spaces.Discrete(3), head="logits", deterministic=deterministic)
        for seed in range(n)
    ]


def cartpole_states(p: int = 6, seed: int = 0) -> np.ndarray:
    """p states sampled uniformly from one trajectory of a balancing controller (Algorithm 3)."""
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    trajectory = [obs]
    for _ in range(60):
        obs, _, terminated, truncated, _ = env.step(int(obs[2] + 0.5 * obs[3] > 0))
        trajectory.append(obs)
        if terminated or truncated:
            break
    picks = np.random.default_rng(seed).integers(0, len(trajectory), size=p)
    return np.array(trajectory, dtype=np.float32)[picks]


def interventions(states: np.ndarray) -> list[np.ndarray]:
    """The null intervention, then the cart moved 1 m right, then the pole tilted 0.1 rad further."""
    moved, tilted = states.copy(), states.copy()
    moved[:, 0] += 1.0
    tilted[:, 2] += 0.1
    return [states, moved, tilted]


def reference_robustness(actions: np.ndarray) -> float:
    """1 - H(histogram) / log2(n), straight from the definition."""
    _, counts = np.unique(actions, return_counts=True)
    q = counts / len(actions)
    return 1.0 - float(-(q * np.log2(q)).sum()) / math.log2(len(actions))


# -- Algorithm 1, by hand -----------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 10])
def test_agents_on_one_action_give_one(n: int) -> None:
    assert offline_robustness([4] * n) == 1.0


def test_ten_greedy_agents_split_five_and_five() -> None:
    r = offline_robustness([0] * 5 + [1] * 5)
    assert r == pytest.approx(1.0 - 1.0 / math.log2(10), rel=1e-12)
    assert r == pytest.approx(0.69897, abs=1e-5)


def test_ten_agents_on_ten_distinct_actions_give_zero() -> None:
    assert offline_robustness(list(range(10))) == 0.0
    assert offline_robustness([9, 3, 0, 7, 1, 8, 2, 6, 4, 5]) == 0.0


def test_three_agents_two_on_one_action() -> None:
    # Histogram (2/3, 1/3): H = log2(3) - 2/3 bits, so R = (2/3) / log2(3).
    assert offline_robustness([1, 0, 1]) == pytest.approx((2.0 / 3.0) / math.log2(3), rel=1e-12)


def test_leading_axes_are_kept_and_match_the_definition() -> None:
    actions = np.random.default_rng(3).integers(0, 4, size=(5, 7, 6))
    r = offline_robustness(actions)
    assert isinstance(r, np.ndarray) and r.shape == (5, 7)
    expected = np.array([[reference_robustness(row) for row in block] for block in actions])
    np.testing.assert_allclose(r, expected, rtol=0, atol=1e-12)
    assert np.all((r >= 0) & (r <= 1))


def test_action_labels_and_agent_order_do_not_matter() -> None:
    actions = np.random.default_rng(4).integers(0, 5, size=(20, 8))
    relabel = np.array([3, 0, 4, 1, 2])[actions]
    shuffled = actions[:, np.random.default_rng(5).permutation(8)]
    np.testing.assert_array_equal(offline_robustness(relabel), offline_robustness(actions))
    np.testing.assert_array_equal(offline_robustness(shuffled), offline_robustness(actions))


def test_fewer_than_two_agents_raise() -> None:
    with pytest.raises(InvalidArgument, match="at least 2 agents"):
        offline_robustness([3])
    with pytest.raises(InvalidArgument, match="at least 2 agents"):
        offline_robustness(np.zeros((4, 1), dtype=int))
    with pytest.raises(InvalidArgument, match="at least 2 agents"):
        generalized_jsd_robustness([[0.5, 0.5]])
    with pytest.raises(InvalidArgument, match="at least 2 agents"):
        sampled_robustness(counting_agents(1), cartpole_states())


def test_bad_actions_raise() -> None:
    with pytest.raises(InvalidType, match="integer array"):
        offline_robustness([0.0, 1.0])
    with pytest.raises(InvalidArgument, match=r"\[0, 3\)"):
        offline_robustness([0, 3], n_actions=3)
    assert offline_robustness([0, 2], n_actions=3) == 0.0


# -- the generalized JSD ---------------------------------------------------------------------------------
def test_generalized_jsd_agrees_with_algorithm_1_for_one_hot_distributions() -> None:
    actions = np.random.default_rng(6).integers(0, 6, size=(40, 10))
    one_hot = np.eye(6)[actions]
    np.testing.assert_allclose(generalized_jsd_robustness(one_hot), offline_robustness(actions), atol=1e-12)
    assert generalized_jsd_robustness(np.eye(10)) == pytest.approx(0.0, abs=1e-12)


def test_generalized_jsd_differs_from_algorithm_1_for_stochastic_agents() -> None:
    # Agent 1 always takes action 0; agent 2 takes 0 or 1 with probability 1/2 each.
    probs = [[1.0, 0.0], [0.5, 0.5]]
    mean_entropy = -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25))  # H(3/4, 1/4) = 0.8113
    by_hand = 1.0 - (mean_entropy - 0.5) / math.log2(2)  # 0.6887
    assert generalized_jsd_robustness(probs) == pytest.approx(by_hand, abs=1e-12)
    # Algorithm 1's expectation over the four joint draws: (0, 0) gives R = 1, (0, 1) gives R = 0.
    expected = sum(
        p1 * p2 * offline_robustness([a1, a2])
        for (a1, p1), (a2, p2) in itertools.product(enumerate(probs[0]), enumerate(probs[1]))
    )
    assert expected == 0.5
    # Sampled through real stochastic agents, Algorithm 1 approaches 0.5, not the generalized JSD's 0.6887.
    agents = [
        TorchAgent(ConstantLogits([0.0, -1e9]), OBS, TWO, head="logits", deterministic=False),
        TorchAgent(ConstantLogits([0.0, 0.0]), OBS, TWO, head="logits", deterministic=False),
    ]
    r = sampled_robustness(agents, cartpole_states(p=2), t=4000, rng=np.random.default_rng(0))
    assert r.shape == (2,)
    assert np.all(np.abs(r - 0.5) < 0.04)
    assert np.all(np.abs(r - by_hand) > 0.1)


def test_generalized_jsd_checks_its_distributions() -> None:
    with pytest.raises(InvalidArgument, match="sum to 1"):
        generalized_jsd_robustness([[0.5, 0.4], [0.5, 0.5]])
    with pytest.raises(InvalidArgument, match=">= 0"):
        generalized_jsd_robustness([[1.5, -0.5], [0.5, 0.5]])
    with pytest.raises(InvalidArgument, match="shape"):
        generalized_jsd_robustness([1.0, 0.0])


def test_action_distributions_follow_how_each_agent_acts() -> None:
    states = cartpole_states()
    greedy = counting_agents(3)
    probs = action_distributions(greedy, states)
    assert probs.shape == (len(states), 3, 3)
    actions = np.stack([agent.act(states) for agent in greedy], axis=1)
    np.testing.assert_array_equal(probs.argmax(axis=-1), actions)
    assert set(np.unique(probs)) == {0.0, 1.0}
    np.testing.assert_allclose(generalized_jsd_robustness(probs), sampled_robustness(greedy, states), atol=1e-12)

    stochastic = counting_agents(2, deterministic=False)
    with torch.no_grad():
        softmax = stochastic[1].module(torch.as_tensor(states)).softmax(-1).double().numpy()
    np.testing.assert_allclose(action_distributions(stochastic, states)[:, 1], softmax, rtol=1e-6)

    q_agents = [
        TorchAgent(CountingPolicy(seed), OBS, gym.spaces.Discrete(3), head="q_values", deterministic=False, epsilon=0.3)
        for seed in range(2)
    ]
    mixed = action_distributions(q_agents, states)
    np.testing.assert_allclose(mixed.sum(axis=-1), 1.0)
    np.testing.assert_allclose(mixed.max(axis=-1), 0.7 + 0.1)
    np.testing.assert_allclose(mixed.min(axis=-1), 0.1)


# -- sampling, batching and seeds --------------------------------------------------------------------------
def test_each_agent_runs_one_forward_pass_over_every_intervention() -> None:
    states = cartpole_states(p=6)
    for deterministic in (True, False):
        agents = counting_agents(4, deterministic=deterministic)
        matrix = robustness_matrix(agents, interventions(states), t=7, rng=np.random.default_rng(1))
        assert matrix.shape == (6, 3)
        for agent in agents:
            module = agent.module
            assert isinstance(module, CountingPolicy)
            assert module.batch_sizes == [18]  # the null intervention and two others, 6 states each, at once


def test_stochastic_agents_draw_from_their_action_distributions() -> None:
    # One agent always takes action 0, the other tosses a fair coin: they agree on half the draws.
    agents = [
        TorchAgent(ConstantLogits(logits), OBS, TWO, head="logits", deterministic=False)
        for logits in ([50.0, -50.0], [0.0, 0.0])
    ]
    r = sampled_robustness(agents, cartpole_states(p=4), t=4000, rng=np.random.default_rng(0))
    assert np.all(np.abs(r - 0.5) < 0.03)


def test_sampled_robustness_is_seeded() -> None:
    states = cartpole_states()
    agents = counting_agents(5, deterministic=False)
    first = robustness_matrix(agents, interventions(states), t=20, rng=np.random.default_rng(7))
    again = robustness_matrix(agents, interventions(states), t=20, rng=np.random.default_rng(7))
    other = robustness_matrix(agents, interventions(states), t=20, rng=np.random.default_rng(8))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    one = sampled_robustness(agents, states, t=20, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(one, sampled_robustness(agents, states, t=20, rng=np.random.default_rng(7)))


def test_every_column_draws_with_the_same_seeds() -> None:
    states = cartpole_states()
    agents = counting_agents(4, deterministic=False)
    batches = interventions(states)
    matrix = robustness_matrix(agents, batches, t=10, rng=np.random.default_rng(2))
    for j, batch in enumerate(batches):
        column = sampled_robustness(agents, batch, t=10, rng=np.random.default_rng(2))
        np.testing.assert_array_equal(matrix[:, j], column)


def test_greedy_agents_are_asked_once_and_match_algorithm_1() -> None:
    states = cartpole_states()
    agents = counting_agents(5)
    actions = np.stack([agent.act(states) for agent in agents], axis=1)
    r = sampled_robustness(agents, states, t=30)
    np.testing.assert_array_equal(r, offline_robustness(actions))
    np.testing.assert_array_equal(sampled_robustness(agents, states, t=1), r)


def test_stochastic_callable_agents_draw_from_the_given_generator() -> None:
    def uniform(obs: np.ndarray, rng: np.random.Generator) -> int:
        return int(rng.integers(0, 2))

    agents = [CallableAgent(uniform, OBS, TWO) for _ in range(2)]
    r = sampled_robustness(agents, cartpole_states(p=3), t=2000, rng=np.random.default_rng(0))
    assert np.all(np.abs(r - 0.5) < 0.05)  # two fair coins agree half of the time


def test_sampling_arguments_are_checked() -> None:
    states = cartpole_states()
    stochastic = counting_agents(3, deterministic=False)
    with pytest.raises(InvalidArgument, match="`rng` is required"):
        sampled_robustness(stochastic, states, t=5)
    with pytest.raises(InvalidType, match="numpy Generator"):
        sampled_robustness(stochastic, states, t=5, rng=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="`t` must be >= 1"):
        sampled_robustness(stochastic, states, t=0, rng=np.random.default_rng(0))
    with pytest.raises(InvalidType, match="must be an Agent"):
        sampled_robustness([stochastic[0], "agent"], states, rng=np.random.default_rng(0))  # type: ignore[list-item]
    box = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    continuous = [CallableAgent(lambda obs: np.zeros(1, np.float32), OBS, box) for _ in range(2)]
    with pytest.raises(IncompatibleSpace, match="Discrete"):
        sampled_robustness(continuous, states)


def test_mismatched_intervention_batches_raise() -> None:
    states = cartpole_states(p=6)
    agents = counting_agents(3)
    with pytest.raises(InvalidArgument, match=r"states_by_intervention\[1\]` has shape \(5, 4\)"):
        robustness_matrix(agents, [states, states[:5]])
    with pytest.raises(InvalidArgument, match="at least the null intervention"):
        robustness_matrix(agents, [])
    with pytest.raises(InvalidArgument, match="shape"):
        robustness_matrix(agents, [states[:, :3], states[:, :3]])  # the agents take 4 numbers per observation


# -- normalization and summaries ---------------------------------------------------------------------------
def test_normalized_robustness_is_relative_to_the_null_intervention() -> None:
    states = cartpole_states()
    matrix = robustness_matrix(counting_agents(6), interventions(states))
    normalized = normalized_robustness(matrix)
    np.testing.assert_array_equal(normalized[:, 0], 0.0)
    np.testing.assert_array_equal(normalized[:, 1:], matrix[:, 1:] - matrix[:, :1])
    assert np.all((normalized >= -1) & (normalized <= 1))
    with pytest.raises(InvalidArgument, match=r"in \[0, 1\]"):
        normalized_robustness([[0.5, 1.5]])


def test_pipeline_summary_by_hand() -> None:
    dqn = [[0.5, 1.0, 0.25], [0.5, 1.0, 0.75]]
    ppo = [[1.0, 0.0, 0.5]]
    table = pipeline_summary({"dqn": dqn, "ppo": ppo}, ["none", "cart moved", "pole tilted"])
    assert list(table.columns) == ["original", "intervened", "normalized"]
    assert list(table.index) == [
        ("dqn", "cart moved"),
        ("dqn", "pole tilted"),
        ("dqn", OVERALL),
        ("ppo", "cart moved"),
        ("ppo", "pole tilted"),
        ("ppo", OVERALL),
    ]
    assert table.loc[("dqn", "cart moved")].tolist() == [0.5, 1.0, 0.5]
    assert table.loc[("dqn", "pole tilted")].tolist() == [0.5, 0.5, 0.0]
    assert table.loc[("dqn", OVERALL)].tolist() == [0.5, 0.75, 0.25]
    assert table.loc[("ppo", OVERALL)].tolist() == [1.0, 0.25, -0.75]
    appendix_e = table.xs(OVERALL, level="intervention")
    np.testing.assert_allclose(appendix_e["normalized"], appendix_e["intervened"] - appendix_e["original"])
    assert list(pipeline_summary({"a": dqn}).index.get_level_values("intervention")) == ["I1", "I2", OVERALL]


def test_pipeline_summary_checks_its_arguments() -> None:
    with pytest.raises(InvalidArgument, match="3 distinct names"):
        pipeline_summary({"a": [[1.0, 0.5, 0.5]]}, ["none", "x"])
    with pytest.raises(InvalidArgument, match="overall"):
        pipeline_summary({"a": [[1.0, 0.5]]}, ["none", OVERALL])
    with pytest.raises(InvalidArgument, match="same m \\+ 1 columns"):
        pipeline_summary({"a": [[1.0, 0.5]], "b": [[1.0, 0.5, 0.5]]})
    with pytest.raises(InvalidArgument, match="at least one intervention"):
        pipeline_summary({"a": [[1.0], [0.5]]})
    with pytest.raises(InvalidType, match="mapping"):
        pipeline_summary([[1.0, 0.5]])  # type: ignore[arg-type]


def test_the_heatmap_draws_interventions_by_states() -> None:
    pytest.importorskip("matplotlib")
    from rlwrappers.report import robustness as robustness_report

    matrix = np.array([[1.0, 0.5, 0.0], [0.7, 0.7, 1.0]])  # 2 states, the null intervention and two others
    fig = robustness_report.robustness_heatmap(matrix, interventions=["none", "wide paddle", "no row"])
    image = fig.axes[0].images[0].get_array()
    np.testing.assert_array_equal(image, matrix.T)  # interventions are rows, the null one on top
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["none", "wide paddle", "no row"]
    normalized = robustness_report.robustness_heatmap(normalized_robustness(matrix), normalized=True, limit=0.4)
    np.testing.assert_allclose(normalized.axes[0].images[0].get_array(), [[-0.5, 0.0], [-1.0, 0.3]])
    assert "50% of cells beyond ±0.4" in normalized.axes[0].get_title()
    with pytest.raises(InvalidArgument, match="interventions >= 2"):
        robustness_report.robustness_heatmap(matrix[:, :1])
    with pytest.raises(InvalidArgument, match="must label 2 states"):
        robustness_report.robustness_heatmap(matrix, states=["a"])
