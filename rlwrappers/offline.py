"""Offline robustness on a real env: sample states from one agent's game, intervene on them, render what agents see.

*Measuring Offline Robustness in Reinforcement Learning* measures R on p states sampled uniformly from one
trajectory of an agent that is not among those measured (Algorithm 3), under each intervention of a catalogue
(Algorithm 2). This module does the env's part; :mod:`rlwrappers.metrics.robustness` computes R:

1. :func:`sample_states` plays one game with the guide agent, keeps a cheap native snapshot of the game at
   every decision (Toybox's ``clone_state``), draws p of them uniformly and turns only those into JSON
   states: a :class:`StateSample`, saved and loaded as one JSON file that holds each distinct state once.
2. :func:`observations` writes each sampled state, under each intervention (the null one first), into a
   fresh env and renders the observation the agents see there: an array of shape (m + 1, p, *obs). A state
   that several histories share (they overlap, and repeat a life's first state) is written and rendered once
   per intervention.
3. :func:`~rlwrappers.metrics.robustness.robustness_matrix` runs one forward pass per agent over all of it.

**What an agent sees at a written state.** An agent's env is the game under wrappers; the observation of a
written state goes through the same wrappers: every ``gymnasium.ObservationWrapper`` (SB3's ``WarpFrame``,
``ResizeObservation``...) in order, and ``FrameStackObservation``, which stacks the frames of the last
``stack_size`` decisions. A sampled state therefore keeps the states of those decisions (its ``history``,
oldest first, padded at the start of a life as the stack is), and an intervention is made on each of them,
as if it had been made before the first and carried since. Two things an intervened state cannot carry are
left out and documented in docs/robustness.md: a frame skip's max over the last two raw frames (the
observation shows the decision's own frame), and wrappers that change observations in ``step`` without being
``ObservationWrapper``s (Gymnasium's ``AtariPreprocessing``), which are refused.

**A game.** The guide plays one game: where a life ends an episode (SB3's Atari preprocessing), it plays on
through every life until the game is over, as :func:`rlwrappers.sb3.atari_wrapper`'s ``reset`` does. The
states are those at which the guide acted, from the first observation on; the final state is not one.

Example:
    >>> import gymnasium as gym
    >>> from rlwrappers import offline, zoo
    >>> env = gym.make("CartPole-v1")
    >>> sample = offline.sample_states(env, zoo.load("ppo-CartPole-v1", seed=2), p=5, seed=0)
    >>> len(sample), sample.frames
    (5, 1)
    >>> offline.observations(env, sample, ["x+=1.0", "theta-=0.05"]).shape
    (3, 5, 4)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import _check, statejson
from rlwrappers import interventions as iv_module
from rlwrappers._optional import require
from rlwrappers.agents import Agent, check_compatible
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile
from rlwrappers.interventions import Intervention
from rlwrappers.metrics.robustness import DRAWS, normalized_robustness, pipeline_summary, robustness_matrix

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FORMAT",
    "MAX_STEPS",
    "Measurement",
    "Pipeline",
    "SampledState",
    "StateSample",
    "measure",
    "observations",
    "play_game",
    "read_runs",
    "render",
    "sample_states",
    "zoo_pipeline",
]

#: The version of the file :meth:`StateSample.save` writes.
FORMAT: Final = 2
#: The file in a measurement's directory that says what was measured.
REQUEST_FILE: Final = "robustness.json"
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
        self.state = statejson.adapter(env, purpose=purpose)
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

    def __init__(self, state: statejson.StateAdapter) -> None:
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


def _resolve(env: gym.Env[Any, Any], interventions: Iterable[Any]) -> tuple[Intervention, ...]:
    if isinstance(interventions, (str, Intervention, Mapping)) or not isinstance(interventions, Iterable):
        raise InvalidType(
            "`interventions` must be a list of interventions (catalogue names, one-line forms or Interventions), "
            f"received {type(interventions).__name__}"
        )
    return iv_module.resolve(env, list(interventions))[1]


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
    resolved = _resolve(env, interventions)
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
    resolved = None if intervention is None else _resolve(env, [intervention])[0]
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
                frames[id(state)] = renderer.frame(
                    state if intervention is None else iv_module.apply(state, intervention)
                )
        return renderer.stack([frames[id(state)] for state in sampled.history])
    except (InvalidArgument, InvalidType) as exc:
        made = "no intervention" if intervention is None else f"intervention `{intervention.name}`"
        raise type(exc)(
            f"sampled state {k} (decision {sampled.index}) under {made} cannot be restored: {exc}"
        ) from None


# -- the whole measurement --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pipeline:
    """A training pipeline's agents: n measured at each checkpoint, and the guide that samples the states.

    Attributes:
        name: the pipeline's name.
        checkpoints: per checkpoint label (``"final"`` when there is one), the sources of its n >= 2 measured
            agents: zoo names (``"ppo-CartPole-v1@1"``) or SB3 zips, as :func:`rlwrappers.agents.load` takes.
        guide: the source of the guide, an agent of the pipeline not among those measured; the same sampled
            states serve every checkpoint, so their heatmaps compare column by column.
        returns: per checkpoint, the agents' mean return where known (the report plots it beside R).
    """

    name: str
    checkpoints: Mapping[str, Sequence[str]]
    guide: str
    returns: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise InvalidArgument(f"`name` must be a non-empty name without '/', received {self.name!r}")
        if not isinstance(self.checkpoints, Mapping) or not self.checkpoints:
            raise InvalidArgument(f"pipeline {self.name!r}: `checkpoints` must map labels to agents, received none")
        for label, sources in self.checkpoints.items():
            if isinstance(sources, str) or len(sources) < 2:
                raise InvalidArgument(
                    f"pipeline {self.name!r} at checkpoint {label!r} needs at least 2 measured agents (R divides "
                    f"by log2(n)), received {sources!r}"
                )
            if self.guide in sources:
                raise InvalidArgument(
                    f"pipeline {self.name!r}: the guide {self.guide!r} is also measured at checkpoint {label!r}; "
                    "Algorithm 3 samples states from an agent that is not among those measured"
                )
        unknown = sorted(set(self.returns) - set(self.checkpoints))
        if unknown:
            raise InvalidArgument(f"pipeline {self.name!r}: `returns` names unknown checkpoints {unknown}")


def zoo_pipeline(name: str) -> Pipeline:
    """The zoo agents ``name`` as a pipeline: the last training seed guides, the others are measured.

    Example:
        >>> pipeline = zoo_pipeline("ppo-CartPole-v1")
        >>> pipeline.checkpoints, pipeline.guide
        ({'final': ['ppo-CartPole-v1@0', 'ppo-CartPole-v1@1']}, 'ppo-CartPole-v1@2')
    """
    from rlwrappers import zoo

    seeds = sorted(int(s) for s in zoo.card(name)["seeds"])
    if len(seeds) < 3:
        raise InvalidArgument(f"zoo agent {name!r} has {len(seeds)} seeds; a pipeline needs 3 (2 measured, 1 guide)")
    return Pipeline(name, {"final": [f"{name}@{s}" for s in seeds[:-1]]}, f"{name}@{seeds[-1]}")


def read_runs(directory: str | os.PathLike[str]) -> tuple[str, bool, list[Pipeline]]:
    """The pipelines that ``scripts/train_toybox.py`` trained into ``directory`` (its ``manifest.json``).

    Per pipeline, the last training seed's final checkpoint guides and the other seeds are measured at every
    checkpoint (labelled by their step); each checkpoint's returns are the mean over the measured agents.

    Returns:
        The env ID, whether the agents take SB3's Atari preprocessing, and the pipelines.

    Raises:
        MissingFile: no manifest, or a checkpoint's file is missing.
        InvalidArgument: the manifest lacks a field (the message names it).
    """
    root = Path(directory)
    path = root / "manifest.json"
    if not path.is_file():
        raise MissingFile(f"no training manifest at {str(path)!r}: run scripts/train_toybox.py --out {str(root)!r}")
    manifest = json.loads(path.read_text())
    try:
        env_id, atari = str(manifest["env_id"]), manifest["preprocessing"] == "atari"
        steps = [str(step) for step in manifest["checkpoints"]]
        pipelines = []
        for name, agents in manifest["agents"].items():
            seeds = sorted(agents, key=int)
            measured, guide = seeds[:-1], seeds[-1]
            files = {(seed, step): root / agents[seed]["checkpoints"][step]["file"] for seed in seeds for step in steps}
            returns = {
                step: float(np.mean([agents[seed]["checkpoints"][step]["return"] for seed in measured]))
                for step in steps
            }
            missing = [str(file) for file in files.values() if not file.is_file()]
            if missing:
                raise MissingFile(f"the manifest names {missing[0]!r}, which does not exist")
            checkpoints = {step: [str(files[seed, step]) for seed in measured] for step in steps}
            pipelines.append(Pipeline(name, checkpoints, str(files[guide, steps[-1]]), returns))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument(f"{str(path)!r} is not a complete training manifest: missing {exc}") from None
    return env_id, atari, pipelines


@dataclass(frozen=True)
class Measurement:
    """R per pipeline and checkpoint over the same interventions (null first), and the sampled states.

    Attributes:
        matrices: R of shape (p, m + 1) per (pipeline, checkpoint).
        interventions: the m + 1 names, ``"none"`` first.
        samples: the sampled states per pipeline.
        returns: per (pipeline, checkpoint), the mean return where known.
        request: what was measured: the env, the pipelines' agents, the interventions and the settings.
    """

    matrices: Mapping[tuple[str, str], NDArray[np.float64]]
    interventions: tuple[str, ...]
    samples: Mapping[str, StateSample]
    returns: Mapping[tuple[str, str], float] = field(default_factory=dict)
    request: Mapping[str, Any] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per (pipeline, checkpoint, state, intervention): R and normalized R, the state's decision."""
        pandas = require("pandas", purpose="robustness tables")
        frames = []
        for (pipeline, checkpoint), matrix in self.matrices.items():
            p, columns = matrix.shape
            decisions = self.samples[pipeline].indices
            frames.append(
                pandas.DataFrame(
                    {
                        "pipeline": pipeline,
                        "checkpoint": checkpoint,
                        "state": np.repeat(np.arange(p), columns),
                        "decision": np.repeat(decisions, columns),
                        "intervention": np.tile(self.interventions, p),
                        "R": matrix.ravel(),
                        "normalized": normalized_robustness(matrix).ravel(),
                    }
                )
            )
        return pandas.concat(frames, ignore_index=True)

    def summary(self) -> pd.DataFrame:
        """Appendix E's means per pipeline and checkpoint, labelled ``pipeline@checkpoint``.

        See :func:`~rlwrappers.metrics.robustness.pipeline_summary`.
        """
        matrices = {f"{pipeline}@{checkpoint}": m for (pipeline, checkpoint), m in self.matrices.items()}
        return pipeline_summary(matrices, list(self.interventions))

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Writes the measurement into ``directory`` and returns it.

        Files: ``robustness.csv`` (:meth:`table`), ``summary.csv`` (:meth:`summary`), ``returns.csv``,
        ``robustness.json`` (the request) and ``states/<pipeline>.json`` (:meth:`StateSample.save`).
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / REQUEST_FILE).write_text(json.dumps(self.request, indent=1) + "\n")
        self.table().to_csv(out / "robustness.csv", index=False)
        self.summary().to_csv(out / "summary.csv")
        pandas = require("pandas", purpose="robustness tables")
        rows = [{"pipeline": k[0], "checkpoint": k[1], "return": v} for k, v in self.returns.items()]
        pandas.DataFrame(rows, columns=["pipeline", "checkpoint", "return"]).to_csv(out / "returns.csv", index=False)
        for pipeline, sample in self.samples.items():
            sample.save(out / "states" / f"{pipeline}.json")
        return out

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Measurement:
        """The measurement :meth:`save` wrote to ``directory``.

        Raises:
            MissingFile: ``robustness.csv`` or a pipeline's states are missing.
        """
        pandas = require("pandas", purpose="robustness tables")
        source = Path(directory)
        path = source / "robustness.csv"
        if not path.is_file():
            raise MissingFile(f"no robustness measurement in {str(source)!r}: {str(path)!r} is missing")
        table = pandas.read_csv(path, dtype={"pipeline": str, "checkpoint": str, "intervention": str})
        names = tuple(dict.fromkeys(table["intervention"]))
        matrices = {
            (str(pipeline), str(checkpoint)): group["R"].to_numpy(np.float64).reshape(-1, len(names))
            for (pipeline, checkpoint), group in table.groupby(["pipeline", "checkpoint"], sort=False)
        }
        samples = {p: StateSample.load(source / "states" / f"{p}.json") for p in dict.fromkeys(k[0] for k in matrices)}
        returns: dict[tuple[str, str], float] = {}
        if (source / "returns.csv").is_file():
            saved = pandas.read_csv(source / "returns.csv", dtype={"pipeline": str, "checkpoint": str})
            returns = {
                (pipeline, checkpoint): float(value)
                for pipeline, checkpoint, value in zip(
                    saved["pipeline"], saved["checkpoint"], saved["return"], strict=True
                )
            }
        request_path = source / REQUEST_FILE
        request = json.loads(request_path.read_text()) if request_path.is_file() else {}
        return cls(matrices, names, samples, returns, request)


def measure(
    make_env: Callable[[], gym.Env[Any, Any]],
    pipelines: Sequence[Pipeline],
    interventions: Sequence[Intervention | str],
    *,
    p: int = 30,
    seed: int = 0,
    stochastic: bool = False,
    t: int = DRAWS,
    progress: Callable[[str], None] | None = None,
) -> Measurement:
    """Algorithms 2 and 3 for each pipeline: sample p states with its guide, then R at every checkpoint.

    Per pipeline: the guide plays one game in ``make_env()`` (:func:`sample_states`), the observations of the
    sampled states under every intervention are rendered once in a fresh ``make_env()``
    (:func:`observations`), and each checkpoint's agents are measured on them
    (:func:`~rlwrappers.metrics.robustness.robustness_matrix`: one forward pass per agent).

    Args:
        make_env: makes the env as the agents see it (``lambda: atari_wrapper(gym.make(ID))`` for Atari agents).
        pipelines: the pipelines, with distinct names.
        interventions: catalogue names or one-line forms (see :func:`observations`); the null one comes first
            by itself.
        p: states per pipeline.
        seed: seeds the guide's game, the draws of states and the stochastic agents' draws.
        stochastic: agents sample their actions (t draws per state) instead of acting greedily.
        t: draws per state for stochastic agents.
        progress: called with a line of text as each step finishes.
    """
    from rlwrappers.agents import load

    if isinstance(pipelines, Pipeline) or not pipelines or not all(isinstance(x, Pipeline) for x in pipelines):
        raise InvalidType(f"`pipelines` must be a non-empty list of Pipeline, received {pipelines!r}")
    names = [x.name for x in pipelines]
    if len(set(names)) != len(names):
        raise InvalidArgument(f"pipeline names must differ, received {names}")
    say = progress or (lambda line: None)
    env = make_env()
    resolved = _resolve(env, interventions)
    columns = ("none", *(iv.name for iv in resolved))
    if len(set(columns)) != len(columns):
        raise InvalidArgument(f"intervention names must differ (and none may be 'none'), received {list(columns)}")
    matrices: dict[tuple[str, str], NDArray[np.float64]] = {}
    samples: dict[str, StateSample] = {}
    returns: dict[tuple[str, str], float] = {}
    for pipeline in pipelines:
        guide = load(pipeline.guide, observation_space=env.observation_space, deterministic=not stochastic)
        sample = samples[pipeline.name] = sample_states(env, guide, p, seed=seed, guide=pipeline.guide)
        seen = observations(make_env(), sample, resolved)
        say(f"{pipeline.name}: {p} states from a game of {sample.length} decisions, {len(seen)} x {p} observations")
        for checkpoint, sources in pipeline.checkpoints.items():
            agents = [
                load(source, observation_space=env.observation_space, deterministic=not stochastic)
                for source in sources
            ]
            rng = np.random.default_rng(seed) if stochastic else None
            matrix = robustness_matrix(agents, seen, t=t, rng=rng)
            matrices[pipeline.name, checkpoint] = matrix
            if checkpoint in pipeline.returns:
                returns[pipeline.name, checkpoint] = float(pipeline.returns[checkpoint])
            say(f"{pipeline.name} at {checkpoint}: mean R {matrix.mean():.3f} over {len(agents)} agents")
    request = {
        "env_id": env.spec.id if env.spec is not None else None,
        "env": str(env),
        "pipelines": [
            {"name": x.name, "guide": x.guide, "checkpoints": {k: list(v) for k, v in x.checkpoints.items()}}
            for x in pipelines
        ],
        "interventions": [{"name": iv.name, "doc": iv.doc, "assignments": str(iv)} for iv in resolved],
        "p": p,
        "seed": seed,
        "stochastic": stochastic,
        "t": t if stochastic else 1,
    }
    return Measurement(matrices, columns, samples, returns, request)
