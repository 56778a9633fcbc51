"""A main script that registers perturbed IDs and steps them in SubprocVecEnv workers started without fork.

Run as ``python helpers_spawned_ids.py METHOD CASE``. Every case registers IDs under ``__main__``, then prints one
line per vector env it tries: ``<how> stepped <shape>`` where the perturbed env stepped in both workers,
``<how> failed`` where the workers could not make it.

- ``id``: an ID whose spec is JSON, given to ``make_vec_env`` as is (no warning), then through ``make_fn``.
- ``not-json``: two IDs whose base-env keyword arguments are NumPy scalars, which JSON cannot carry: one warning
  naming ``make_fn``; the bare ID fails in the workers, with the error naming ``make_fn``; ``make_fn`` works.
- ``late``: an ID registered after a first SubprocVecEnv started the forkserver, which keeps the environment
  it started with: a warning naming ``make_fn``; the bare ID fails in the workers; ``make_fn`` works.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

import rlwrappers as rw
from rlwrappers.registration import make_fn


def step(how: str, env: Any, method: str, label: str) -> None:
    """Steps two workers made from ``env`` (an ID or an env_fn) once, and prints what happened."""
    try:
        venv = make_vec_env(env, n_envs=2, seed=0, vec_env_cls=SubprocVecEnv, vec_env_kwargs={"start_method": method})
    except (ConnectionError, EOFError):  # a worker died making the env; its traceback went to stderr
        print(how, "failed", flush=True)
        return
    venv.reset()
    actions = np.stack([venv.action_space.sample() for _ in range(2)])
    obs, _, _, infos = venv.step(actions)
    assert all(label in info["rlwrappers"] for info in infos), infos  # the perturbed env, in each worker
    assert isinstance(obs, np.ndarray)
    venv.close()
    print(how, "stepped", obs.shape, flush=True)


if __name__ == "__main__":
    method, case = sys.argv[1:3]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if case == "id":
            env_id = rw.register("CartPole-v1", "obs_noise(std=0.1)", name="SpawnedWorkers")
        elif case == "not-json":
            env_id, _ = (
                rw.register("Pendulum-v1", "obs_noise(std=0.1)", name=f"SpawnedWorkers-G{g:.0f}", g=g)
                for g in np.linspace(9.0, 10.0, 2, dtype=np.float32)
            )
        else:
            step("first", rw.register("CartPole-v1", "obs_noise(std=0.1)", name="SpawnedWorkers"), method, "obs_noise")
            env_id = rw.register("CartPole-v1", "obs_noise(std=0.2)", name="SpawnedWorkers-Late")
    for w in caught:
        print("warning:", w.message, flush=True)
    step("id", env_id, method, "obs_noise")
    step("make_fn", make_fn(env_id), method, "obs_noise")
