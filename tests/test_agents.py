"""Agents: SB3, torch and callable adapters, loading from files and from the zoo."""

from __future__ import annotations

import functools
import json
import re
import warnings
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from numpy.typing import NDArray
from stable_baselines3 import A2C, DQN, PPO, SAC, TD3

import rlwrappers as rw
from rlwrappers import agents, zoo
from rlwrappers.agents import Agent, CallableAgent, Outputs, SB3Agent, TorchAgent
from rlwrappers.error import (
    IncompatibleSpace,
    InvalidArgument,
    InvalidType,
    MissingFile,
    NotDifferentiable,
    UnknownName,
    UntrustedFileWarning,
)

ALGOS: dict[str, Any] = {"PPO": PPO, "A2C": A2C, "DQN": DQN, "SAC": SAC, "TD3": TD3}
#: Each SB3 algorithm on the action spaces it supports (Discrete: CartPole, Box: Pendulum).
MODELS = [
    ("PPO", "CartPole-v1"),
    ("PPO", "Pendulum-v1"),
    ("A2C", "CartPole-v1"),
    ("A2C", "Pendulum-v1"),
    ("DQN", "CartPole-v1"),
    ("SAC", "Pendulum-v1"),
    ("TD3", "Pendulum-v1"),
]
ZOO_AGENT = "ppo-CartPole-v1"


@functools.cache
def _model(algo: str, env_id: str) -> Any:
    """An untrained SB3 model, built once per module (tests that change weights build their own)."""
    return ALGOS[algo]("MlpPolicy", env_id, seed=0, device="cpu")


def _fresh(algo: str, env_id: str, **kwargs: Any) -> Any:
    return ALGOS[algo]("MlpPolicy", env_id, seed=0, device="cpu", **kwargs)


def _observations(env_id: str, n: int = 64, seed: int = 0) -> NDArray[Any]:
    space = gym.make(env_id).observation_space
    space.seed(seed)
    return np.stack([space.sample() for _ in range(n)])


ALL_MODELS = [pytest.param(a, e, id=f"{a}-{e}") for a, e in MODELS]
STOCHASTIC = [
    pytest.param("PPO", "CartPole-v1", {}, id="PPO-CartPole-v1"),
    pytest.param("PPO", "Pendulum-v1", {}, id="PPO-Pendulum-v1"),
    pytest.param("A2C", "CartPole-v1", {}, id="A2C-CartPole-v1"),
    pytest.param("A2C", "Pendulum-v1", {}, id="A2C-Pendulum-v1"),
    pytest.param("DQN", "CartPole-v1", {"epsilon": 0.5}, id="DQN-CartPole-v1"),
    pytest.param("SAC", "Pendulum-v1", {}, id="SAC-Pendulum-v1"),
]


# -- SB3: deterministic actions --------------------------------------------------------------------------
@pytest.mark.parametrize(("algo", "env_id"), ALL_MODELS)
def test_sb3_deterministic_actions_equal_predict(algo: str, env_id: str) -> None:
    model = _model(algo, env_id)
    obs = _observations(env_id)
    expected = model.predict(obs, deterministic=True)[0]
    for agent in (SB3Agent(model), SB3Agent(model.policy)):
        actions = agent.act(obs)
        assert actions.shape == expected.shape
        assert actions.dtype == expected.dtype
        np.testing.assert_array_equal(actions, expected)
        assert agent.deterministic
        assert agent.action_space == model.action_space
        assert agent.observation_space == model.observation_space


@pytest.mark.parametrize(("algo", "env_id"), ALL_MODELS)
def test_sb3_act_one_is_one_row_of_act(algo: str, env_id: str) -> None:
    agent = SB3Agent(_model(algo, env_id))
    obs = _observations(env_id, n=4)
    batch = agent.act(obs)
    for i in range(len(obs)):
        one = agent.act_one(obs[i])
        assert agent.action_space.contains(one)
        if isinstance(agent.action_space, gym.spaces.Discrete):
            assert one == batch[i]
        else:  # a batch of one and a batch of four may round differently in the last bit
            np.testing.assert_allclose(one, batch[i], rtol=1e-5, atol=1e-7)


# -- SB3: stochastic actions -----------------------------------------------------------------------------
@pytest.mark.parametrize(("algo", "env_id", "kwargs"), STOCHASTIC)
def test_sb3_stochastic_actions_follow_the_generator(algo: str, env_id: str, kwargs: dict[str, Any]) -> None:
    model = _model(algo, env_id)
    agent = SB3Agent(model, deterministic=False, **kwargs)
    obs = _observations(env_id)
    first = agent.act(obs, np.random.default_rng(1))
    again = agent.act(obs, np.random.default_rng(1))
    other = agent.act(obs, np.random.default_rng(2))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    greedy = SB3Agent(model).act(obs)
    assert first.shape == greedy.shape and first.dtype == greedy.dtype
    assert all(agent.action_space.contains(a) for a in first)


@pytest.mark.parametrize(("algo", "env_id", "kwargs"), STOCHASTIC)
def test_sb3_stochastic_actions_leave_global_generators_alone(algo: str, env_id: str, kwargs: dict[str, Any]) -> None:
    agent = SB3Agent(_model(algo, env_id), deterministic=False, **kwargs)
    obs = _observations(env_id)
    np.random.seed(123)
    torch.manual_seed(123)
    numpy_before, torch_before = np.random.get_state(legacy=False), torch.get_rng_state()
    agent.act(obs, np.random.default_rng(0))
    agent.act_one(obs[0], np.random.default_rng(0))
    numpy_after, torch_after = np.random.get_state(legacy=False), torch.get_rng_state()
    np.testing.assert_array_equal(numpy_before["state"]["key"], numpy_after["state"]["key"])
    assert numpy_before["state"]["pos"] == numpy_after["state"]["pos"]
    assert (numpy_before["has_gauss"], numpy_before["gauss"]) == (numpy_after["has_gauss"], numpy_after["gauss"])
    assert torch.equal(torch_before, torch_after)


@pytest.mark.parametrize(("algo", "env_id", "kwargs"), STOCHASTIC)
def test_sb3_stochastic_agent_requires_rng(algo: str, env_id: str, kwargs: dict[str, Any]) -> None:
    agent = SB3Agent(_model(algo, env_id), deterministic=False, **kwargs)
    obs = _observations(env_id, n=2)
    with pytest.raises(InvalidArgument, match="`rng` is required"):
        agent.act(obs)
    with pytest.raises(InvalidArgument, match="`rng` is required"):
        agent.act_one(obs[0], None)


def test_sb3_categorical_frequencies_match_softmax_of_logits() -> None:
    model = _fresh("PPO", "Acrobot-v1")
    with torch.no_grad():  # an uneven policy, so that a wrong distribution would show
        model.policy.action_net.bias.copy_(torch.tensor([1.0, 0.0, -1.0]))
    agent = SB3Agent(model, deterministic=False)
    obs = np.repeat(_observations("Acrobot-v1", n=1), 20_000, axis=0)
    actions = agent.act(obs, np.random.default_rng(0))
    frequencies = np.bincount(actions, minlength=3) / len(actions)
    with torch.no_grad():
        probs = agent.outputs(agent.tensor(obs[:1])).probs[0].numpy()
        sb3_probs = model.policy.get_distribution(agent.tensor(obs[:1])).distribution.probs[0].numpy()
    np.testing.assert_allclose(probs, sb3_probs, rtol=1e-5)
    assert probs.max() - probs.min() > 0.3
    np.testing.assert_allclose(frequencies, probs, atol=0.015)


def test_sb3_gaussian_actions_have_the_policy_mean_and_std() -> None:
    model = _fresh("PPO", "Pendulum-v1")
    with torch.no_grad():  # std 0.37: clipping to [-2, 2] does not bias the moments
        model.policy.log_std.fill_(-1.0)
    agent = SB3Agent(model, deterministic=False)
    obs = np.repeat(_observations("Pendulum-v1", n=1), 20_000, axis=0)
    actions = agent.act(obs, np.random.default_rng(0))
    mean = SB3Agent(model).act(obs[:1])[0]
    assert actions.dtype == np.float32
    assert np.all((actions >= -2.0) & (actions <= 2.0))
    np.testing.assert_allclose(actions.mean(axis=0), mean, atol=0.01)
    np.testing.assert_allclose(actions.std(axis=0), np.exp(-1.0), rtol=0.03)


def test_sb3_sac_stochastic_actions_lie_within_bounds() -> None:
    model = _fresh("SAC", "Pendulum-v1")
    agent = SB3Agent(model, deterministic=False)
    obs = _observations("Pendulum-v1", n=2000)
    actions = agent.act(obs, np.random.default_rng(0))
    low, high = model.action_space.low, model.action_space.high
    assert actions.shape == (2000, 1)
    assert actions.dtype == np.float32
    assert np.all((actions >= low) & (actions <= high))
    assert not np.allclose(actions, SB3Agent(model).act(obs))  # it does sample
    assert len(np.unique(actions)) > 1000


def test_sb3_dqn_epsilon_one_is_uniform_and_zero_is_greedy() -> None:
    model = _model("DQN", "CartPole-v1")
    obs = np.repeat(_observations("CartPole-v1", n=1), 20_000, axis=0)
    uniform = SB3Agent(model, deterministic=False, epsilon=1.0).act(obs, np.random.default_rng(0))
    np.testing.assert_allclose(np.bincount(uniform, minlength=2) / len(uniform), [0.5, 0.5], atol=0.015)
    obs = _observations("CartPole-v1")
    greedy = SB3Agent(model, deterministic=False, epsilon=0.0).act(obs, np.random.default_rng(0))
    np.testing.assert_array_equal(greedy, SB3Agent(model).act(obs))


def test_sb3_dqn_epsilon_defaults_to_the_model_exploration_rate() -> None:
    model = _fresh("DQN", "CartPole-v1")
    model.exploration_rate = 0.25
    assert SB3Agent(model, deterministic=False).epsilon == 0.25
    with pytest.raises(InvalidArgument, match="`epsilon` is required"):
        SB3Agent(model.policy, deterministic=False)
    assert SB3Agent(model.policy, deterministic=False, epsilon=0.1).epsilon == 0.1


def test_sb3_invalid_arguments_raise() -> None:
    with pytest.raises(InvalidArgument, match="TD3"):
        SB3Agent(_model("TD3", "Pendulum-v1"), deterministic=False)
    with pytest.raises(InvalidArgument, match="`epsilon`"):
        SB3Agent(_model("DQN", "CartPole-v1"), deterministic=False, epsilon=1.5)
    with pytest.raises(InvalidType, match="`deterministic`"):
        SB3Agent(_model("PPO", "CartPole-v1"), deterministic="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidType, match="`model`"):
        SB3Agent(torch.nn.Linear(4, 2))
    with pytest.raises(InvalidArgument, match="gSDE"):
        SB3Agent(_fresh("PPO", "Pendulum-v1", use_sde=True))
    with pytest.raises(IncompatibleSpace, match="channel-last"):
        SB3Agent(_model("PPO", "CartPole-v1"), observation_space=gym.spaces.Box(-1, 1, (5,)))


# -- SB3: differentiable outputs -------------------------------------------------------------------------
@pytest.mark.parametrize(("algo", "env_id"), [("PPO", "CartPole-v1"), ("A2C", "CartPole-v1"), ("DQN", "CartPole-v1")])
def test_sb3_outputs_are_differentiable(algo: str, env_id: str) -> None:
    agent = SB3Agent(_model(algo, env_id))
    obs = _observations(env_id)
    actions = agent.act(obs)
    x = agent.tensor(obs).requires_grad_(True)
    scores = agent.outputs(x).scores
    assert scores.shape == (64, 2)
    np.testing.assert_array_equal(scores.argmax(-1).numpy(), actions)
    scores[torch.arange(64), torch.as_tensor(actions)].sum().backward()
    assert x.grad is not None
    assert x.grad.shape == x.shape
    assert torch.count_nonzero(x.grad) > 0


def test_sb3_actor_critic_outputs_match_the_policy() -> None:
    model = _model("PPO", "CartPole-v1")
    agent = SB3Agent(model)
    x = agent.tensor(_observations("CartPole-v1"))
    out = agent.outputs(x)
    assert out.logits is not None and out.values is not None
    assert out.q_values is None and out.action is None
    assert out.values.shape == (64,)
    torch.testing.assert_close(out.probs.sum(-1), torch.ones(64))
    with torch.no_grad():
        torch.testing.assert_close(out.values, model.policy.predict_values(x).squeeze(-1))
        torch.testing.assert_close(out.probs, model.policy.get_distribution(x).distribution.probs)
    assert out.scores is out.logits


def test_sb3_gaussian_outputs_give_mean_and_log_std() -> None:
    model = _model("PPO", "Pendulum-v1")
    agent = SB3Agent(model)
    obs = _observations("Pendulum-v1")
    out = agent.outputs(agent.tensor(obs))
    assert out.action is not None and out.log_std is not None and out.values is not None
    assert out.action.shape == out.log_std.shape == (64, 1)
    assert out.values.shape == (64,)
    with pytest.raises(NotDifferentiable):
        _ = out.scores
    with pytest.raises(NotDifferentiable):
        _ = out.probs
    mean = out.action.detach().numpy()
    inside = (mean >= -2.0) & (mean <= 2.0)
    assert inside.any()
    np.testing.assert_array_equal(agent.act(obs)[inside], mean[inside])


def test_sb3_dqn_outputs_have_q_values_and_no_probs() -> None:
    model = _model("DQN", "CartPole-v1")
    agent = SB3Agent(model)
    x = agent.tensor(_observations("CartPole-v1"))
    out = agent.outputs(x)
    assert out.logits is None and out.q_values is not None
    with torch.no_grad():
        torch.testing.assert_close(out.q_values, model.q_net(x))
    assert out.scores is out.q_values
    with pytest.raises(NotDifferentiable, match="probabilities"):
        _ = out.probs


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_sb3_continuous_outputs_action_equals_deterministic_action(algo: str) -> None:
    agent = SB3Agent(_model(algo, "Pendulum-v1"))
    obs = _observations("Pendulum-v1")
    x = agent.tensor(obs).requires_grad_(True)
    out = agent.outputs(x)
    assert out.action is not None and out.action.shape == (64, 1)
    assert (out.log_std is not None) == (algo == "SAC")
    np.testing.assert_allclose(out.action.detach().numpy(), agent.act(obs), rtol=0, atol=1e-6)
    out.action.sum().backward()
    assert x.grad is not None and torch.count_nonzero(x.grad) > 0
    with pytest.raises(NotDifferentiable, match="continuous"):
        _ = out.scores


def test_outputs_without_heads() -> None:
    out = Outputs()
    with pytest.raises(NotDifferentiable):
        _ = out.scores
    with pytest.raises(NotDifferentiable):
        _ = out.probs


# -- SB3: image observations -----------------------------------------------------------------------------
class _ImageEnv(gym.Env[NDArray[np.uint8], np.int64]):
    """A tiny env with channel-last uint8 image observations."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0, 255, (36, 36, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(3)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.uint8], dict[str, Any]]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: np.int64) -> tuple[NDArray[np.uint8], float, bool, bool, dict[str, Any]]:
        return self.observation_space.sample(), 0.0, False, False, {}


def test_sb3_image_policy_takes_channel_last_observations() -> None:
    env = _ImageEnv()
    model = PPO("CnnPolicy", env, seed=0, device="cpu", n_steps=64, batch_size=64)
    assert model.policy.observation_space.shape == (3, 36, 36)
    agent = SB3Agent(model, observation_space=env.observation_space)
    assert agent.observation_space == env.observation_space
    env.observation_space.seed(0)
    obs = np.stack([env.observation_space.sample() for _ in range(16)])
    np.testing.assert_array_equal(agent.act(obs), model.predict(obs, deterministic=True)[0])
    x = agent.tensor(obs).requires_grad_(True)
    agent.outputs(x).scores.max(-1).values.sum().backward()
    assert x.grad is not None and x.grad.shape == (16, 36, 36, 3)
    first = SB3Agent(model)  # no env space: the policy's channel-first layout
    assert first.observation_space.shape == (3, 36, 36)
    np.testing.assert_array_equal(first.act(obs.transpose(0, 3, 1, 2)), agent.act(obs))
    agents.check_compatible(agent, env)
    with pytest.raises(IncompatibleSpace):
        agents.check_compatible(first, env)


# -- SB3: parameters -------------------------------------------------------------------------------------
def test_sb3_parameters_leave_out_value_heads() -> None:
    model = _model("PPO", "CartPole-v1")
    params = SB3Agent(model).parameters()
    everything = dict(model.policy.named_parameters())
    assert "action_net.weight" in params
    assert any(name.startswith("mlp_extractor.policy_net.") for name in params)
    assert not any(name.startswith(("value_net", "mlp_extractor.value_net")) for name in params)
    assert set(everything) - set(params) == {
        name for name in everything if name.startswith(("value_net.", "mlp_extractor.value_net."))
    }
    assert all(params[name] is everything[name] for name in params)  # the live tensors, not copies


def test_sb3_parameters_of_dqn_are_the_online_q_network() -> None:
    model = _model("DQN", "CartPole-v1")
    params = SB3Agent(model).parameters()
    online = list(model.policy.q_net.parameters())
    assert all(name.startswith("q_net.") for name in params)
    assert len(params) == len(online)
    assert all(any(p is q for q in online) for p in params.values())
    target = list(model.policy.q_net_target.parameters())
    assert not any(any(p is q for q in target) for p in params.values())


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_sb3_parameters_of_actor_critic_are_the_actor(algo: str) -> None:
    model = _model(algo, "Pendulum-v1")
    params = SB3Agent(model).parameters()
    actor = list(model.policy.actor.parameters())
    assert params and all(name.startswith("actor.") for name in params)
    assert not any("critic" in name for name in params)
    assert len(params) == len(actor)
    assert all(any(p is q for q in actor) for p in params.values())


# -- torch modules ---------------------------------------------------------------------------------------
class _ActorCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.actor = torch.nn.Linear(4, 2)
        self.critic = torch.nn.Linear(4, 1)


@pytest.fixture
def cartpole() -> gym.Env[Any, Any]:
    return gym.make("CartPole-v1")


@pytest.fixture
def pendulum() -> gym.Env[Any, Any]:
    return gym.make("Pendulum-v1")


def test_torch_logits_head(cartpole: gym.Env[Any, Any]) -> None:
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2)
    agent = TorchAgent(net, cartpole.observation_space, cartpole.action_space, head="logits")
    obs = _observations("CartPole-v1")
    with torch.no_grad():
        logits = net(agent.tensor(obs))
    np.testing.assert_array_equal(agent.act(obs), logits.argmax(-1).numpy())
    out = agent.outputs(agent.tensor(obs))
    assert out.logits is not None and out.values is None and out.q_values is None
    torch.testing.assert_close(out.probs.sum(-1), torch.ones(64))
    assert agent.parameters() == dict(net.named_parameters())

    stochastic = TorchAgent(net, cartpole.observation_space, cartpole.action_space, head="logits", deterministic=False)
    first = stochastic.act(obs, np.random.default_rng(0))
    np.testing.assert_array_equal(first, stochastic.act(obs, np.random.default_rng(0)))
    assert first.dtype == np.int64 and set(np.unique(first)) <= {0, 1}
    with pytest.raises(InvalidArgument, match="`rng`"):
        stochastic.act(obs)


def test_torch_q_values_head_is_epsilon_greedy(cartpole: gym.Env[Any, Any]) -> None:
    net = torch.nn.Linear(4, 2)
    obs = _observations("CartPole-v1")
    spaces = (cartpole.observation_space, cartpole.action_space)
    greedy = TorchAgent(net, *spaces, head="q_values").act(obs)
    with torch.no_grad():
        np.testing.assert_array_equal(greedy, net(torch.as_tensor(obs)).argmax(-1).numpy())
    zero = TorchAgent(net, *spaces, head="q_values", deterministic=False, epsilon=0.0)
    np.testing.assert_array_equal(zero.act(obs, np.random.default_rng(0)), greedy)
    one = TorchAgent(net, *spaces, head="q_values", deterministic=False, epsilon=1.0)
    many = np.repeat(obs[:1], 10_000, axis=0)
    frequencies = np.bincount(one.act(many, np.random.default_rng(0)), minlength=2) / len(many)
    np.testing.assert_allclose(frequencies, [0.5, 0.5], atol=0.02)
    out = zero.outputs(zero.tensor(obs))
    assert out.q_values is not None and out.logits is None
    with pytest.raises(InvalidArgument, match="`epsilon` is required"):
        TorchAgent(net, *spaces, head="q_values", deterministic=False)


def test_torch_action_head_clips_to_bounds(pendulum: gym.Env[Any, Any]) -> None:
    net = torch.nn.Linear(3, 1)
    with torch.no_grad():
        net.weight.fill_(1.0)
        net.bias.zero_()
    agent = TorchAgent(net, pendulum.observation_space, pendulum.action_space, head="action")
    obs = np.array([[1.0, 1.0, 8.0], [0.5, -0.5, 0.25], [-1.0, -1.0, -8.0]], dtype=np.float32)
    np.testing.assert_array_equal(agent.act(obs), np.array([[2.0], [0.25], [-2.0]], dtype=np.float32))
    out = agent.outputs(agent.tensor(obs))
    assert out.action is not None
    np.testing.assert_array_equal(out.action.detach().numpy(), [[10.0], [0.25], [-10.0]])  # before clipping
    with pytest.raises(InvalidArgument, match="'action'"):
        TorchAgent(net, pendulum.observation_space, pendulum.action_space, head="action", deterministic=False)


def test_torch_forward_and_value_functions(cartpole: gym.Env[Any, Any]) -> None:
    net = _ActorCritic()
    agent = TorchAgent(
        net,
        cartpole.observation_space,
        cartpole.action_space,
        head="logits",
        forward=lambda m, x: m.actor(x),
        value=lambda m, x: m.critic(x),
    )
    obs = _observations("CartPole-v1")
    x = agent.tensor(obs)
    out = agent.outputs(x)
    assert out.logits is not None and out.values is not None
    assert out.values.shape == (64,)
    with torch.no_grad():
        torch.testing.assert_close(out.logits, net.actor(x))
        torch.testing.assert_close(out.values, net.critic(x).squeeze(-1))
        np.testing.assert_array_equal(agent.act(obs), net.actor(x).argmax(-1).numpy())
    assert set(agent.parameters()) == {"actor.weight", "actor.bias", "critic.weight", "critic.bias"}


def test_torch_invalid_arguments_raise(cartpole: gym.Env[Any, Any], pendulum: gym.Env[Any, Any]) -> None:
    net = torch.nn.Linear(4, 2)
    obs_space, act_space = cartpole.observation_space, cartpole.action_space
    with pytest.raises(InvalidArgument, match="`head` must be one of"):
        TorchAgent(net, obs_space, act_space, head="policy")
    with pytest.raises(IncompatibleSpace, match="Box"):
        TorchAgent(net, obs_space, act_space, head="action")
    with pytest.raises(IncompatibleSpace, match="Discrete"):
        TorchAgent(net, pendulum.observation_space, pendulum.action_space, head="logits")
    with pytest.raises(InvalidType, match="`module`"):
        TorchAgent(lambda x: x, obs_space, act_space, head="logits")  # type: ignore[arg-type]
    with pytest.raises(InvalidType, match="`observation_space`"):
        TorchAgent(net, (4,), act_space, head="logits")  # type: ignore[arg-type]
    with pytest.raises(InvalidType, match="`forward`"):
        TorchAgent(net, obs_space, act_space, head="logits", forward=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="`epsilon`"):
        TorchAgent(net, obs_space, act_space, head="q_values", deterministic=False, epsilon=-0.1)


# -- callables -------------------------------------------------------------------------------------------
def test_callable_unbatched(cartpole: gym.Env[Any, Any]) -> None:
    seen: list[tuple[int, ...]] = []

    def policy(obs: NDArray[Any]) -> int:
        seen.append(obs.shape)
        return int(obs[2] > 0)

    agent = CallableAgent(policy, cartpole.observation_space, cartpole.action_space)
    obs = _observations("CartPole-v1")
    assert agent.deterministic
    np.testing.assert_array_equal(agent.act(obs), (obs[:, 2] > 0).astype(int))
    assert seen == [(4,)] * 64
    assert agent.act_one(np.array([0.0, 0.0, -0.1, 0.0])) == 0
    assert agent.parameters() == {}
    with pytest.raises(NotDifferentiable):
        agent.outputs(agent.tensor(obs))


def test_callable_batched(cartpole: gym.Env[Any, Any]) -> None:
    seen: list[tuple[int, ...]] = []

    def policy(obs: NDArray[Any]) -> NDArray[Any]:
        seen.append(obs.shape)
        return (obs[:, 2] > 0).astype(np.int64)

    agent = CallableAgent(policy, cartpole.observation_space, cartpole.action_space, batched=True)
    obs = _observations("CartPole-v1")
    np.testing.assert_array_equal(agent.act(obs), (obs[:, 2] > 0).astype(np.int64))
    assert seen == [(64, 4)]


def test_callable_with_rng_is_stochastic(cartpole: gym.Env[Any, Any]) -> None:
    given: list[np.random.Generator] = []

    def policy(obs: NDArray[Any], rng: np.random.Generator) -> int:
        given.append(rng)
        return int(rng.integers(2))

    agent = CallableAgent(policy, cartpole.observation_space, cartpole.action_space)
    assert not agent.deterministic
    obs = _observations("CartPole-v1")
    rng = np.random.default_rng(0)
    first = agent.act(obs, rng)
    assert len(given) == 64 and all(g is rng for g in given)
    np.testing.assert_array_equal(first, agent.act(obs, np.random.default_rng(0)))
    with pytest.raises(InvalidArgument, match="`rng` is required"):
        agent.act(obs)
    with pytest.raises(InvalidType, match="`fn`"):
        CallableAgent(3, cartpole.observation_space, cartpole.action_space)  # type: ignore[arg-type]
    with pytest.raises(InvalidType, match="`action_space`"):
        CallableAgent(policy, cartpole.observation_space, 2)  # type: ignore[arg-type]


def test_callable_builtin_without_signature(cartpole: gym.Env[Any, Any]) -> None:
    agent = CallableAgent(len, cartpole.observation_space, gym.spaces.Discrete(5))
    assert agent.deterministic
    np.testing.assert_array_equal(agent.act(np.zeros((3, 4))), [4, 4, 4])


# -- adapt and check_compatible --------------------------------------------------------------------------
def test_adapt_dispatches_on_kind(cartpole: gym.Env[Any, Any]) -> None:
    spaces = (cartpole.observation_space, cartpole.action_space)
    model = _model("PPO", "CartPole-v1")
    from_model = agents.adapt(model)
    assert isinstance(from_model, SB3Agent) and from_model.policy is model.policy
    assert isinstance(agents.adapt(model.policy), SB3Agent)
    assert isinstance(agents.adapt(model, *spaces), SB3Agent)
    stochastic = agents.adapt(model, deterministic=False)
    assert isinstance(stochastic, SB3Agent) and not stochastic.deterministic
    torch_agent = agents.adapt(torch.nn.Linear(4, 2), *spaces, head="logits")
    assert isinstance(torch_agent, TorchAgent) and torch_agent.head == "logits"
    callable_agent = agents.adapt(lambda obs: 0, *spaces)
    assert isinstance(callable_agent, CallableAgent)
    assert agents.adapt(callable_agent) is callable_agent
    assert agents.adapt(from_model, *spaces) is from_model


def test_adapt_errors(cartpole: gym.Env[Any, Any]) -> None:
    spaces = (cartpole.observation_space, cartpole.action_space)
    agent = SB3Agent(_model("PPO", "CartPole-v1"))
    with pytest.raises(InvalidArgument, match="deterministic"):
        agents.adapt(agent, deterministic=False)
    with pytest.raises(InvalidArgument, match="torch module"):
        agents.adapt(torch.nn.Linear(4, 2), head="logits")
    with pytest.raises(InvalidArgument, match="callable"):
        agents.adapt(lambda obs: 0, cartpole.observation_space)
    with pytest.raises(InvalidType, match="`agent` must be"):
        agents.adapt(42, *spaces)
    with pytest.raises(InvalidArgument, match="`head`"):
        agents.adapt(torch.nn.Linear(4, 2), *spaces, head="value")


def test_adapt_sb3_model_to_env_with_widened_observation_bounds() -> None:
    env = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1, clip=False)")
    model = _model("PPO", "CartPole-v1")
    agent = agents.adapt(model, env.observation_space)  # what rlwrappers.evaluate does for an SB3 model
    agents.check_compatible(agent, env)
    obs = _observations("CartPole-v1")
    np.testing.assert_array_equal(agent.act(obs), model.predict(obs, deterministic=True)[0])


def test_check_compatible(cartpole: gym.Env[Any, Any], pendulum: gym.Env[Any, Any]) -> None:
    cartpole_agent = SB3Agent(_model("PPO", "CartPole-v1"))
    agents.check_compatible(cartpole_agent, cartpole)
    with pytest.raises(IncompatibleSpace, match="action_space"):
        agents.check_compatible(cartpole_agent, pendulum)
    wide = rw.wrap(gym.make("Pendulum-v1"), "obs_noise(std=0.1, clip=False)")
    assert wide.observation_space != pendulum.observation_space
    agents.check_compatible(SB3Agent(_model("TD3", "Pendulum-v1")), wide)  # bounds may differ, shapes may not
    three = CallableAgent(lambda obs: 0, cartpole.observation_space, gym.spaces.Discrete(3))
    with pytest.raises(IncompatibleSpace, match="Discrete"):
        agents.check_compatible(three, cartpole)
    other_obs = CallableAgent(lambda obs: 0, gym.spaces.Box(-1, 1, (5,)), cartpole.action_space)
    with pytest.raises(IncompatibleSpace, match="observation_space"):
        agents.check_compatible(other_obs, cartpole)


# -- files -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("algo", "env_id", "expected"),
    [
        ("PPO", "CartPole-v1", "PPO"),
        ("A2C", "CartPole-v1", "PPO"),  # the same policy class: PPO loads it and acts alike
        ("DQN", "CartPole-v1", "DQN"),
        ("SAC", "Pendulum-v1", "SAC"),
        ("TD3", "Pendulum-v1", "TD3"),
    ],
)
def test_load_sb3_zip(tmp_path: Path, algo: str, env_id: str, expected: str) -> None:
    model = _model(algo, env_id)
    path = tmp_path / "model.zip"
    model.save(path)
    assert agents.sb3_algorithm(path) == expected
    agent = zoo.load_agent(path)
    assert isinstance(agent, SB3Agent) and agent.deterministic
    obs = _observations(env_id)
    np.testing.assert_array_equal(agent.act(obs), model.predict(obs, deterministic=True)[0])
    if algo == "TD3":
        with pytest.raises(InvalidArgument, match="TD3"):
            zoo.load_agent(str(path), deterministic=False)
    else:
        assert not zoo.load_agent(str(path), deterministic=False).deterministic


def test_an_sb3_zip_warns_once_unless_trusted(tmp_path: Path) -> None:
    model = _model("PPO", "CartPole-v1")
    first, second = tmp_path / "first.zip", tmp_path / "second.zip"
    model.save(first)
    model.save(second)
    with pytest.warns(UntrustedFileWarning, match=r"first\.zip' unpickles .* trusted=True") as caught:
        zoo.load_agent(first)
    assert len(caught) == 1 and caught[0].filename == __file__  # attributed to the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails from here on
        zoo.load_agent(first)  # once per file
        agents.load_sb3(str(tmp_path / "." / "first.zip"))  # the same file by another path
        zoo.load_agent(second, trusted=True)
        zoo.load_agent(ZOO_AGENT)  # zoo weights run no code
    with pytest.warns(UntrustedFileWarning, match="second"):
        agents.load_sb3(second)  # trusting one load does not trust the file for good
    with pytest.raises(InvalidType, match="`trusted` must be a bool, received 'yes'"):
        agents.load_sb3(second, trusted="yes")  # type: ignore[arg-type]


def _zip_with_data(path: Path, data: dict[str, Any]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data))
    return path


def test_sb3_algorithm_reads_json_without_unpickling(tmp_path: Path) -> None:
    # The pickled part is garbage: reading it would fail, so only the JSON module name is read.
    policy = {":type:": "<class 'abc.ABCMeta'>", ":serialized:": "bm90IGEgcGlja2xl", "__module__": ""}
    for module, algo in [
        ("stable_baselines3.common.policies", "PPO"),
        ("stable_baselines3.dqn.policies", "DQN"),
        ("stable_baselines3.sac.policies", "SAC"),
        ("stable_baselines3.td3.policies", "TD3"),
    ]:
        path = _zip_with_data(tmp_path / f"{algo}.zip", {"policy_class": {**policy, "__module__": module}})
        assert agents.sb3_algorithm(path) == algo
    unknown = _zip_with_data(tmp_path / "other.zip", {"policy_class": {"__module__": "sb3_contrib.qrdqn.policies"}})
    with pytest.raises(InvalidArgument, match="sb3_contrib"):
        agents.sb3_algorithm(unknown)
    no_data = tmp_path / "empty.zip"
    with zipfile.ZipFile(no_data, "w") as archive:
        archive.writestr("policy.pth", b"")
    with pytest.raises(InvalidArgument, match="not a Stable-Baselines3 zip"):
        agents.sb3_algorithm(no_data)


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(MissingFile, match="does not exist"):
        zoo.load_agent(tmp_path / "missing.zip")
    text = tmp_path / "weights.pt"
    text.write_text("not a model")
    with pytest.raises(InvalidArgument, match=r"neither an SB3 \.zip nor FILE\.py:FUNCTION"):
        zoo.load_agent(text)
    fake = tmp_path / "fake.zip"
    fake.write_text("not a zip")
    with pytest.raises(InvalidArgument, match="not a Stable-Baselines3 zip"):
        zoo.load_agent(fake)
    with pytest.raises(InvalidType, match="`agent`"):
        zoo.load_agent(42)  # type: ignore[arg-type]


def test_a_folder_given_as_an_agent_says_what_it_looked_for(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument) as empty:
        zoo.load_agent(tmp_path)
    assert str(empty.value) == (
        f"`agent` {str(tmp_path)!r} is a folder but neither an RL Zoo run folder (ENV.zip beside ENV/config.yml) nor"
        " the flat layout of a published agent (one zip beside config.yml). It looked for .zip files in the folder"
        " and in its subfolders, and found none"
    )
    (tmp_path / "CartPole-v1_1").mkdir()
    (tmp_path / "CartPole-v1_1" / "CartPole-v1.zip").write_bytes(b"")
    (tmp_path / "best_model.zip").write_bytes(b"")
    with pytest.raises(InvalidArgument, match="pass one of them as the agent") as found:
        zoo.load_agent(str(tmp_path))
    listed = f"{str(tmp_path / 'CartPole-v1_1' / 'CartPole-v1.zip')!r}, {str(tmp_path / 'best_model.zip')!r}"
    assert f"and found {listed}" in str(found.value)
    with pytest.raises(UnknownName, match="Did you mean"):
        zoo.load_agent("ppo-CartPol-v1")
    with pytest.raises(UnknownName, match="not a zoo agent"):
        zoo.load_agent(tmp_path / "missing.pt")  # not a file, so taken for a zoo name
    with pytest.raises(InvalidArgument, match="training seed"):
        zoo.load_agent(f"{ZOO_AGENT}@first")


# -- the zoo ---------------------------------------------------------------------------------------------
def test_zoo_names_and_card() -> None:
    assert ZOO_AGENT in zoo.names()
    info = zoo.card(ZOO_AGENT)
    assert info["algo"] == "PPO"
    assert info["env_id"] == "CartPole-v1"
    assert info["trained_under"] is None
    assert set(info["seeds"]) >= {"0", "1", "2"}
    episodes = info["evaluation"]["episodes"]
    for entry in info["seeds"].values():
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])
        assert (zoo.DIRECTORY / entry["file"]).exists()
        clean = entry["returns"]["clean"]
        assert len(clean["returns"]) == episodes
        assert clean["mean"] == pytest.approx(np.mean(clean["returns"]))
    with pytest.raises(UnknownName, match=f"Did you mean `{ZOO_AGENT}`"):
        zoo.card("ppo-CartPole-v2")


def test_zoo_load() -> None:
    agent = zoo.load_agent(ZOO_AGENT, seed=1)
    assert isinstance(agent, SB3Agent) and agent.deterministic
    assert agent.action_space == gym.spaces.Discrete(2)
    assert not zoo.load_agent(ZOO_AGENT, deterministic=False).deterministic
    obs = _observations("CartPole-v1")
    np.testing.assert_array_equal(zoo.load_agent(f"{ZOO_AGENT}@1").act(obs), agent.act(obs))
    seed0 = zoo.load_agent(ZOO_AGENT, seed=0)
    np.testing.assert_array_equal(zoo.load_agent(ZOO_AGENT).act(obs), seed0.act(obs))  # seed 0 by default
    assert not zoo.load_agent(ZOO_AGENT, deterministic=False).deterministic
    pairs = zip(agent.parameters().values(), seed0.parameters().values(), strict=True)
    assert not all(torch.equal(a, b) for a, b in pairs)
    with pytest.raises(InvalidArgument, match="`seed` must be one of"):
        zoo.load_agent(ZOO_AGENT, seed=99)


def _episode_return(agent: Agent, env_id: str, seed: int) -> float:
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(agent.act_one(obs))
        total += float(reward)
        done = terminated or truncated
    env.close()
    return total


def test_zoo_weights_reproduce_the_card() -> None:
    info = zoo.card(ZOO_AGENT)
    first_seed = info["evaluation"]["first_seed"]
    assert first_seed == 10_000
    agent = zoo.load_agent(ZOO_AGENT, seed=0)
    assert isinstance(agent, SB3Agent)
    state = torch.load(zoo.DIRECTORY / info["seeds"]["0"]["file"], weights_only=True)
    assert all(torch.equal(t, state[name]) for name, t in agent.policy.state_dict().items())
    expected = info["seeds"]["0"]["returns"]["clean"]["returns"][0]
    assert _episode_return(agent, info["env_id"], first_seed) == expected


#: The clean agents of classic control, Box2D and MuJoCo, one per acting module a zoo card names (policy, q_net,
#: actor).
CLASSIC_ZOO_AGENTS = [
    "ppo-Acrobot-v1",
    "dqn-MountainCar-v0",
    "td3-MountainCarContinuous-v0",
    "ppo-LunarLander-v3",
    "ppo-InvertedPendulum-v5",
    "ppo-InvertedDoublePendulum-v5",
]


@pytest.mark.parametrize("name", CLASSIC_ZOO_AGENTS)
def test_classic_zoo_agents_load_and_replay_their_cards_first_episode(name: str) -> None:
    info = zoo.card(name)
    assert info["trained_under"] is None and set(info["seeds"]) == {"0", "1", "2"}
    agent = zoo.load_agent(name, seed=2)
    state = torch.load(zoo.DIRECTORY / info["seeds"]["2"]["file"], weights_only=True)
    module = agent.policy if info["module"] == "policy" else getattr(agent.policy, info["module"])
    assert all(torch.equal(t, state[key]) for key, t in module.state_dict().items())
    expected = info["seeds"]["2"]["returns"]["clean"]["returns"][0]
    assert _episode_return(agent, info["env_id"], info["evaluation"]["first_seed"]) == expected


def test_a_stochastic_zoo_dqn_agent_explores_at_its_final_exploration_rate() -> None:
    name = "dqn-MountainCar-v0"
    epsilon = zoo.card(name)["hyperparameters"]["exploration_final_eps"]
    greedy = zoo.load_agent(name)
    agent = zoo.load_agent(name, deterministic=False)
    assert isinstance(greedy, SB3Agent) and greedy.epsilon is None
    assert isinstance(agent, SB3Agent) and agent.epsilon == epsilon
    obs = np.repeat(_observations("MountainCar-v0", n=1), 20_000, axis=0)
    changed = np.mean(agent.act(obs, np.random.default_rng(0)) != greedy.act(obs))
    assert changed == pytest.approx(epsilon * 2 / 3, abs=0.01)  # a uniform draw of 3 actions keeps the greedy one


def test_adapt_accepts_zoo_agent(cartpole: gym.Env[Any, Any]) -> None:
    agent = zoo.load_agent(ZOO_AGENT)
    assert agents.adapt(agent) is agent
    agents.check_compatible(agent, cartpole)


def test_epsilon_only_where_it_applies() -> None:
    with pytest.raises(InvalidArgument, match="DQN policies only"):
        SB3Agent(_model("PPO", "CartPole-v1"), epsilon=0.1)
    env = gym.make("CartPole-v1")
    with pytest.raises(InvalidArgument, match="'q_values' only"):
        TorchAgent(torch.nn.Linear(4, 2), env.observation_space, env.action_space, head="logits", epsilon=0.1)


def test_agents_load_where_asked_and_refuse_a_device_this_machine_lacks(tmp_path):
    import torch

    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    default = zoo.load_agent("ppo-CartPole-v1")
    on_cpu = zoo.load_agent("ppo-CartPole-v1", device="cpu")
    np.testing.assert_array_equal(on_cpu.act(obs), default.act(obs))
    assert on_cpu.outputs(torch.as_tensor(obs)).logits.device.type == "cpu"
    with pytest.raises(InvalidArgument, match="must be a CPU or CUDA device, received 'meta'"):
        zoo.load_agent("ppo-CartPole-v1", device="meta")
    with pytest.raises(InvalidArgument, match="must be a torch device name such as 'cpu' or 'cuda', received 'gpu'"):
        zoo.load_agent("ppo-CartPole-v1", device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(InvalidArgument, match="asks for a GPU, and torch sees none on this machine"):
            zoo.load_agent("ppo-CartPole-v1", device="cuda")
