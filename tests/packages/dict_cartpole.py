"""A Dict-observation CartPole, registered as ``DictCartPole-v0`` when imported.

RL Zoo's ``--gym-packages dict_cartpole`` imports it in training, and rlwrappers imports it again from the
run's ``args.yml``: the tests put this folder on the path.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

ENV_ID = "DictCartPole-v0"


class SplitObservation(gym.ObservationWrapper[dict[str, Any], Any, np.ndarray]):
    """CartPole's observation as ``{"cart": [x, x_dot], "pole": [theta, theta_dot]}``."""

    def __init__(self, env: gym.Env[np.ndarray, Any]):
        super().__init__(env)
        low, high = env.observation_space.low, env.observation_space.high  # type: ignore[attr-defined]
        self.observation_space = gym.spaces.Dict(
            {"cart": gym.spaces.Box(low[:2], high[:2]), "pole": gym.spaces.Box(low[2:], high[2:])}
        )

    def observation(self, observation: np.ndarray) -> dict[str, Any]:
        return {"cart": observation[:2], "pole": observation[2:]}


def make(**kwargs: Any) -> gym.Env[dict[str, Any], Any]:
    return SplitObservation(CartPoleEnv(**kwargs))


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=f"{__name__}:make", max_episode_steps=500)
