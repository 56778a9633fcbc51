"""One arm of an evaluation: its env (the shift between the env's own wrappers and the agent's), and one run of it.

:func:`run` plays one (agent, shift, seed) for the evaluation's episodes and writes its log with a
:class:`~rlwrappers.logs.Recorder`; the study runner (:mod:`rlwrappers.studies.run`) calls it in each worker.
The run itself is :func:`play`, a coroutine that asks its driver for each action, so that
:mod:`rlwrappers.studies.batched` can step many runs together and ask the agent for all their actions at once.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Generator, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
import numpy as np

from rlwrappers import agents as agents_module
from rlwrappers.core import attach
from rlwrappers.error import LogError
from rlwrappers.logs import Recorder
from rlwrappers.studies.design import (
    RunSpec,
    Settings,
    Stack,
    agent_generator,
    episode_seed,
    index_row,
)
from rlwrappers.studies.recipe import EnvRecipe
from rlwrappers.zoo import load_agent

__all__ = ["Play", "Request", "play", "replay", "resolve_agent", "run"]

#: The agents each worker process has loaded, by source and mode: a name or path is loaded once per process.
_WORKER_AGENTS: dict[str, agents_module.Agent] = {}


def resolve_agent(agent: Any, settings: Settings, env: gym.Env[Any, Any]) -> agents_module.Agent:
    """The agent as an Agent for ``env``; names and paths are loaded once per process (and env spaces)."""
    if isinstance(agent, (str, os.PathLike)):
        key = f"{agent!r}|{settings.deterministic}|{env.observation_space}|{env.action_space}"
        if key not in _WORKER_AGENTS:
            _WORKER_AGENTS[key] = load_agent(
                agent,
                deterministic=settings.deterministic,
                observation_space=env.observation_space,
                action_space=env.action_space,
            )
        return _WORKER_AGENTS[key]
    if isinstance(agent, agents_module.Agent):
        return agent  # an Agent keeps its own `deterministic`
    if type(agent).__module__.startswith("stable_baselines3"):
        return agents_module.adapt(agent, env.observation_space, deterministic=settings.deterministic)
    return agents_module.adapt(agent, env.observation_space, env.action_space)


def replay(env: gym.Env[Any, Any], steps: Any, seed: int, where: str) -> Iterator[Any]:
    """Plays a logged episode again on ``env`` from its recorded actions, yielding the observation before each.

    ``steps`` are the episode's step rows, ``seed`` its reset seed, and ``env`` must be built as its run's was.
    Each reward is checked against the log as it comes, so stopping early checks what was played; a reward the
    log does not hold raises :class:`~rlwrappers.error.LogError` naming ``where``.
    """
    obs, _ = env.reset(seed=seed)
    logged = steps["reward"].to_numpy(dtype=np.float64)
    for t, action in enumerate(steps["action"].to_list()):
        yield obs
        obs, reward, *_ = env.step(np.asarray(action, dtype=env.action_space.dtype))
        if float(reward) != logged[t]:
            raise LogError(f"{where} played again gave reward {float(reward)} at step {t}, its log {logged[t]}")


@dataclass(slots=True)
class Request:
    """What a run asks of its driver at each step: ``actor``'s action for ``obs`` (one observation), from ``rng``.

    One request serves a whole episode: the run sets its ``obs`` anew at each step, before it yields it.
    """

    actor: agents_module.Agent
    obs: Any
    rng: np.random.Generator


#: A run as a coroutine: it yields a :class:`Request` per step, is sent the action, and returns its index row.
Play = Generator[Request, Any, dict[str, Any]]


def play(
    spec: RunSpec, agent: Any, settings: Settings, root: str, stack: Stack = Stack(), *, private: bool = False
) -> Play:
    """One (agent, shift, seed) as a coroutine that writes its log: the driver decides how actions are computed.

    :func:`run` drives it with one network pass per step; :mod:`rlwrappers.studies.batched` drives many at once.
    ``private`` gives the run its own copy of the agent (for perturbations that change it, when other runs act
    with the same agent meanwhile). Closing the coroutine early closes its log, as an interrupted run does.
    """
    start = time.time()
    env, lives = EnvRecipe.of(settings, spec.shift, stack, spec.agent, first_episode=spec.first_episode).build()
    actor = resolve_agent(agent, settings, env)
    if private:
        actor = copy.deepcopy(actor)
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
    returns = []
    try:
        attach(recorder, actor)
        game = 0
        for episode in range(spec.first_episode, settings.episodes):
            new_game = lives is None or lives.game_over
            seed = episode_seed(spec.seed, game if lives is not None else episode) if new_game else None
            game += int(new_game)
            obs, _ = recorder.reset(seed=seed)
            request = Request(actor, obs, agent_generator(spec.seed, episode))
            total, done = 0.0, False
            while not done:
                action = yield request
                request.obs, reward, terminated, truncated, _ = recorder.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        recorder.close()
    return index_row(spec, returns, time.time() - start)


def run(spec: RunSpec, agent: Any, settings: Settings, root: str, stack: Stack = Stack()) -> dict[str, Any]:
    """Runs one (agent, shift, seed) and writes its log; returns its index row."""
    with closing(play(spec, agent, settings, root, stack)) as steps:
        try:
            request = next(steps)
            while True:
                request = steps.send(request.actor.act_one(request.obs, request.rng))
        except StopIteration as finished:
            return cast(dict[str, Any], finished.value)
