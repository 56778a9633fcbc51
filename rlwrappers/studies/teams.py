"""Teams in PettingZoo parallel envs, for evaluations that switch some of their agents (seed 001, Section 5).

An evaluation of a parallel env runs a :class:`Team` (one policy per agent) and shifts it with
``switch(k=..., to=GROUP)`` specs (:func:`switch_entry`), each an
:class:`~rlwrappers.wrappers.multiagent.AgentSwitch` to a group of outside policies: a team from the zoo
(:mod:`rlwrappers.zoo.teams`), a dict of policies, or ``untrained`` (:func:`untrained`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers import _check
from rlwrappers import schedule as schedules
from rlwrappers._optional import require
from rlwrappers.agents import Agent, TorchAgent, adapt, fits
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, UnknownName, did_you_mean
from rlwrappers.logs.parallel import ParallelRecorder
from rlwrappers.spec import Call
from rlwrappers.spec import parse as parse_spec
from rlwrappers.studies.design import (
    BASELINE,
    RunSpec,
    Settings,
    Stack,
    agent_generator,
    episode_seed,
    index_row,
    parallel_factory,
)
from rlwrappers.wrappers.multiagent import TEAM, AgentSwitch
from rlwrappers.zoo import teams

if TYPE_CHECKING:
    from pettingzoo.utils.env import ParallelEnv

__all__ = [
    "UNTRAINED",
    "Team",
    "TeamRun",
    "bind_team",
    "check_teams",
    "make_team_env",
    "parse_switches",
    "parse_teams",
    "policies_of",
    "run_team",
    "switch_entry",
    "untrained",
]

Obs = Any
Action = Any

#: The group of outside policies that are fresh, seeded, untrained networks (seed 001's "untrained agents").
UNTRAINED: Final = "untrained"


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
                if not fits(mine, theirs):
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
        return teams.untrained(env.unwrapped, seed)
    torch = require("torch", purpose="untrained policies")

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


# -- arms of an evaluation of a parallel env ----------------------------------------------------------------
@dataclass(frozen=True)
class TeamRun:
    """What a run of a parallel env needs besides the settings: the team and the groups of outside policies.

    Each is a team zoo name (:mod:`rlwrappers.zoo.teams`), a :class:`Team`, or for an
    outside group a dict of agent name -> policy; the group ``untrained`` is fresh seeded networks.
    """

    team: Any
    outside: Mapping[str, Any]


_WORKER_TEAMS: dict[str, dict[str, Any]] = {}


def policies_of(source: Any, env: Any) -> Mapping[str, Any]:
    """The policies of a team or an outside group by agent: zoo teams and untrained ones load once per process."""
    if source == UNTRAINED:
        return untrained(env, seed=0)  # built for this env's agents, cheap: never cached
    if isinstance(source, str):
        if source not in _WORKER_TEAMS:
            _WORKER_TEAMS[source] = teams.load_team(source)
        return _WORKER_TEAMS[source]
    return source.policies if isinstance(source, Team) else source


def bind_team(source: Any, env: Any, name: str) -> dict[str, Agent]:
    """A team's policies adapted to ``env``, one for every agent."""
    return Team(policies_of(source, env), source if isinstance(source, str) else name).bind(env)


def make_team_env(settings: Settings, shift: str, team_run: TeamRun, first_episode: int = 0) -> Any:
    """The parallel env of one arm: the env with one :class:`~rlwrappers.wrappers.multiagent.AgentSwitch` per switch."""
    factory = parallel_factory(settings.env_id)
    if factory is None:
        raise InvalidArgument(f"`env_id` {settings.env_id!r} names no PettingZoo parallel env")
    env = factory(**settings.env_kwargs)
    for entry in settings.entries(shift, first_episode):
        group = entry["to"]
        source = team_run.outside.get(group, UNTRAINED if group == UNTRAINED else None)
        who = {"k": entry["k"]} if "k" in entry else {"agents": entry.get("agents")}
        env = AgentSwitch(env, policies_of(source, env), **who, when=entry["when"], label=group)
    return env


def run_team(spec: RunSpec, team_run: TeamRun, settings: Settings, root: str) -> dict[str, Any]:
    """Runs one (team, switch, seed) of a parallel env and writes its multi-agent log; returns its index row."""
    start = time.time()
    env = make_team_env(settings, spec.shift, team_run, spec.first_episode)
    policies = bind_team(team_run.team, env, spec.agent)
    metadata = {"agent": spec.agent, "shift": spec.shift, "run_seed": spec.seed, "first_episode": spec.first_episode}
    recorder = ParallelRecorder(env, Path(root) / spec.path, overwrite=True, metadata=metadata)
    returns = []
    try:
        for episode in range(spec.first_episode, settings.episodes):
            obs, _ = recorder.reset(seed=episode_seed(spec.seed, episode))
            rng = agent_generator(spec.seed, episode)
            total = 0.0
            while recorder.agents:
                # Every agent's policy acts, switched or not, so the team draws alike in both arms.
                actions = {a: policies[a].act_one(obs[a], rng) for a in recorder.agents}
                obs, rewards, _, _, _ = recorder.step(actions)
                total += float(sum(rewards.values()))
            returns.append(total)
    finally:
        recorder.close()
    return index_row(spec, returns, time.time() - start)


def parse_switches(shifts: Any, when: Any) -> dict[str, list[dict[str, Any]]]:
    """The switches of a parallel env's evaluation as name -> list of switch dicts, named by spec unless named."""
    if isinstance(shifts, str):
        shifts = [shifts]
    if isinstance(shifts, Mapping):
        named = dict(shifts)
    elif isinstance(shifts, Sequence):
        named = {spec if isinstance(spec, str) else str(spec): spec for spec in shifts}
    else:
        raise InvalidType(f"`shifts` must be a list of switch specs or a dict of name -> spec, received {shifts!r}")
    out = {}
    for name, spec in named.items():
        if not isinstance(name, str) or not name or name == BASELINE:
            raise InvalidArgument(f"shift names must be non-empty strings other than {BASELINE!r}, received {name!r}")
        specs = spec if isinstance(spec, (list, tuple)) else [spec]
        out[name] = [switch_entry(s, when) for s in specs]
    return out


def parse_teams(agent: Any) -> dict[str, Any]:
    """The teams of an evaluation of a parallel env by name: a zoo team name, a Team, or a dict of them."""
    if isinstance(agent, str):
        return {agent: agent}
    if isinstance(agent, Team):
        return {agent.name: agent}
    if isinstance(agent, Mapping) and agent and all(isinstance(v, (str, Team)) for v in agent.values()):
        return dict(agent)
    raise InvalidType(
        "`agent` of a parallel env must be a team zoo name, a rlwrappers.studies.teams.Team, or a dict of names to"
        f" them, received {agent!r}"
    )


def check_teams(
    teams: Mapping[str, Any], outside: Mapping[str, Any], settings: Settings, stack: Stack
) -> dict[str, TeamRun]:
    """Rejects options a parallel env does not take, builds each arm's env and binds every team to it."""
    for option, value in (("wrappers", stack.under), ("outer_wrappers", stack.over), ("probe", settings.probe)):
        if value:
            raise InvalidArgument(
                f"`{option}` applies to Gymnasium envs only, not to the parallel env {settings.env_id!r}"
            )
    if settings.lives_as_episodes:
        raise InvalidArgument(f"`lives_as_episodes` applies to Atari envs only, not to {settings.env_id!r}")
    for group in outside:
        if not isinstance(group, str) or not group or group == UNTRAINED:
            raise InvalidArgument(
                f"`outside` group names must be non-empty strings other than {UNTRAINED!r}, received {group!r}"
            )
    for name, entries in settings.shifts.items():
        for entry in entries:
            if entry["to"] not in outside and entry["to"] != UNTRAINED:
                known = [*outside, UNTRAINED]
                raise UnknownName(
                    f"shift {name!r} switches to unknown group `{entry['to']}`; `outside` gives {known}."
                    f"{did_you_mean(entry['to'], known)}"
                )
    runs = {name: TeamRun(team, dict(outside)) for name, team in teams.items()}
    for shift in (BASELINE, *settings.shifts):
        for name, team_run in runs.items():
            env = make_team_env(settings, shift, team_run)
            try:
                bind_team(team_run.team, env, name)
            finally:
                env.close()
    return runs
