"""IDs registered by a main script reach SubprocVecEnv workers started with spawn or forkserver via make_fn."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import rlwrappers as rw
from rlwrappers.error import UnknownName
from rlwrappers.registration import EnvFactory, make_fn

HELPER = Path(__file__).with_name("helpers_spawned_ids.py")


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_main_script_id_reaches_spawned_workers_through_make_fn(method: str) -> None:
    done = subprocess.run([sys.executable, str(HELPER), method], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stepped (2, 4) 1.0"
    by_id = subprocess.run([sys.executable, str(HELPER), method, "--by-id"], capture_output=True, timeout=180)
    assert by_id.returncode != 0  # the bare ID does not exist in the workers: why make_fn exists


def test_make_fn_is_a_picklable_factory_of_the_registered_env() -> None:
    env_id = rw.register("CartPole-v1", "reward_noise(std=0.5)", name="FactoryTest")
    factory = pickle.loads(pickle.dumps(make_fn(env_id, max_episode_steps=7)))
    assert isinstance(factory, EnvFactory)
    env = factory()
    assert env.spec is not None and env.spec.max_episode_steps == 7
    env.reset(seed=0)
    assert "reward_noise" in env.step(0)[4]["rlwrappers"]
    assert str(env) == str(gym.make(env_id, max_episode_steps=7))
    with pytest.raises(UnknownName, match="is not registered"):
        make_fn("rlwrappers/NoSuchEnv-v0")
