"""Probes: states at which an agent's input is seen with and without a shift (``evaluate(..., probe=N)``).

:class:`Probe` holds them; :func:`run_probes` collects them for every (agent, shift) of an evaluation whose
perturbations all act on observations, into ``probes/<agent>/<shift>.npz`` of its run folder. The sweeps turn
them into flip rates, LPIPS and spectra (:mod:`rlwrappers.studies.sweep`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers.core import Entry, attach
from rlwrappers.error import IncompatibleSpace, LogError
from rlwrappers.logs.space import replace_file, writing
from rlwrappers.structure import is_structured
from rlwrappers.studies.arms import resolve_agent
from rlwrappers.studies.design import BASELINE, Settings, Stack, directory_name, episode_seed
from rlwrappers.studies.recipe import EnvRecipe

__all__ = ["PROBE_DIR", "PROBE_SEED", "PROBE_STRIDE", "Probe", "check_probe_space", "probe_path", "run_probes"]

#: Run seed of the probe's episodes; a probe keeps every PROBE_STRIDE-th decision.
PROBE_SEED: Final = 2**31 - 1


PROBE_STRIDE: Final = 4


PROBE_DIR: Final = "probes"


def probe_path(agent: str, shift: str) -> str:
    """Where the probe of (agent, shift) lies in a run directory."""
    return f"{PROBE_DIR}/{directory_name(agent)}/{directory_name(shift)}.npz"


@dataclass(frozen=True)
class Probe:
    """States at which one agent's input was seen with and without one shift.

    ``probe`` in :func:`~rlwrappers.studies.run.evaluate` asks for them. Two copies of the arm's env, one clean and one
    under the shift (acting at every step, whatever its schedule), are reset with the same seeds and both stepped with
    the action the agent takes on the clean input, so they go through the same states. Every ``PROBE_STRIDE``-th
    decision is kept: the agent's input in both copies and the action the agent takes on each (a stochastic agent draws
    both from generators seeded alike, so only the input differs). Only shifts whose perturbations all act on
    observations have a probe: any other would change the course of the copy it acts on.

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
        """Writes the probe (compressed) in one step: a reader never sees half a file.

        Raises:
            LogError: the folder cannot take it (a full disk, say); no part of the file is left.
        """
        target = Path(path)
        with writing(target.parent, "a probe's folder"):
            target.parent.mkdir(parents=True, exist_ok=True)

        def write(tmp: Path) -> None:
            with tmp.open("wb") as f:
                np.savez_compressed(f, **asdict(self))

        replace_file(target, f"the probe {target.name}", write)

    @property
    def flipped(self) -> NDArray[np.bool_]:
        """Whether the shift changed the agent's action, per state."""
        differ = self.clean_action != self.shifted_action
        return differ.reshape(len(differ), -1).any(axis=1) if differ.ndim > 1 else differ


def check_probe_space(space: gym.Space[Any]) -> None:
    """Raises :class:`~rlwrappers.error.IncompatibleSpace` for a Dict or Tuple observation space.

    A probe holds the agent's inputs as arrays of one observation shape, which the sweeps' sizes, SSIM and LPIPS
    compare: an evaluation of an env with structured observations takes no probes (``probe=0``).
    """
    if is_structured(space):
        raise IncompatibleSpace(
            f"`probe` keeps the agent's inputs as arrays of one shape, and the env's observation space {space} is a"
            " Dict or Tuple space; evaluate it with probe=0"
        )


def _probeable(settings: Settings, shift: str) -> bool:
    """Whether a shift can be probed: all its perturbations act on observations."""
    return all(Entry.parse(e).perturbation.channel == "observation" for e in settings.shifts[shift])


def run_probes(agents: Mapping[str, Any], settings: Settings, root: Path, stack: Stack) -> None:
    """Probes every (agent, shift) that has no probe file yet."""
    if not settings.probe:
        return
    for name, agent in agents.items():
        for shift in settings.shifts:
            path = root / probe_path(name, shift)
            if not path.exists():
                _probe(agent, name, settings, shift, stack, path)


def _probe(agent: Any, name: str, settings: Settings, shift: str, stack: Stack, path: Path) -> None:
    """Collects ``settings.probe`` states of ``shift`` for ``agent`` (named ``name``; see :class:`Probe`)."""
    if not _probeable(settings, shift):
        return
    plain = Settings(**{**asdict(settings), "lives_as_episodes": False})
    clean, _ = EnvRecipe.of(plain, BASELINE, stack, name).build()
    shifted, _ = EnvRecipe.of(plain, shift, stack, name, always=True).build()
    actor = resolve_agent(agent, plain, clean)
    attach(shifted, actor)
    rows: list[tuple[Any, ...]] = []
    try:
        check_probe_space(clean.observation_space)  # evaluate refuses it first; run_probes may be called alone
        episode = 0
        while len(rows) < settings.probe:
            seed = episode_seed(PROBE_SEED, episode)
            obs, _ = clean.reset(seed=seed)
            other, _ = shifted.reset(seed=seed)
            step, done = 0, False
            while not done and len(rows) < settings.probe:
                action = actor.act_one(obs, np.random.default_rng((PROBE_SEED, episode, step)))
                if step % PROBE_STRIDE == 0:
                    other_action = actor.act_one(other, np.random.default_rng((PROBE_SEED, episode, step)))
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
