"""The design of an evaluation: its arms (shift x seed plans), their seeds, and the request a run folder stores.

An evaluation runs every (agent, shift, seed) for ``episodes`` episodes, plus one counterfactual run per
(agent, seed) without any shift, named ``"baseline"`` (:data:`BASELINE`). Episode ``i`` of a run with seed ``s``
resets the env with :func:`episode_seed` (s, i), and the agent's own randomness for that episode comes from
:func:`agent_generator` (s, i), so a shifted run and its counterfactual start every episode alike and differ
only by the shift. :class:`Settings` is the request a run folder stores in ``evaluation.json`` (its keys are
the file's keys), :class:`RunSpec` one run, :class:`Stack` the wrappers around a shift.

:func:`~rlwrappers.studies.run.evaluate` takes its less common options in three groups: :class:`EnvSetup` (how
each arm's env is built), :class:`Timing` (when the shifts begin: the causal and observational protocols) and
:class:`Execution` (where and how the runs go).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers import schedule, seeding
from rlwrappers.core import Entry, Perturbation
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.schedule import Schedule, Starting

__all__ = [
    "AGENT_LABEL",
    "PARALLEL_ENVS",
    "BACKENDS",
    "BASELINE",
    "INDEX_FILE",
    "SPEC_FILE",
    "EnvSetup",
    "Execution",
    "RunSpec",
    "Settings",
    "ShiftSpec",
    "Stack",
    "Timing",
    "agent_generator",
    "check_counts",
    "check_protocol",
    "directory_name",
    "episode_seed",
    "index_row",
    "is_parallel",
    "on_agent_input",
    "parallel_factory",
    "parse_agents",
    "parse_seeds",
    "parse_shifts",
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


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: which agent, which shift (or the baseline), which seed, and where its log goes.

    ``first_episode`` is the first episode the run plays: 0, or in the causal protocol the last episode before
    the shift, when the episodes before it are the counterfactual's (see ``shift_at`` in
    :func:`~rlwrappers.studies.run.evaluate`).
    """

    agent: str
    shift: str
    seed: int
    path: str
    first_episode: int = 0


@dataclass(frozen=True)
class Settings:
    """Everything a worker needs besides the agent; JSON-ready.

    ``agent_preprocessing`` holds, per agent name, what it was trained behind and is played behind
    (:meth:`rlwrappers.agents.training.Training.record`): its env-side wrappers, frame stack and statistics.
    """

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
    agent_preprocessing: dict[str, dict[str, Any]] = field(default_factory=dict)

    def request(self, seeds: Sequence[int], version: str) -> dict[str, Any]:
        """What ``evaluation.json`` holds: the settings, the seeds and the package's version.

        ``agent_preprocessing`` is there only when some agent is played behind what it was trained behind, so
        the files of other evaluations keep their keys.
        """
        fields = asdict(self)
        if not self.agent_preprocessing:
            del fields["agent_preprocessing"]
        return {"rlwrappers": version, **fields, "seeds": list(seeds)}

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


def parse_shifts(shifts: Any, when: Any) -> dict[str, list[dict[str, Any]]]:
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


def directory_name(name: str) -> str:
    """A name made safe for a directory: runs of characters other than word characters and ``.=,-`` become ``_``."""
    return re.sub(r"[^\w.=,-]+", "_", name).strip("_") or "_"


#: The most run seeds a count may ask for: each is a run (its list alone would not fit in memory far beyond).
MAX_SEED_COUNT: Final = 1_000_000


def parse_seeds(seeds: int | Sequence[int]) -> list[int]:
    """The run seeds: ``range(seeds)`` for a count, else the checked list."""
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if not 1 <= seeds <= MAX_SEED_COUNT:
            raise InvalidArgument(
                f"`seeds` must be a count from 1 to {MAX_SEED_COUNT:,} (each seed is a run) or a list of seeds,"
                f" received {seeds!r}"
            )
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


def parse_agents(agent: Any) -> dict[str, Any]:
    """Agents by name: a dict as given, a zoo name or file by its name, any other agent as ``"agent"``."""
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


@dataclass(frozen=True)
class Stack:
    """The wrappers around an arm's shift: ``under`` it (the env's own) and ``over`` it (the agent's preprocessing).

    A shift acts on what the ``under`` wrappers emit. Perturbations that act on the agent's own input (those
    that need the agent: gradient attacks, parameter noise) go above the ``over`` wrappers instead, and those
    that render the observation of a state they changed (initial-state noise, interventions) on the base env,
    below the ``under`` wrappers. :class:`~rlwrappers.studies.recipe.EnvRecipe` places each.
    """

    under: tuple[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]], ...] = ()
    over: tuple[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]], ...] = ()


def on_agent_input(entry: Mapping[str, Any]) -> bool:
    """Whether a stored perturbation acts on the agent's own input, above any preprocessing."""
    return Entry.parse(entry).perturbation.needs_agent


@dataclass(frozen=True)
class EnvSetup:
    """How each arm's env is built around its shift.

    Args:
        kwargs: keyword arguments for ``gym.make``.
        wrappers: env wrappers applied (in order) under the shifts: the shifts act on what they emit.
        outer_wrappers: wrappers applied (in order) over the shifts, e.g. the Atari preprocessing an agent
            expects when a corruption should strike the raw frame (a change in the game or the camera).
            Perturbations that need the agent (gradient attacks, parameter noise) act on the agent's own input,
            above these. With ``lives_as_episodes``, lives are counted above them too.
        lives_as_episodes: count each Atari life as one episode (seed 001, Appendix C.1).
        other_env: play agents whose RL Zoo files name another base env than the evaluation's (their spaces
            must still fit it); without it they are refused.
    """

    kwargs: Mapping[str, Any] = field(default_factory=dict)
    wrappers: Sequence[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]] = ()
    outer_wrappers: Sequence[Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]] = ()
    lives_as_episodes: bool = False
    other_env: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.kwargs, Mapping):
            raise InvalidType(f"`kwargs` must be a dict of gym.make arguments, received {self.kwargs!r}")
        for name, group in (("wrappers", self.wrappers), ("outer_wrappers", self.outer_wrappers)):
            if isinstance(group, (str, bytes)) or not isinstance(group, Sequence) or not all(map(callable, group)):
                raise InvalidType(f"`{name}` must be a list of callables env -> env, received {group!r}")
        _check_bool("lives_as_episodes", self.lives_as_episodes)
        _check_bool("other_env", self.other_env)

    @property
    def stack(self) -> Stack:
        """The wrappers under and over the shifts."""
        return Stack(tuple(self.wrappers), tuple(self.outer_wrappers))


@dataclass(frozen=True)
class Timing:
    """When the shifts begin: throughout (the default), at one episode (causal) or at random (observational).

    Args:
        shift_at: the causal protocol (seed 001, 2a): every shift starts at this episode (``T``, in 1 ..
            ``episodes - 1``) and then follows its own schedule, which must not count episodes or steps over
            the run. See :func:`rlwrappers.studies.shift_impact.causal` for the protocol's defaults.
        share_pre_shift: with ``shift_at``, shifted runs play from episode ``T - 1`` on and take the episodes
            before it from the counterfactual, which they equal when env and agent are deterministic (the
            fixed-seed assumption); episode ``T - 1``, played by both, checks that
            (:meth:`~rlwrappers.studies.results.Evaluation.fixed_seed_check`). False plays every episode of
            every run. Lives counted as episodes continue one game, so they always play every episode.
        observational: mark the evaluation as seed 001's observational protocol (2b): shifts strike at random
            (``when``) and the report forecasts each arm's trend; see
            :func:`rlwrappers.studies.shift_impact.observational`.
    """

    shift_at: int | None = None
    share_pre_shift: bool = True
    observational: bool = False

    def __post_init__(self) -> None:
        _check_bool("share_pre_shift", self.share_pre_shift)
        _check_bool("observational", self.observational)
        if self.shift_at is None:
            return
        if not isinstance(self.shift_at, (int, np.integer)) or isinstance(self.shift_at, bool):
            raise InvalidArgument(f"`shift_at` must be an episode (an int), received {self.shift_at!r}")
        if self.observational:
            raise InvalidArgument("`shift_at` (the causal protocol) and `observational` exclude each other; choose one")


@dataclass(frozen=True)
class Execution:
    """Where and how the runs go; none of it changes a result, except ``exact=False``, which says how.

    Args:
        backend: "local" (worker processes) or "ray" (the ``ray`` extra).
        workers: parallel processes (default: the number of CPU cores).
        start_method: how local workers start: "fork" (the default where the platform has it: agents and
            wrappers reach the workers without pickling, lambdas and closures included), "spawn" or
            "forkserver" (agents and wrappers are pickled; one that cannot be raises before any run).
        progress: show a progress bar.
        batch: runs each process steps together (:mod:`rlwrappers.studies.batched`); 1 plays them one by one.
        exact: with ``batch`` > 1, give each run its own network pass per step, so the logs equal those of
            ``batch=1`` bit for bit; False asks each agent for a whole batch's actions in one pass, which is
            faster and may differ in the last bits of a float, and so, now and then, in a trajectory.
    """

    backend: str = "local"
    workers: int | None = None
    start_method: str | None = None
    progress: bool = True
    batch: int = 1
    exact: bool = True

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InvalidArgument(f"`backend` must be one of {BACKENDS}, received {self.backend!r}")
        workers = self.workers
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
            raise InvalidArgument(f"`workers` must be an int >= 1, received {workers!r}")
        methods = multiprocessing.get_all_start_methods()
        if self.start_method is not None and self.start_method not in methods:
            raise InvalidArgument(f"`start_method` must be one of {methods}, received {self.start_method!r}")
        _check_bool("progress", self.progress)
        if not isinstance(self.batch, int) or isinstance(self.batch, bool) or self.batch < 1:
            raise InvalidArgument(f"`batch` must be an int >= 1, received {self.batch!r}")
        _check_bool("exact", self.exact)
        if not self.exact and self.batch == 1:
            raise InvalidArgument("`exact=False` batches network passes, so it needs `batch` > 1; received batch=1")

    @property
    def processes(self) -> int:
        """The number of parallel runs."""
        return self.workers or os.cpu_count() or 1

    @property
    def context(self) -> Any:
        """The multiprocessing context of local workers."""
        methods = multiprocessing.get_all_start_methods()
        default = "fork" if "fork" in methods else "spawn"
        return multiprocessing.get_context(self.start_method or default)

    @property
    def pickles(self) -> bool:
        """Whether what the workers need is pickled on its way to them."""
        return self.backend == "ray" or self.context.get_start_method() != "fork"


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidType(f"`{name}` must be a bool, received {value!r}")


def check_counts(episodes: Any, probe: Any) -> None:
    """Rejects bad numbers of episodes and of probed states."""
    if not isinstance(episodes, (int, np.integer)) or isinstance(episodes, bool) or episodes < 1:
        raise InvalidArgument(f"`episodes` must be an int >= 1, received {episodes!r}")
    if not isinstance(probe, (int, np.integer)) or isinstance(probe, bool) or probe < 0:
        raise InvalidArgument(f"`probe` must be an int >= 0 (states per shift), received {probe!r}")


def check_protocol(
    entries: Mapping[str, list[dict[str, Any]]],
    episodes: int,
    timing: Timing,
    lives_as_episodes: bool,
    stack: Stack,
) -> None:
    """Rejects causal settings that cannot be run as asked."""
    shift_at = timing.shift_at
    if shift_at is None:
        return
    if not 1 <= shift_at < episodes:
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
            if lives_as_episodes and stack.over and not on_agent_input(entry):
                raise InvalidArgument(
                    f"shift {name!r} acts under the `outer_wrappers`, which see whole games, so it cannot start at"
                    " a life: with `shift_at` and `lives_as_episodes`, place it on the agent's input or count games"
                )


def index_row(spec: RunSpec, returns: Sequence[float], seconds: float) -> dict[str, Any]:
    """The index row of a finished run that took ``seconds``."""
    return {
        **asdict(spec),
        "status": "complete",
        "episodes": len(returns),
        "mean_return": float(np.mean(returns)),
        "seconds": round(seconds, 3),
    }


# -- parallel envs ------------------------------------------------------------------------------------------
#: Parallel envs known by a short ID, each a module with a ``parallel_env`` factory.
PARALLEL_ENVS: Final = MappingProxyType(
    {
        "simple_spread_v3": "mpe2.simple_spread_v3",
        "coordinated_buildings_v0": "rlwrappers.envs.powergrid",
    }
)


def parallel_factory(env_id: str) -> Callable[..., Any] | None:
    """The ``parallel_env`` factory of a parallel env ID, or None when ``env_id`` names no parallel env.

    An ID is a short name from :data:`PARALLEL_ENVS` or the import path of a module with a ``parallel_env``
    factory, such as ``"mpe2.simple_spread_v3"``.
    """
    module_name = PARALLEL_ENVS.get(env_id, env_id)
    if not module_name.replace(".", "").replace("_", "").isalnum():
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    factory = getattr(module, "parallel_env", None)
    return factory if callable(factory) else None


def is_parallel(env_id: str) -> bool:
    """Whether ``env_id`` names a PettingZoo parallel env rather than a Gymnasium one."""
    if env_id in gym.registry:
        return False
    return parallel_factory(env_id) is not None
