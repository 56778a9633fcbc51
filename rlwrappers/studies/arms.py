"""One arm of an evaluation: its env (the shift between the env's own wrappers and the agent's), and one run of it.

:func:`run` plays one (agent, shift, seed) for the evaluation's episodes and writes its log with a
:class:`~rlwrappers.logs.Recorder`; the study runner (:mod:`rlwrappers.studies.run`) calls it in each worker.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlwrappers import agents as agents_module
from rlwrappers.core import attach, wrap
from rlwrappers.logs import Recorder
from rlwrappers.studies.design import RunSpec, Settings, Stack, agent_generator, episode_seed, index_row, on_agent_input
from rlwrappers.wrappers.atari import LivesAsEpisodes
from rlwrappers.zoo import load_agent

__all__ = ["make_env", "resolve_agent", "run"]

#: The agents each worker process has loaded, by source and mode: a name or path is loaded once per process.
_WORKER_AGENTS: dict[str, agents_module.Agent] = {}


def resolve_agent(agent: Any, settings: Settings, env: gym.Env[Any, Any]) -> agents_module.Agent:
    """The agent as an Agent; names and paths are loaded once per process."""
    if isinstance(agent, (str, os.PathLike)):
        key = f"{agent}|{settings.deterministic}"
        if key not in _WORKER_AGENTS:
            _WORKER_AGENTS[key] = load_agent(agent, deterministic=settings.deterministic)
        return _WORKER_AGENTS[key]
    if isinstance(agent, agents_module.Agent):
        return agent  # an Agent keeps its own `deterministic`
    if type(agent).__module__.startswith("stable_baselines3"):
        return agents_module.adapt(agent, env.observation_space, deterministic=settings.deterministic)
    return agents_module.adapt(agent, env.observation_space, env.action_space)


def make_env(
    settings: Settings, shift: str, stack: Stack, *, always: bool = False, first_episode: int = 0
) -> tuple[gym.Env[Any, Any], LivesAsEpisodes | None]:
    """The env of one arm, and its :class:`LivesAsEpisodes` layer when lives count as episodes.

    Without ``over`` wrappers, lives are counted under the shift, so a shift's schedule counts lives; with
    them, above the preprocessing (which must see whole games), so a shift under it counts games.
    ``always`` makes the shift act at every step, whatever its schedule; ``first_episode`` is the arm's
    first episode (:meth:`Settings.entries`).
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
    on_input = [on_agent_input(e) for e in entries]
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


def run(spec: RunSpec, agent: Any, settings: Settings, root: str, stack: Stack = Stack()) -> dict[str, Any]:
    """Runs one (agent, shift, seed) and writes its log; returns its index row."""
    start = time.time()
    env, lives = make_env(settings, spec.shift, stack, first_episode=spec.first_episode)
    actor = resolve_agent(agent, settings, env)
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
    return index_row(spec, returns, time.time() - start)
