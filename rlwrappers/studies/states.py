"""States of a real env for offline robustness: sample them from one agent's game, intervene, render.

*Measuring Offline Robustness in Reinforcement Learning* measures R on p states sampled uniformly from one
trajectory of an agent that is not among those measured (Algorithm 3), under each intervention of a catalogue
(Algorithm 2). This module does the env's part; :mod:`rlwrappers.studies.offline` runs the agents on what it
renders and :mod:`rlwrappers.metrics.robustness` computes R:

1. :func:`sample_states` plays one game with the guide agent, keeps a cheap native snapshot of the game at
   every decision (Toybox's ``clone_state``), draws p of them uniformly and turns only those into JSON
   states: a :class:`StateSample`, saved and loaded as one JSON file that holds each distinct state once.
2. :func:`observations` writes each sampled state, under each intervention (the null one first), into a
   fresh env and renders the observation the agents see there: an array of shape (m + 1, p, *obs). A state
   that several histories share (they overlap, and repeat a life's first state) is written and rendered once
   per intervention.

**What an agent sees at a written state.** An agent's env is the game under wrappers; the observation of a
written state goes through the same wrappers: every ``gymnasium.ObservationWrapper`` (SB3's ``WarpFrame``,
``ResizeObservation``...) in order, and ``FrameStackObservation``, which stacks the frames of the last
``stack_size`` decisions. A sampled state therefore keeps the states of those decisions (its ``history``,
oldest first, padded at the start of a life as the stack is), and an intervention is made on each of them,
as if it had been made before the first and carried since. Two things an intervened state cannot carry are
left out and documented in docs/robustness.md: a frame skip's max over the last two raw frames (the
observation shows the decision's own frame), and wrappers that change observations in ``step`` without being
``ObservationWrapper``s (Gymnasium's ``AtariPreprocessing``), which are refused.

**A game.** The guide plays one game (:func:`play_game`): where a life ends an episode (SB3's Atari
preprocessing), it plays on through every life until the game is over, as
:func:`rlwrappers.wrappers.atari.atari_wrapper`'s ``reset`` does. The states are those at which the guide
acted, from the first observation on; the final state is not one.

Example:
    >>> import gymnasium as gym
    >>> from rlwrappers import zoo
    >>> from rlwrappers.studies import states
    >>> env = gym.make("CartPole-v1")
    >>> sample = states.sample_states(env, zoo.load_agent("ppo-CartPole-v1", seed=2), p=5, seed=0)
    >>> len(sample), sample.frames
    (5, 1)
    >>> states.observations(env, sample, ["x+=1.0", "theta-=0.05"]).shape
    (3, 5, 4)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import _check
from rlwrappers.agents import Agent, check_compatible
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile
from rlwrappers.state import documents
from rlwrappers.state.interventions import Intervention, apply
from rlwrappers.wrappers.state import resolve

__all__ = [
    "FORMAT",
    "MAX_STEPS",
    "SampledState",
    "StateSample",
    "observations",
    "play_game",
    "render",
    "resolve_interventions",
    "sample_states",
]

#: The version of the file :meth:`StateSample.save` writes.
FORMAT: Final = 2
#: The longest game :func:`sample_states` plays by default, in decisions (ALE's 108,000 frames at frame skip 4).
MAX_STEPS: Final = 27_000


@dataclass(frozen=True)
class SampledState:
    """One sampled state and the states of the decisions before it that the agent's observation stacks.

    Attributes:
        index: the decision it was taken at in the guide's game (0 is the first observation).
        history: JSON states, oldest first; the last one is the sampled state. One per stacked frame, padded
            with the first state of the life where the life is younger than the stack.
    """

    index: int
    history: tuple[dict[str, Any], ...]

    @property
    def state(self) -> dict[str, Any]:
        """The sampled state itself (write it with ``env.unwrapped.write_state_json`` to play on from it)."""
        return self.history[-1]


@dataclass(frozen=True)
class StateSample:
    """p states sampled uniformly from one game of a guide agent (Algorithm 3), in the order they were played.

    Attributes:
        states: the sampled states, sorted by ``index``; the same decision may be drawn twice, as in Algorithm 3.
        frames: the stacked frames each state's history holds.
        length: the number of decisions in the guide's game (the states drawn from).
        seed: the seed of the game (its ``reset``) and of the draws.
        env_id: the env's registered ID, if it has one.
        guide: a description of the guide agent.
    """

    states: tuple[SampledState, ...]
    frames: int
    length: int
    seed: int
    env_id: str | None = None
    guide: str = ""

    def __len__(self) -> int:
        return len(self.states)

    @property
    def indices(self) -> list[int]:
        """The decision of each sampled state in the guide's game."""
        return [s.index for s in self.states]

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the sample to ``path`` as JSON (see :meth:`load`); returns the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        pool: dict[int, int] = {}  # each distinct state once: histories overlap and repeat at a life's start
        for s in self.states:
            for state in s.history:
                pool.setdefault(id(state), len(pool))
        unique = {id(state): state for s in self.states for state in s.history}
        data = {
            "format": FORMAT,
            "env_id": self.env_id,
            "guide": self.guide,
            "seed": self.seed,
            "length": self.length,
            "frames": self.frames,
            "pool": [unique[key] for key in pool],
            "states": [{"index": s.index, "history": [pool[id(state)] for state in s.history]} for s in self.states],
        }
        out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> StateSample:
        """The sample :meth:`save` wrote to ``path``.

        Raises:
            MissingFile: no file at ``path``.
            InvalidArgument: the file is not a state sample (the message says what is wrong).
        """
        source = Path(path)
        if not source.is_file():
            raise MissingFile(f"no state sample at {str(source)!r}")
        try:
            data = json.loads(source.read_text())
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"{str(source)!r} is not a state sample: not JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise InvalidArgument(f"{str(source)!r} is not a state sample of format {FORMAT}, received {found!r}")
        try:
            frames = int(data["frames"])
            pool = data["pool"]
            states = tuple(
                SampledState(int(item["index"]), tuple(pool[int(i)] for i in item["history"]))
                for item in data["states"]
            )
            sample = cls(states, frames, int(data["length"]), int(data["seed"]), data["env_id"], str(data["guide"]))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise InvalidArgument(f"{str(source)!r} is not a complete state sample: {exc!r}") from None
        for k, s in enumerate(sample.states):
            if len(s.history) != frames or not all(isinstance(h, dict) for h in s.history):
                raise InvalidArgument(
                    f"{str(source)!r}: state {k} must hold a history of {frames} JSON states, received {len(s.history)}"
                )
        return sample


class _Renderer:
    """Renders the observation an agent's wrapped env gives at written states (see the module's docs)."""

    def __init__(self, env: gym.Env[Any, Any], purpose: str) -> None:
        if not isinstance(env, gym.Env):
            raise InvalidType(f"{purpose} needs a Gymnasium env, received {type(env).__name__}")
        self.state = documents.adapter(env, purpose=purpose)
        per_frame: list[gym.ObservationWrapper[Any, Any, Any]] = []
        on_stack: list[gym.ObservationWrapper[Any, Any, Any]] = []
        self.frames = 1
        layer: Any = env
        while isinstance(layer, gym.Wrapper):
            if isinstance(layer, gym.wrappers.FrameStackObservation):
                if self.frames != 1:
                    raise InvalidArgument(f"{purpose}: the env stacks frames twice; it can render one stack")
                self.frames = int(layer.stack_size)
                on_stack, per_frame = per_frame, []
            elif isinstance(layer, gym.ObservationWrapper):
                per_frame.append(layer)
            elif layer.observation_space != layer.env.observation_space:
                raise InvalidArgument(
                    f"{purpose} renders observations through the env's ObservationWrappers, but "
                    f"{type(layer).__name__} changes them in step (from {layer.env.observation_space} to "
                    f"{layer.observation_space}); for Atari agents use rlwrappers.sb3.atari_wrapper"
                )
            layer = layer.env
        self._per_frame = per_frame[::-1]  # innermost first
        self._on_stack = on_stack[::-1]

    def frame(self, state: dict[str, Any]) -> Any:
        """Writes ``state`` and renders its frame through the per-frame wrappers."""
        self.state.write_state_json(state)
        obs = self.state.observe()
        for wrapper in self._per_frame:
            obs = wrapper.observation(obs)
        return obs

    def stack(self, frames: Sequence[Any]) -> Any:
        """The agent's observation from the frames of its history's states (one per stacked frame)."""
        obs = np.stack(frames) if self.frames > 1 else frames[0]
        for wrapper in self._on_stack:
            obs = wrapper.observation(obs)
        return obs


class _Snapshots:
    """Snapshots of the game during play: native ones where the env has them (Toybox), else JSON states."""

    def __init__(self, state: documents.StateAdapter) -> None:
        self.state = state
        base = state.env
        self.native = callable(getattr(base, "clone_state", None)) and callable(getattr(base, "restore_state", None))
        self.taken: list[Any] = []

    def take(self) -> None:
        self.taken.append(self.state.env.clone_state() if self.native else self.state.state_json())

    def json(self, index: int) -> dict[str, Any]:
        """Snapshot ``index`` as a JSON state (restoring a native one to read it: call after play)."""
        if not self.native:
            return dict(self.taken[index])
        self.state.env.restore_state(self.taken[index])
        return self.state.state_json()


def play_game(
    env: gym.Env[Any, Any], agent: Agent, rng: np.random.Generator | None, *, seed: int, max_steps: int
) -> Iterator[tuple[Any, bool]]:
    """The agent plays one game of ``env``: yields the observation of each decision and whether it starts a life.

    The game starts with ``env.reset(seed=seed)``. Where a lost life ends an episode (SB3's Atari preprocessing)
    and the game is not over, ``env.reset()`` goes on with the next life; the game ends when it is over, when
    it is truncated, or after ``max_steps`` decisions. The env is in each decision's state while its observation
    is yielded. A stochastic agent draws from ``rng``.
    """
    obs, _ = env.reset(seed=seed)
    new_life = True
    for decision in range(max_steps):
        yield obs, new_life
        if decision + 1 == max_steps:
            return
        obs, _, terminated, truncated, _ = env.step(agent.act_one(obs, rng))
        new_life = terminated or truncated
        if new_life:
            ale = getattr(env.unwrapped, "ale", None)
            if truncated or ale is None or ale.game_over():
                return
            obs, _ = env.reset()


def sample_states(
    env: gym.Env[Any, Any],
    agent: Agent,
    p: int = 30,
    *,
    seed: int = 0,
    max_steps: int = MAX_STEPS,
    guide: str | None = None,
) -> StateSample:
    """Algorithm 3: ``agent`` plays one game of ``env``; p of the states it acted in are drawn uniformly.

    Each of the p draws is a uniform integer in [0, |T|) (with replacement, as in the paper); the states are
    returned in the order of play. Only the drawn states (and their histories) are turned into JSON.

    Args:
        env: the env as the agents see it (wrapped): a Toybox, classic-control, MuJoCo or ALE game.
        agent: the guide, an agent of the pipeline that is not among those measured; a stochastic agent draws
            its actions from a generator seeded with ``seed``.
        p: the number of states to draw.
        seed: seeds the game's reset, the guide's actions and the draws.
        max_steps: the game stops after this many decisions.
        guide: a description of the guide for the sample (default: ``str(agent)``).

    Raises:
        InvalidArgument: bad ``p``, ``seed`` or ``max_steps``; wrappers it cannot render through.
        StateNotSettable: the env's state cannot be read and written.
        IncompatibleSpace: the agent does not fit the env.
    """
    _check.integer("p", p, minimum=1)
    _check.integer("seed", seed, minimum=0)
    _check.integer("max_steps", max_steps, minimum=1)
    if not isinstance(agent, Agent):
        raise InvalidType(f"`agent` must be an Agent (see rlwrappers.agents.load), received {type(agent).__name__}")
    renderer = _Renderer(env, "sample_states")
    check_compatible(agent, env)
    snapshots = _Snapshots(renderer.state)
    act_rng, draw_rng = (np.random.default_rng([seed, k]) for k in (0, 1))
    life_start: list[int] = []  # per decision, the first decision of its life
    for _, new_life in play_game(env, agent, act_rng, seed=seed, max_steps=max_steps):
        snapshots.take()
        life_start.append(len(life_start) if new_life else life_start[-1])
    length = len(life_start)
    picks = np.sort(draw_rng.integers(0, length, size=p))
    states = []
    cache: dict[int, dict[str, Any]] = {}
    for index in (int(i) for i in picks):
        first = max(index - renderer.frames + 1, life_start[index])
        steps = [first] * (renderer.frames - (index - first + 1)) + list(range(first, index + 1))
        history = tuple(cache[k] if k in cache else cache.setdefault(k, snapshots.json(k)) for k in steps)
        states.append(SampledState(index, history))
    env_id = env.spec.id if env.spec is not None else None
    return StateSample(tuple(states), renderer.frames, length, seed, env_id, guide if guide is not None else str(agent))


def resolve_interventions(env: gym.Env[Any, Any], interventions: Iterable[Any]) -> tuple[Intervention, ...]:
    """``interventions`` resolved for ``env`` (:func:`rlwrappers.wrappers.state.resolve`), checked to be a list."""
    if isinstance(interventions, (str, Intervention, Mapping)) or not isinstance(interventions, Iterable):
        raise InvalidType(
            "`interventions` must be a list of interventions (catalogue names, one-line forms or Interventions), "
            f"received {type(interventions).__name__}"
        )
    return resolve(env, list(interventions))[1]


def _check_fits(sample: Any, renderer: _Renderer) -> StateSample:
    if not isinstance(sample, StateSample):
        raise InvalidType(f"`sample` must be a StateSample (from sample_states), received {type(sample).__name__}")
    if sample.frames != renderer.frames:
        raise InvalidArgument(
            f"`sample` holds histories of {sample.frames} frames, but the env stacks {renderer.frames}: sample the "
            "states on an env wrapped as the agents see it"
        )
    return sample


def observations(
    env: gym.Env[Any, Any], sample: StateSample, interventions: Sequence[Intervention | str] = ()
) -> NDArray[Any]:
    """What the agents see at each sampled state under each intervention: shape (m + 1, p, *observation).

    Row 0 is the null intervention; row j writes ``interventions[j - 1]`` made on every state of each history.
    ``env`` is reset with the sample's seed, then each state is written into it: any env of the same game,
    wrapped as the agents see it, will do (a fresh one, in another process).

    Args:
        env: the env, wrapped as the agents see it.
        sample: states from :func:`sample_states` (or :meth:`StateSample.load`).
        interventions: catalogue names (Toybox games), one-line forms (``"paddle_width=40"``) or
            Interventions, checked against the env's state before any is made.

    Raises:
        InvalidArgument: a state that cannot be restored into the env (the message names the sampled state and
            the intervention), a sample taken with another frame stack, an unknown path.
        UnknownName: an intervention name not in the game's catalogue.
    """
    renderer = _Renderer(env, "observations")
    sample = _check_fits(sample, renderer)
    resolved = resolve_interventions(env, interventions)
    if not sample.states:
        raise InvalidArgument("`sample` holds no states")
    env.reset(seed=sample.seed)
    out = []
    for intervention in (None, *resolved):
        frames: dict[int, Any] = {}  # per distinct state (histories share states): rendered once
        out.append(np.stack([_render(renderer, s, intervention, k, frames) for k, s in enumerate(sample.states)]))
    return np.stack(out)


def render(env: gym.Env[Any, Any], sampled: SampledState, intervention: Intervention | str | None = None) -> Any:
    """The observation at one sampled state, under ``intervention`` if given; the env is left in that state.

    ``env`` must have been reset (any seed): the state is written into the running game.
    """
    renderer = _Renderer(env, "render")
    if not isinstance(sampled, SampledState):
        raise InvalidType(f"`sampled` must be a SampledState, received {type(sampled).__name__}")
    if len(sampled.history) != renderer.frames:
        raise InvalidArgument(
            f"`sampled` holds a history of {len(sampled.history)} states, but the env stacks {renderer.frames} frames"
        )
    resolved = None if intervention is None else resolve_interventions(env, [intervention])[0]
    return _render(renderer, sampled, resolved, sampled.index)


def _render(
    renderer: _Renderer,
    sampled: SampledState,
    intervention: Intervention | None,
    k: int,
    frames: dict[int, Any] | None = None,
) -> Any:
    """The observation at ``sampled`` under ``intervention``; ``frames`` keeps each state's frame by identity."""
    frames = {} if frames is None else frames
    try:
        for state in sampled.history:
            if id(state) not in frames:
                frames[id(state)] = renderer.frame(state if intervention is None else apply(state, intervention))
        return renderer.stack([frames[id(state)] for state in sampled.history])
    except (InvalidArgument, InvalidType) as exc:
        made = "no intervention" if intervention is None else f"intervention `{intervention.name}`"
        raise type(exc)(
            f"sampled state {k} (decision {sampled.index}) under {made} cannot be restored: {exc}"
        ) from None
