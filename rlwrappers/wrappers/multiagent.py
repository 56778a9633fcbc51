"""Ad hoc agent switching in PettingZoo parallel envs.

:class:`AgentSwitch` replaces some members of a team with outside policies: the team's own policies act as
usual (the caller passes a dict of actions to ``step``), and the switched agents' actions are replaced by
what the outside policies choose from each switched agent's latest observation. A schedule says when the
switch holds: from the start (``"always"``), from an episode on (``"starting(episode=T)"``, the causal study
of seed 001, Section 5), or in bursts of a random number of steps (``"bursts(p=..., duration=(lo, hi))"``,
the observational study of seed 001, Section 5, after Rahman et al. 2021).

:class:`rlwrappers.logs.ParallelRecorder` writes a log with one ``steps`` row per agent per step, telling who
acted; :func:`rlwrappers.logs.team_returns` and :func:`rlwrappers.logs.who_acted` read it back.

Every ``step`` reports, for each agent that acted, ``info[agent]["rlwrappers"] = {"policy": ..., "switched":
...}``: ``"team"`` and False for the team's own policy, the outside policy's name and True for a switched
agent while the switch holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

import numpy as np

from rlwrappers import _check, seeding
from rlwrappers import schedule as schedules
from rlwrappers._optional import require
from rlwrappers.agents import Agent, CallableAgent, adapt, fits
from rlwrappers.core import INFO_KEY
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, UnknownName, did_you_mean
from rlwrappers.schedule import Plan, Schedule

require("pettingzoo", purpose="multi-agent envs")
from pettingzoo.utils import BaseParallelWrapper  # noqa: E402
from pettingzoo.utils.env import ParallelEnv  # noqa: E402

__all__ = ["TEAM", "AgentSwitch", "parallel_env_of", "switches"]

#: The policy name reported for an agent that the team's own policy controls.
TEAM: Final = "team"

Obs = Any
Action = Any


def parallel_env_of(env: Any) -> ParallelEnv[str, Obs, Action]:
    """``env`` if it is a PettingZoo ``ParallelEnv``; raises naming what it is otherwise."""
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
            if not fits(mine, theirs):
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
    :attr:`entropy` and in a :class:`~rlwrappers.logs.ParallelRecorder`'s log), so the same seeds give the same
    switches and the same outside actions bit for bit.

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
        >>> from rlwrappers.wrappers.multiagent import AgentSwitch
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
        env = parallel_env_of(env)
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

        self._clock = seeding.EpisodeClock()
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
        return self._clock.episode

    @property
    def entropy(self) -> int | None:
        """The seed (or OS entropy, for a run never seeded) the switch's generators derive from."""
        return self._clock.entropy

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
        clock = self._clock
        clock.reset(seed)

        obs, infos = self.env.reset(seed=seed, options=options)

        rng = clock.generator(self.label, seeding.SCHEDULE) if self.when.random else None
        plan = self._plan = self.when.plan(clock.episode, clock.total_step, rng)
        self._next_change = plan.next_change(0) if plan.constant is None else float("inf")
        for p in self._stochastic:
            p.rng = clock.generator(f"{self.label}/{p.agent}", seeding.EFFECT)
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

        t = self._clock.tick()
        if t >= self._next_change:
            self._on = self._plan.active(t)
            self._next_change = self._plan.next_change(t)
        if self._on:
            self._choose(obs)
        return obs, rewards, terminations, truncations, reported
