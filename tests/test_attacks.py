"""Gradient attacks: equal to torchattacks, inside their spaces, recorded decision by decision, on real agents."""

from __future__ import annotations

import warnings
from pathlib import Path

import ale_py
import gymnasium as gym
import numpy as np
import pytest
import torch

import rlwrappers as rw
from rlwrappers import error
from rlwrappers.agents import CallableAgent, TorchAgent
from rlwrappers.functional import attacks
from rlwrappers.testing import check_wrapper

torchattacks = pytest.importorskip("torchattacks")
gym.register_envs(ale_py)

SHARED_AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents"


def shared_agent(name: str) -> Path:
    path = SHARED_AGENTS / name
    if not path.exists():
        pytest.skip(f"{path} is not here (the trained Atari agents live in shared/agents beside the repository)")
    return path


def breakout(terminal_on_life_loss: bool = True) -> gym.Env:
    """Breakout as SB3's Atari agents were trained on it, with the frame stack inside the env: (4, 84, 84)."""
    from stable_baselines3.common.atari_wrappers import AtariWrapper

    env = AtariWrapper(
        gym.make("BreakoutNoFrameskip-v4"), terminal_on_life_loss=terminal_on_life_loss, clip_reward=False
    )
    env = gym.wrappers.ReshapeObservation(env, (84, 84))
    return gym.wrappers.FrameStackObservation(env, 4)


@pytest.fixture(scope="module")
def ppo_breakout() -> rw.agents.Agent:
    return rw.load_agent(
        shared_agent("ppo-BreakoutNoFrameskip-v4-seed0.zip"), observation_space=breakout().observation_space
    )


@pytest.fixture(scope="module")
def breakout_states() -> np.ndarray:
    """Eight stacked observations from a real Breakout game."""
    env = breakout()
    obs, _ = env.reset(seed=3)
    states = []
    for t in range(40):
        obs, *_ = env.step(1 if t < 2 else t % 4)
        if t % 5 == 4:
            states.append(obs)
    return np.stack(states)


def linear_cartpole(seed: int = 0) -> tuple[gym.Env, TorchAgent]:
    torch.manual_seed(seed)
    env = gym.make("CartPole-v1")
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    return env, TorchAgent(net, env.observation_space, env.action_space, head="logits")


class PixelModel(torch.nn.Module):
    """The agent's scores as a function of [0, 1] pixels: what torchattacks expects to attack."""

    def __init__(self, agent: rw.agents.Agent):
        super().__init__()
        self.agent = agent
        self.policy = agent.policy  # registers the parameters, so torchattacks finds the device

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.agent.outputs(x * 255.0).scores


# -- equal to torchattacks ----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.002, 0.01, 0.1])
def test_fgsm_before_requantization_equals_torchattacks_on_the_ppo_breakout_agent(ppo_breakout, breakout_states, eps):
    env = rw.FGSM(breakout(), eps=eps, agent=ppo_breakout)
    attack = env.perturbations[0]
    ours = attack.attack(breakout_states, np.random.default_rng(0))

    x01 = torch.as_tensor(breakout_states, dtype=torch.float32) / 255.0
    model = PixelModel(ppo_breakout)
    labels = model(x01).argmax(-1)
    theirs = torchattacks.FGSM(model, eps=eps)(x01, labels)

    assert torch.equal(ours.adversarial, theirs)
    assert np.array_equal(ours.clean_action, labels.numpy())
    assert np.array_equal(ours.observations, np.rint(theirs.numpy().astype(np.float64) * 255).astype(np.uint8))


@pytest.mark.slow
def test_fgsm_and_pgd_equal_torchattacks_on_the_dqn_agents_q_values(breakout_states):
    space = breakout().observation_space
    dqn = rw.load_agent(shared_agent("dqn-BreakoutNoFrameskip-v4-seed0.zip"), observation_space=space)
    x01 = torch.as_tensor(breakout_states, dtype=torch.float32) / 255.0
    model = PixelModel(dqn)
    labels = model(x01).argmax(-1)

    fgsm = rw.FGSM(breakout(), eps=0.01, agent=dqn).perturbations[0]
    assert torch.equal(
        fgsm.attack(breakout_states, np.random.default_rng(0)).adversarial,
        torchattacks.FGSM(model, eps=0.01)(x01, labels),
    )

    pgd = rw.PGD(breakout(), eps=0.01, alpha=0.004, steps=3, random_start=False, agent=dqn).perturbations[0]
    expected = torchattacks.PGD(model, eps=0.01, alpha=0.004, steps=3, random_start=False)(x01, labels)
    assert torch.equal(pgd.attack(breakout_states, np.random.default_rng(0)).adversarial, expected)


# -- units, bounds and re-quantization ------------------------------------------------------------------
@pytest.mark.slow
def test_an_eps_below_half_a_grey_level_warns_and_changes_nothing(ppo_breakout, breakout_states):
    with pytest.warns(UserWarning, match="below half a grey level"):
        env = rw.FGSM(breakout(), eps=0.001, agent=ppo_breakout)
    result = env.perturbations[0].attack(breakout_states, np.random.default_rng(0))
    assert np.array_equal(result.observations, breakout_states)
    assert not result.linf.any() and not result.l2.any()
    assert float((result.adversarial - torch.as_tensor(breakout_states) / 255.0).abs().max()) > 0  # erased by rounding


@pytest.mark.slow
def test_delivered_sizes_move_in_whole_grey_levels_unless_quantize_is_off(ppo_breakout, breakout_states):
    rounded = rw.FGSM(breakout(), eps=0.005, agent=ppo_breakout).perturbations[0].attack(breakout_states, None)
    assert rounded.observations.dtype == np.uint8
    assert np.allclose(rounded.linf, 1 / 255)  # 0.005 is 1.3 grey levels: one level after rounding

    env = rw.FGSM(breakout(), eps=0.005, quantize=False, agent=ppo_breakout)
    assert env.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.float32)
    exact = env.perturbations[0].attack(breakout_states, None)
    assert exact.observations.dtype == np.float32
    assert np.allclose(exact.linf, 0.005, atol=1e-6)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space


def test_vector_observations_are_attacked_in_their_own_units_and_stay_in_the_space():
    env = gym.make("MountainCar-v0")  # bounded: position in [-1.2, 0.6], velocity in [-0.07, 0.07]
    torch.manual_seed(0)
    agent = TorchAgent(torch.nn.Linear(2, 3), env.observation_space, env.action_space, head="q_values")
    attack = rw.FGSM(env, eps=0.5, agent=agent).perturbations[0]
    obs = np.array([[-1.0, 0.0], [0.5, 0.06], [-0.5, -0.06]], dtype=np.float32)
    result = attack.attack(obs, None)
    assert all(o in env.observation_space for o in result.observations)
    assert np.any(result.observations != obs)
    assert result.observations.dtype == np.float32


def test_fgsm_moves_every_coordinate_by_eps_on_an_unbounded_space():
    env, agent = linear_cartpole()
    attack = rw.FGSM(env, eps=0.05, agent=agent).perturbations[0]
    obs = np.array([[0.01, 0.2, 0.02, -0.1]], dtype=np.float32)
    result = attack.attack(obs, None)
    assert np.allclose(np.abs(result.observations - obs), 0.05, atol=1e-6)
    assert np.isclose(result.linf[0], 0.05, atol=1e-6) and np.isclose(result.l2[0], 0.1, atol=1e-6)


# -- the log --------------------------------------------------------------------------------------------
def test_each_step_row_records_the_decision_made_on_the_attacked_observation(tmp_path):
    agent = rw.load_agent("ppo-CartPole-v1")
    env = rw.Recorder(rw.FGSM(gym.make("CartPole-v1"), eps=0.2, agent=agent), tmp_path / "log")
    for seed in range(2):
        obs, info = env.reset(seed=seed)
        assert "rlwrappers" not in info  # the reset observation's record comes with the first step
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(agent.act_one(obs))
            done = terminated or truncated
    env.close()
    steps = rw.read_log(tmp_path / "log").steps
    assert steps["fgsm.active"].all()
    assert (steps["fgsm.action"] == steps["action"]).all()
    assert (steps["fgsm.flipped"] == (steps["fgsm.action"] != steps["fgsm.clean_action"])).all()
    assert steps["fgsm.flipped"].any() and not steps["fgsm.flipped"].all()
    assert np.allclose(steps["fgsm.linf"], 0.2, atol=1e-6)


def test_the_clean_action_is_the_agents_own_greedy_action():
    env, agent = linear_cartpole()
    env = rw.FGSM(env, eps=0.2, agent=agent)
    inner = env.env
    env.reset(seed=0)
    clean_obs = inner.unwrapped.state.astype(np.float32)  # CartPole's observation is its state
    _, _, _, _, info = env.step(0)
    assert info["rlwrappers"]["fgsm"]["clean_action"] == agent.act_one(clean_obs)
    assert info["rlwrappers"]["fgsm"]["action"] == 0


def test_schedules_switch_the_attack_and_its_records():
    env, agent = linear_cartpole()
    env = rw.FGSM(env, eps=0.2, agent=agent, when="starting(episode=1) & prob(p=0.5)")
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        obs, _, terminated, truncated, info = env.step(agent.act_one(obs))
        assert "rlwrappers" not in info
        if terminated or truncated:
            break
    active = []
    obs, _ = env.reset()
    for _ in range(40):
        obs, _, terminated, truncated, info = env.step(agent.act_one(obs))
        active.append("fgsm" in info.get("rlwrappers", {}))
        if terminated or truncated:
            break
    assert any(active) and not all(active)


def test_an_attack_from_a_spec_string_takes_its_agent_from_attach():
    env, agent = linear_cartpole()
    env = rw.wrap(env, "fgsm(eps=0.1)")
    with pytest.raises(error.InvalidArgument, match="no agent to attack"):
        env.reset(seed=0)
    assert rw.attach(env, agent) == 1
    obs, _ = env.reset(seed=0)
    _, _, _, _, info = env.step(agent.act_one(obs))
    assert info["rlwrappers"]["fgsm"]["linf"] == pytest.approx(0.1)


@pytest.mark.parametrize(
    "wrap",
    [
        lambda env, agent: rw.FGSM(env, eps=0.1, agent=agent),
        lambda env, agent: rw.PGD(env, eps=0.1, steps=3, agent=agent),
        lambda env, agent: rw.CarliniWagner(env, steps=5, agent=agent),
    ],
    ids=["fgsm", "pgd", "cw"],
)
def test_attack_wrappers_pass_the_contract(wrap):
    _, agent = linear_cartpole()
    ran = check_wrapper(
        lambda: gym.make("CartPole-v1"), lambda env: wrap(env, agent), steps=30, vector=False, spec=False
    )
    assert "check_determinism" in ran


def test_pgd_stays_in_its_ball_and_is_seeded():
    env, agent = linear_cartpole()
    attack = rw.PGD(env, eps=0.05, steps=5, agent=agent).perturbations[0]
    obs = np.random.default_rng(0).normal(0, 0.1, (16, 4)).astype(np.float32)
    first = attack.attack(obs, np.random.default_rng(7))
    again = attack.attack(obs, np.random.default_rng(7))
    other = attack.attack(obs, np.random.default_rng(8))
    assert np.all(first.linf <= 0.05 + 1e-6)
    assert np.array_equal(first.observations, again.observations)
    assert not np.array_equal(first.observations, other.observations)


def test_pgd_attacks_continuous_actions():
    env = gym.make("Pendulum-v1")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    agent = TorchAgent(net, env.observation_space, env.action_space, head="action")
    attack = rw.PGD(env, eps=0.1, steps=10, agent=agent).perturbations[0]
    obs = np.random.default_rng(0).uniform(-1, 1, (32, 3)).astype(np.float32)
    result = attack.attack(obs, np.random.default_rng(0))
    clean = agent.act(obs)
    moved = np.abs(agent.act(result.observations) - clean)
    random = np.abs(
        agent.act(np.clip(obs + np.random.default_rng(1).uniform(-0.1, 0.1, obs.shape), -8, 8).astype(np.float32))
        - clean
    )
    assert np.allclose(result.clean_action, clean, atol=1e-6)
    assert moved.mean() > 2 * random.mean()  # the attack moves the action further than noise of the same size


def test_carlini_wagner_finds_small_perturbations_that_flip_the_action():
    env, agent = linear_cartpole()
    attack = rw.CarliniWagner(env, c=10.0, steps=100, lr=0.01, agent=agent).perturbations[0]
    obs = np.random.default_rng(0).normal(0, 0.05, (32, 4)).astype(np.float32)
    result = attack.attack(obs, None)
    flipped = agent.act(result.observations) != result.clean_action
    assert flipped.mean() > 0.5
    assert np.all(result.l2[~flipped] == 0)  # unflipped observations are returned clean
    assert result.l2[flipped].max() < 1.0


# -- end to end on the PPO Breakout agent ---------------------------------------------------------------
def _play(agent: rw.agents.Agent, env: gym.Env, episodes: int) -> tuple[float, float]:
    returns, flips = [], []
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act_one(obs))
            total += float(reward)
            done = terminated or truncated
            flips.append(info.get("rlwrappers", {}).get("fgsm", {}).get("flipped", False))
        returns.append(total)
    return float(np.mean(returns)), float(np.mean(flips))


@pytest.mark.slow
def test_the_ppo_breakout_agent_responds_to_eps_between_0002_and_001(ppo_breakout, tmp_path):
    clean_return, _ = _play(ppo_breakout, breakout(), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        erased = _play(ppo_breakout, rw.FGSM(breakout(), eps=0.001, agent=ppo_breakout), 3)
    assert erased == (clean_return, 0.0)  # below half a grey level: exactly the clean games

    curve = [
        _play(ppo_breakout, rw.FGSM(breakout(), eps=eps, quantize=False, agent=ppo_breakout), 3)
        for eps in (0.002, 0.004, 0.01)
    ]
    returns, flip_rates = zip(*curve, strict=True)
    assert clean_return > returns[0] >= returns[-1] == 0.0
    assert flip_rates[0] < flip_rates[1] <= flip_rates[2]
    assert flip_rates[0] > 0.5

    log = tmp_path / "fgsm"
    env = rw.Recorder(rw.FGSM(breakout(), eps=0.002, agent=ppo_breakout), log)
    _play(ppo_breakout, env, 1)
    env.close()
    steps = rw.read_log(log).steps
    assert steps["fgsm.flipped"].mean() > 0.9
    assert np.allclose(steps["fgsm.linf"], 1 / 255)


# -- bad input ------------------------------------------------------------------------------------------
def test_bad_input_raises_at_construction():
    env, _ = linear_cartpole()
    with pytest.raises(error.InvalidArgument, match=r"`eps` must be a finite number >= 0, received -0\.1"):
        rw.FGSM(env, eps=-0.1)
    with pytest.raises(error.InvalidArgument, match="`quantize` must be a bool"):
        rw.FGSM(env, quantize="yes")
    with pytest.raises(error.InvalidArgument, match="`steps`"):
        rw.PGD(env, steps=0)
    with pytest.raises(error.IncompatibleSpace, match="Box observation space"):
        rw.FGSM(gym.make("FrozenLake-v1"))
    with pytest.raises(error.IncompatibleSpace, match="discrete actions"):
        rw.FGSM(gym.make("Pendulum-v1"))
    with pytest.raises(error.InvalidArgument, match="random_start=True"):
        rw.PGD(gym.make("Pendulum-v1"), random_start=False)
    wrong = TorchAgent(torch.nn.Linear(5, 2), env.observation_space, env.action_space, head="logits")
    with pytest.raises(error.IncompatibleSpace, match="does not accept observations"):
        rw.FGSM(env, agent=wrong)
    other = TorchAgent(
        torch.nn.Linear(2, 3), gym.make("MountainCar-v0").observation_space, gym.spaces.Discrete(3), head="logits"
    )
    with pytest.raises(error.IncompatibleSpace, match="shape"):
        rw.FGSM(env, agent=other)
    with pytest.raises(error.NotDifferentiable):
        rw.FGSM(env, agent=CallableAgent(lambda obs: 0, env.observation_space, env.action_space))


def test_attacks_check_their_numbers():
    for bad in (-1, float("nan"), float("inf"), True, "0.1"):
        with pytest.raises(error.InvalidArgument, match="`eps`"):
            attacks.check_eps("eps", bad)
