"""Drawn parameters against constants: the same obs_noise layer, per CartPole-v1 step.

A parameter drawn from a distribution once per episode costs at most 1.1x the same step with a constant, and
one drawn anew every step at most 1.3x (the same wrapper stack in every arm).

Run: python benchmarks/bench_distributions.py
"""

from __future__ import annotations

import sys

import gymnasium as gym
from _timing import cycle, report

import rlwrappers as rw

STEPS = 2000


def main() -> bool:
    constant = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)", "reward_noise(std=0.1)")
    episode = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=uniform(0.05, 0.15))", "reward_noise(std=0.1)")
    step = rw.wrap(
        gym.make("CartPole-v1"), "obs_noise(std=uniform(0.05, 0.15), resample='step')", "reward_noise(std=0.1)"
    )
    return report(
        "obs_noise with a constant std and with one drawn per episode or per step, per CartPole-v1 step",
        {
            "constant std": lambda: cycle(constant, STEPS, actions=2),
            "std drawn per episode": lambda: cycle(episode, STEPS, actions=2),
            "std drawn every step": lambda: cycle(step, STEPS, actions=2),
        },
        {"std drawn per episode": 1.1, "std drawn every step": 1.3},
        rounds=31,
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
