"""Gaussian observation noise on a 210x160x3 uint8 frame, against one ALE Pong-v5 step (limit 1.0).

Also prints the naive float64 and float32 numpy versions for comparison.

Run: python benchmarks/bench_observation_noise.py
"""

from __future__ import annotations

import sys

import ale_py
import gymnasium as gym
import numpy as np
from _timing import report

from rlwrappers.functional import noise

gym.register_envs(ale_py)

STD = 8.0  # grey levels
CALLS = 200


def main() -> bool:
    pong = gym.make("ALE/Pong-v5")
    frame, _ = pong.reset(seed=0)
    ale = pong.unwrapped.ale
    start = ale.cloneState(include_rng=True)
    rng = np.random.default_rng(0)

    def pong_steps() -> int:
        ale.restoreState(start)  # every round replays the same stretch of game, so rounds compare like with like
        for i in range(CALLS):
            pong.step(i % 6)
        return CALLS

    def naive64() -> int:
        for _ in range(CALLS):
            np.clip(frame + rng.normal(0.0, STD, frame.shape), 0, 255).astype(np.uint8)
        return CALLS

    def naive32() -> int:
        for _ in range(CALLS):
            noise = rng.standard_normal(frame.shape, dtype=np.float32) * np.float32(STD)
            np.clip(frame + noise, 0, 255).astype(np.uint8)
        return CALLS

    table_noise = noise.TableNoise(STD, "gaussian")  # what ObservationNoise keeps for uint8 frames

    def table() -> int:
        for _ in range(CALLS):
            table_noise.add(frame, rng, 0, 255)
        return CALLS

    return report(
        "Gaussian noise on a 210x160x3 uint8 frame, per call, against one Pong-v5 step",
        {
            "Pong-v5 step": pong_steps,
            "numpy float64 noise": naive64,
            "numpy float32 noise": naive32,
            "rlwrappers uint8 table noise": table,
        },
        {"rlwrappers uint8 table noise": 1.0},
        rounds=11,
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
