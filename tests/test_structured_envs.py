"""Dict observations of real envs, each wrapped in one line: noise, an attack on a trained agent, a corruption.

- ``Reach-v0`` (``tests/packages/reach.py``): goal-conditioned, with a camera; an SB3 ``MultiInputPolicy`` PPO
  trained here at a small budget is attacked entry by entry, and a whole evaluation runs on it.
- gymnasium-robotics' ``PointMaze_UMaze-v3`` (the ``robotics`` extra): goal-conditioned, continuous actions.
- MiniGrid through its own RGB image wrapper (the ``minigrid`` extra): pixels, a direction and a mission text.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import reach

import rlwrappers as rw
from rlwrappers.agents import SB3Agent
from rlwrappers.error import IncompatibleSpace

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

PPO = pytest.importorskip("stable_baselines3").PPO


def train(env: gym.Env, steps: int, **kwargs: Any) -> Any:
    """A PPO ``MultiInputPolicy`` trained for ``steps`` steps, seeded, on the CPU."""
    model = PPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0, device="cpu", **kwargs)
    return model.learn(steps)


@pytest.fixture(scope="module")
def reach_agent() -> SB3Agent:
    env = gym.make(reach.DICT_ID)
    return SB3Agent(train(env, 2048), observation_space=env.observation_space)  # the camera arrives channel-last


def rollout(env: gym.Env, agent: SB3Agent, steps: int = 10, seed: int = 0) -> tuple[list[Any], list[dict[str, Any]]]:
    obs, info = env.reset(seed=seed)
    observations, records = [obs], [info.get("rlwrappers", {})]
    for _ in range(steps):
        obs, _, terminated, truncated, info = env.step(agent.act_one(obs))
        observations.append(obs)
        records.append(info.get("rlwrappers", {}))
        if terminated or truncated:
            break
    return observations, records


def test_reach_under_noise_attack_and_corruption_in_one_line_each(reach_agent):
    clean = rollout(gym.make(reach.DICT_ID), reach_agent)[0][0]
    noisy = rollout(rw.wrap(gym.make(reach.DICT_ID), "obs_noise(std=0.05)"), reach_agent)[0][0]
    assert not np.array_equal(noisy["observation"], clean["observation"])
    assert np.array_equal(noisy["desired_goal"], clean["desired_goal"])  # the task is not a sensor
    assert np.array_equal(noisy["camera"], clean["camera"])

    blurred = rollout(rw.wrap(gym.make(reach.DICT_ID), "median_blur(k=5)"), reach_agent)[0][0]
    assert not np.array_equal(blurred["camera"], clean["camera"])
    assert np.array_equal(blurred["observation"], clean["observation"])

    for keys in (["observation"], ["camera"]):
        env = rw.FGSM(gym.make(reach.DICT_ID), eps=0.05, keys=keys, agent=reach_agent)
        _, records = rollout(env, reach_agent)
        steps = [r["fgsm"] for r in records[1:]]
        assert steps and all(s[f"linf[{keys[0]}]"] > 0 for s in steps)  # the gradient reached the entry
        assert all(s["linf"] == s[f"linf[{keys[0]}]"] for s in steps)  # and nothing else moved


def test_an_attack_on_the_camera_and_the_sensors_flips_the_trained_policy(reach_agent):
    weak = rw.FGSM(gym.make(reach.DICT_ID), eps=0.01, keys=["observation"], agent=reach_agent)
    strong = rw.FGSM(gym.make(reach.DICT_ID), eps=0.3, keys=["observation", "camera"], agent=reach_agent)
    flips = {}
    for name, env in (("weak", weak), ("strong", strong)):
        records = [r["fgsm"] for seed in range(4) for r in rollout(env, reach_agent, 15, seed)[1][1:]]
        flips[name] = np.mean([r["flipped"] for r in records])
    assert flips["strong"] > flips["weak"]
    assert flips["strong"] > 0.2


def test_an_evaluation_runs_on_a_dict_env_with_per_entry_shifts(reach_agent, tmp_path):
    shifts = {
        "noise": "obs_noise(std=0.05)",
        "attack": "fgsm(eps=0.1, keys=['observation'])",
        "camera": "jpeg(quality=10)",
    }
    evaluation = rw.evaluate(reach_agent, reach.DICT_ID, shifts, episodes=2, seeds=2, out=tmp_path / "run")
    table = evaluation.episodes()
    assert set(table["shift"]) >= set(shifts)
    again = rw.evaluate(reach_agent, reach.DICT_ID, shifts, episodes=2, seeds=2, out=tmp_path / "again")
    assert table["return"].tolist() == again.episodes()["return"].tolist()


def registered(package: str, env_id: str, register: str) -> None:
    """Skips unless ``package`` installs; registers its envs again if a test removed them after its first import."""
    module = pytest.importorskip(package)
    if env_id not in gym.registry:  # they register on first import only, and tests/test_docs.py unregisters
        getattr(module, register)()


def test_point_maze_from_gymnasium_robotics():
    registered("gymnasium_robotics", "PointMaze_UMaze-v3", "register_robotics_envs")
    make = lambda: gym.make("PointMaze_UMaze-v3", max_episode_steps=50)  # noqa: E731
    clean, _ = make().reset(seed=0)
    noisy, info = rw.wrap(make(), "obs_noise(std=0.1)").reset(seed=0)
    assert info["rlwrappers"]["obs_noise"]["keys"] == ("achieved_goal", "observation")
    assert np.array_equal(noisy["desired_goal"], clean["desired_goal"])
    assert not np.array_equal(noisy["observation"], clean["observation"])
    with pytest.raises(IncompatibleSpace, match="found no pixel image"):
        rw.wrap(make(), "jpeg")
    agent = SB3Agent(train(make(), 256))  # continuous actions: PGD from a random start
    env = rw.PGD(make(), eps=0.05, steps=3, keys=["observation"], agent=agent)
    _, records = rollout(env, agent, steps=5)
    assert all(0 < r["pgd"]["linf[observation]"] <= 0.05 + 1e-6 for r in records[1:])


def minigrid_env(**kwargs: Any) -> gym.Env:
    from minigrid.wrappers import RGBImgPartialObsWrapper

    return RGBImgPartialObsWrapper(gym.make("MiniGrid-Empty-5x5-v0", **kwargs))


def test_minigrid_through_its_rgb_image_wrapper():
    registered("minigrid", "MiniGrid-Empty-5x5-v0", "register_minigrid_envs")
    clean, _ = minigrid_env().reset(seed=0)
    rotated, info = rw.wrap(minigrid_env(), "rotate(degrees=5)").reset(seed=0)  # the pixels are a picture
    assert info["rlwrappers"]["rotate"]["keys"] == ("image",)
    assert not np.array_equal(rotated["image"], clean["image"])
    assert rotated["mission"] == clean["mission"] and rotated["direction"] == clean["direction"]
    with pytest.raises(IncompatibleSpace, match="found no sensor entry"):  # no float sensor: name the pixels
        rw.wrap(minigrid_env(), "obs_noise(std=4)")
    noisy, _ = rw.wrap(minigrid_env(), "obs_noise(std=4, keys=['image'])").reset(seed=0)
    assert not np.array_equal(noisy["image"], clean["image"])
    with pytest.raises(IncompatibleSpace, match="cannot act on the entry 'mission'"):
        rw.wrap(minigrid_env(), "obs_noise(keys=['mission'])")


def test_minigrid_agent_attacked_on_its_pixels():
    registered("minigrid", "MiniGrid-Empty-5x5-v0", "register_minigrid_envs")
    make = lambda: gym.wrappers.FilterObservation(minigrid_env(max_steps=30), ["direction", "image"])  # noqa: E731
    agent = SB3Agent(
        train(make(), 256), observation_space=make().observation_space
    )  # SB3 takes no text: the mission is filtered out
    env = rw.FGSM(make(), eps=2 / 255, keys=["image"], agent=agent)
    _, records = rollout(env, agent, steps=5)
    assert all(r["fgsm"]["linf[image]"] == pytest.approx(2 / 255) for r in records[1:])
