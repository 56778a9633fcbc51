"""Three perturbations whose schedules are inactive, in one rw.wrap layer, over a bare CartPole-v1 step.

Limit: 1.10. Three plain Gymnasium wrapper layers are printed for comparison.

Run: python benchmarks/bench_inactive.py
"""

from __future__ import annotations

import sys

import gymnasium as gym
from _timing import cycle, report

import rlwrappers as rw

STEPS = 2000
# Schedules that stay off for the whole benchmark (tens of thousands of short episodes), of three kinds.
SPECS = (
    "obs_noise(std=0.1, when=starting(episode=1000000000))",
    "action_noise(p=0.1, when=window(start=1000000000, stop=2000000000, unit='total_step'))",
    "reward_noise(std=0.1, when=never)",
)


class Plain(gym.Wrapper):
    """A Gymnasium wrapper layer that does nothing."""


def run(env: gym.Env) -> int:
    return cycle(env, STEPS, actions=2)


def main() -> bool:
    bare = gym.make("CartPole-v1")
    plain = Plain(Plain(Plain(gym.make("CartPole-v1"))))
    wrapped = rw.wrap(gym.make("CartPole-v1"), *SPECS)
    ok = report(
        "Three inactive perturbations in one rw.wrap layer, per CartPole-v1 step",
        {
            "CartPole-v1": lambda: run(bare),
            "three plain Gymnasium layers": lambda: run(plain),
            "rw.wrap, three inactive": lambda: run(wrapped),
        },
        {"rw.wrap, three inactive": 1.10},
    )
    if any(wrapped.active().values()):
        raise RuntimeError("a perturbation switched on during the benchmark: its schedules must stay off")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
