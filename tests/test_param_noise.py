"""Parameter noise: Gaussian noise on an attached agent's weights, restored bit for bit."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import DQN, PPO

import rlwrappers as rw
from rlwrappers import seeding
from rlwrappers.agents import Agent, CallableAgent, SB3Agent, TorchAgent
from rlwrappers.core import INFO_KEY
from rlwrappers.error import InvalidArgument
from rlwrappers.wrappers.policy import (
    ParameterNoise,
    ParameterNoisePerturbation,
    add_noise,
    add_parameter_noise,
    draw_noise,
    l2_norm,
    noisy_parameters,
    restore,
)

Weights = dict[str, torch.Tensor]


@pytest.fixture
def agent() -> SB3Agent:
    return SB3Agent(PPO("MlpPolicy", "CartPole-v1", seed=0, device="cpu"))


def _snapshot(agent: SB3Agent) -> Weights:
    """Every tensor of the policy (value head included), copied."""
    return {name: t.detach().clone() for name, t in agent.policy.state_dict().items()}


def _equal(agent: SB3Agent, weights: Weights) -> bool:
    """Whether the policy's tensors equal ``weights`` bit for bit."""
    return all(torch.equal(t, weights[name]) for name, t in agent.policy.state_dict().items())


def _delta_norm(agent: Agent, clean: Weights) -> float:
    """The L2 norm of (perturbed - clean) over the agent's perturbed tensors, in float64."""
    total = sum(float(((t.detach().double() - clean[n].double()) ** 2).sum()) for n, t in agent.parameters().items())
    return float(np.sqrt(total))


def _cartpole_obs(n: int = 64) -> np.ndarray[Any, Any]:
    space = gym.make("CartPole-v1").observation_space
    space.seed(0)
    return np.stack([space.sample() for _ in range(n)])


# -- the wrapper: restoring -------------------------------------------------------------------------------
def test_weights_are_noisy_during_an_episode_and_restored_at_reset_and_close(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent)
    _, info = env.reset(seed=0)
    assert info[INFO_KEY]["param_noise"]["active"] is True
    assert not _equal(agent, clean)
    first = _snapshot(agent)
    for t in range(10):
        _, _, terminated, truncated, info = env.step(t % 2)
        assert info[INFO_KEY]["param_noise"] == {"active": True}
        assert _equal(agent, first)  # the noise holds for the whole episode
        if terminated or truncated:
            break
    env.reset()
    second = _snapshot(agent)
    assert not _equal(agent, clean) and not _equal(agent, first)  # fresh noise per episode
    env.close()
    assert _equal(agent, clean)
    assert not _equal(agent, second)


def test_reset_restores_before_drawing_new_noise(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent)
    for episode in range(4):
        _, info = env.reset(seed=None if episode else 0)
        # the reported noise sits on the clean weights, not on the previous episode's noisy ones
        assert _delta_norm(agent, clean) == pytest.approx(info[INFO_KEY]["param_noise"]["norm"], rel=1e-5)
    env.close()
    assert _equal(agent, clean)


def test_weights_restored_when_the_schedule_switches_off(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent, when="window(start=2, stop=5)")
    _, info = env.reset(seed=0)
    assert INFO_KEY not in info
    noisy = []
    for t in range(1, 8):
        _, _, terminated, truncated, info = env.step(t % 2)
        assert not (terminated or truncated)
        if 2 <= t < 5:
            assert not _equal(agent, clean), f"time {t}"
            noisy.append(_snapshot(agent))
        else:
            assert _equal(agent, clean), f"time {t}"
        if t == 2:  # switched on for time 2: the step that returns the observation of time 2 reports the draw
            assert info[INFO_KEY]["param_noise"]["norm"] == pytest.approx(_delta_norm(agent, clean), rel=1e-5)
        elif 3 <= t <= 5:  # the step that takes the action of time t - 1 reports it
            assert info[INFO_KEY]["param_noise"] == {"active": True}
        else:
            assert INFO_KEY not in info
    assert len(noisy) == 3
    assert all(torch.equal(n[k], noisy[0][k]) for n in noisy for k in n)  # one draw for the whole window
    env.close()
    assert _equal(agent, clean)


def test_close_mid_window_restores(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent, when="window(start=1, stop=50)")
    env.reset(seed=0)
    assert _equal(agent, clean)
    env.step(0)
    env.step(1)
    assert not _equal(agent, clean)
    env.close()
    assert _equal(agent, clean)


def test_reset_mid_window_restores_then_starts_clean(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent, when="window(start=1, stop=50)")
    env.reset(seed=0)
    env.step(0)
    assert not _equal(agent, clean)
    env.reset(seed=1)
    assert _equal(agent, clean)  # the window opens at time 1 of the new episode
    env.close()


def test_stacked_layers_on_one_agent_restore_exactly(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = rw.wrap(rw.ParameterNoise(gym.make("CartPole-v1"), std=0.05), "param_noise(std=0.2)")
    assert rw.attach(env, agent) == 2
    for seed in (0, 1, None):
        env.reset(seed=seed)
        assert not _equal(agent, clean)
        env.step(0)
    env.close()
    assert _equal(agent, clean)


# -- the wrapper: randomness -----------------------------------------------------------------------------
def test_same_reset_seed_gives_the_same_noise(agent: SB3Agent) -> None:
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent)
    env.reset(seed=5)
    first = _snapshot(agent)
    env.reset(seed=6)
    other = _snapshot(agent)
    env.reset(seed=5)
    assert _equal(agent, first)
    assert not _equal(agent, other)
    env.close()

    again = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent)  # a new wrapper, the same seed
    again.reset(seed=5)
    assert _equal(agent, first)
    again.close()


def test_noise_comes_from_the_layer_effect_generator(agent: SB3Agent) -> None:
    params = agent.parameters()
    clean = {n: t.detach().clone() for n, t in params.items()}
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent)
    _, info = env.reset(seed=3)
    noise = draw_noise(params, 0.1, seeding.generator(3, 0, "param_noise", seeding.EFFECT))
    for (name, tensor), delta in zip(params.items(), noise, strict=True):
        assert torch.equal(tensor, clean[name] + torch.from_numpy(delta)), name
    expected = float(np.sqrt(sum(float(np.dot(n.ravel().astype(np.float64), n.ravel())) for n in noise)))
    assert info[INFO_KEY]["param_noise"]["norm"] == pytest.approx(expected, rel=1e-6)
    env.close()


def test_noise_touches_only_the_agent_parameters(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent)
    env.reset(seed=0)
    state = agent.policy.state_dict()
    value_head = [n for n in state if n.startswith(("value_net.", "mlp_extractor.value_net."))]
    assert value_head
    for name in value_head:
        assert torch.equal(state[name], clean[name]), name
    for name in agent.parameters():
        assert not torch.equal(state[name], clean[name]), name
    env.close()


def test_noise_changes_actions(agent: SB3Agent) -> None:
    obs = _cartpole_obs()
    clean_actions = agent.act(obs)
    env = ParameterNoise(gym.make("CartPole-v1"), std=1.0, agent=agent)
    env.reset(seed=0)
    assert not np.array_equal(agent.act(obs), clean_actions)
    env.close()
    np.testing.assert_array_equal(agent.act(obs), clean_actions)


def test_zero_std_leaves_weights_equal(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.0, agent=agent)
    _, info = env.reset(seed=0)
    assert info[INFO_KEY]["param_noise"]["norm"] == 0.0
    assert _equal(agent, clean)
    env.close()


# -- the log ---------------------------------------------------------------------------------------------
def test_log_records_the_norm_of_the_weight_change(agent: SB3Agent, tmp_path: Path) -> None:
    clean = _snapshot(agent)
    env = rw.Recorder(ParameterNoise(gym.make("CartPole-v1"), std=0.1), tmp_path / "run")
    assert rw.attach(env, agent) == 1  # through the Recorder, as the evaluation runner does
    norms, reported = [], []
    for seed in (0, 1, 2):
        obs, info = env.reset(seed=seed)
        norms.append(_delta_norm(agent, clean))
        reported.append(info[INFO_KEY]["param_noise"]["norm"])
        done, t = False, 0
        while not done and t < 50:
            obs, _, terminated, truncated, _ = env.step(agent.act_one(obs))
            done, t = terminated or truncated, t + 1
    env.close()
    assert _equal(agent, clean)
    log = rw.read_log(tmp_path / "run")
    assert "param_noise.norm" in log.episodes.columns
    assert list(log.episodes["param_noise.active"]) == [True, True, True]
    logged = log.episodes["param_noise.norm"].to_numpy(dtype=np.float64)
    np.testing.assert_allclose(logged, reported, rtol=0)
    np.testing.assert_allclose(logged, norms, rtol=1e-5)
    assert len(set(logged)) == 3
    assert log.steps["param_noise.active"].all()
    perturbation = log.meta["perturbations"][0]
    assert perturbation["channel"] == "policy"
    assert perturbation["params"] == {"std": 0.1}


# -- attaching ---------------------------------------------------------------------------------------------
def test_reset_without_an_agent_raises(agent: SB3Agent) -> None:
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1)
    with pytest.raises(InvalidArgument, match=r"rlwrappers\.attach"):
        env.reset(seed=0)
    assert rw.attach(env, agent) == 1
    clean = _snapshot(agent)
    env.reset(seed=0)
    assert not _equal(agent, clean)
    env.close()
    assert _equal(agent, clean)


def test_attach_counts_policy_perturbations(agent: SB3Agent) -> None:
    assert rw.attach(gym.make("CartPole-v1"), agent) == 0
    assert rw.attach(rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)"), agent) == 0
    env = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)", "param_noise(std=0.1)", "reward_noise(std=1.0)")
    assert rw.attach(env, agent) == 1
    stacked = rw.ParameterNoise(rw.wrap(env, "param_noise(std=0.2)"), std=0.3)
    assert rw.attach(stacked, agent) == 3
    outer = rw.wrap(stacked, "action_noise(p=0.1)")
    assert rw.attach(outer, agent) == 3


def test_attach_rejects_agents_without_parameters() -> None:
    env = gym.make("CartPole-v1")
    callable_agent = CallableAgent(lambda obs: 0, env.observation_space, env.action_space)
    wrapped = rw.wrap(env, "param_noise(std=0.1)")
    with pytest.raises(InvalidArgument, match="network parameters"):
        rw.attach(wrapped, callable_agent)
    with pytest.raises(InvalidArgument, match="network parameters"):
        ParameterNoise(gym.make("CartPole-v1"), agent=callable_agent)
    with pytest.raises(InvalidArgument, match="callable"):
        rw.attach(wrapped, lambda obs: 0)  # a bare function cannot be adapted without spaces


def test_other_perturbations_take_no_agent(agent: SB3Agent) -> None:
    env = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)")
    with pytest.raises(InvalidArgument, match="takes no agent"):
        env.perturbations[0].attach(agent)


def test_attach_an_sb3_model_directly() -> None:
    model = DQN("MlpPolicy", "CartPole-v1", seed=0, device="cpu")
    clean = {n: t.detach().clone() for n, t in model.policy.state_dict().items()}
    env = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=model)
    env.reset(seed=0)
    state = model.policy.state_dict()
    assert not torch.equal(state["q_net.q_net.0.weight"], clean["q_net.q_net.0.weight"])
    assert torch.equal(state["q_net_target.q_net.0.weight"], clean["q_net_target.q_net.0.weight"])
    env.close()
    assert all(torch.equal(t, clean[n]) for n, t in model.policy.state_dict().items())


def test_torch_agent_is_perturbed_and_restored() -> None:
    env = gym.make("CartPole-v1")
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    agent = TorchAgent(net, env.observation_space, env.action_space, head="logits")
    clean = {n: t.detach().clone() for n, t in net.state_dict().items()}
    wrapped = ParameterNoise(env, std=0.05, agent=agent)
    wrapped.reset(seed=0)
    assert all(not torch.equal(t, clean[n]) for n, t in net.state_dict().items())
    wrapped.close()
    assert all(torch.equal(t, clean[n]) for n, t in net.state_dict().items())


# -- specs and arguments ---------------------------------------------------------------------------------
def test_spec_string(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = rw.wrap(gym.make("CartPole-v1"), "param_noise(std=0.1)")
    assert env.specs == ["param_noise(std=0.1)"]
    perturbation = env.perturbations[0]
    assert isinstance(perturbation, ParameterNoisePerturbation)
    assert perturbation.std == 0.1 and perturbation.channel == "policy"
    assert rw.attach(env, agent) == 1
    _, info = env.reset(seed=0)
    assert info[INFO_KEY]["param_noise"]["norm"] == pytest.approx(_delta_norm(agent, clean), rel=1e-5)
    env.close()
    assert _equal(agent, clean)


def test_spec_string_with_schedule(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    env = rw.wrap(gym.make("CartPole-v1"), "param_noise(std=0.1, when=starting(episode=1))")
    rw.attach(env, agent)
    _, info = env.reset(seed=0)
    assert INFO_KEY not in info and _equal(agent, clean)
    _, info = env.reset()
    assert info[INFO_KEY]["param_noise"]["active"] and not _equal(agent, clean)
    env.close()
    assert _equal(agent, clean)


def test_wrapper_matches_spec(agent: SB3Agent) -> None:
    by_class = ParameterNoise(gym.make("CartPole-v1"), std=0.1, agent=agent)
    _, info_class = by_class.reset(seed=4)
    by_class_weights = _snapshot(agent)
    by_class.close()
    by_spec = rw.wrap(gym.make("CartPole-v1"), "param_noise(std=0.1)")
    rw.attach(by_spec, agent)
    _, info_spec = by_spec.reset(seed=4)
    assert _equal(agent, by_class_weights)
    assert info_class[INFO_KEY] == info_spec[INFO_KEY]
    by_spec.close()


def test_negative_std_raises(agent: SB3Agent) -> None:
    with pytest.raises(InvalidArgument, match=r"`std` must be >= 0, received -1\.0"):
        ParameterNoise(gym.make("CartPole-v1"), std=-1.0)
    with pytest.raises(InvalidArgument, match="`std` must be >= 0"):
        ParameterNoisePerturbation(std=-0.5)
    with pytest.raises(InvalidArgument, match="`std` must be >= 0"):
        rw.wrap(gym.make("CartPole-v1"), "param_noise(std=-0.1)")
    with (
        pytest.raises(InvalidArgument, match="`std` must be >= 0"),
        noisy_parameters(agent, -1.0, np.random.default_rng(0)),
    ):
        pass


# -- functions -------------------------------------------------------------------------------------------
def test_noisy_parameters_restores_after_the_block(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    with noisy_parameters(agent, 0.1, np.random.default_rng(0)) as norm:
        assert not _equal(agent, clean)
        assert norm == pytest.approx(_delta_norm(agent, clean), rel=1e-5)
    assert _equal(agent, clean)


def test_noisy_parameters_restores_on_exceptions(agent: SB3Agent) -> None:
    clean = _snapshot(agent)
    with pytest.raises(RuntimeError, match="inside"), noisy_parameters(agent, 0.1, np.random.default_rng(0)):
        assert not _equal(agent, clean)
        raise RuntimeError("inside")
    assert _equal(agent, clean)


def test_draw_noise_shapes_dtype_and_seed(agent: SB3Agent) -> None:
    params = agent.parameters()
    noise = draw_noise(params, 0.5, np.random.default_rng(0))
    assert [n.shape for n in noise] == [tuple(t.shape) for t in params.values()]
    assert all(n.dtype == np.float32 for n in noise)
    again = draw_noise(params, 0.5, np.random.default_rng(0))
    assert all(np.array_equal(a, b) for a, b in zip(noise, again, strict=True))
    flat = np.concatenate([n.ravel() for n in noise])
    assert flat.std() == pytest.approx(0.5, rel=0.05)
    assert abs(flat.mean()) < 0.02


def test_add_noise_and_restore_are_exact(agent: SB3Agent) -> None:
    params = agent.parameters()
    clean = {n: t.detach().clone() for n, t in params.items()}
    noise = draw_noise(params, 0.1, np.random.default_rng(1))
    saved = add_noise(params, noise)
    for (name, tensor), delta in zip(params.items(), noise, strict=True):
        assert torch.equal(tensor, clean[name] + torch.from_numpy(delta))
    restore(saved)
    assert all(torch.equal(t, clean[n]) for n, t in params.items())
    with pytest.raises(ValueError):
        add_noise(params, noise[:-1])


def test_the_norm_is_the_exact_one_to_float64_rounding() -> None:
    # Squares of float32 values are exact in float64; numpy's pairwise sum of 100,003 of them stays within a few
    # float64 roundings of the exact sum (math.fsum), where a float32 BLAS dot strays by about 1e-7.
    noise = [np.random.default_rng(0).standard_normal(n, dtype=np.float32) for n in (100_003, 7, 1)]
    exact = math.sqrt(math.fsum(float(v) ** 2 for a in noise for v in a))
    assert l2_norm(noise) == pytest.approx(exact, rel=1e-14, abs=0.0)
    assert l2_norm([]) == 0.0


def test_add_parameter_noise_returns_the_norm(agent: SB3Agent) -> None:
    params = agent.parameters()
    clean = _snapshot(agent)
    saved, norm = add_parameter_noise(params, 0.2, np.random.default_rng(2))
    expected = np.linalg.norm(np.concatenate([n.ravel() for n in draw_noise(params, 0.2, np.random.default_rng(2))]))
    assert norm == pytest.approx(float(expected), rel=1e-6)
    assert norm == pytest.approx(_delta_norm(agent, clean), rel=1e-5)
    restore(saved)
    assert _equal(agent, clean)
