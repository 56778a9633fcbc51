"""Gradient attacks: equal to torchattacks, inside their spaces, recorded decision by decision, on real agents."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import ale_py
import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.envs.registration import EnvSpec

import rlwrappers as rw
from rlwrappers import error
from rlwrappers.agents import CallableAgent, TorchAgent
from rlwrappers.core import Entry, layers
from rlwrappers.functional import attacks
from rlwrappers.testing import check_wrapper
from rlwrappers.wrappers.adversarial import FGSMPerturbation

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


# -- budgets per dimension ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def zoo_cartpole() -> rw.agents.Agent:
    return rw.load_agent("ppo-CartPole-v1", seed=0)


@pytest.fixture(scope="module")
def cartpole_states(zoo_cartpole) -> np.ndarray:
    """Observations the zoo agent meets in real CartPole games, 200 of them."""
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    states = []
    while len(states) < 200:
        states.append(obs)
        obs, _, terminated, truncated, _ = env.step(zoo_cartpole.act_one(obs))
        if terminated or truncated:
            obs, _ = env.reset()
    return np.stack(states)


@pytest.mark.parametrize(
    ("scalar", "per_dimension"),
    [
        (
            lambda env, agent: rw.FGSM(env, eps=0.1, agent=agent),
            lambda env, agent: rw.FGSM(env, eps=(0.1,) * 4, agent=agent),
        ),
        (
            lambda env, agent: rw.PGD(env, eps=0.1, steps=5, agent=agent),
            lambda env, agent: rw.PGD(env, eps=(0.1,) * 4, steps=5, agent=agent),
        ),
        (
            lambda env, agent: rw.PGD(env, eps=0.1, alpha=0.03, steps=5, random_start=False, agent=agent),
            lambda env, agent: rw.PGD(env, eps=0.1, alpha=(0.03,) * 4, steps=5, random_start=False, agent=agent),
        ),
    ],
    ids=["fgsm", "pgd", "pgd-alpha"],
)
def test_a_per_dimension_eps_of_equal_entries_gives_exactly_the_scalar_result(
    zoo_cartpole, cartpole_states, scalar, per_dimension
):
    ours = per_dimension(gym.make("CartPole-v1"), zoo_cartpole).perturbations[0]
    same = scalar(gym.make("CartPole-v1"), zoo_cartpole).perturbations[0]
    result = ours.attack(cartpole_states, np.random.default_rng(4))
    expected = same.attack(cartpole_states, np.random.default_rng(4))
    assert torch.equal(result.adversarial, expected.adversarial)
    assert np.array_equal(result.observations, expected.observations)
    assert np.array_equal(result.clean_action, expected.clean_action)


def test_a_per_dimension_eps_moves_each_coordinate_by_its_own_eps(zoo_cartpole, cartpole_states):
    sigma = cartpole_states.std(axis=0)
    eps = tuple(float(e) for e in 0.5 * sigma)  # half a standard deviation on each dimension
    fgsm = rw.FGSM(gym.make("CartPole-v1"), eps=eps, agent=zoo_cartpole).perturbations[0]
    moved = np.abs(fgsm.attack(cartpole_states, None).observations - cartpole_states)
    space = gym.make("CartPole-v1").observation_space
    inside = (cartpole_states - eps > space.low) & (cartpole_states + eps < space.high)
    assert inside.mean() > 0.9
    assert np.allclose(moved[inside], np.broadcast_to(eps, moved.shape)[inside], rtol=0, atol=1e-6)
    assert np.all(moved <= np.array(eps) + 1e-6)

    pgd = rw.PGD(gym.make("CartPole-v1"), eps=eps, steps=10, agent=zoo_cartpole).perturbations[0]
    result = pgd.attack(cartpole_states, np.random.default_rng(0))
    moved = np.abs(result.observations - cartpole_states)
    assert np.all(moved <= np.array(eps) + 1e-6)
    assert np.allclose(moved.max(axis=0), eps, rtol=0, atol=1e-6)  # every dimension reaches its own radius
    assert np.allclose(result.linf, moved.max(axis=1), atol=1e-6)

    zero = (0.0, 0.05, 0.0, 0.1)  # a zero entry leaves its dimension alone
    kept = rw.FGSM(gym.make("CartPole-v1"), eps=zero, agent=zoo_cartpole).perturbations[0]
    moved = kept.attack(cartpole_states, None).observations
    assert np.array_equal(moved[:, [0, 2]], cartpole_states[:, [0, 2]])
    assert np.allclose(np.abs(moved - cartpole_states)[:, [1, 3]], [0.05, 0.1], rtol=0, atol=1e-6)


def test_a_per_dimension_eps_from_a_spec_string_round_trips_through_the_log(zoo_cartpole, tmp_path):
    env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), "fgsm(eps=[0.01, 0.02, 0.1, 0.3])"), tmp_path / "log")
    assert rw.attach(env, zoo_cartpole) == 1
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        obs, _, terminated, truncated, info = env.step(zoo_cartpole.act_one(obs))
        assert info["rlwrappers"]["fgsm"]["linf"] == pytest.approx(0.3)
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    (entry,) = next(layers(env)).entries
    assert str(entry) == "fgsm(eps=(0.01, 0.02, 0.1, 0.3))"
    assert Entry.parse(str(entry)) == entry
    assert Entry.parse(json.loads(json.dumps(entry.to_dict()))) == entry

    meta = rw.read_log(tmp_path / "log").meta
    (recorded,) = meta["perturbations"]
    assert recorded["spec"] == str(entry) and recorded["params"]["eps"] == [0.01, 0.02, 0.1, 0.3]
    rebuilt = gym.make(EnvSpec.from_json(json.dumps(meta["spec"])))
    assert [layer.entries for layer in layers(rebuilt)] == [(entry,)]

    wrapper = rw.FGSM(gym.make("CartPole-v1"), eps=(0.01, 0.02, 0.1, 0.3), agent=zoo_cartpole)
    assert wrapper.specs == [str(entry)]
    assert str(gym.make(wrapper.spec)) == str(wrapper)


def test_a_per_dimension_eps_on_images_is_in_pixel_scale_and_warns_below_half_a_grey_level():
    space = gym.spaces.Box(0, 255, (6, 6, 3), np.uint8)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(108, 2))
    agent = TorchAgent(net, space, gym.spaces.Discrete(2), head="logits", forward=lambda m, x: m(x / 255.0))
    attack = FGSMPerturbation(eps=(0.001, 2 / 255, 0.0))
    with pytest.warns(UserWarning, match=r"fgsm: eps\[0\]=0.001 is below half a grey level"):
        attack.bind_spaces(space, gym.spaces.Discrete(2))
    attack.attach(agent)
    frames = np.random.default_rng(0).integers(2, 254, (5, 6, 6, 3)).astype(np.uint8)
    moved = np.abs(attack.attack(frames, None).observations.astype(int) - frames)
    assert not moved[..., 0].any() and not moved[..., 2].any()  # channel 0 rounds away, channel 2 has eps 0
    assert (moved[..., 1] == 2).all()  # 2/255 in pixel scale is two grey levels

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FGSMPerturbation(eps=(0.0, 0.01, 0.01)).bind_spaces(space, gym.spaces.Discrete(2))


def test_a_per_dimension_budget_that_does_not_fit_raises():
    env, agent = linear_cartpole()
    with pytest.raises(
        error.InvalidArgument, match=r"`eps` has 3 entries, which does not broadcast to the shape \(4,\)"
    ):
        rw.FGSM(env, eps=(0.1, 0.2, 0.3), agent=agent)
    with pytest.raises(error.InvalidArgument, match=r"`eps` has 2 entries, which does not broadcast"):
        rw.wrap(gym.make("CartPole-v1"), "fgsm(eps=[0.1, 0.2])")
    with pytest.raises(error.InvalidArgument, match=r"`alpha` has 5 entries, which does not broadcast"):
        rw.PGD(gym.make("CartPole-v1"), eps=(0.1,) * 4, alpha=(0.01,) * 5)
    with pytest.raises(error.InvalidArgument, match=r"`eps` has 4 entries, which does not broadcast"):
        rw.PGD(gym.make("Pendulum-v1"), eps=(0.1,) * 4)
    with pytest.raises(error.InvalidArgument, match=r"`eps\[1\]` must be >= 0, received -0.2"):
        rw.FGSM(env, eps=(0.1, -0.2, 0.1, 0.1))
    with pytest.raises(error.InvalidArgument, match=r"`alpha\[2\]` must be finite, received nan"):
        rw.PGD(env, alpha=[0.1, 0.1, float("nan"), 0.1])
    with pytest.raises(error.InvalidType, match=r"`eps\[0\]` must be a number, received '0.1'"):
        rw.FGSM(env, eps=("0.1", 0.1, 0.1, 0.1))
    with pytest.raises(error.InvalidArgument, match="`eps` must not be empty"):
        rw.wrap(gym.make("CartPole-v1"), "fgsm(eps=[])")


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
    for bad in (-1, float("nan"), float("inf"), np.float32(-0.5)):
        with pytest.raises(error.InvalidArgument, match="`eps`"):
            attacks.check_eps("eps", bad)
    for bad in (True, "0.1", None):
        with pytest.raises(error.InvalidType, match="`eps`"):
            attacks.check_eps("eps", bad)
    assert attacks.check_eps("eps", np.float32(0.5)) == attacks.check_eps("eps", np.int64(1)) / 2 == 0.5
