"""The non-finite checks of an active layer: the same layer with and without them, per CartPole-v1 step.

The layer holds obs_noise, dynamics_shift and reward_noise, all active: each step checks the env's
observation and reward (the shift changed the env), the noisy observation and the noisy reward. Limit: 1.08
of the same layer built with ``allow_nonfinite=True``, which checks nothing.

Run: python benchmarks/bench_finite_check.py
"""

from __future__ import annotations

import sys

import gymnasium as gym
from _timing import cycle, report

import rlwrappers as rw

STEPS = 2000
SPECS = ("obs_noise(std=0.1)", "dynamics_shift(scales={'length': 1.1})", "reward_noise(std=0.1)")


def run(env: gym.Env) -> int:
    return cycle(env, STEPS, actions=2)


def main() -> bool:
    unchecked = rw.wrap(gym.make("CartPole-v1"), *SPECS, allow_nonfinite=True)
    checked = rw.wrap(gym.make("CartPole-v1"), *SPECS)
    bare = gym.make("CartPole-v1")
    return report(
        "Three active perturbations in one rw.wrap layer, per CartPole-v1 step",
        {
            "rw.wrap, allow_nonfinite=True": lambda: run(unchecked),
            "rw.wrap, checked": lambda: run(checked),
            "CartPole-v1": lambda: run(bare),
        },
        {"rw.wrap, checked": 1.08},
        rounds=41,
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
