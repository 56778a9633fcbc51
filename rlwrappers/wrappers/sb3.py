"""Stable-Baselines3 vector envs: gradient attacks on the batch the policy really sees.

SB3's Atari agents stack frames in the vector env (``VecFrameStack``), so the network's input exists only
there. :class:`AttackVecEnv` attacks it, batched across sub-envs, with the same attacks, schedules and log as
:class:`rlwrappers.wrappers.vector.Attack` (see :mod:`rlwrappers.wrappers.vector`).
:func:`rlwrappers.wrappers.atari.atari_wrapper` gives one env the input those agents see, frame stack included.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from rlwrappers._optional import require
from rlwrappers.core import Perturbation
from rlwrappers.error import InvalidType
from rlwrappers.schedule import Schedule
from rlwrappers.wrappers.vector import BatchAttacker

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AttackVecEnv"]

require("stable_baselines3", purpose="SB3 vector envs")
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper  # noqa: E402


class AttackVecEnv(VecEnvWrapper):
    """Attacks the observations of an SB3 ``VecEnv`` (after ``VecFrameStack``: what the policy sees).

    Args:
        venv: the SB3 vector env.
        attack: an attack spec (``"fgsm(eps=0.01)"``) or :class:`rlwrappers.wrappers.adversarial.AttackPerturbation`.
        agent: the agent to attack: an SB3 model or policy, or an :class:`rlwrappers.agents.Agent`.
        when: the schedule per sub-env (default: always).
        label: the attack's name in the log.
        seed: seeds the schedules and the attack's generator (SB3 vector envs take no seed at ``reset``);
            :meth:`seed` changes it for the next reset.

    Example:
        >>> import rlwrappers as rw
        >>> from stable_baselines3.common.env_util import make_vec_env
        >>> from rlwrappers.wrappers.sb3 import AttackVecEnv
        >>> agent = rw.load_agent("ppo-CartPole-v1")
        >>> venv = AttackVecEnv(make_vec_env("CartPole-v1", n_envs=2, seed=0), "fgsm(eps=0.2)", agent, seed=0)
        >>> obs = venv.reset()
        >>> for _ in range(5):
        ...     obs, rewards, dones, infos = venv.step(agent.act(obs))
        >>> len(venv.log())
        10
    """

    def __init__(
        self,
        venv: VecEnv,
        attack: str | Mapping[str, Any] | Perturbation,
        agent: Any,
        *,
        when: str | Schedule | Mapping[str, Any] | None = None,
        label: str | None = None,
        seed: int | None = None,
    ):
        if not isinstance(venv, VecEnv):
            raise InvalidType(f"`venv` must be an SB3 VecEnv, received {type(venv).__name__}")
        attacker = BatchAttacker(
            attack, agent, venv.observation_space, venv.action_space, venv.num_envs, when=when, label=label
        )
        super().__init__(venv, observation_space=attacker.observation_space)
        self.attacker = attacker
        self._seed = seed

    def seed(self, seed: int | None = None) -> Any:
        """Seeds the sub-envs (as SB3 does) and the attack, both for the next reset."""
        self._seed = seed
        return self.venv.seed(seed)

    def reset(self) -> Any:
        """Resets every sub-env and attacks the first observations."""
        obs = self.venv.reset()
        self.attacker.reset(self._seed)
        self._seed = None
        return self.attacker.observe(obs)

    def step_async(self, actions: np.ndarray) -> None:
        """Logs the decisions on the last observations and sends the actions."""
        self.attacker.decide(actions)
        self.venv.step_async(actions)

    def step_wait(self) -> Any:
        """Waits for the step and attacks the new observations (after an episode ends: the next one's first)."""
        obs, rewards, dones, infos = self.venv.step_wait()
        self.attacker.advance(np.asarray(dones, dtype=bool))
        return self.attacker.observe(obs), rewards, dones, infos

    def log(self) -> pd.DataFrame:
        """Every attacked decision so far (see :meth:`rlwrappers.wrappers.vector.BatchAttacker.log`)."""
        return self.attacker.log()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the log to a Parquet file."""
        self.attacker.save(path)
