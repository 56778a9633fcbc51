"""Evaluation runs: an agent under several shifts over many seeds, each paired with a same-seed counterfactual.

:func:`evaluate` runs every (agent, shift, seed) for ``episodes`` episodes, plus one counterfactual run per
(agent, seed) without any shift, named ``"baseline"``. Episode ``i`` of a run with seed ``s`` resets the env
with :func:`episode_seed` (s, i), and the agent's own randomness for that episode comes from a generator
derived from (s, i) too, so a shifted run and its counterfactual start every episode alike and differ only by
the shift. The counterfactual is shared by all shifts: with the same seeds and no shift it would be the same
run every time.

Each run writes one :class:`~rlwrappers.record.Recorder` log. The run directory looks like::

    out/
      evaluation.json          what was asked: agents, env, shifts, episodes, seeds, options
      index.json               one row per run: agent, shift, seed, log path, status, mean return
      logs/<agent>/<shift>/seed<k>/   one log per run
      probes/<agent>/<shift>.npz      with ``probe=N``: N states seen with and without each shift (:class:`Probe`)

Runs go to local worker processes by default (``workers``) or to Ray (``backend="ray"``, the ``ray`` extra),
which gives the same returns. A sweep that was interrupted resumes where it stopped: runs whose logs are
complete are not redone. :func:`open_evaluation` reads a run directory back.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import re
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import agents as agents_module
from rlwrappers import schedule, seeding
from rlwrappers._optional import require
from rlwrappers._version import __version__
from rlwrappers.core import Entry, Perturbation, attach, wrap
from rlwrappers.error import InvalidArgument, InvalidType, LogError, MissingExtra, UnknownName, did_you_mean
from rlwrappers.schedule import Schedule, Starting

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BASELINE",
    "Evaluation",
    "FixedSeedWarning",
    "LivesAsEpisodes",
    "Probe",
    "RunSpec",
    "Stack",
    "episode_seed",
    "evaluate",
    "open_evaluation",
    "summarize",
]

#: The name of the counterfactual arm: the same seeds, no shift.
BASELINE: Final = "baseline"
SPEC_FILE: Final = "evaluation.json"
INDEX_FILE: Final = "index.json"
BACKENDS: Final = ("local", "ray")
#: The generator label of an agent's own randomness.
AGENT_LABEL: Final = "agent"

ShiftSpec = str | Mapping[str, Any] | Perturbation


def episode_seed(run_seed: int, episode: int) -> int:
    """The seed given to ``reset`` for episode ``episode`` of a run: a 63-bit hash of (run seed, episode).

    Distinct (run seed, episode) pairs give distinct seeds with overwhelming probability, so runs with
    neighbouring seeds do not share episodes.
    """
    state = np.random.SeedSequence(run_seed, spawn_key=(episode,)).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


def agent_generator(run_seed: int, episode: int) -> np.random.Generator:
    """The generator a stochastic agent draws from in episode ``episode`` of a run."""
    return seeding.generator(run_seed, episode, AGENT_LABEL, seeding.EFFECT)


class LivesAsEpisodes(gym.Wrapper[Any, Any, Any, Any]):
    """Counts each life of an Atari game as one episode (seed 001, Appendix C.1).

    A lost life ends the episode (``terminated``); the next ``reset`` continues the same game from there
    (its seed is not used) unless the game is over. Needs an env that reports ``info["lives"]`` (ALE).
    """

    def __init__(self, env: gym.Env[Any, Any]):
        super().__init__(env)
        self.game_over = True
        self._lives = 0
        self._obs: Any = None
        self._info: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Starts a new game if the last one is over; otherwise goes on with the next life."""
        if self.game_over:
            obs, info = self.env.reset(seed=seed, options=options)
            if "lives" not in info:
                raise InvalidArgument(f"lives_as_episodes needs an env whose info reports 'lives'; {self.env} does not")
            self.game_over = False
            self._lives = int(info["lives"])
            return obs, info
        return self._obs, dict(self._info)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Steps the game; losing a life terminates the episode."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = bool(terminated or truncated)
        lives = int(info.get("lives", self._lives))
        life_lost = 0 < lives < self._lives
        self._lives = lives
        self._obs, self._info = obs, info
        return obs, reward, terminated or life_lost, truncated, info


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: which agent, which shift (or the baseline), which seed, and where its log goes.

    ``first_episode`` is the first episode the run plays: 0, or in the causal protocol the last episode before
    the shift, when the episodes before it are the counterfactual's (see :func:`evaluate`'s ``shift_at``).
    """

    agent: str
    shift: str
    seed: int
    path: str
    first_episode: int = 0


@dataclass(frozen=True)
class _Settings:
    """Everything a worker needs besides the agent; JSON-ready."""

    env_id: str
    env_kwargs: dict[str, Any]
    shifts: dict[str, list[dict[str, Any]]]
    episodes: int
    deterministic: bool
    lives_as_episodes: bool
    probe: int = 0
    agent_sources: dict[str, str | None] = field(default_factory=dict)
    shift_at: int | None = None
    share_pre_shift: bool = True
    observational: bool = False
    multiagent: bool = False
    outside: dict[str, str | None] = field(default_factory=dict)

    def first_episode(self, shift: str) -> int:
        """The first episode an arm plays: shifted arms of a causal run start just before the shift."""
        sharing = self.shift_at is not None and self.share_pre_shift and not self.lives_as_episodes
        return self.shift_at - 1 if sharing and shift != BASELINE and self.shift_at is not None else 0

    def entries(self, shift: str, first_episode: int = 0) -> list[dict[str, Any]]:
        """The perturbations of an arm whose first episode is ``first_episode``.

        In a causal run they start at episode ``shift_at`` and follow their own schedule from there.
        """
        entries = self.shifts.get(shift, []) if shift != BASELINE else []
        if self.shift_at is None:
            return entries
        start = Starting(episode=self.shift_at - first_episode)
        return [{**e, "when": str(_from(start, e["when"]))} for e in entries]


def _from(start: Schedule, when: str) -> Schedule:
    own = schedule.parse(when)
    return start if own == schedule.ALWAYS else start & own


def _shift_entries(shifts: Any, when: Any) -> dict[str, list[dict[str, Any]]]:
    """Shifts as name -> list of perturbation dicts; a shift is named by its spec string unless given a name."""
    if isinstance(shifts, (str, Perturbation)) or (isinstance(shifts, Mapping) and "name" in shifts):
        shifts = [shifts]  # a single spec
    if isinstance(shifts, Mapping):
        named = dict(shifts)
    elif isinstance(shifts, Sequence):
        named = {spec if isinstance(spec, str) else str(Entry.parse(spec, when)): spec for spec in shifts}
    else:
        raise InvalidType(f"`shifts` must be a list of specs or a dict of name -> spec(s), received {shifts!r}")
    out: dict[str, list[dict[str, Any]]] = {}
    for name, spec in named.items():
        if not isinstance(name, str) or not name or name == BASELINE:
            raise InvalidArgument(f"shift names must be non-empty strings other than {BASELINE!r}, received {name!r}")
        specs = spec if isinstance(spec, (list, tuple)) else [spec]
        if not specs:
            raise InvalidArgument(f"shift {name!r} has no perturbation")
        out[name] = [Entry.parse(s, when).to_dict() for s in specs]
    return out


def _directory_name(name: str) -> str:
    return re.sub(r"[^\w.=,-]+", "_", name).strip("_") or "_"


def _seeds(seeds: int | Sequence[int]) -> list[int]:
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise InvalidArgument(f"`seeds` must be >= 1 (a count) or a list of seeds, received {seeds!r}")
        return list(range(int(seeds)))
    if isinstance(seeds, Sequence) and not isinstance(seeds, str) and seeds:
        out = []
        for s in seeds:
            if not isinstance(s, (int, np.integer)) or isinstance(s, bool) or not 0 <= s < 2**63:
                raise InvalidArgument(f"`seeds` must hold ints in [0, 2**63), received {s!r}")
            out.append(int(s))
        if len(set(out)) != len(out):
            raise InvalidArgument(f"`seeds` must not repeat, received {list(seeds)!r}")
        return out
    raise InvalidArgument(f"`seeds` must be a count >= 1 or a non-empty list of ints, received {seeds!r}")


def _agents(agent: Any) -> dict[str, Any]:
    if isinstance(agent, Mapping):
        if not agent:
            raise InvalidArgument("`agent` must name at least one agent, received an empty dict")
        for name in agent:
            if not isinstance(name, str) or not name:
                raise InvalidArgument(f"agent names must be non-empty strings, received {name!r}")
        return dict(agent)
    if isinstance(agent, (str, os.PathLike)):
        return {Path(agent).stem if Path(agent).suffix == ".zip" else str(agent): agent}
    return {"agent": agent}


# -- one run ---------------------------------------------------------------------------------------------
_WORKER_AGENTS: dict[str, agents_module.Agent] = {}


def _resolve(agent: Any, settings: _Settings, env: gym.Env[Any, Any]) -> agents_module.Agent:
    """The agent as an Agent; names and paths are loaded once per process."""
    if isinstance(agent, (str, os.PathLike)):
        key = f"{agent}|{settings.deterministic}"
        if key not in _WORKER_AGENTS:
            _WORKER_AGENTS[key] = agents_module.load(agent, deterministic=settings.deterministic)
        return _WORKER_AGENTS[key]
    if isinstance(agent, agents_module.Agent):
        return agent  # an Agent keeps its own `deterministic`
    if type(agent).__module__.startswith("stable_baselines3"):
        return agents_module.adapt(agent, env.observation_space, deterministic=settings.deterministic)
    return agents_module.adapt(agent, env.observation_space, env.action_space)


@dataclass(frozen=True)
class Stack:
    """The wrappers around an arm's shift: ``under`` it (the env's own) and ``over`` it (the agent's preprocessing).

    A shift acts on what the ``under`` wrappers emit. Perturbations that act on the agent's own input (those
    that need the agent: gradient attacks, parameter noise) go above the ``over`` wrappers instead.
    """

    under: tuple[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]], ...] = ()
    over: tuple[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]], ...] = ()


def _on_agent_input(entry: Mapping[str, Any]) -> bool:
    """Whether a stored perturbation acts on the agent's own input, above any preprocessing."""
    return Entry.parse(entry).perturbation.needs_agent


def _make_env(
    settings: _Settings, shift: str, stack: Stack, *, always: bool = False, first_episode: int = 0
) -> tuple[gym.Env[Any, Any], LivesAsEpisodes | None]:
    """The env of one arm, and its :class:`LivesAsEpisodes` layer when lives count as episodes.

    Without ``over`` wrappers, lives are counted under the shift, so a shift's schedule counts lives; with
    them, above the preprocessing (which must see whole games), so a shift under it counts games.
    ``always`` makes the shift act at every step, whatever its schedule; ``first_episode`` is the arm's
    first episode (:meth:`_Settings.entries`).
    """
    if always:
        entries = [{**e, "when": "always"} for e in settings.shifts.get(shift, [])]
    else:
        entries = settings.entries(shift, first_episode)
    env = gym.make(settings.env_id, **settings.env_kwargs)
    for wrapper in stack.under:
        env = wrapper(env)
    lives = None
    if settings.lives_as_episodes and not stack.over:
        env = lives = LivesAsEpisodes(env)
    on_input = [_on_agent_input(e) for e in entries]
    below = [e for e, top in zip(entries, on_input, strict=True) if not top]
    if below:
        env = wrap(env, *below)
    for wrapper in stack.over:
        env = wrapper(env)
    if settings.lives_as_episodes and stack.over:
        env = lives = LivesAsEpisodes(env)
    above = [e for e, top in zip(entries, on_input, strict=True) if top]
    if above:
        env = wrap(env, *above)
    return env, lives


def run(spec: RunSpec, agent: Any, settings: _Settings, root: str, stack: Stack = Stack()) -> dict[str, Any]:
    """Runs one (agent, shift, seed) and writes its log; returns its index row."""
    from rlwrappers.record import Recorder

    if settings.multiagent:
        return _run_team(spec, agent, settings, root)
    start = time.time()
    env, lives = _make_env(settings, spec.shift, stack, first_episode=spec.first_episode)
    actor = _resolve(agent, settings, env)
    agents_module.check_compatible(actor, env)
    path = Path(root) / spec.path
    metadata = {
        "agent": spec.agent,
        "shift": spec.shift,
        "run_seed": spec.seed,
        "first_episode": spec.first_episode,
        "agent_detail": str(actor),
    }
    recorder = Recorder(env, path, overwrite=True, metadata=metadata)
    attach(recorder, actor)
    returns = []
    try:
        game = 0
        for episode in range(spec.first_episode, settings.episodes):
            new_game = lives is None or lives.game_over
            seed = episode_seed(spec.seed, game if lives is not None else episode) if new_game else None
            game += int(new_game)
            obs, _ = recorder.reset(seed=seed)
            rng = agent_generator(spec.seed, episode)
            total, done = 0.0, False
            act = actor.act
            while not done:
                obs, reward, terminated, truncated, _ = recorder.step(act(obs[None], rng)[0])
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        recorder.close()
    return _row(spec, returns, start)


def _row(spec: RunSpec, returns: Sequence[float], start: float) -> dict[str, Any]:
    """The index row of a finished run."""
    return {
        **asdict(spec),
        "status": "complete",
        "episodes": len(returns),
        "mean_return": float(np.mean(returns)),
        "seconds": round(time.time() - start, 3),
    }


# -- teams in parallel envs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _TeamRun:
    """What a run of a parallel env needs besides the settings: the team and the groups of outside policies.

    Each is a team zoo name (:mod:`rlwrappers.zoo.teams`), a :class:`~rlwrappers.multiagent.Team`, or for an
    outside group a dict of agent name -> policy; the group ``untrained`` is fresh seeded networks.
    """

    team: Any
    outside: Mapping[str, Any]


_WORKER_TEAMS: dict[str, dict[str, Any]] = {}


def _policies(source: Any, env: Any) -> Mapping[str, Any]:
    """The policies of a team or an outside group by agent: zoo teams and untrained ones load once per process."""
    from rlwrappers.multiagent import UNTRAINED, Team, untrained

    if source == UNTRAINED:
        return untrained(env, seed=0)  # built for this env's agents, cheap: never cached
    if isinstance(source, str):
        if source not in _WORKER_TEAMS:
            from rlwrappers.zoo import teams

            _WORKER_TEAMS[source] = teams.load(source)
        return _WORKER_TEAMS[source]
    return source.policies if isinstance(source, Team) else source


def _team_policies(source: Any, env: Any, name: str) -> dict[str, agents_module.Agent]:
    """A team's policies adapted to ``env``, one for every agent."""
    from rlwrappers.multiagent import Team

    return Team(_policies(source, env), source if isinstance(source, str) else name).bind(env)


def _make_team_env(settings: _Settings, shift: str, team_run: _TeamRun, first_episode: int = 0) -> Any:
    """The parallel env of one arm: the env with one :class:`~rlwrappers.multiagent.AgentSwitch` per switch."""
    from rlwrappers.multiagent import UNTRAINED, AgentSwitch, parallel_factory

    factory = parallel_factory(settings.env_id)
    if factory is None:
        raise InvalidArgument(f"`env_id` {settings.env_id!r} names no PettingZoo parallel env")
    env = factory(**settings.env_kwargs)
    for entry in settings.entries(shift, first_episode):
        group = entry["to"]
        source = team_run.outside.get(group, UNTRAINED if group == UNTRAINED else None)
        who = {"k": entry["k"]} if "k" in entry else {"agents": entry.get("agents")}
        env = AgentSwitch(env, _policies(source, env), **who, when=entry["when"], label=group)
    return env


def _run_team(spec: RunSpec, team_run: _TeamRun, settings: _Settings, root: str) -> dict[str, Any]:
    """Runs one (team, switch, seed) of a parallel env and writes its multi-agent log; returns its index row."""
    from rlwrappers.multiagent import ParallelRecorder

    start = time.time()
    env = _make_team_env(settings, spec.shift, team_run, spec.first_episode)
    policies = _team_policies(team_run.team, env, spec.agent)
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
    return _row(spec, returns, start)


def _is_parallel(env_id: str) -> bool:
    """Whether ``env_id`` names a PettingZoo parallel env rather than a Gymnasium one."""
    if env_id in gym.registry:
        return False
    try:
        from rlwrappers.multiagent import parallel_factory
    except MissingExtra:
        return False
    return parallel_factory(env_id) is not None


def _switch_entries(shifts: Any, when: Any) -> dict[str, list[dict[str, Any]]]:
    """The switches of a parallel env's evaluation as name -> list of switch dicts, named by spec unless named."""
    from rlwrappers.multiagent import switch_entry

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


def _teams(agent: Any) -> dict[str, Any]:
    """The teams of an evaluation of a parallel env by name: a zoo team name, a Team, or a dict of them."""
    from rlwrappers.multiagent import Team

    if isinstance(agent, str):
        return {agent: agent}
    if isinstance(agent, Team):
        return {agent.name: agent}
    if isinstance(agent, Mapping) and agent and all(isinstance(v, (str, Team)) for v in agent.values()):
        return dict(agent)
    raise InvalidType(
        "`agent` of a parallel env must be a team zoo name, a rlwrappers.multiagent.Team, or a dict of names to"
        f" them, received {agent!r}"
    )


def _check_teams(
    teams: Mapping[str, Any], outside: Mapping[str, Any], settings: _Settings, stack: Stack
) -> dict[str, _TeamRun]:
    """Rejects options a parallel env does not take, builds each arm's env and binds every team to it."""
    from rlwrappers.multiagent import UNTRAINED

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
    runs = {name: _TeamRun(team, dict(outside)) for name, team in teams.items()}
    for shift in (BASELINE, *settings.shifts):
        for name, team_run in runs.items():
            env = _make_team_env(settings, shift, team_run)
            try:
                _team_policies(team_run.team, env, name)
            finally:
                env.close()
    return runs


# -- probes ----------------------------------------------------------------------------------------------
#: Run seed of the probe's episodes; a probe keeps every PROBE_STRIDE-th decision.
PROBE_SEED: Final = 2**31 - 1
PROBE_STRIDE: Final = 4
PROBE_DIR: Final = "probes"


def probe_path(agent: str, shift: str) -> str:
    """Where the probe of (agent, shift) lies in a run directory."""
    return f"{PROBE_DIR}/{_directory_name(agent)}/{_directory_name(shift)}.npz"


@dataclass(frozen=True)
class Probe:
    """States at which one agent's input was seen with and without one shift (see :func:`evaluate`'s ``probe``).

    Two copies of the arm's env, one clean and one under the shift (acting at every step, whatever its
    schedule), are reset with the same seeds and both stepped with the action the agent takes on the clean
    input, so they go through the same states. Every ``PROBE_STRIDE``-th decision is kept: the agent's input
    in both copies and the action the agent takes on each (a stochastic agent draws both from generators
    seeded alike, so only the input differs). Only shifts whose perturbations all act on observations have a
    probe: any other would change the course of the copy it acts on.

    Attributes:
        clean: the clean inputs, shape ``(states, *observation shape)``.
        shifted: the same states' inputs under the shift.
        clean_action: the agent's action on each clean input.
        shifted_action: its action on each shifted input.
        episode: the probe episode of each state.
        step: its step within that episode.
    """

    clean: NDArray[Any]
    shifted: NDArray[Any]
    clean_action: NDArray[Any]
    shifted_action: NDArray[Any]
    episode: NDArray[np.int64]
    step: NDArray[np.int64]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Probe:
        """Reads a probe file."""
        with np.load(path) as data:
            return cls(**{name: data[name] for name in cls.__dataclass_fields__})

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the probe (compressed) in one step: a reader never sees half a file."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        with tmp.open("wb") as f:
            np.savez_compressed(f, **asdict(self))
        tmp.replace(target)

    @property
    def flipped(self) -> NDArray[np.bool_]:
        """Whether the shift changed the agent's action, per state."""
        differ = self.clean_action != self.shifted_action
        return differ.reshape(len(differ), -1).any(axis=1) if differ.ndim > 1 else differ


def _probeable(settings: _Settings, shift: str) -> bool:
    """Whether a shift can be probed: all its perturbations act on observations."""
    return all(Entry.parse(e).perturbation.channel == "observation" for e in settings.shifts[shift])


def _run_probes(agents: Mapping[str, Any], settings: _Settings, root: Path, stack: Stack) -> None:
    """Probes every (agent, shift) that has no probe file yet."""
    if not settings.probe:
        return
    for name, agent in agents.items():
        for shift in settings.shifts:
            path = root / probe_path(name, shift)
            if not path.exists():
                _probe(agent, settings, shift, stack, path)


def _probe(agent: Any, settings: _Settings, shift: str, stack: Stack, path: Path) -> None:
    """Collects ``settings.probe`` states of ``shift`` for ``agent`` (see :class:`Probe`) and saves them."""
    if not _probeable(settings, shift):
        return
    plain = _Settings(**{**asdict(settings), "lives_as_episodes": False})
    clean, _ = _make_env(plain, BASELINE, stack)
    shifted, _ = _make_env(plain, shift, stack, always=True)
    actor = _resolve(agent, plain, clean)
    attach(shifted, actor)
    rows: list[tuple[Any, ...]] = []
    try:
        episode = 0
        while len(rows) < settings.probe:
            seed = episode_seed(PROBE_SEED, episode)
            obs, _ = clean.reset(seed=seed)
            other, _ = shifted.reset(seed=seed)
            step, done = 0, False
            while not done and len(rows) < settings.probe:
                action = actor.act(obs[None], np.random.default_rng((PROBE_SEED, episode, step)))[0]
                if step % PROBE_STRIDE == 0:
                    other_action = actor.act(other[None], np.random.default_rng((PROBE_SEED, episode, step)))[0]
                    rows.append((obs, other, action, other_action, episode, step))
                obs, reward, terminated, truncated, _ = clean.step(action)
                other, other_reward, other_terminated, other_truncated, _ = shifted.step(action)
                if (reward, terminated, truncated) != (other_reward, other_terminated, other_truncated):
                    raise LogError(
                        f"shift {shift!r} changed the env's course, not only what the agent sees (step {step} of"
                        f" probe episode {episode}): it cannot be probed; evaluate it with probe=0"
                    )
                done = terminated or truncated
                step += 1
            episode += 1
    finally:
        clean.close()
        shifted.close()
    columns = list(zip(*rows, strict=True))
    Probe(
        clean=np.stack(columns[0]),
        shifted=np.stack(columns[1]),
        clean_action=np.stack(columns[2]),
        shifted_action=np.stack(columns[3]),
        episode=np.asarray(columns[4], dtype=np.int64),
        step=np.asarray(columns[5], dtype=np.int64),
    ).save(path)


# -- sweeps ----------------------------------------------------------------------------------------------
def _init_worker() -> None:
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _local_pool(workers: int) -> ProcessPoolExecutor:
    methods = multiprocessing.get_all_start_methods()
    # fork hands the agents to the workers without pickling them (lambdas and closures included).
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker)


_FORKED: dict[str, Any] = {}


def _run_forked(spec: RunSpec, root: str) -> dict[str, Any]:
    agents, settings, stack = _FORKED["agents"], _FORKED["settings"], _FORKED["stack"]
    return run(spec, agents[spec.agent], settings, root, stack)


def _execute(
    todo: list[RunSpec],
    agents: dict[str, Any],
    settings: _Settings,
    root: Path,
    stack: Stack,
    backend: str,
    workers: int,
) -> Iterator[dict[str, Any]]:
    """Yields each run's index row as it finishes."""
    if not todo:
        return
    if backend == "ray":
        yield from _execute_ray(todo, agents, settings, root, stack, workers)
        return
    if workers == 1:
        for spec in todo:
            yield run(spec, agents[spec.agent], settings, str(root), stack)
        return
    _FORKED.update(agents=agents, settings=settings, stack=stack)
    try:
        with _local_pool(workers) as pool:
            pending: set[Future[dict[str, Any]]] = {pool.submit(_run_forked, spec, str(root)) for spec in todo}
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
    finally:
        _FORKED.clear()


def _execute_ray(
    todo: list[RunSpec],
    agents: dict[str, Any],
    settings: _Settings,
    root: Path,
    stack: Stack,
    workers: int,
) -> Iterator[dict[str, Any]]:
    ray = require("ray", purpose="the Ray backend")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1)(_run_on_ray)
        agent_refs = {name: ray.put(a) for name, a in agents.items()}
        pending = [remote.remote(spec, agent_refs[spec.agent], settings, str(root), stack) for spec in todo]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started:
            ray.shutdown()


def _run_on_ray(spec: RunSpec, agent: Any, settings: _Settings, root: str, stack: Stack) -> dict[str, Any]:
    _init_worker()
    return run(spec, agent, settings, root, stack)


def _complete(root: Path, spec: RunSpec, episodes: int) -> bool:
    """Whether a run's log is finished: compacted, with ``episodes`` complete episodes."""
    meta_path = root / spec.path / "meta.json"
    if not (root / spec.path / "episodes.parquet").exists() or not meta_path.exists():
        return False
    meta = json.loads(meta_path.read_text())
    return "end_time" in meta and meta.get("episodes") == episodes


def evaluate(
    agent: Any,
    env_id: str,
    shifts: Sequence[ShiftSpec] | Mapping[str, ShiftSpec | Sequence[ShiftSpec]] = (),
    *,
    episodes: int = 10,
    seeds: int | Sequence[int] = 5,
    out: str | os.PathLike[str],
    when: str | Schedule | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    wrappers: Sequence[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]] = (),
    outer_wrappers: Sequence[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]] = (),
    probe: int = 0,
    deterministic: bool = True,
    lives_as_episodes: bool = False,
    shift_at: int | None = None,
    share_pre_shift: bool = True,
    observational: bool = False,
    outside: Mapping[str, Any] | None = None,
    backend: str = "local",
    workers: int | None = None,
    progress: bool = True,
) -> Evaluation:
    """Runs ``agent`` on ``env_id`` under each shift and without, over ``seeds`` x ``episodes``, writing logs.

    Args:
        agent: a zoo name, an SB3 zip path (trusted files only: SB3 zips unpickle code), an SB3 model, an
            :class:`~rlwrappers.agents.Agent`, or a dict of names to any of these to compare several agents.
        env_id: a Gymnasium ID.
        shifts: perturbation specs (each one shift, named by its text), or a dict of names to one spec or a
            list of specs applied together. The counterfactual ``"baseline"`` (no shift) is always run.
        episodes: episodes per run.
        seeds: a number of seeds (0, 1, ...) or the list of run seeds.
        out: the run directory; an earlier run of the same evaluation there is resumed.
        when: the schedule of shifts that do not set their own (default: always).
        env_kwargs: keyword arguments for ``gym.make``.
        wrappers: env wrappers applied (in order) under the shifts: the shifts act on what they emit.
        outer_wrappers: wrappers applied (in order) over the shifts, e.g. the Atari preprocessing an agent
            expects when a corruption should strike the raw frame (a change in the game or the camera).
            Perturbations that need the agent (gradient attacks, parameter noise) act on the agent's own input,
            above these. With ``lives_as_episodes``, lives are counted above them too.
        probe: states per (agent, shift) at which to compare the agent's input with and without the shift
            (0: none); see :class:`Probe`. :mod:`rlwrappers.sweeps` turns them into flip rates, LPIPS and spectra.
        deterministic: let agents act greedily; stochastic agents draw from per-episode generators.
        lives_as_episodes: count each Atari life as one episode (seed 001, Appendix C.1).
        shift_at: the causal protocol (seed 001, 2a): every shift starts at this episode (``T``, in 1 ..
            ``episodes - 1``) and then follows its own schedule, which must not count episodes or steps over
            the run. See :func:`rlwrappers.protocol.causal` for the protocol's defaults.
        share_pre_shift: with ``shift_at``, shifted runs play from episode ``T - 1`` on and take the episodes
            before it from the counterfactual, which they equal when env and agent are deterministic (the
            fixed-seed assumption); episode ``T - 1``, played by both, checks that
            (:meth:`Evaluation.fixed_seed_check`). False plays every episode of every run. Lives counted as
            episodes continue one game, so they always play every episode.
        observational: mark the evaluation as seed 001's observational protocol (2b): shifts strike at random
            (``when``) and the report forecasts each arm's trend; see :func:`rlwrappers.protocol.observational`.
        outside: for a PettingZoo parallel env (``env_id`` a short name from
            :data:`rlwrappers.multiagent.PARALLEL_ENVS` or a module with a ``parallel_env``): the groups of outside
            policies the shifts switch agents to, by name, each a team zoo name, a
            :class:`~rlwrappers.multiagent.Team` or a dict of agent name -> policy; the group ``untrained`` is
            always there. The agent is then a team (a team zoo name, a ``Team``, or a dict of names to them) and
            each shift a ``switch(k=..., to=GROUP)`` spec (see :doc:`multiagent`).
        backend: "local" (worker processes) or "ray".
        workers: parallel runs (default: the number of CPU cores).
        progress: show a progress bar.

    Returns:
        The :class:`Evaluation` read back from ``out``.

    Example:
        >>> import tempfile, rlwrappers as rw
        >>> result = rw.evaluate("ppo-CartPole-v1", "CartPole-v1", ["obs_noise(std=0.2)"], episodes=2, seeds=2,
        ...                      out=tempfile.mkdtemp(), workers=1, progress=False)
        >>> sorted(result.index["shift"].unique())
        ['baseline', 'obs_noise(std=0.2)']
    """
    if not isinstance(env_id, str):
        raise InvalidType(f"`env_id` must be a Gymnasium ID or PettingZoo parallel env string, received {env_id!r}")
    workers = _check_options(episodes, backend, workers, wrappers, outer_wrappers, probe)
    stack = Stack(tuple(wrappers), tuple(outer_wrappers))
    parallel = _is_parallel(env_id)
    if outside is not None and not parallel:
        raise InvalidArgument(f"`outside` applies to PettingZoo parallel envs only, and {env_id!r} is not one")
    if outside is not None and not isinstance(outside, Mapping):
        raise InvalidType(f"`outside` must map group names to teams, received {outside!r}")
    named_agents = _teams(agent) if parallel else _agents(agent)
    entries = _switch_entries(shifts, when) if parallel else _shift_entries(shifts, when)
    _check_protocol(entries, int(episodes), shift_at, share_pre_shift, observational, lives_as_episodes, stack)
    settings = _Settings(
        env_id=env_id,
        env_kwargs=dict(env_kwargs or {}),
        shifts=entries,
        episodes=int(episodes),
        deterministic=bool(deterministic),
        lives_as_episodes=bool(lives_as_episodes),
        probe=int(probe),
        agent_sources={name: str(a) if isinstance(a, (str, os.PathLike)) else None for name, a in named_agents.items()},
        shift_at=None if shift_at is None else int(shift_at),
        share_pre_shift=bool(share_pre_shift),
        observational=bool(observational),
        multiagent=parallel,
        outside={g: t if isinstance(t, str) else None for g, t in (outside or {}).items()},
    )
    run_seeds = _seeds(seeds)
    if parallel:
        named_agents = _check_teams(named_agents, outside or {}, settings, stack)
    else:
        _check_applies(named_agents, settings, stack)

    root = Path(out)
    request = {"rlwrappers": __version__, **asdict(settings), "seeds": run_seeds}
    _claim(root, request)
    specs = [
        RunSpec(
            name,
            shift,
            seed,
            f"logs/{_directory_name(name)}/{_directory_name(shift)}/seed{seed}",
            settings.first_episode(shift),
        )
        for name in named_agents
        for shift in (BASELINE, *settings.shifts)
        for seed in run_seeds
    ]
    previous = _read_index(root)
    index: dict[str, dict[str, Any]] = {}
    todo = []
    for spec in specs:
        if _complete(root, spec, settings.episodes - spec.first_episode):
            index[spec.path] = previous.get(spec.path) or {**asdict(spec), "status": "complete"}
        else:
            index[spec.path] = {**asdict(spec), "status": "pending"}
            todo.append(spec)
    _write_index(root, index)

    played = {spec.path: settings.episodes - spec.first_episode for spec in specs}
    bar = _progress(sum(played.values()), progress)
    bar.update(sum(played.values()) - sum(played[spec.path] for spec in todo))
    try:
        for row in _execute(todo, named_agents, settings, root, stack, backend, min(workers, max(len(todo), 1))):
            index[row["path"]] = row
            _write_index(root, index)
            bar.update(played[row["path"]])
    finally:
        bar.close()
    _run_probes(named_agents, settings, root, stack)
    result = open_evaluation(root)
    if settings.shift_at is not None:
        _warn_if_not_identical(result.fixed_seed_check())
    return result


def _check_options(
    episodes: Any, backend: Any, workers: Any, wrappers: Sequence[Any], outer_wrappers: Sequence[Any], probe: Any
) -> int:
    """Rejects bad run options; returns the number of workers (default: the CPU cores)."""
    if not isinstance(episodes, (int, np.integer)) or isinstance(episodes, bool) or episodes < 1:
        raise InvalidArgument(f"`episodes` must be an int >= 1, received {episodes!r}")
    if backend not in BACKENDS:
        raise InvalidArgument(f"`backend` must be one of {BACKENDS}, received {backend!r}")
    if workers is None:
        workers = os.cpu_count() or 1
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise InvalidArgument(f"`workers` must be an int >= 1, received {workers!r}")
    for name, group in (("wrappers", wrappers), ("outer_wrappers", outer_wrappers)):
        if not all(callable(w) for w in group):
            raise InvalidType(f"`{name}` must hold callables env -> env, received {list(group)!r}")
    if not isinstance(probe, (int, np.integer)) or isinstance(probe, bool) or probe < 0:
        raise InvalidArgument(f"`probe` must be an int >= 0 (states per shift), received {probe!r}")
    return workers


def _check_protocol(
    entries: Mapping[str, list[dict[str, Any]]],
    episodes: int,
    shift_at: Any,
    share_pre_shift: Any,
    observational: Any,
    lives_as_episodes: bool,
    stack: Stack,
) -> None:
    """Rejects causal and observational settings that cannot be run as asked."""
    for name, value in (("share_pre_shift", share_pre_shift), ("observational", observational)):
        if not isinstance(value, (bool, np.bool_)):
            raise InvalidType(f"`{name}` must be a bool, received {value!r}")
    if shift_at is None:
        return
    if observational:
        raise InvalidArgument("`shift_at` (the causal protocol) and `observational` exclude each other; choose one")
    if not isinstance(shift_at, (int, np.integer)) or isinstance(shift_at, bool) or not 1 <= shift_at < episodes:
        raise InvalidArgument(
            f"`shift_at` must be an episode in 1 .. {episodes - 1} (with episodes before and after it),"
            f" received {shift_at!r}"
        )
    if not entries:
        raise InvalidArgument("`shift_at` needs at least one shift to introduce")
    for name, group in entries.items():
        for entry in group:
            if not schedule.parse(entry["when"]).episode_local:
                raise InvalidArgument(
                    f"shift {name!r} has schedule {entry['when']!r}, which counts episodes or steps over the run;"
                    " with `shift_at` a shift starts at that episode and its own schedule must act within episodes"
                )
            if lives_as_episodes and stack.over and not _on_agent_input(entry):
                raise InvalidArgument(
                    f"shift {name!r} acts under the `outer_wrappers`, which see whole games, so it cannot start at"
                    " a life: with `shift_at` and `lives_as_episodes`, place it on the agent's input or count games"
                )


class FixedSeedWarning(UserWarning):
    """Runs that should be identical before the shift are not: the env or the agent is not deterministic."""


def _warn_if_not_identical(check: pd.DataFrame) -> None:
    broken = check[~check["identical"]]
    if len(broken):
        runs = ", ".join(f"{r.agent}/{r.shift}/seed {r.run_seed}" for r in broken.itertuples())
        warnings.warn(
            f"THE FIXED-SEED ASSUMPTION FAILED: {len(broken)} of {len(check)} shifted runs differ from their"
            f" counterfactual before the shift ({runs}). The env or the agent is not deterministic, and the"
            " difference-in-differences estimate is not a causal effect of the shift.",
            FixedSeedWarning,
            stacklevel=3,
        )


def _check_applies(agents: Mapping[str, Any], settings: _Settings, stack: Stack) -> None:
    """Builds each arm's env and fits each agent to it, so bad specs and agents fail before any run."""
    for shift in (BASELINE, *settings.shifts):
        env, _ = _make_env(settings, shift, stack)
        try:
            for a in agents.values():
                agents_module.check_compatible(_resolve(a, settings, env), env)
        finally:
            env.close()


def _claim(root: Path, request: dict[str, Any]) -> None:
    """Writes the request, or checks that the directory holds the same one (so a resume continues it)."""
    path = root / SPEC_FILE
    text = json.dumps(request, indent=1, default=str)
    if path.exists():
        if json.loads(path.read_text()) != json.loads(text):
            raise LogError(
                f"{str(root)!r} holds a different evaluation; pass another `out`, or delete it to start over"
            )
        return
    if root.exists() and any(root.iterdir()):
        raise LogError(f"`out` {str(root)!r} is not empty and holds no evaluation; choose an empty or new folder")
    root.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _read_index(root: Path) -> dict[str, dict[str, Any]]:
    path = root / INDEX_FILE
    if not path.exists():
        return {}
    return {row["path"]: row for row in json.loads(path.read_text())["runs"]}


def _write_index(root: Path, index: Mapping[str, dict[str, Any]]) -> None:
    tmp = root / f"{INDEX_FILE}.tmp"
    tmp.write_text(json.dumps({"runs": list(index.values())}, indent=1) + "\n")
    tmp.replace(root / INDEX_FILE)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, show: bool) -> Any:
    if not show:
        return _NoBar()
    tqdm = require("tqdm", purpose="progress bars")
    return tqdm.tqdm(total=total, unit="episode", desc="evaluating")


# -- reading back ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Evaluation:
    """A finished (or partly finished) evaluation read back from its run directory.

    Attributes:
        path: the run directory.
        request: what was asked (``evaluation.json``).
        index: one row per run (pandas DataFrame): agent, shift, seed, path, status, episodes, mean_return.
    """

    path: Path
    request: dict[str, Any]
    index: pd.DataFrame

    @property
    def complete(self) -> bool:
        """Whether every run finished."""
        return bool((self.index["status"] == "complete").all())

    @property
    def shift_at(self) -> int | None:
        """The causal protocol's first shifted episode ``T``, or None."""
        value = self.request.get("shift_at")
        return None if value is None else int(value)

    @property
    def observational(self) -> bool:
        """Whether the evaluation ran seed 001's observational protocol."""
        return bool(self.request.get("observational", False))

    def _runs(self) -> Iterator[tuple[Any, int]]:
        """The finished runs' index rows, with each one's first episode."""
        for row in self.index.itertuples():
            if row.status == "complete":
                first = getattr(row, "first_episode", 0)
                yield row, 0 if first is None or first != first else int(first)  # NaN in older rows

    def episodes(self) -> pd.DataFrame:
        """Every complete episode of every finished run, with its counterfactual's return beside it.

        Columns: agent, shift, run_seed, episode, seed (given to reset), return, length, ``baseline_return``
        (the return of the same episode in the counterfactual run) and ``shared``: True for the episodes a
        causal run took from its counterfactual instead of playing them (see ``share_pre_shift`` in
        :func:`evaluate`).
        """
        pd = require("pandas", purpose="reading evaluations")
        from rlwrappers.record import load_episodes

        frames = []
        firsts = {}
        for row, first in self._runs():
            e = load_episodes(self.path / row.path)[["episode", "seed", "return", "length", "complete"]]
            e["episode"] += first
            e.insert(0, "agent", row.agent)
            e.insert(1, "shift", row.shift)
            e.insert(2, "run_seed", row.seed)
            frames.append(e)
            firsts[row.agent, row.shift, row.seed] = first
        if not frames:
            raise LogError(f"{str(self.path)!r} holds no finished run")
        table = pd.concat(frames, ignore_index=True)
        table = table[table["complete"].astype(bool)].drop(columns="complete")
        table["shared"] = False
        baseline = table[table["shift"] == BASELINE]
        shared = [
            baseline[
                (baseline["agent"] == agent) & (baseline["run_seed"] == seed) & (baseline["episode"] < first)
            ].assign(shift=shift, shared=True)
            for (agent, shift, seed), first in firsts.items()
            if first > 0
        ]
        if shared:  # each run's shared episodes go before its own, runs stay in index order
            order = {run: i for i, run in enumerate(firsts)}
            table = pd.concat([table, *shared], ignore_index=True)
            table["run"] = [order[k] for k in zip(table["agent"], table["shift"], table["run_seed"], strict=True)]
            table = table.sort_values(["run", "episode"], kind="stable").drop(columns="run")
        baseline = table[table["shift"] == BASELINE][["agent", "run_seed", "episode", "return"]]
        table = table.merge(
            baseline.rename(columns={"return": "baseline_return"}), on=["agent", "run_seed", "episode"], how="left"
        )
        return table.reset_index(drop=True)

    def summary(self, alphas: Sequence[float] = (0.5, 1.0, 2.0)) -> pd.DataFrame:
        """The reproducibility table per (agent, shift), with the paired change against the counterfactual.

        Columns: episodes, mean, median, MAD, IQR, std, LCB(alpha) per alpha, and ``delta``, the mean over
        episodes of the return minus the same episode's return in the counterfactual run.
        """
        return summarize(self.episodes(), alphas)

    def fixed_seed_check(self) -> pd.DataFrame:
        """Checks the RL fixed-seed assumption of a causal evaluation: shifted runs equal the counterfactual before T.

        Every episode a shifted run played before ``shift_at`` (only ``T - 1`` when the pre-shift episodes are
        shared, all of them otherwise) is compared step by step with the same episode of the counterfactual:
        actions, rewards and ends.

        Returns:
            One row per finished shifted run: agent, shift, run_seed, ``compared`` (episodes compared),
            ``identical`` and ``first_difference`` (the first episode that differs, or -1).

        Raises:
            LogError: the evaluation is not causal (no ``shift_at``).
        """
        if self.shift_at is None:
            raise LogError(f"the evaluation at {str(self.path)!r} has no `shift_at`: it is not causal")
        return self._checked

    @functools.cached_property
    def _checked(self) -> pd.DataFrame:
        """:meth:`fixed_seed_check`'s table, read once per Evaluation: the runner, DiD table and report reuse it."""
        pd = require("pandas", purpose="reading evaluations")
        shift_at = self.shift_at
        assert shift_at is not None, "fixed_seed_check() checks it"
        runs = list(self._runs())
        baselines = {(row.agent, row.seed): row.path for row, _ in runs if row.shift == BASELINE}
        rows = []
        for row, first in runs:
            counterfactual = baselines.get((row.agent, row.seed))
            if row.shift == BASELINE or counterfactual is None:
                continue
            mine = _pre_shift_steps(self.path / row.path, 0, shift_at - first)
            theirs = _pre_shift_steps(self.path / counterfactual, first, shift_at)
            differing = [e for e in range(shift_at - first) if not _same(mine.get(e), theirs.get(e))]
            rows.append(
                {
                    "agent": row.agent,
                    "shift": row.shift,
                    "run_seed": row.seed,
                    "compared": shift_at - first,
                    "identical": not differing,
                    "first_difference": differing[0] + first if differing else -1,
                }
            )
        columns = ["agent", "shift", "run_seed", "compared", "identical", "first_difference"]
        return pd.DataFrame(rows, columns=columns)

    def probes(self) -> dict[tuple[str, str], Probe]:
        """The probe of every (agent, shift) that has one, by (agent, shift); see :class:`Probe`."""
        out = {}
        for agent in self.index["agent"].unique():
            for shift in self.request.get("shifts") or {}:
                path = self.path / probe_path(str(agent), shift)
                if path.exists():
                    out[str(agent), shift] = Probe.load(path)
        return out


_STEP_COLUMNS: Final = ["step", "action", "reward", "terminated", "truncated"]


def _pre_shift_steps(path: Path, start: int, stop: int) -> dict[int, Any]:
    """The steps of episodes ``start .. stop - 1`` of a finished log, as one Arrow table per episode."""
    pa = require("pyarrow")
    pq = require("pyarrow.parquet", purpose="reading logs")
    bounds = [("episode", ">=", start), ("episode", "<", stop)]
    table = pq.read_table(path / "steps.parquet", columns=["episode", *_STEP_COLUMNS], filters=bounds)
    episodes = table.column("episode").to_numpy()
    return {
        int(e) - start: table.filter(pa.array(episodes == e)).select(_STEP_COLUMNS).combine_chunks()
        for e in np.unique(episodes)
    }


def _same(a: Any, b: Any) -> bool:
    """Whether two episodes' step tables are present and equal."""
    return a is not None and b is not None and bool(a.equals(b))


def summarize(episodes: pd.DataFrame, alphas: Sequence[float] = (0.5, 1.0, 2.0)) -> pd.DataFrame:
    """:meth:`Evaluation.summary` of a table that :meth:`Evaluation.episodes` returned."""
    from rlwrappers.metrics.logs import reproducibility_table

    groups = dict(list(episodes.groupby(["agent", "shift"], sort=False)))
    summary = reproducibility_table({k: g["return"].to_numpy() for k, g in groups.items()}, alphas)
    summary.index = summary.index.set_names(["agent", "shift"])
    summary["delta"] = [float((g["return"] - g["baseline_return"]).mean()) for g in groups.values()]
    return summary


def open_evaluation(path: str | os.PathLike[str]) -> Evaluation:
    """Reads an evaluation's run directory.

    Raises:
        LogError: ``path`` holds no evaluation, or its index is missing or corrupt.
    """
    pd = require("pandas", purpose="reading evaluations")
    root = Path(path)
    for name in (SPEC_FILE, INDEX_FILE):
        if not (root / name).exists():
            raise LogError(f"no rlwrappers evaluation at {str(root)!r}: {name} is missing")
    try:
        request = json.loads((root / SPEC_FILE).read_text())
        runs = json.loads((root / INDEX_FILE).read_text())["runs"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise LogError(f"the evaluation at {str(root)!r} is corrupt: {exc}") from exc
    return Evaluation(root, request, pd.DataFrame(runs))
