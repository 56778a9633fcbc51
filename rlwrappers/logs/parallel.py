"""Logs of PettingZoo parallel envs: :class:`ParallelRecorder`, one ``steps`` row per agent per step.

The log keeps the layout of :mod:`rlwrappers.logs.schema`, telling who acted: the team's own policy or an
outside policy of an :class:`~rlwrappers.wrappers.multiagent.AgentSwitch` layer.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Mapping
from numbers import Integral
from typing import Any

import gymnasium as gym
import numpy as np

from rlwrappers._optional import require
from rlwrappers._version import __version__
from rlwrappers.core import INFO_KEY
from rlwrappers.error import InvalidArgument
from rlwrappers.logs.schema import FORMAT, FORMAT_VERSION, Column, action_kind, team_schemas
from rlwrappers.logs.writer import LogStream
from rlwrappers.wrappers.multiagent import TEAM, Action, Obs, parallel_env_of, switches

require("pettingzoo", purpose="multi-agent logs")
import pettingzoo  # noqa: E402  (after the check, which names the extra to install)
from pettingzoo.utils import BaseParallelWrapper  # noqa: E402
from pettingzoo.utils.env import ParallelEnv  # noqa: E402

__all__ = ["ParallelRecorder"]


def _common_action_kind(env: ParallelEnv[str, Obs, Action], team: list[str]) -> str:
    kinds = {action_kind(env.action_space(agent)) for agent in team}
    return kinds.pop() if len(kinds) == 1 else "text"


class ParallelRecorder(BaseParallelWrapper[str, Obs, Action]):
    """Records every step of every agent of a PettingZoo parallel env, and every episode, to a log directory.

    The log has the layout of :class:`rlwrappers.logs.writer.Recorder`: ``meta.json``, ``steps.parquet`` (one row
    per agent per step) and ``episodes.parquet`` (one row per episode, with the team return and one return per
    agent); rows are streamed to ``stream.arrows`` as each episode ends, so a killed run keeps every finished
    episode, and ``close`` compacts the stream to Parquet. :func:`rlwrappers.logs.read_log` and
    :func:`rlwrappers.logs.read_episodes` read it; :func:`rlwrappers.logs.team_returns` and
    :func:`rlwrappers.logs.who_acted` read its per-agent columns.

    Put it outermost. The ``action`` of a row is the action the env executed: the outside policy's for a
    switched agent, as reported by the :class:`~rlwrappers.wrappers.multiagent.AgentSwitch` layers below. An
    episode ends when no agent is left in ``env.agents``; its ``terminated`` (``truncated``) says whether some
    agent's episode ended by termination (truncation).

    Args:
        env: the parallel env, with its :class:`~rlwrappers.wrappers.multiagent.AgentSwitch` layers.
        path: the log directory; created if missing.
        metadata: extra JSON-ready entries for the header.
        overwrite: replace an existing log at ``path`` instead of raising.

    Example:
        >>> import tempfile
        >>> from mpe2 import simple_spread_v3
        >>> from rlwrappers.logs import ParallelRecorder, team_returns
        >>> from rlwrappers.wrappers.multiagent import AgentSwitch
        >>> path = tempfile.mkdtemp()
        >>> def stay(obs):
        ...     return 0
        >>> env = simple_spread_v3.parallel_env(N=3, max_cycles=4)
        >>> env = ParallelRecorder(AgentSwitch(env, stay, k=1), path)
        >>> obs, infos = env.reset(seed=0)
        >>> while env.agents:
        ...     obs, rewards, terminations, truncations, infos = env.step({a: 1 for a in env.agents})
        >>> env.close()
        >>> list(team_returns(path).columns)
        ['agent_0', 'agent_1', 'agent_2', 'team']
    """

    def __init__(
        self,
        env: ParallelEnv[str, Obs, Action],
        path: str | os.PathLike[str],
        *,
        metadata: Mapping[str, Any] | None = None,
        overwrite: bool = False,
    ):
        env = parallel_env_of(env)
        self._log = LogStream(path, overwrite=overwrite, metadata=metadata)
        super().__init__(env)
        self.path, self.pa = self._log.path, self._log.pa

        team = list(env.possible_agents)
        self._team = team
        self._switches = list(switches(env))
        self._action = Column(self.pa, _common_action_kind(env, team))
        env_id = env.metadata.get("name") if isinstance(getattr(env, "metadata", None), Mapping) else None
        self.meta: dict[str, Any] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "rlwrappers": __version__,
            "gymnasium": gym.__version__,
            "pettingzoo": pettingzoo.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "env_id": env_id,
            "spec": None,
            "stack": str(env),
            "perturbations": [],
            "agents": team,
            "switches": [{**s.params(), "layer": depth} for depth, s in enumerate(self._switches)],
            "observation_space": {a: str(env.observation_space(a)) for a in team},
            "action_space": {a: str(env.action_space(a)) for a in team},
            "action_kind": self._action.kind,
            "start_time": time.time(),
            "metadata": dict(metadata or {}),
        }
        self._steps, self._episodes = team_schemas(self.pa, self.meta)
        self._log.start(self.meta)
        self._episode = -1
        self._seeds: list[int] = []
        self._open = False
        self._closed = False

    # -- the loop ---------------------------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Obs], dict[str, dict[str, Any]]]:
        """Resets the env; an episode still open is written first, marked incomplete."""
        if self._open:
            self._log.write(*self._end_episode())
        if seed is not None and not (isinstance(seed, Integral) and 0 <= seed < 2**64):
            raise InvalidArgument(f"`seed` must be an int in [0, 2**64) to be logged, received {seed!r}")
        obs, infos = self.env.reset(seed=seed, options=options)
        self._episode += 1
        if seed is not None:
            self._seeds.append(int(seed))
        self._seed = seed
        self._start = time.time()
        self._t = 0
        self._terminated = self._truncated = False
        self._rows: list[tuple[int, str, str, bool, Action, float, bool, bool]] = []
        self._open = True
        return obs, infos

    def step(
        self, actions: dict[str, Action]
    ) -> tuple[dict[str, Obs], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        """Steps the env and keeps one row per agent that acted; the episode's rows are written when it ends."""
        live = tuple(self.env.agents)
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        if not self._open:
            return obs, rewards, terminations, truncations, infos
        executed = self._switches[-1].last_actions if self._switches else actions
        rows, t = self._rows, self._t
        for agent in live:
            action = executed.get(agent)
            info = infos.get(agent)
            own = info.get(INFO_KEY) if info else None
            policy, switched = (own["policy"], bool(own["switched"])) if own else (TEAM, False)
            terminated, truncated = bool(terminations.get(agent, False)), bool(truncations.get(agent, False))
            self._terminated |= terminated
            self._truncated |= truncated
            rows.append(
                (
                    t,
                    agent,
                    policy,
                    switched,
                    action.copy() if type(action) is np.ndarray else action,
                    float(rewards.get(agent, 0.0)),
                    terminated,
                    truncated,
                )
            )
        self._t = t + 1
        if not self.env.agents:
            self._log.write(*self._end_episode())
        return obs, rewards, terminations, truncations, infos

    def _end_episode(self) -> tuple[Any, dict[str, Any]]:
        """Ends the episode: its rows as one record batch, and its episode row, for the log to write."""
        pa, n = self.pa, len(self._rows)
        steps, agents, policies, switched, actions, rewards, terminations, truncations = (
            zip(*self._rows, strict=True) if n else ((),) * 8
        )
        reward_array = np.asarray(rewards, dtype=np.float64)
        columns = [
            pa.array(np.full(n, self._episode, dtype=np.int64)),
            pa.array(np.asarray(steps, dtype=np.int64)),
            pa.array(agents, type=pa.string()),
            pa.array(policies, type=pa.string()),
            pa.array(np.asarray(switched, dtype=bool)),
            self._action.array(list(actions)),
            pa.array(reward_array),
            pa.array(np.asarray(terminations, dtype=bool)),
            pa.array(np.asarray(truncations, dtype=bool)),
        ]
        per_agent = dict.fromkeys(self._team, 0.0)
        for agent, reward in zip(agents, reward_array.tolist(), strict=True):
            per_agent[agent] += reward
        complete = not self.env.agents and (self._terminated or self._truncated)
        episode: dict[str, Any] = {
            "episode": self._episode,
            "seed": None if self._seed is None else int(self._seed),
            "entropy": [s.entropy for s in self._switches],
            "return": float(reward_array.sum()),
            "length": self._t,
            "terminated": self._terminated,
            "truncated": self._truncated,
            "complete": complete,
            "start_time": self._start,
            "wall_time": time.time() - self._start,
            **{f"return.{agent}": value for agent, value in per_agent.items()},
        }
        self._open = False
        return pa.record_batch(columns, schema=self._steps), episode

    # -- closing ----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Writes an open episode (marked incomplete), compacts the log to Parquet, then closes the env.

        After a write failed, it only gives the folder up and closes the env: the log stays unfinished.
        """
        try:
            if not self._closed:
                self._closed = True
                last = self._end_episode() if self._open else None
                self._log.close(self.meta, episodes=self._episode + 1, seeds=self._seeds, last=last)
        finally:
            super().close()
