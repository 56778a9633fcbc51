"""Ad hoc agent switching and logs for PettingZoo parallel envs.

:class:`AgentSwitch` replaces some members of a team with outside policies: the team's own policies act as
usual (the caller passes a dict of actions to ``step``), and the switched agents' actions are replaced by
what the outside policies choose from each switched agent's latest observation. A schedule says when the
switch holds: from the start (``"always"``), from an episode on (``"starting(episode=T)"``, the causal study
of seed 001, Section 5), or in bursts of a random number of steps (``"bursts(p=..., duration=(lo, hi))"``,
the observational study of seed 001, Section 5, after Rahman et al. 2021).

:class:`ParallelRecorder` writes a log in the layout of :mod:`rlwrappers.record` with one ``steps`` row per
agent per step, telling who acted. :func:`team_returns` and :func:`who_acted` read it back.

Every ``step`` reports, for each agent that acted, ``info[agent]["rlwrappers"] = {"policy": ..., "switched":
...}``: ``"team"`` and False for the team's own policy, the outside policy's name and True for a switched
agent while the switch holds.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from numbers import Integral
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers import _check, record, seeding
from rlwrappers import schedule as schedules
from rlwrappers._optional import require
from rlwrappers._version import __version__
from rlwrappers.agents import Agent, CallableAgent, _fits, adapt
from rlwrappers.core import INFO_KEY
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, LogError, UnknownName, did_you_mean
from rlwrappers.schedule import Plan, Schedule

require("pettingzoo", purpose="multi-agent envs")
import pettingzoo  # noqa: E402  (after the check, which names the extra to install)
from pettingzoo.utils import BaseParallelWrapper  # noqa: E402
from pettingzoo.utils.env import ParallelEnv  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "PARALLEL_ENVS",
    "TEAM",
    "UNTRAINED",
    "AgentSwitch",
    "ParallelRecorder",
    "Team",
    "parallel_factory",
    "schemas",
    "switch_entry",
    "switches",
    "team_returns",
    "untrained",
    "who_acted",
]

#: The policy name reported for an agent that the team's own policy controls.
TEAM: Final = "team"

Obs = Any
Action = Any


def _parallel_env(env: Any) -> ParallelEnv[str, Obs, Action]:
    if not isinstance(env, ParallelEnv):
        raise InvalidType(
            f"`env` must be a PettingZoo ParallelEnv, received {type(env).__name__}; convert an AEC env with"
            " pettingzoo.utils.conversions.aec_to_parallel"
        )
    return env


def switches(env: Any) -> Iterator[AgentSwitch]:
    """The :class:`AgentSwitch` layers of a parallel env's wrapper stack, outermost first."""
    current = env
    while isinstance(current, BaseParallelWrapper):
        if isinstance(current, AgentSwitch):
            yield current
        current = current.env


# -- choosing the switched agents and their policies -------------------------------------------------------
def _switched_agents(team: list[str], agents: str | Sequence[str] | None, k: int | None) -> tuple[str, ...]:
    if agents is not None and k is not None:
        raise InvalidArgument(f"pass `agents` or `k`, not both; received agents={agents!r} and k={k!r}")
    if agents is None and k is None:
        raise InvalidArgument(
            "pass `agents` (the names of the switched agents) or `k` (how many, the first of `possible_agents`),"
            " received neither"
        )
    if k is not None:
        k = _check.integer("k", k, minimum=1)
        if k > len(team):
            raise InvalidArgument(f"`k` must be <= {len(team)} (the team's size), received {k}")
        return tuple(team[:k])
    names = [agents] if isinstance(agents, str) else agents
    if not isinstance(names, Sequence) or not all(isinstance(a, str) for a in names):
        raise InvalidType(f"`agents` must be a list of agent names, received {agents!r}")
    if not names:
        raise InvalidArgument("`agents` must name at least one agent, received []")
    for name in names:
        if name not in team:
            raise UnknownName(f"`agents` names unknown agent `{name}`; the team is {team}.{did_you_mean(name, team)}")
    if len(set(names)) != len(names):
        raise InvalidArgument(f"`agents` must not repeat a name, received {list(names)!r}")
    return tuple(a for a in team if a in names)  # in the team's order


def _policy_name(policy: Any, agent: Agent, label: str) -> str:
    """A policy's ``name`` attribute, else its function's name (lambdas excepted), else the switch's label."""
    for candidate in (policy, agent):
        name = getattr(candidate, "name", None)
        if isinstance(name, str) and name:
            return name
    fn = agent.fn if isinstance(agent, CallableAgent) else policy
    name = getattr(fn, "__name__", None)
    if isinstance(name, str) and name and name != "<lambda>":
        return name
    return label


class _Outside:
    """One switched agent's outside policy, bound to the call that acts on a single observation."""

    __slots__ = ("act", "agent", "name", "policy", "rng")

    def __init__(self, agent: str, policy: Agent, name: str) -> None:
        self.agent, self.policy, self.name = agent, policy, name
        self.rng: np.random.Generator | None = None
        act: Callable[[Obs], Action]
        if isinstance(policy, CallableAgent) and not policy.batched:
            # A plain function of one observation: call it as is, with no batch around it.
            fn = policy.fn
            act = fn if policy.deterministic else lambda obs: fn(obs, rng=self.rng)
        elif policy.deterministic:
            act = policy.act_one
        else:
            act_one = policy.act_one
            act = lambda obs: act_one(obs, self.rng)  # noqa: E731
        self.act = act


def _outside_policies(
    env: ParallelEnv[str, Obs, Action], outside: Any, switched: tuple[str, ...], team: list[str], label: str
) -> tuple[_Outside, ...]:
    if isinstance(outside, Mapping):
        for key in outside:
            if key not in team:
                hint = did_you_mean(str(key), team)
                raise UnknownName(f"`outside` has a policy for unknown agent `{key}`; the team is {team}.{hint}")
        missing = [a for a in switched if a not in outside]
        if missing:
            raise InvalidArgument(
                f"`outside` has no policy for switched agent `{missing[0]}`; it holds {sorted(outside)}"
            )
        given = {a: outside[a] for a in switched}
    else:
        given = dict.fromkeys(switched, outside)  # one policy for every switched agent
    out = []
    for agent, policy in given.items():
        observation_space, action_space = env.observation_space(agent), env.action_space(agent)
        try:
            adapted = adapt(policy, observation_space, action_space)
        except (InvalidType, InvalidArgument) as exc:
            raise type(exc)(f"`outside` policy for `{agent}`: {exc}") from None
        for what, theirs, mine in (
            ("observation_space", observation_space, adapted.observation_space),
            ("action_space", action_space, adapted.action_space),
        ):
            if not _fits(mine, theirs):
                raise IncompatibleSpace(
                    f"the outside policy for `{agent}` has {what} {mine}, but `{agent}`'s {what} is {theirs}"
                )
        name = _policy_name(policy, adapted, label)
        if name == TEAM:
            raise InvalidArgument(
                f"the outside policy for `{agent}` must not be named {TEAM!r}: that name marks the team's own policy"
            )
        out.append(_Outside(agent, adapted, name))
    return tuple(out)


# -- switching -----------------------------------------------------------------------------------------------
class AgentSwitch(BaseParallelWrapper[str, Obs, Action]):
    """Replaces the actions of some agents of a PettingZoo parallel env with outside policies' actions.

    The team's own policies act outside the env: the caller passes every agent's action to ``step``, as with
    the bare env (it may leave out the switched agents' entries). While the switch holds, the switched agents'
    actions are replaced by what their outside policies choose from each one's latest observation; the
    caller's dict is left as it was. :attr:`last_actions` holds the actions the env received.

    One schedule decides for all switched agents at once: at any time, either all of them are switched or
    none. It follows the library's time convention (see :mod:`rlwrappers.schedule`): the decision at time
    ``t`` covers the actions taken at ``t``. Its generator, and the generator each stochastic outside policy
    draws from, derive from the seed given to ``reset`` (fresh OS entropy for a run never seeded, kept in
    :attr:`entropy` and in a :class:`ParallelRecorder`'s log), so the same seeds give the same switches and
    the same outside actions bit for bit.

    Every ``step`` reports, for each agent in its infos, ``info[agent]["rlwrappers"] = {"policy": name,
    "switched": bool}``: ``"team"`` and False for the team's policy, the outside policy's name and True for a
    switched agent while the switch holds. These records are shared between steps: read them, do not edit
    them. The env's own info dicts are copied, never edited. When switches are stacked, the innermost one that
    holds acts last and is the one reported.

    Args:
        env: a PettingZoo ``ParallelEnv``.
        outside: a dict from agent name to its outside policy, or one policy for every switched agent. A
            policy is a :class:`rlwrappers.agents.Agent` or anything :func:`rlwrappers.agents.adapt` accepts
            (adapted with that agent's spaces); its spaces must fit the agent's. A dict for the whole team is
            fine: only the switched agents' entries are used. The name reported for a policy is its ``name``
            attribute, else its function's name (lambdas excepted), else ``label``.
        agents: the names of the switched agents.
        k: how many agents to switch: the first ``k`` of ``env.possible_agents``. Pass ``agents`` or ``k``.
        when: the schedule (a spec string, a dict or a :class:`~rlwrappers.schedule.Schedule`): ``"always"``,
            ``"starting(episode=T)"``, ``"bursts(p=0.05, duration=(5, 20))"``, ...
        label: names the switch's generators (and the outside policies without a name of their own); stacked
            switches with the same label are renamed ``label-2``, ``label-3``, ...

    Example:
        >>> from mpe2 import simple_spread_v3
        >>> from rlwrappers.multiagent import AgentSwitch
        >>> def stay(obs):
        ...     return 0
        >>> env = AgentSwitch(simple_spread_v3.parallel_env(N=3), {"agent_0": stay}, k=1)
        >>> obs, infos = env.reset(seed=0)
        >>> obs, rewards, terminations, truncations, infos = env.step({a: 4 for a in env.agents})
        >>> env.last_actions["agent_0"], infos["agent_0"]["rlwrappers"], infos["agent_1"]["rlwrappers"]
        (0, {'policy': 'stay', 'switched': True}, {'policy': 'team', 'switched': False})
    """

    def __init__(
        self,
        env: ParallelEnv[str, Obs, Action],
        outside: Any,
        *,
        agents: str | Sequence[str] | None = None,
        k: int | None = None,
        when: str | Schedule | Mapping[str, Any] | None = "always",
        label: str = "switch",
    ):
        env = _parallel_env(env)
        team = list(env.possible_agents)
        switched = _switched_agents(team, agents, k)
        schedule = schedules.parse(when)
        if not isinstance(label, str):
            raise InvalidType(f"`label` must be a string, received {label!r}")
        if not label:
            raise InvalidArgument("`label` must not be empty, received ''")
        policies = _outside_policies(env, outside, switched, team, label)
        super().__init__(env)

        taken = {s.label for s in switches(env)}
        unique, n = label, 2
        while unique in taken:
            unique, n = f"{label}-{n}", n + 1
        self.label: str = unique
        self.team: tuple[str, ...] = tuple(team)
        self.switched: tuple[str, ...] = switched
        self.when: Schedule = schedule
        self.policy_names: dict[str, str] = {p.agent: p.name for p in policies}
        self._policies = policies
        self._stochastic = tuple(p for p in policies if not p.policy.deterministic)
        # The records reported while the switch holds and while it does not: built once, shared by every step.
        off = {a: {"policy": TEAM, "switched": False} for a in team}
        self._records_off: dict[str, dict[str, Any]] = off
        self._records_on: dict[str, dict[str, Any]] = {
            **off,
            **{p.agent: {"policy": p.name, "switched": True} for p in policies},
        }

        self._entropy: int | None = None
        self._since_seed = -1
        self._episode = -1
        self._total_step = 0
        self._t = 0
        self._plan: Plan = schedules.OFF
        self._next_change = float("inf")
        self._on = False
        self._outside: dict[str, Action] = {}
        self.last_actions: dict[str, Action] = {}

    # -- introspection ----------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        """Whether the switch holds at the current time: the next ``step`` uses the outside policies."""
        return self._on

    @property
    def episode(self) -> int:
        """Index of the current episode over the wrapper's life (-1 before the first reset)."""
        return self._episode

    @property
    def entropy(self) -> int | None:
        """The seed (or OS entropy, for a run never seeded) the switch's generators derive from."""
        return self._entropy

    def params(self) -> dict[str, Any]:
        """The switch's settings, JSON-ready: switched agents, their policies' names, schedule and label."""
        return {
            "agents": list(self.switched),
            "policies": dict(self.policy_names),
            "when": str(self.when),
            "label": self.label,
        }

    def __str__(self) -> str:
        return f"<AgentSwitch[agents={list(self.switched)}, when={self.when}, label={self.label}]{self.env}>"

    # -- the loop ---------------------------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Obs], dict[str, dict[str, Any]]]:
        """Resets the env and plans the episode's switch; the outside policies act on the first observations."""
        if seed is not None:
            self._entropy, self._since_seed = int(seed), 0
        elif self._entropy is None:
            self._entropy, self._since_seed = seeding.fresh_entropy(), 0
        else:
            self._since_seed += 1
        if self._episode >= 0:
            self._total_step += self._t
        self._episode += 1

        obs, infos = self.env.reset(seed=seed, options=options)

        rng = None
        if self.when.random:
            rng = seeding.generator(self._entropy, self._since_seed, self.label, seeding.SCHEDULE)
        plan = self._plan = self.when.plan(self._episode, self._total_step, rng)
        self._next_change = plan.next_change(0) if plan.constant is None else float("inf")
        for p in self._stochastic:
            p.rng = seeding.generator(self._entropy, self._since_seed, f"{self.label}/{p.agent}", seeding.EFFECT)
        self._t = 0
        self._on = plan.active(0)
        self._outside = {}
        self.last_actions = {}
        if self._on:
            self._choose(obs)
        return obs, infos

    def _choose(self, obs: dict[str, Obs]) -> None:
        """The outside policies choose the next actions of the switched agents still in the env."""
        live = self.env.agents
        chosen = self._outside
        for p in self._policies:
            if p.agent in live:
                chosen[p.agent] = p.act(obs[p.agent])

    def step(
        self, actions: dict[str, Action]
    ) -> tuple[dict[str, Obs], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        """Steps the env, with the switched agents' actions replaced while the switch holds."""
        on = self._on
        if on:
            sent = dict(actions)
            sent.update(self._outside)
            self._outside.clear()
        else:
            sent = actions
        self.last_actions = sent
        obs, rewards, terminations, truncations, infos = self.env.step(sent)

        mine = self._records_on if on else self._records_off
        reported = {}
        for agent, info in infos.items():
            own = mine.get(agent)
            if own is not None:
                theirs = info.get(INFO_KEY)
                if theirs is None or (own["switched"] and not theirs.get("switched")):
                    info = {**info, INFO_KEY: own}
            reported[agent] = info

        t = self._t = self._t + 1
        if t >= self._next_change:
            self._on = self._plan.active(t)
            self._next_change = self._plan.next_change(t)
        if self._on:
            self._choose(obs)
        return obs, rewards, terminations, truncations, reported


# -- logs ----------------------------------------------------------------------------------------------------
def schemas(pa: Any, meta: Mapping[str, Any]) -> tuple[pa.Schema, pa.Schema]:
    """The ``steps`` and ``episodes`` schemas of a multi-agent log, from its header (which lists ``agents``)."""
    who = [pa.field("agent", pa.string()), pa.field("policy", pa.string()), pa.field("switched", pa.bool_())]
    returns = [pa.field(f"return.{agent}", pa.float64()) for agent in meta["agents"]]
    action = record._Column(pa, meta["action_kind"]).type
    return record.schemas(pa, action, who=who, episode_fields=returns)


def _common_action_kind(env: ParallelEnv[str, Obs, Action], team: list[str]) -> str:
    kinds = {record._action_kind(env.action_space(agent)) for agent in team}
    return kinds.pop() if len(kinds) == 1 else "text"


class ParallelRecorder(BaseParallelWrapper[str, Obs, Action]):
    """Records every step of every agent of a PettingZoo parallel env, and every episode, to a log directory.

    The log has the layout of :class:`rlwrappers.record.Recorder`: ``meta.json``, ``steps.parquet`` (one row
    per agent per step) and ``episodes.parquet`` (one row per episode, with the team return and one return per
    agent); rows are streamed to ``stream.arrows`` as each episode ends, so a killed run keeps every finished
    episode, and ``close`` compacts the stream to Parquet. :func:`rlwrappers.record.load` and
    :func:`rlwrappers.record.load_episodes` read finished logs; :func:`team_returns` and :func:`who_acted`
    read any.

    Put it outermost. The ``action`` of a row is the action the env executed: the outside policy's for a
    switched agent, as reported by the :class:`AgentSwitch` layers below. An episode ends when no agent is
    left in ``env.agents``; its ``terminated`` (``truncated``) says whether some agent's episode ended by
    termination (truncation).

    Args:
        env: the parallel env, with its :class:`AgentSwitch` layers.
        path: the log directory; created if missing.
        metadata: extra JSON-ready entries for the header.
        overwrite: replace an existing log at ``path`` instead of raising.

    Example:
        >>> import tempfile
        >>> from mpe2 import simple_spread_v3
        >>> from rlwrappers.multiagent import AgentSwitch, ParallelRecorder, team_returns
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
        env = _parallel_env(env)
        self._log = record.LogStream(path, overwrite=overwrite, metadata=metadata)
        super().__init__(env)
        self.path, self.pa = self._log.path, self._log.pa

        team = list(env.possible_agents)
        self._team = team
        self._switches = list(switches(env))
        self._action = record._Column(self.pa, _common_action_kind(env, team))
        env_id = env.metadata.get("name") if isinstance(getattr(env, "metadata", None), Mapping) else None
        self.meta: dict[str, Any] = {
            "format": record.FORMAT,
            "format_version": record.FORMAT_VERSION,
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
        self._steps, self._episodes = schemas(self.pa, self.meta)
        self._log.write_meta(self.meta)
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
            self._end_episode()
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
            self._end_episode()
        return obs, rewards, terminations, truncations, infos

    def _end_episode(self) -> None:
        """Writes the episode: its rows as one record batch, its episode row in that batch's metadata."""
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
        self._log.write(pa.record_batch(columns, schema=self._steps), episode)
        self._open = False

    # -- closing ----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Writes an open episode (marked incomplete), compacts the log to Parquet, then closes the env."""
        if not self._closed:
            self._closed = True
            if self._open:
                self._end_episode()
            self._log.close(self.meta, episodes=self._episode + 1, seeds=self._seeds)
        super().close()


# -- reading -------------------------------------------------------------------------------------------------
def _meta(root: Path) -> dict[str, Any]:
    meta = record._read_meta(root)
    if "agents" not in meta:
        raise LogError(f"{str(root)!r} holds a single-agent log: it has no `agents` in its header")
    return meta


def _frame(path: str | os.PathLike[str] | record.Log, table: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    if isinstance(path, record.Log):
        if "agents" not in path.meta:
            raise LogError(f"{str(path.path)!r} holds a single-agent log: it has no `agents` in its header")
        return getattr(path, table), path.meta
    root = Path(path)
    meta = _meta(root)
    return record._frames(root, meta, (table,))[table], meta


def team_returns(log: str | os.PathLike[str] | record.Log) -> pd.DataFrame:
    """Per-agent and team returns of a multi-agent log, one row per episode (indexed by ``episode``).

    Columns: one per agent (its return: the sum of its rewards), then ``team`` (the sum over agents). Reads
    finished logs and logs of runs still going or killed.
    """
    episodes, meta = _frame(log, "episodes")
    agents = list(meta["agents"])
    out = episodes[[f"return.{a}" for a in agents]].astype(np.float64)
    out.columns = agents
    out.insert(len(agents), "team", episodes["return"].astype(np.float64).to_numpy())
    out.index = episodes["episode"].astype(np.int64).to_numpy()
    out.index.name = "episode"
    return out


def who_acted(log: str | os.PathLike[str] | record.Log, episode: int = 0) -> pd.DataFrame:
    """The policy that chose each agent's action at each step of one episode: rows are steps, columns agents."""
    steps, meta = _frame(log, "steps")
    rows = steps[steps["episode"] == episode]
    if rows.empty:
        raise InvalidArgument(f"`episode` {episode!r} is not in the log")
    table = rows.pivot(index="step", columns="agent", values="policy")
    table = table[[a for a in meta["agents"] if a in table.columns]]
    table.columns.name = None
    return table


# -- teams and switch specs for evaluations ------------------------------------------------------------------
#: Parallel envs known by a short ID, each a module with a ``parallel_env`` factory.
PARALLEL_ENVS: Final = MappingProxyType(
    {
        "simple_spread_v3": "mpe2.simple_spread_v3",
        "coordinated_buildings_v0": "rlwrappers.envs.powergrid",
    }
)
#: The group of outside policies that are fresh, seeded, untrained networks (seed 001's "untrained agents").
UNTRAINED: Final = "untrained"


def parallel_factory(env_id: str) -> Callable[..., ParallelEnv[str, Obs, Action]] | None:
    """The ``parallel_env`` factory of a parallel env ID, or None when ``env_id`` names no parallel env.

    An ID is a short name from :data:`PARALLEL_ENVS` or the import path of a module with a ``parallel_env``
    factory, such as ``"mpe2.simple_spread_v3"``.
    """
    import importlib

    module_name = PARALLEL_ENVS.get(env_id, env_id)
    if not module_name.replace(".", "").replace("_", "").isalnum():
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    factory = getattr(module, "parallel_env", None)
    return factory if callable(factory) else None


class Team:
    """A team's policies, one per agent, under one name: what an evaluation of a parallel env runs.

    Args:
        policies: agent name -> policy (an :class:`~rlwrappers.agents.Agent` or anything
            :func:`~rlwrappers.agents.adapt` accepts).
        name: the team's name in logs and reports.
    """

    def __init__(self, policies: Mapping[str, Any], name: str = TEAM) -> None:
        if not isinstance(policies, Mapping) or not policies:
            raise InvalidType(f"`policies` must map agent names to policies, received {policies!r}")
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"`name` must be a non-empty string, received {name!r}")
        self.policies = dict(policies)
        self.name = name

    def bind(self, env: ParallelEnv[str, Obs, Action]) -> dict[str, Agent]:
        """The policies adapted to ``env``'s agents; every agent needs one, with fitting spaces.

        Raises:
            UnknownName: a policy for an agent the env does not have.
            InvalidArgument: an agent of the env without a policy.
            IncompatibleSpace: a policy whose spaces do not fit its agent's.
        """
        team = list(env.possible_agents)
        for key in self.policies:
            if key not in team:
                raise UnknownName(
                    f"team {self.name!r} has a policy for unknown agent `{key}`; the env's agents are"
                    f" {team}.{did_you_mean(str(key), team)}"
                )
        missing = [a for a in team if a not in self.policies]
        if missing:
            raise InvalidArgument(f"team {self.name!r} has no policy for agent `{missing[0]}`")
        out = {}
        for agent in team:
            adapted = adapt(self.policies[agent], env.observation_space(agent), env.action_space(agent))
            for what in ("observation_space", "action_space"):
                mine, theirs = getattr(adapted, what), getattr(env, what)(agent)
                if not _fits(mine, theirs):
                    raise IncompatibleSpace(
                        f"team {self.name!r}'s policy for `{agent}` has {what} {mine}, but `{agent}`'s is {theirs}"
                    )
            out[agent] = adapted
        return out

    def __repr__(self) -> str:
        return f"Team({self.name!r}, {sorted(self.policies)})"


def switch_entry(spec: str | Mapping[str, Any], when: Any = None) -> dict[str, Any]:
    """A switch spec as the dict an evaluation stores: ``switch(k=2, to=outside)``, ``switch(agents=[...], to=...)``.

    ``to`` names a group of outside policies given to the evaluation (``outside=``), or ``untrained``;
    ``when`` is the schedule, by default the evaluation's.

    Raises:
        InvalidArgument: not a ``switch(...)`` spec, or missing or unknown arguments.
    """
    from rlwrappers.spec import Call
    from rlwrappers.spec import parse as parse_spec

    if isinstance(spec, str):
        call = parse_spec(spec, what="switch")
        if call.name != "switch" or call.args:
            raise InvalidArgument(f"a shift of a parallel env is `switch(k=..., to=...)`, received {spec!r}")
        params = dict(call.kwargs)
    elif isinstance(spec, Mapping):
        params = {k: v for k, v in spec.items() if k != "name"}
        if spec.get("name", "switch") != "switch":
            raise InvalidArgument(f"a shift of a parallel env is a switch, received {dict(spec)!r}")
    else:
        raise InvalidType(f"a shift of a parallel env must be a `switch(...)` spec string or dict, received {spec!r}")
    to = params.pop("to", None)
    if isinstance(to, Call) and not to.args and not to.kwargs:
        to = to.name  # a bare name: switch(k=1, to=outside)
    if not isinstance(to, str) or not to:
        raise InvalidArgument(f"`switch` needs `to`, the group of outside policies, received {to!r}")
    own_when = params.pop("when", None)
    schedule = schedules.parse(str(own_when) if own_when is not None else when)
    unknown = set(params) - {"k", "agents"}
    if unknown:
        raise InvalidArgument(f"`switch` takes `k` or `agents`, `to` and `when`, received {sorted(unknown)}")
    return {"name": "switch", **params, "to": to, "when": str(schedule)}


def untrained(env: ParallelEnv[str, Obs, Action], seed: int = 0) -> dict[str, Agent]:
    """Fresh, seeded, untrained networks for every agent of ``env``: seed 001's "untrained agents".

    Each is a two-layer perceptron with 128 units per layer (Appendix E's architecture) from the agent's
    flattened observation to action logits (Discrete actions) or a deterministic action (Box actions, tanh
    scaled to the bounds). For the coordinated-buildings env they are the trained teams' own networks before
    training (:func:`rlwrappers.zoo.teams.untrained`). The same seed gives the same weights.
    """
    seed = _check.integer("seed", seed, minimum=0)
    from rlwrappers.envs.powergrid import CoordinatedBuildings

    if isinstance(env.unwrapped, CoordinatedBuildings):  # the trained teams' own architecture and input scaling
        from rlwrappers.zoo import teams

        return teams.untrained(env.unwrapped, seed)
    torch = require("torch", purpose="untrained policies")
    from rlwrappers.agents import TorchAgent

    out: dict[str, Agent] = {}
    for i, agent in enumerate(env.possible_agents):
        observation_space, action_space = env.observation_space(agent), env.action_space(agent)
        inputs = int(np.prod(observation_space.shape or (1,)))
        if isinstance(action_space, gym.spaces.Discrete):
            outputs, head = int(action_space.n), "logits"
        elif isinstance(action_space, gym.spaces.Box):
            outputs, head = int(np.prod(action_space.shape)), "action"
        else:
            raise InvalidType(f"untrained policies need Discrete or Box actions; `{agent}` has {action_space}")
        generator = torch.Generator().manual_seed(seed * 100_003 + i)
        layers = [torch.nn.Flatten(), torch.nn.Linear(inputs, 128), torch.nn.Tanh()]
        layers += [torch.nn.Linear(128, 128), torch.nn.Tanh(), torch.nn.Linear(128, outputs)]
        net = torch.nn.Sequential(*layers)
        with torch.no_grad():
            for p in net.parameters():
                p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) / np.sqrt(p.shape[-1]))
        if head == "action" and np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high)):
            scale = torch.nn.Linear(outputs, outputs)  # [-1, 1] to the bounds, a fixed affine map
            with torch.no_grad():
                low, high = (torch.as_tensor(b, dtype=torch.float32).flatten() for b in action_space.bounds)
                scale.weight.copy_(torch.diag((high - low) / 2))
                scale.bias.copy_((high + low) / 2)
            net = torch.nn.Sequential(net, torch.nn.Tanh(), scale, torch.nn.Unflatten(1, action_space.shape))
        out[agent] = TorchAgent(net, observation_space, action_space, head=head)
    return out
