"""Dict and Tuple observations end to end: agents act on structured batches, runs batch them, maps refuse them.

The Dict env is ``DictCartPole-v0`` (tests/packages/dict_cartpole.py); the Tuple env, defined here, splits
CartPole's observation into ``(cart, {"angle": ..., "spin": ...})``, a Tuple with a Dict inside whose entries have
different shapes (so no batch of it passes for one array by accident). The agents are a CleanRL-style torch module
per env, taking a dict or tuple of tensors, and an SB3 PPO ``MultiInputPolicy`` trained briefly on the Dict env.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from helpers_logs import assert_same_run_logs

import rlwrappers as rw
from rlwrappers import structure
from rlwrappers.agents import CallableAgent, SB3Agent, TorchAgent, check_compatible
from rlwrappers.agents.protocol import fits, stack_observations
from rlwrappers.error import IncompatibleSpace, InvalidArgument
from rlwrappers.explain import insertion, maps, sanity
from rlwrappers.ladders import Arm
from rlwrappers.studies import Execution
from rlwrappers.studies import saliency as saliency_study
from rlwrappers.studies.arms import replay
from rlwrappers.studies.design import BASELINE, Stack, episode_seed
from rlwrappers.studies.flips import flip_rates
from rlwrappers.studies.recipe import EnvRecipe
from rlwrappers.studies.results import Evaluation

PACKAGES = Path(__file__).parent / "packages"
DICT_ENV = "DictCartPole-v0"
TUPLE_ENV = "TupleCartPole-v0"
ONE_BY_ONE = Execution(workers=1, progress=False)


class SplitIntoTuple(gym.ObservationWrapper[tuple[Any, ...], Any, np.ndarray]):
    """CartPole's observation as ``([x, x_dot], {"angle": [theta], "spin": [theta_dot]})``."""

    def __init__(self, env: gym.Env[np.ndarray, Any]):
        super().__init__(env)
        low, high = env.observation_space.low, env.observation_space.high  # type: ignore[attr-defined]
        pole = {"angle": gym.spaces.Box(low[2:3], high[2:3]), "spin": gym.spaces.Box(low[3:], high[3:])}
        self.observation_space = gym.spaces.Tuple((gym.spaces.Box(low[:2], high[:2]), gym.spaces.Dict(pole)))

    def observation(self, observation: np.ndarray) -> tuple[Any, ...]:
        return observation[:2], {"angle": observation[2:3], "spin": observation[3:]}


def make_tuple_cartpole(**kwargs: Any) -> gym.Env[tuple[Any, ...], Any]:
    return SplitIntoTuple(CartPoleEnv(**kwargs))


if TUPLE_ENV not in gym.registry:
    gym.register(TUPLE_ENV, entry_point=make_tuple_cartpole, max_episode_steps=500)


@pytest.fixture(scope="module", autouse=True)
def _dict_cartpole() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(PACKAGES))
        import dict_cartpole  # noqa: F401  (registers DictCartPole-v0)

        yield


# -- agents ------------------------------------------------------------------------------------------------
def seeded(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """``module`` with weights drawn from a generator seeded with ``seed`` (not torch's global one), biases 0.

    Without biases a tanh network is odd in its input, so the action it prefers turns with the pole.
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            drawn = torch.empty(parameter.shape).uniform_(-1.0, 1.0, generator=generator)
            parameter.copy_(drawn if name.endswith("weight") else torch.zeros_like(parameter))
    return module


class DictNet(torch.nn.Module):
    """CleanRL style: one encoder per key of ``{"cart": ..., "pole": ...}``, then an action head."""

    def __init__(self) -> None:
        super().__init__()
        self.cart, self.pole = torch.nn.Linear(2, 8), torch.nn.Linear(2, 8)
        self.head = torch.nn.Linear(16, 2)

    def forward(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.head(torch.tanh(torch.cat([self.cart(x["cart"]), self.pole(x["pole"])], -1)))


class TupleNet(torch.nn.Module):
    """CleanRL style on ``(cart, {"angle": ..., "spin": ...})``; records the batch sizes it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
        self.batch_sizes: list[int] = []

    def forward(self, x: tuple[torch.Tensor, dict[str, torch.Tensor]]) -> torch.Tensor:
        cart, pole = x
        self.batch_sizes.append(len(cart))
        return self.body(torch.cat([cart, pole["angle"], pole["spin"]], -1))


def dict_agent(**kwargs: Any) -> TorchAgent:
    env = gym.make(DICT_ENV)
    return TorchAgent(seeded(DictNet(), 0), env.observation_space, env.action_space, head="logits", **kwargs)


def tuple_agent(**kwargs: Any) -> TorchAgent:
    env = gym.make(TUPLE_ENV)
    return TorchAgent(seeded(TupleNet(), 1), env.observation_space, env.action_space, head="logits", **kwargs)


@pytest.fixture(scope="module")
def ppo() -> Any:
    """SB3 PPO with a ``MultiInputPolicy``, trained for 256 steps on the Dict env."""
    from stable_baselines3 import PPO

    model = PPO("MultiInputPolicy", DICT_ENV, n_steps=128, batch_size=64, n_epochs=2, seed=0, device="cpu")
    return model.learn(256)


def observations(env_id: str, n: int) -> list[Any]:
    """``n`` observations of ``env_id``: resets with seeds 0..n-1, each followed by a few steps."""
    env = gym.make(env_id)
    out = []
    for seed in range(n):
        obs, _ = env.reset(seed=seed)
        for _ in range(seed % 4):
            obs, *_ = env.step(seed % 2)
        out.append(obs)
    return out


# -- the agent protocol ------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", [DICT_ENV, TUPLE_ENV])
def test_acting_on_a_structured_batch_equals_acting_one_by_one(env_id: str, ppo: Any) -> None:
    obs = observations(env_id, 12)
    batch = stack_observations(obs)
    agents = [dict_agent(), SB3Agent(ppo)] if env_id == DICT_ENV else [tuple_agent()]
    for agent in agents:
        actions = agent.act(batch)
        assert actions.shape == (12,)
        assert actions.tolist() == [int(agent.act_one(o)) for o in obs]
        assert len(set(actions.tolist())) == 2  # both actions occur: the agent looks at the observations
    if env_id == DICT_ENV:
        expected, _ = ppo.predict(batch, deterministic=True)
        assert SB3Agent(ppo).act(batch).tolist() == expected.tolist()
    # a plain callable sees one observation at a time, with the space's structure
    angle = (lambda o: int(o["pole"][0] > 0)) if env_id == DICT_ENV else (lambda o: int(o[1]["angle"][0] > 0))
    plain = CallableAgent(angle, gym.make(env_id).observation_space, gym.spaces.Discrete(2))
    assert plain.act(batch).tolist() == [angle(o) for o in obs]


def test_a_stochastic_agent_draws_alike_in_a_batch_and_one_by_one() -> None:
    obs = observations(TUPLE_ENV, 8)
    agent = tuple_agent(deterministic=False)
    together = agent.act(stack_observations(obs), np.random.default_rng(3))
    rng = np.random.default_rng(3)
    assert together.tolist() == [int(agent.act_one(o, rng)) for o in obs]
    with pytest.raises(InvalidArgument, match="`rng` is required"):
        agent.act(stack_observations(obs))


def test_stacking_keeps_the_structure_and_plain_arrays_bit_for_bit() -> None:
    obs = observations(TUPLE_ENV, 3)
    batch = stack_observations(obs)
    assert isinstance(batch, tuple) and isinstance(batch[1], dict) and list(batch[1]) == ["angle", "spin"]
    assert batch[0].shape == (3, 2) and batch[1]["angle"].shape == (3, 1) and batch[1]["spin"].shape == (3, 1)
    assert structure.equal(structure.take(batch, 2), obs[2])
    assert structure.equal(batch, structure.stack(obs))
    plain = [np.arange(4, dtype=np.float32) + i for i in range(3)]
    stacked = stack_observations(plain)
    assert stacked.dtype == np.float32 and np.array_equal(stacked, np.stack(plain))
    one = stack_observations(plain[:1])
    assert one.shape == (1, 4) and np.array_equal(one[0], plain[0])
    # a list or tuple of numbers is one observation of a plain space, not a structure
    cartpole = CallableAgent(lambda o: int(o[2] > 0), gym.make("CartPole-v1").observation_space, gym.spaces.Discrete(2))
    assert int(cartpole.act_one((0.0, 0.0, 0.1, 0.0))) == 1 and int(cartpole.act_one([0.0, 0.0, -0.1, 0.0])) == 0


def test_bad_structured_batches_raise_typed_errors_naming_what_was_received() -> None:
    dict_batch = stack_observations(observations(DICT_ENV, 4))
    agent = dict_agent()
    with pytest.raises(InvalidArgument, match=r"keys \['cart', 'pole'\].*missing \['pole'\]"):
        agent.act({"cart": dict_batch["cart"]})
    with pytest.raises(InvalidArgument, match=r"unknown \['wheel'\]"):
        agent.act({**dict_batch, "wheel": dict_batch["cart"]})
    with pytest.raises(InvalidArgument, match=r"`obs\['pole'\]` must be a batch of shape \(n, \*\(2,\)\).*\(4, 3\)"):
        agent.act({**dict_batch, "pole": np.zeros((4, 3), np.float32)})
    with pytest.raises(InvalidArgument, match=r"a dict of batches.*received an array of shape \(4, 4\)"):
        agent.act(np.zeros((4, 4), np.float32))
    with pytest.raises(InvalidArgument, match="same number of observations"):
        agent.act({"cart": dict_batch["cart"], "pole": dict_batch["pole"][:3]})
    with pytest.raises(InvalidArgument, match=r"must be a batch of shape .* received shape \(2,\)"):
        agent.act({"cart": dict_batch["cart"][0], "pole": dict_batch["pole"][0]})  # one observation, no batch

    cart, pole = stack_observations(observations(TUPLE_ENV, 4))
    agent = tuple_agent()
    with pytest.raises(InvalidArgument, match=r"a tuple of 2 batches.*received a tuple of 1"):
        agent.act((cart,))
    with pytest.raises(InvalidArgument, match=r"a tuple of 2 batches.*received a tuple of 3"):
        agent.act((cart, pole, cart))
    with pytest.raises(InvalidArgument, match=r"a tuple of 2 batches.*received a list"):
        agent.act([cart, pole])  # a list of two observations or a Tuple batch? Only a tuple is a Tuple batch
    with pytest.raises(InvalidArgument, match=r"`obs\[1\]` must be a dict of batches.*missing \['spin'\]"):
        agent.act((cart, {"angle": pole["angle"]}))
    with pytest.raises(InvalidArgument, match=r"`obs\[1\]\['angle'\]` must be a batch of shape \(n, \*\(1,\)\)"):
        agent.act((cart, {**pole, "angle": np.zeros((4, 2), np.float32)}))
    assert agent.module.batch_sizes == []  # every bad batch was refused before the network saw it


def test_tensors_keep_the_structure_in_float32() -> None:
    obs = observations(TUPLE_ENV, 5)
    agent = tuple_agent()
    x = agent.tensor(stack_observations(obs))
    assert isinstance(x, tuple) and isinstance(x[1], dict) and list(x[1]) == ["angle", "spin"]
    assert all(t.dtype == torch.float32 for t in (x[0], x[1]["angle"], x[1]["spin"]))
    assert torch.equal(x[1]["spin"][:, 0], torch.tensor([float(o[1]["spin"][0]) for o in obs]))
    logits = agent.outputs(x).logits
    assert logits is not None and logits.shape == (5, 2)
    assert agent.act(stack_observations(obs)).tolist() == logits.argmax(-1).tolist()
    uint8 = {"cart": np.full((2, 2), 255, np.uint8), "pole": np.zeros((2, 2), np.float64)}
    converted = dict_agent().tensor(uint8)
    assert {k: v.dtype for k, v in converted.items()} == {"cart": torch.float32, "pole": torch.float32}
    assert float(converted["cart"][0, 0]) == 255.0


def test_tuple_spaces_fit_entry_by_entry() -> None:
    space = gym.make(TUPLE_ENV).observation_space
    assert fits(space, space)
    wider = gym.spaces.Tuple((gym.spaces.Box(-9.0, 9.0, (2,)), space[1]))  # bounds may differ, shapes may not
    assert fits(wider, space)
    assert not fits(gym.spaces.Tuple(space.spaces[:1]), space)
    assert not fits(gym.spaces.Tuple((gym.spaces.Box(-1.0, 1.0, (3,)), space[1])), space)
    assert not fits(gym.make(DICT_ENV).observation_space, space)
    other = TorchAgent(TupleNet(), gym.spaces.Tuple(space.spaces[:1]), gym.spaces.Discrete(2), head="logits")
    with pytest.raises(IncompatibleSpace, match="observation_space"):
        check_compatible(other, gym.make(TUPLE_ENV))


# -- runs: batched, unbatched, again -----------------------------------------------------------------------
def evaluate(agent: Any, env_id: str, shifts: list[str], out: Path, execution: Execution) -> Evaluation:
    return rw.evaluate({"agent": agent}, env_id, shifts, episodes=2, seeds=2, out=out, execution=execution)


@pytest.mark.parametrize("env_id", [DICT_ENV, TUPLE_ENV])
def test_batched_runs_give_the_per_run_logs_bit_for_bit(env_id: str, ppo: Any, tmp_path: Path) -> None:
    # stochastic agents: each run draws from its own generators, batched or not
    agent = SB3Agent(ppo, deterministic=False) if env_id == DICT_ENV else tuple_agent(deterministic=False)
    shifts = ["action_noise(p=0.2)", "param_noise(std=0.05)"]
    one_by_one = evaluate(agent, env_id, shifts, tmp_path / "runs", ONE_BY_ONE)
    together = evaluate(agent, env_id, shifts, tmp_path / "batched", Execution(workers=1, progress=False, batch=4))
    assert_same_run_logs(one_by_one, together)
    again = evaluate(agent, env_id, shifts, tmp_path / "again", Execution(workers=1, progress=False, batch=3))
    assert_same_run_logs(one_by_one, again)
    returns = one_by_one.episodes()["return"]
    assert len(returns) == 12 and returns.nunique() > 1


def test_fast_batches_pass_the_network_structured_batches_of_several_observations(tmp_path: Path) -> None:
    agent = tuple_agent()
    fast = Execution(workers=1, progress=False, batch=4, exact=False)
    result = evaluate(agent, TUPLE_ENV, ["action_noise(p=0.2)"], tmp_path / "fast", fast)
    assert max(agent.module.batch_sizes) == 4  # four runs' observations in one pass
    exact = evaluate(tuple_agent(), TUPLE_ENV, ["action_noise(p=0.2)"], tmp_path / "exact", ONE_BY_ONE)
    assert len(result.episodes()) == len(exact.episodes()) == 8
    for path in result.index["path"]:  # the same actions, so the same episodes (a tiny network, no rounding ties)
        fast_steps, exact_steps = rw.read_log(result.path / path).steps, rw.read_log(exact.path / path).steps
        pd.testing.assert_frame_equal(fast_steps, exact_steps, obj=path)


def test_a_logged_dict_episode_replays_to_the_same_observations(ppo: Any, tmp_path: Path) -> None:
    agent = SB3Agent(ppo)
    result = evaluate(agent, DICT_ENV, [], tmp_path / "runs", ONE_BY_ONE)
    path, steps = result.logged_episode(BASELINE, 1, 0)
    env, _ = EnvRecipe.of(result.settings, BASELINE, Stack()).build()
    played = list(replay(env, steps, episode_seed(1, 0), path))
    assert len(played) == len(steps) > 5
    fresh = gym.make(DICT_ENV)
    obs, _ = fresh.reset(seed=episode_seed(1, 0))
    for t, logged in enumerate(steps["action"].to_list()):
        assert structure.equal(played[t], obs), t
        assert int(agent.act_one(played[t])) == int(logged)
        obs, *_ = fresh.step(int(logged))


def test_probes_of_structured_observations_are_refused_before_any_run(tmp_path: Path) -> None:
    shifts, out = ["action_noise(p=0.2)"], tmp_path / "probed"
    with pytest.raises(IncompatibleSpace, match="probe=0"):
        rw.evaluate({"agent": dict_agent()}, DICT_ENV, shifts, seeds=1, probe=4, out=out, execution=ONE_BY_ONE)
    assert not (tmp_path / "probed" / "logs").exists()


# -- flip rates --------------------------------------------------------------------------------------------
def test_flip_rates_on_a_dict_env(ppo: Any, tmp_path: Path) -> None:
    agent = SB3Agent(ppo)
    arms = [
        Arm("action_noise", None, 3, [{"name": "action_noise", "p": 0.5}]),
        Arm("param_noise", None, 1, [{"name": "param_noise", "std": 0.0}]),
        Arm("param_noise", None, 2, [{"name": "param_noise", "std": 1.0}]),
    ]
    shifts = {arm.name: arm.entries for arm in arms}
    evaluation = rw.evaluate(
        {"agent": agent}, DICT_ENV, shifts, episodes=1, seeds=2, out=tmp_path, execution=ONE_BY_ONE
    )
    rates = flip_rates(agent, evaluation, arms)
    steps = [
        rw.read_log(evaluation.path / path).steps
        for path in evaluation.index.loc[evaluation.index["shift"] == "action_noise@3", "path"]
    ]
    executed = np.concatenate([s["action_noise.executed"].to_numpy(dtype=np.int64) for s in steps])
    chosen = np.concatenate([s["action"].to_numpy(dtype=np.int64) for s in steps])
    assert rates["action_noise@3"] == np.mean(executed != chosen) and 0.1 < rates["action_noise@3"] < 0.5
    # the clean states of a Dict env are stacked entry by entry and acted on with noisy weights
    assert rates["param_noise@1"] == 0.0 and rates["param_noise@2"] > 0.05
    assert flip_rates(agent, evaluation, arms) == rates  # every draw is seeded


# -- saliency maps -----------------------------------------------------------------------------------------
def test_saliency_maps_refuse_structured_observations_before_any_forward_pass() -> None:
    agent = dict_agent()
    calls: list[int] = []
    agent.module.register_forward_hook(lambda *_: calls.append(1))
    obs = observations(DICT_ENV, 2)
    for method in maps.METHODS:
        with pytest.raises(IncompatibleSpace, match=r"perturb one image or vector.*received Dict\('cart'"):
            maps.saliency_map(agent, obs[0], method)
    with pytest.raises(IncompatibleSpace, match="an image is needed by"):
        maps.action_scores(agent, stack_observations(obs))
    with pytest.raises(IncompatibleSpace, match="perturb one image or vector"):
        insertion.scorer(agent)
    with pytest.raises(IncompatibleSpace, match="perturb one image or vector"):
        sanity.sanity_check(lambda a, o: np.zeros((8, 8)), agent, stack_observations(obs))
    with pytest.raises(IncompatibleSpace, match="perturb one image or vector"):
        saliency_study.collect_states(gym.make(DICT_ENV), agent, 2)
    with pytest.raises(IncompatibleSpace, match="perturb one image or vector"):
        saliency_study.study(agent, stack_observations(obs), ["occlusion"], sanity=0)
    with pytest.raises(IncompatibleSpace, match=r"perturb one image or vector.*received Tuple"):
        maps.occlusion(tuple_agent(), observations(TUPLE_ENV, 1)[0])
    assert calls == []


def test_maps_of_any_box_keep_working_and_what_needs_an_image_says_so() -> None:
    env = gym.make("CartPole-v1")
    net = seeded(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)), 2)
    agent = TorchAgent(net, env.observation_space, env.action_space, head="q_values")
    obs, _ = env.reset(seed=0)
    assert maps.check_observations(agent) == "vector"
    for method in maps.METHODS:
        params = {"masks": 50} if method == "rise" else {"samples": 50} if method == "lime" else {}
        assert maps.saliency_map(agent, obs, method, **params).shape == (4,)
    with pytest.raises(IncompatibleSpace, match=r"the sanity check needs an image observation.*vector"):
        sanity.sanity_check(lambda a, o: np.zeros((8, 8)), agent, obs[None])
    with pytest.raises(IncompatibleSpace, match="segments images"):
        maps.lime(agent, obs, segmentation="slic")
    image = gym.spaces.Box(0, 255, (4, 12, 12), np.uint8)
    frames = TorchAgent(torch.nn.Flatten(), image, gym.spaces.Discrete(576), head="q_values")
    assert maps.check_observations(frames, image="the sanity check") == "image"
