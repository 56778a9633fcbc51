"""Action flip rates of a robustness card: how often a shift changes the action the agent would take unshifted.

A card's arm is compared with the clean policy on the same observations, in one of three ways by family:

- **attacks**: the attack records, at each step it acts, the agent's action on the clean observation beside
  the one on the attacked observation; the rate is the share of attacked steps where they differ.
- **action noise, sticky actions**: the share of the arm's steps whose executed action differs from the agent's.
- **observation noise, corruptions, parameter noise**: the states of the clean arm's first episode of each
  seed, played again from its logged actions (every :data:`STRIDE`-th decision, at most :data:`PER_SEED` per
  seed); the agent acts on each clean observation and on the same observation under the arm's shift (under
  parameter noise: with noisy weights, one draw per seed), and the rate is the share of states where the two
  actions differ.

Initial-state noise, dynamics and the recovery test change the states themselves, not what the agent makes of
one: they have no flip rate. A Box action flips when a dimension moves by more than :data:`BOX_FLIP` of half
its range. Every draw is seeded by the arm's name and the seed, so the rates repeat. Dict and Tuple observations
are stacked and taken apart entry by entry (:mod:`rlwrappers.structure`), so their states are compared alike.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import structure
from rlwrappers.core import Entry
from rlwrappers.ladders import Arm
from rlwrappers.logs import read_log
from rlwrappers.studies.arms import replay, resolve_agent
from rlwrappers.studies.design import BASELINE, Stack, episode_seed
from rlwrappers.studies.recipe import EnvRecipe, input_frames, tiled
from rlwrappers.studies.results import Evaluation
from rlwrappers.wrappers.policy import noisy_parameters

__all__ = ["BOX_FLIP", "PER_SEED", "STRIDE", "flip_rates", "level_flip_rates"]

#: A change of a Box action by more than this share of half its range counts as a flip.
BOX_FLIP: Final = 0.1
#: Every STRIDE-th decision of a clean episode is a state the observation families are compared at.
STRIDE: Final = 4
#: The most states per seed.
PER_SEED: Final = 100

#: The families whose logs hold the executed action beside the agent's.
_ACTION_FAMILIES: Final = ("action_noise", "sticky_action")
#: The families compared on the clean arm's states.
_STATE_FAMILIES: Final = ("obs_noise", "corruptions", "param_noise")


def flip_rates(agent: Any, evaluation: Evaluation, arms: Sequence[Arm], stack: Stack = Stack()) -> dict[str, float]:
    """The flip rate of each arm that has one (see the module), by arm name.

    Args:
        agent: the card's agent, as :func:`~rlwrappers.studies.run.evaluate` was given it.
        evaluation: the card's evaluation, whose clean arm and ``arms`` were played.
        arms: the card's arms.
        stack: the preprocessing the evaluation's envs were built with.
    """
    settings = evaluation.settings
    env, _ = EnvRecipe.of(settings, BASELINE, stack, evaluation.agent_name).build()
    flipped = _Flipped(env.action_space)
    out: dict[str, float] = {}
    try:
        for arm in arms:
            if arm.family == "attack":
                out[arm.name] = _logged(evaluation, arm, flipped, attack=True)
            elif arm.family in _ACTION_FAMILIES:
                out[arm.name] = _logged(evaluation, arm, flipped, attack=False)
        state_arms = [arm for arm in arms if arm.family in _STATE_FAMILIES]
        if state_arms:
            actor = resolve_agent(agent, settings, env)
            frames = input_frames(settings.agent_preprocessing.get(evaluation.agent_name, {}))
            changed: dict[str, list[NDArray[np.bool_]]] = {arm.name: [] for arm in state_arms}
            for seed in sorted(set(evaluation.index["seed"])):
                states = structure.stack(_clean_states(evaluation, env, int(seed)))
                clean = actor.act(states, np.random.default_rng(0))
                for arm in state_arms:
                    rng = np.random.default_rng([zlib.crc32(arm.name.encode()), int(seed)])
                    shifted = _shifted_actions(actor, arm, frames, env, states, rng)
                    changed[arm.name].append(flipped(clean, shifted))
            out.update({name: float(np.concatenate(parts).mean()) for name, parts in changed.items()})
    finally:
        env.close()
    return out


class _Flipped:
    """Whether each of a batch of actions differs from its clean twin: any change, or a large one on Box."""

    def __init__(self, space: gym.Space[Any]):
        self._half = (space.high - space.low) / 2.0 if isinstance(space, gym.spaces.Box) else None

    def __call__(self, clean: NDArray[Any], other: NDArray[Any]) -> NDArray[np.bool_]:
        clean, other = np.asarray(clean), np.asarray(other)
        if self._half is None:
            differ = clean != other
        else:
            differ = np.abs(other.astype(np.float64) - clean) > BOX_FLIP * self._half
        return differ.reshape(len(differ), -1).any(axis=1)


def _logged(evaluation: Evaluation, arm: Arm, flipped: _Flipped, *, attack: bool) -> float:
    """The share of an arm's acting steps whose action changed, from its logs (attacks: the attacked steps)."""
    label = arm.entries[0]["name"]
    changed = acting = 0
    for path in evaluation.index.loc[evaluation.index["shift"] == arm.name, "path"]:
        steps = read_log(evaluation.path / path).steps
        active = steps[f"{label}.active"].to_numpy(dtype=bool)
        if not active.any():
            continue
        if attack:
            clean, other = steps[f"{label}.clean_action"], steps[f"{label}.action"]
        else:
            clean, other = steps["action"], steps[f"{label}.executed"]
        changed += int(flipped(np.stack(clean.to_numpy()[active]), np.stack(other.to_numpy()[active])).sum())
        acting += int(active.sum())
    return changed / acting if acting else float("nan")


def _clean_states(evaluation: Evaluation, env: gym.Env[Any, Any], seed: int) -> list[Any]:
    """Every :data:`STRIDE`-th observation of the clean arm's first episode of ``seed``, played again from its log."""
    path, steps = evaluation.logged_episode(BASELINE, seed, 0)
    played = replay(env, steps.iloc[: STRIDE * PER_SEED], episode_seed(seed, 0), f"episode 0 of {path!r}")
    return [obs for t, obs in enumerate(played) if t % STRIDE == 0]


def _shifted_actions(
    actor: Any, arm: Arm, frames: int, env: gym.Env[Any, Any], states: Any, rng: np.random.Generator
) -> NDArray[Any]:
    """The agent's actions on ``states`` under the arm's shift: its observation changes, or noisy weights.

    ``states`` are the agent's inputs (a batch: a dict or tuple of batches for Dict or Tuple observations),
    ``frames`` observations stacked: per-entry levels repeat over them.
    """
    if arm.family == "param_noise":
        with noisy_parameters(actor, float(arm.entries[0]["std"]), rng):
            return np.asarray(actor.act(states, np.random.default_rng(0)))
    perturbations = [Entry.parse(entry).perturbation for entry in tiled(arm.entries, frames)]
    for perturbation in perturbations:
        perturbation.bind(env, env.observation_space, env.action_space)
        perturbation.start_episode()
    shifted = []
    for i in range(structure.batch_size(states)):
        obs = structure.take(states, i)
        for perturbation in perturbations:
            obs, _ = perturbation.observation(obs, rng)
        shifted.append(obs)
    return np.asarray(actor.act(structure.stack(shifted), np.random.default_rng(0)))


def level_flip_rates(rates: Mapping[str, float], arms: Sequence[Arm]) -> dict[int, float]:
    """Per level, the mean flip rate of ``arms`` at that level (the corruptions family over its sub-families)."""
    by_level: dict[int, list[float]] = {}
    for arm in arms:
        if arm.name in rates:
            by_level.setdefault(arm.level, []).append(rates[arm.name])
    return {level: float(np.mean(values)) for level, values in by_level.items()}
