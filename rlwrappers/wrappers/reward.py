"""Reward perturbations: noise on the reward signal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.core import Perturbation, Record, SingleLayer, register_wrapper
from rlwrappers.functional import noise
from rlwrappers.schedule import Schedule

__all__ = ["RewardNoise", "RewardNoisePerturbation"]


@dataclass(kw_only=True)
class RewardNoisePerturbation(Perturbation):
    """Adds zero-mean noise to every reward (reward noise, an imperfect sensor; Flageat et al. 2023).

    The log records the noise added, so the clean reward is the logged reward minus ``noise``.

    Args:
        std: the noise's standard deviation, at most about 5.6e306 (the largest float over 32), so the
            noise cannot overflow to inf.
        dist: "gaussian", or "uniform" (on [-a, a] with a = std * sqrt(3)).
    """

    name = "reward_noise"
    channel = "reward"
    step_fields = {"noise": "float64"}

    std: float = 0.1
    dist: str = "gaussian"

    def __post_init__(self) -> None:
        self.std = _check.nonnegative("std", self.std)
        _check.noise_scale("std", self.std, np.float64, "rewards")
        self.dist = _check.choice("dist", self.dist, noise.DISTRIBUTIONS)

    @override
    def reward(self, reward: float, rng: np.random.Generator) -> tuple[float, Record]:
        delta = noise.scalar_noise(self.std, self.dist, rng)
        return reward + delta, {"noise": delta}


@register_wrapper("reward_noise")
class RewardNoise(SingleLayer):
    """Adds zero-mean noise to every reward; see :class:`RewardNoisePerturbation`.

    No vector version: wrap each sub-env, or use :func:`rlwrappers.functional.noise.noise` on batches.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.RewardNoise(gym.make("CartPole-v1"), std=0.5)
        >>> _ = env.reset(seed=0)
        >>> _, reward, _, _, info = env.step(0)
        >>> reward == 1.0 + info["rlwrappers"]["reward_noise"]["noise"]
        True
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        std: float = 0.1,
        dist: str = "gaussian",
        *,
        when: str | Schedule | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``allow_nonfinite`` lets non-finite rewards through instead of raising
        :class:`~rlwrappers.error.PerturbationError`.
        """
        params = dict(std=std, dist=dist)
        self._setup(env, RewardNoisePerturbation, params, when, label, allow_nonfinite=allow_nonfinite)
