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

__all__ = ["EFFECT", "SCHEDULE", "fresh_entropy", "generator", "label_key"]

#: Stream for a perturbation's schedule decisions.
SCHEDULE: Final = 0
#: Stream for a perturbation's effect (its noise, its random actions).
EFFECT: Final = 1


def fresh_entropy() -> int:
    """64 bits of entropy from the operating system, as a non-negative int (it fits a log's seed column)."""
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])


def label_key(label: str) -> int:
    """A stable 32-bit key for a perturbation label (the same in every process)."""
    return zlib.crc32(label.encode("utf-8"))


def generator(entropy: int, episode_since_seed: int, label: str, stream: int) -> np.random.Generator:
    """The generator of one stream of one perturbation for one episode."""
    sequence = np.random.SeedSequence(entropy, spawn_key=(label_key(label), episode_since_seed, stream))
    return np.random.Generator(np.random.PCG64(sequence))
