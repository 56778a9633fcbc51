"""Generators that perturbations own, derived from the seed given to ``reset``.

A perturbation never draws from the env's own ``np_random``, nor from numpy's or torch's global state. Its
generators are derived from three things only: the seed passed to the latest ``reset(seed=...)``, the number
of episodes since that reset, and the perturbation's label. So a perturbed run and its unperturbed
counterfactual see the same env randomness, and the same seeds give the same perturbations bit for bit.

If ``reset`` was never given a seed, the wrapper draws fresh entropy from the operating system once, as
Gymnasium envs do, and reports it in the log so that the run can still be repeated.
"""

from __future__ import annotations

import zlib
from typing import Final

import numpy as np

__all__ = ["EFFECT", "PARAMETER", "SCHEDULE", "EpisodeClock", "fresh_entropy", "generator", "label_key"]

#: Stream for a perturbation's schedule decisions.
SCHEDULE: Final = 0
#: Stream for a perturbation's effect (its noise, its random actions).
EFFECT: Final = 1
#: Streams for the parameters a perturbation draws from distributions, one per parameter.
PARAMETER: Final = 2


def fresh_entropy() -> int:
    """64 bits of entropy from the operating system, as a non-negative int (it fits a log's seed column)."""
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])


def label_key(label: str) -> int:
    """A stable 32-bit key for a perturbation label (the same in every process)."""
    return zlib.crc32(label.encode("utf-8"))


def generator(entropy: int, episode_since_seed: int, label: str, stream: int, *key: int) -> np.random.Generator:
    """The generator of one stream of one perturbation for one episode; ``key`` tells sub-streams apart."""
    sequence = np.random.SeedSequence(entropy, spawn_key=(label_key(label), episode_since_seed, stream, *key))
    return np.random.Generator(np.random.PCG64(sequence))


class EpisodeClock:
    """Where a wrapper is in its life: the episode, the time in it, and the entropy its generators derive from.

    ``reset`` starts an episode at time 0 and :meth:`tick` moves time on by one step. Every layer that
    schedules or draws (the perturbation layer, the agent switch, each sub-env of a vector attack) keeps one,
    so a schedule reads the same times in all of them and paired runs stay paired.

    Example:
        >>> clock = EpisodeClock()
        >>> clock.reset(seed=7)
        >>> clock.tick(), clock.tick()
        (1, 2)
        >>> clock.reset(seed=None)
        >>> clock.episode, clock.t, clock.total_step, clock.since_seed, clock.entropy
        (1, 0, 2, 1, 7)
    """

    __slots__ = ("entropy", "episode", "since_seed", "t", "total_step")

    def __init__(self) -> None:
        #: The seed of the latest ``reset(seed=...)``, or OS entropy drawn at the first reset without one.
        self.entropy: int | None = None
        #: Episodes since that seed (0 for the seeded episode itself).
        self.since_seed = -1
        #: Index of the current episode over the clock's life (-1 before the first reset).
        self.episode = -1
        #: Steps taken in the episodes before the current one.
        self.total_step = 0
        #: Steps taken in the current episode: 0 at reset.
        self.t = 0

    def reset(self, seed: int | None) -> None:
        """Starts the next episode at time 0; a seed restarts the generators' derivation from it."""
        if seed is not None:
            self.entropy, self.since_seed = int(seed), 0
        elif self.entropy is None:
            self.entropy, self.since_seed = fresh_entropy(), 0
        else:
            self.since_seed += 1
        if self.episode >= 0:
            self.total_step += self.t
        self.episode += 1
        self.t = 0

    def tick(self) -> int:
        """Moves time on by one step, and returns the new time."""
        self.t += 1
        return self.t

    def generator(self, label: str, stream: int, *key: int) -> np.random.Generator:
        """The generator of one stream of the perturbation ``label`` for the current episode."""
        assert self.entropy is not None, "reset() sets the entropy"
        return generator(self.entropy, self.since_seed, label, stream, *key)
