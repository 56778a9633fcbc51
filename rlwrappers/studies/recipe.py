"""One recipe builds every evaluation env: what sits where, from the base env up to the agent's input.

An :class:`EnvRecipe` says, bottom to top, everything an arm's env is made of; :meth:`EnvRecipe.build` builds
it in one pass. Every study builds its envs through it (evaluation runs, the card, probes, flip rates, replays):

========================  =====================================================================================
layer                     what goes there
========================  =====================================================================================
base env                  ``gym.make(env_id, **env_kwargs)``, an ALE env without ROM reloads (the agent's
                          ``gym_packages`` are imported first)
``on_base``               perturbations that render a state they changed (init-state noise, interventions),
                          under the env-side wrappers, so that those see the changed state
``env_wrappers``          the agent's training wrappers (RL Zoo's ``env_wrapper``: ``AtariWrapper``, ...; its
                          ``vec_env_wrapper``), then :class:`~rlwrappers.studies.design.EnvSetup`'s ``wrappers``
lives (``below``)         Atari lives as episodes, counted under the shifts when no ``over`` wrappers
``shifts``                the arm's perturbations that act on the env
``over``                  :class:`~rlwrappers.studies.design.EnvSetup`'s ``outer_wrappers`` (a preprocessing
                          that should see the shifted frame)
lives (``above``)         lives as episodes, counted above the ``over`` wrappers
``frame_stack``           SB3's ``VecFrameStack`` for agents trained with it
                          (:class:`~rlwrappers.wrappers.frames.StackFrames`)
``on_input``              perturbations that need the agent (gradient attacks, parameter noise), on its input
agent                     its input steps (``VecNormalize`` statistics, image transposition), then the network
========================  =====================================================================================

:meth:`EnvRecipe.of` reads a recipe off an evaluation's :class:`~rlwrappers.studies.design.Settings`, the arm's
shift, the :class:`~rlwrappers.studies.design.Stack` and the agent's name (whose training, in
``Settings.agent_preprocessing``, adds its wrappers and frame stack).
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers.agents.protocol import Agent
from rlwrappers.agents.rl_zoo import is_agent_files, read_training
from rlwrappers.agents.training import Normalization, Training, WrapperSpec, read_normalization
from rlwrappers.core import Entry, wrap
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.registration import base_ids
from rlwrappers.studies.design import Settings, Stack, parse_agents
from rlwrappers.wrappers.atari import LivesAsEpisodes, without_reloads
from rlwrappers.wrappers.frames import StackFrames

__all__ = ["LIVES", "EnvRecipe", "Wrapper", "env_side_frames", "input_frames", "tiled", "trained_env", "trainings"]

#: A wrapper: a callable env -> env.
Wrapper = Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]

#: Where lives may be counted as episodes: under the shifts, or above the ``over`` wrappers.
LIVES: Final = ("below", "above")


@dataclass(frozen=True)
class EnvRecipe:
    """An evaluation env, bottom to top (see the module's table); :meth:`build` makes it.

    Attributes:
        env_id: the base env's ID.
        env_kwargs: its ``gym.make`` keyword arguments.
        gym_packages: modules to import before ``gym.make``, which register the env.
        on_base: perturbations (stored entries) that render a state they changed, on the base env.
        env_wrappers: wrappers under the shifts: the agent's training wrappers, then the evaluation's.
        lives: where lives count as episodes (``"below"`` or ``"above"``), or None.
        shifts: perturbations that act on the env, under the ``over`` wrappers.
        over: wrappers over the shifts.
        frame_stack: observations SB3's ``VecFrameStack`` stacks for the agent (0: none).
        pad: what the empty slots of the frame stack hold after a reset.
        stack_dtype: the frame stack's dtype (None: the observations').
        on_input: perturbations that act on the agent's own input.
    """

    env_id: str
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    gym_packages: tuple[str, ...] = ()
    on_base: tuple[dict[str, Any], ...] = ()
    env_wrappers: tuple[Wrapper, ...] = ()
    lives: str | None = None
    shifts: tuple[dict[str, Any], ...] = ()
    over: tuple[Wrapper, ...] = ()
    frame_stack: int = 0
    pad: Any = 0.0
    stack_dtype: Any = None
    on_input: tuple[dict[str, Any], ...] = ()

    @classmethod
    def of(
        cls,
        settings: Settings,
        shift: str,
        stack: Stack = Stack(),
        agent: str | None = None,
        *,
        always: bool = False,
        first_episode: int = 0,
    ) -> EnvRecipe:
        """The recipe of the arm (``agent``, ``shift``) of an evaluation.

        ``always`` makes the shift act at every step, whatever its schedule; ``first_episode`` is the arm's first
        episode (:meth:`Settings.entries`). Under env-side wrappers, a perturbation that renders the observation
        of a state it changed sits on the base env, where its schedule counts the base env's own steps (an Atari
        frame) and episodes (a game); without them it acts in the shifts' layer, in its place among them.
        """
        if always:
            entries = [{**e, "when": "always"} for e in settings.shifts.get(shift, [])]
        else:
            entries = settings.entries(shift, first_episode)
        trained = settings.agent_preprocessing.get(agent, {}) if agent is not None else {}
        layers = _agent_layers(trained, stack.under)
        layers["env_kwargs"] = {**layers["env_kwargs"], **settings.env_kwargs}
        parsed = [Entry.parse(e).perturbation for e in entries]
        under = bool(layers["env_wrappers"])
        on_base = tuple(e for e, p in zip(entries, parsed, strict=True) if under and p.observes_state)
        rest = [(e, p) for e, p in zip(entries, parsed, strict=True) if not (under and p.observes_state)]
        below = env_side_frames(trained)
        above = below * max(1, layers["frame_stack"])
        return cls(
            env_id=settings.env_id,
            **layers,
            on_base=on_base,
            lives=("above" if stack.over else "below") if settings.lives_as_episodes else None,
            shifts=tiled([e for e, p in rest if not p.needs_agent], below),
            over=stack.over,
            on_input=tiled([e for e, p in rest if p.needs_agent], above),
        )

    @classmethod
    def for_agent(cls, env_id: str, training: Training | None, *, wrappers: tuple[Wrapper, ...] = ()) -> EnvRecipe:
        """``env_id`` as an agent trained behind ``training`` sees it, without shifts, for studies of one env.

        ``wrappers`` go under the frame stack, after the agent's own env wrappers (``--atari``'s preprocessing).
        """
        return cls(env_id=env_id, **_agent_layers({} if training is None else training.record(), wrappers))

    def build(self) -> tuple[gym.Env[Any, Any], LivesAsEpisodes | None]:
        """The env, bottom to top in one pass, and its :class:`LivesAsEpisodes` layer when lives are episodes."""
        for package in self.gym_packages:
            importlib.import_module(package)
        env = without_reloads(gym.make(self.env_id, **self.env_kwargs))  # a seeded reset loads no ROM
        if self.on_base:
            env = wrap(env, *self.on_base)
        for wrapper in self.env_wrappers:
            env = wrapper(env)
        lives = None
        if self.lives == "below":
            env = lives = LivesAsEpisodes(env)
        if self.shifts:
            env = wrap(env, *self.shifts)
        for wrapper in self.over:
            env = wrapper(env)
        if self.lives == "above":
            env = lives = LivesAsEpisodes(env)
        if self.frame_stack:
            env = StackFrames(env, self.frame_stack, pad=self.pad, dtype=self.stack_dtype)
        if self.on_input:
            env = wrap(env, *self.on_input)
        return env, lives


def env_side_frames(trained: Mapping[str, Any]) -> int:
    """How many observations the env-side wrappers of a training record stack (RL Zoo's ``VecFrameStack``)."""
    frames = 1
    for record in (
        *trained.get("env_wrappers", ()),
        *trained.get("vec_env_wrappers", ()),
    ):
        if record["wrapper"] == f"{StackFrames.__module__}.{StackFrames.__name__}":
            frames *= int(record["kwargs"]["frames"])
    return frames


def input_frames(trained: Mapping[str, Any]) -> int:
    """How many observations an agent's input stacks: env-side (``VecFrameStack`` entries), then its frame stack."""
    return env_side_frames(trained) * max(1, int(trained.get("frame_stack", 0)))


def tiled(entries: Sequence[Mapping[str, Any]], frames: int) -> tuple[dict[str, Any], ...]:
    """Observation perturbations with one number per observation entry, over ``frames`` stacked observations.

    A ladder sets such levels per entry of one observation (``obs_noise(std=[...])``, ``fgsm(eps=[...])``); above
    a stack of vector observations, concatenated along their one axis as SB3's ``VecFrameStack`` does, each
    list repeats once per stacked observation, so every frame gets its own entry's number. Other entries, and
    every entry when ``frames`` is 1, are kept as they are.

    Example:
        >>> tiled([{"name": "fgsm", "eps": [0.1, 0.2], "when": "always"}], 2)[0]["eps"]
        [0.1, 0.2, 0.1, 0.2]
    """
    out = []
    for entry in entries:
        copy = dict(entry)
        if frames > 1 and Entry.parse(copy).perturbation.channel == "observation":
            for key, value in entry.items():
                if isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
                    copy[key] = list(value) * frames
        out.append(copy)
    return tuple(out)


def trainings(agent: Any) -> dict[str, Training]:
    """What each agent of an evaluation was trained behind, by name, for the agents whose files say.

    RL Zoo folders and SB3 zips are read (:func:`~rlwrappers.agents.rl_zoo.read_training`); an
    :class:`~rlwrappers.agents.Agent` brings its own :attr:`~rlwrappers.agents.Agent.training`.
    """
    out = {}
    for name, source in parse_agents(agent).items():
        if isinstance(source, (str, os.PathLike)):
            training = read_training(source) if is_agent_files(source) else None
        else:  # a torch module has a `training` flag of its own: only Agents say what they were trained behind
            training = source.training if isinstance(source, Agent) else None
        if training is not None:
            out[name] = training
    return out


def trained_env(trained: Mapping[str, Training], env_id: str | None, other_env: bool) -> str:
    """The env to play: ``env_id``, or the one the agents were trained on when it is None.

    Raises:
        InvalidArgument: ``env_id`` is None and the agents name no env (or several), or an agent was trained on
            another base env than ``env_id``'s and ``other_env`` is False. Perturbed and randomized IDs
            registered by :func:`rlwrappers.register` count as their base env.
    """
    named = {name: t.env_id for name, t in trained.items() if t.env_id is not None}
    if env_id is None:
        envs = sorted(set(named.values()))
        if len(envs) != 1:
            said = f"they name {envs}" if envs else "no agent's files name one"
            raise InvalidArgument(f"`env_id` is required: {said}")
        return envs[0]
    if not isinstance(env_id, str):
        raise InvalidType(f"`env_id` must be a Gymnasium ID or PettingZoo parallel env string, received {env_id!r}")
    base = base_ids().get(env_id, env_id)
    for name, trained_on in named.items():
        if base != trained_on and not other_env:
            shown = env_id if base == env_id else f"{env_id!r} (base env {base!r})"
            raise InvalidArgument(
                f"agent {name!r} was trained on {trained_on!r}, as its RL Zoo files say, and `env_id` is {shown}:"
                " its observations and dynamics may differ; pass other_env=True (--other-env) to play it there"
            )
    return env_id


def _agent_layers(trained: Mapping[str, Any], wrappers: tuple[Wrapper, ...]) -> dict[str, Any]:
    """The recipe's fields an agent's training record fills: its env, wrappers (then ``wrappers``), frame stack."""
    frame_stack = int(trained.get("frame_stack", 0))
    normalized = bool(frame_stack) and "normalization" in trained
    return {
        "env_kwargs": dict(trained.get("env_kwargs", {})),
        "gym_packages": tuple(trained.get("gym_packages", ())),
        "env_wrappers": (*_trained_wrappers(trained), *wrappers),
        "frame_stack": frame_stack,
        "pad": _pad(trained["normalization"]) if normalized else 0.0,
        "stack_dtype": np.float64 if normalized else None,
    }


def _trained_wrappers(trained: Mapping[str, Any]) -> tuple[WrapperSpec, ...]:
    """The env-side wrappers of an agent's training record, in order: its env wrappers, then its vec-env ones."""
    records = (*trained.get("env_wrappers", ()), *trained.get("vec_env_wrappers", ()))
    return tuple(WrapperSpec(w["wrapper"], w.get("kwargs", {})) for w in records)


def _pad(record: Mapping[str, Any]) -> np.ndarray[Any, Any]:
    """The frame stack's padding for a normalized agent: the statistics' mean, which normalizes to zero.

    SB3 pads the stack with zeros after ``VecNormalize``; here the stack is built before the agent normalizes,
    so its empty slots hold the mean, in float64 (the stack's dtype then), which the agent's normalization maps
    to exactly zero. Observations are widened to float64 exactly, and normalized in float64 as
    ``VecNormalize`` does, so the agent sees what SB3 gives it, bit for bit.
    """
    return np.asarray(_statistics(record["file"], record["sha256"]).mean)


@functools.cache
def _statistics(file: str, sha256: str) -> Normalization:
    """The statistics a training record names, checked against its SHA-256; read once per process."""
    normalization = read_normalization(file)
    if normalization is None or normalization.sha256 != sha256:
        raise InvalidArgument(f"the statistics {file!r} changed since the evaluation began (their SHA-256 differs)")
    return normalization
