"""A main script that registers a perturbed ID and steps it in SubprocVecEnv workers started without fork.

Run as ``python helpers_spawned_ids.py METHOD``: it registers an ID under ``__main__`` (which warns that
workers started with METHOD will not know it), then steps two workers made from ``make_fn(ID)`` and prints
``stepped <shape> <first reward>``. With ``--by-id`` the workers get ``lambda: gym.make(ID)`` instead, which
fails in them: the ID does not exist there.
"""

from __future__ import annotations

import sys
import warnings

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import SubprocVecEnv

import rlwrappers as rw
from rlwrappers.registration import make_fn

if __name__ == "__main__":
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env_id = rw.register("CartPole-v1", "obs_noise(std=0.1)", name="SpawnedWorkers")
    assert any("make_fn" in str(w.message) for w in caught), [str(w.message) for w in caught]
    env_fn = (lambda: gym.make(env_id)) if "--by-id" in sys.argv else make_fn(env_id)
    venv = SubprocVecEnv([env_fn] * 2, start_method=sys.argv[1])
    venv.seed(0)
    obs = venv.reset()
    obs, rewards, dones, infos = venv.step(np.zeros(2, dtype=np.int64))
    assert all("obs_noise" in info["rlwrappers"] for info in infos)  # the perturbed env, in each worker
    venv.close()
    print("stepped", obs.shape, float(rewards[0]), flush=True)
