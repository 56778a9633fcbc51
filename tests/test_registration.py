"""rw.register and the catalogue of perturbed env IDs registered on import."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers import schedule
from rlwrappers.core import INFO_KEY, Entry, Perturb, layers
from rlwrappers.error import InvalidArgument, UnknownName
from rlwrappers.wrappers import ObservationNoisePerturbation

# Registered in this process and, by the same code, in fresh ones; their IDs must agree.
REGISTRATIONS = """
import json, rlwrappers as rw
ids = [
    rw.register("CartPole-v1", "obs_noise(std=0.1)"),
    rw.register("Pendulum-v1", "action_noise(std=0.2, when=prob(p=0.5))", "reward_noise(std=0.3)"),
    rw.register("MountainCar-v0", {"name": "sticky_action", "p": 0.4, "duration": (2, 3)}, when="starting(episode=2)"),
    rw.register("Acrobot-v1", "init_noise(std=0.05, label='start')"),
    rw.register("CartPole-v1", "dynamics_shift(scales={'length': 1.5, 'masspole': 2.0})", name="RegTest-Long"),
]
print(json.dumps({"ids": ids, "catalogue": [e.id for e in rw.catalogue()]}))
"""


def _registered_here() -> dict[str, list[str]]:
    namespace: dict[str, object] = {}
    lines = []
    namespace["print"] = lines.append
    exec(REGISTRATIONS, namespace)
    return json.loads(lines[0])


def _registered_in_fresh_process(hash_seed: str) -> dict[str, list[str]]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", REGISTRATIONS], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ids_are_the_same_in_every_process():
    here = _registered_here()
    assert here["ids"] == [
        "rlwrappers/CartPole-obs_noise-2ce917cd-v1",  # std=0.1 is the default; the digest covers every parameter
        "rlwrappers/Pendulum-action_noise_std_0.2_when_prob_p_0.5_reward_noise_std_0.3-46fe0855-v1",
        "rlwrappers/MountainCar-sticky_action_p_0.4_duration_2_3_when_starting_episode_2-5b8c3987-v0",
        "rlwrappers/Acrobot-init_noise_std_0.05_label_start-0390a213-v1",
        "rlwrappers/RegTest-Long-v1",
    ]
    for hash_seed in ("1", "2"):
        assert _registered_in_fresh_process(hash_seed) == here


def test_registering_the_same_again_is_a_no_op():
    first = rw.register("CartPole-v1", "obs_noise(std=0.1)", "reward_noise(std=0.2)", when="prob(p=0.5)")
    spec = gym.spec(first)
    n = len(gym.registry)
    again = rw.register("CartPole-v1", "obs_noise(std=0.1)", "reward_noise(std=0.2)", when="prob(p=0.5)")
    # the same perturbations written another way are the same registration
    as_dicts = rw.register(
        "CartPole-v1",
        {"name": "obs_noise", "std": 0.1, "when": "prob(p=0.5)"},
        {"name": "reward_noise", "std": 0.2, "when": schedule.Prob(0.5)},
    )
    as_objects = rw.register(
        "CartPole-v1", ObservationNoisePerturbation(std=0.1), "reward_noise(std=0.2)", when=schedule.Prob(0.5)
    )
    assert first == again == as_dicts == as_objects
    assert len(gym.registry) == n
    assert gym.spec(first) is spec


def test_conflicting_registration_raises():
    env_id = rw.register("CartPole-v1", "obs_noise(std=0.1)", name="RegTest-Conflict")
    with pytest.raises(InvalidArgument, match="already registered with a different spec"):
        rw.register("CartPole-v1", "obs_noise(std=0.2)", name="RegTest-Conflict")
    with pytest.raises(InvalidArgument, match="RegTest-Conflict"):
        rw.register("CartPole-v1", "obs_noise(std=0.1)", when="starting(step=1)", name="RegTest-Conflict")
    with pytest.raises(InvalidArgument, match="already registered"):
        rw.register("CartPole-v1", "obs_noise(std=0.1)", name="RegTest-Conflict", sutton_barto_reward=True)
    # the catalogue's names are taken too
    with pytest.raises(InvalidArgument, match="CartPole-ObsNoise-v1"):
        rw.register("CartPole-v1", "obs_noise(std=0.2)", name="CartPole-ObsNoise")
    layer = next(layers(gym.make(env_id)))
    assert layer.perturbations[0].std == 0.1


def test_distinct_perturbations_get_distinct_ids():
    first = rw.register("CartPole-v1", "obs_noise(std=0.3, label='cam_a')")
    second = rw.register("CartPole-v1", "obs_noise(std=0.3, label='cam-a')")
    assert first != second


def test_make_builds_the_perturbation_layer():
    env_id = rw.register(
        "CartPole-v1",
        "obs_noise(std=0.2)",
        "reward_noise(std=0.3, label='rn')",
        "action_noise(p=0.5, when=window(start=0, stop=2))",
        when="starting(episode=1)",
        name="RegTest-Params",
    )
    assert env_id == "rlwrappers/RegTest-Params-v1"
    env = gym.make(env_id)
    assert env.spec.id == env_id
    assert env.spec.max_episode_steps == 500
    (layer,) = layers(env)
    assert isinstance(layer, Perturb)
    assert layer.labels == ("obs_noise", "rn", "action_noise")
    assert [p.params() for p in layer.perturbations] == [
        {"std": 0.2, "dist": "gaussian", "clip": True},
        {"std": 0.3, "dist": "gaussian"},
        {"std": 0.0, "p": 0.5, "per_element": False},
    ]
    whens = [str(e.when) for e in layer.entries]
    assert whens == ["starting(episode=1)", "starting(episode=1)", "window(start=0, stop=2)"]

    # the layer acts as registered: nothing in episode 0, obs and reward noise from episode 1 on
    _, info = env.reset(seed=0)
    assert INFO_KEY not in info
    _, reward, _, _, info = env.step(0)
    assert set(info[INFO_KEY]) == {"action_noise"} and reward == 1.0
    _, info = env.reset()
    assert set(info[INFO_KEY]) == {"obs_noise"}
    _, reward, _, _, info = env.step(0)
    assert set(info[INFO_KEY]) == {"obs_noise", "rn", "action_noise"}
    assert reward == 1.0 + info[INFO_KEY]["rn"]["noise"]

    # the spec of the made env rebuilds the same stack
    assert str(gym.make(env.spec)) == str(env)


def test_unknown_base_id_raises_with_a_suggestion():
    with pytest.raises(UnknownName, match=re.escape("no env registered as `CartPol-v1`. Did you mean `CartPole-v1`?")):
        rw.register("CartPol-v1", "obs_noise(std=0.1)")
    with pytest.raises(ValueError, match="Pendulum-v1"):
        rw.register("Pendulum-v0", "obs_noise(std=0.1)")


def test_register_argument_errors():
    with pytest.raises(InvalidArgument, match="at least one perturbation"):
        rw.register("CartPole-v1")
    with pytest.raises(InvalidArgument, match="`name` must use letters"):
        rw.register("CartPole-v1", "obs_noise", name="bad name")
    with pytest.raises(UnknownName, match="Did you mean `obs_noise`"):
        rw.register("CartPole-v1", "obs_nosie(std=0.1)")
    with pytest.raises(InvalidArgument, match="`std` must be >= 0"):
        rw.register("CartPole-v1", "obs_noise(std=-1.0)")


def test_name_sets_the_id_and_keeps_the_base_version():
    assert rw.register("MountainCar-v0", "obs_noise(std=0.01)", name="RegTest-Car") == "rlwrappers/RegTest-Car-v0"
    assert rw.register("Pendulum-v1", "obs_noise(std=0.01)", name="RegTest-Pend") == "rlwrappers/RegTest-Pend-v1"
    env = gym.make("rlwrappers/RegTest-Car-v0")
    assert env.spec.max_episode_steps == 200
    assert type(env.unwrapped).__name__ == "MountainCarEnv"


def test_base_kwargs_pass_through():
    env_id = rw.register("Pendulum-v1", "reward_noise(std=0.1)", name="RegTest-HeavyPendulum", g=12.0)
    assert gym.spec(env_id).kwargs == {"g": 12.0}
    env = gym.make(env_id)
    assert env.unwrapped.g == 12.0
    # make-time kwargs still override, and the perturbation stays
    env = gym.make(env_id, g=5.0)
    assert env.unwrapped.g == 5.0
    assert [layer.specs for layer in layers(env)] == [["reward_noise"]]

    cartpole = rw.register("CartPole-v1", "obs_noise(std=0.1)", name="RegTest-SB", sutton_barto_reward=True)
    env = gym.make(cartpole)
    env.reset(seed=0)
    rewards = [env.step(0)[1] for _ in range(3)]
    assert rewards == [0.0, 0.0, 0.0]  # Sutton and Barto's reward: 0 until failure


def test_atari_base_with_kwargs():
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    env_id = rw.register("ALE/Pong-v5", "sticky_action(p=0.25)", frameskip=1, repeat_action_probability=0.0)
    assert env_id == "rlwrappers/Pong-sticky_action-7767bd14-v5"
    env = gym.make(env_id)
    assert env.unwrapped._frameskip == 1
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    _, _, _, _, info = env.step(1)
    assert "sticky_action" in info[INFO_KEY]
    env.close()


def test_catalogue_lists_seventy_distinct_ids():
    entries = rw.catalogue()
    assert len(entries) == 70
    assert len({e.id for e in entries}) == 70
    assert entries[0].id == "rlwrappers/CartPole-ObsNoise-v1"
    assert all(e.id.startswith("rlwrappers/") and e.doc for e in entries)
    bases = {e.base_id for e in entries}
    assert {"CartPole-v1", "Pendulum-v1", "Hopper-v5", "Ant-v5"} <= bases
    assert all(sum(e.base_id == b for e in entries) == 7 for b in bases)
    assert rw.catalogue() is not rw.catalogue()  # a copy: callers cannot change it


@pytest.mark.parametrize("entry", rw.catalogue(), ids=lambda e: e.id)
def test_every_catalogue_id_makes_resets_and_steps(entry):
    env = gym.make(entry.id)
    try:
        (layer,) = layers(env)
        assert layer.entries == (Entry.parse(entry.spec),)
        assert gym.spec(entry.id).kwargs == gym.spec(entry.base_id).kwargs
        env.action_space.seed(0)
        obs, info = env.reset(seed=0)
        seen = set(info.get(INFO_KEY, {}))
        assert env.observation_space.contains(obs)
        for _ in range(3):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            seen |= set(info.get(INFO_KEY, {}))
            assert np.isfinite(reward)
            if terminated or truncated:
                break
        assert seen == set(layer.labels)
    finally:
        env.close()


def test_rlwrappers_list_lists_the_catalogue():
    out = subprocess.run(
        [sys.executable, "-m", "rlwrappers.cli", "list", "ids"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  rlwrappers/")]
    assert listed == [e.id for e in rw.catalogue()]
    for e in rw.catalogue():
        assert e.spec in out and e.doc in out


def test_register_checks_its_arguments_when_called():
    with pytest.raises(rw.error.InvalidArgument, match=r"`CartPole-v1` takes no keyword argument `bogus`; it takes \["):
        rw.register("CartPole-v1", "obs_noise(std=0.1)", bogus=1)
    with pytest.raises(rw.error.InvalidType, match="`name` must be a string, received 5"):
        rw.register("CartPole-v1", "obs_noise(std=0.1)", name=5)
    with pytest.raises(rw.error.InvalidType, match="`base_id` must be a registered env ID"):
        rw.register(5, "obs_noise(std=0.1)")
    taken = rw.register("CartPole-v1", "obs_noise(std=0.1)", sutton_barto_reward=True)  # an argument the env takes
    assert gym.make(taken).unwrapped._sutton_barto_reward is True
