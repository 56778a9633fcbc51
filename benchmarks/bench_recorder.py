"""Recorder overhead per step, with 500-step episodes: CartPole-v1 (limit 1.25) and ALE Pong-v5 (limit 1.03).

Run: python benchmarks/bench_recorder.py
"""

from __future__ import annotations

import sys
import tempfile

import gymnasium as gym
import numpy as np
from _timing import cycle, report

import rlwrappers as rw


def balance(obs: np.ndarray) -> int:
    """A controller that keeps CartPole up for the whole 500-step episode."""
    return int(obs[2] + 0.5 * obs[3] > 0)


def cartpole_run(env: gym.Env, episodes: int = 2) -> int:
    steps = 0
    for ep in range(episodes):
        obs, _ = env.reset(seed=ep)
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(balance(obs))
            done = terminated or truncated
            steps += 1
    return steps


def pong_run(env: gym.Env, steps: int = 500) -> int:
    return cycle(env, steps, actions=6)


def main() -> bool:
    tmp = tempfile.mkdtemp()
    bare = gym.make("CartPole-v1")
    recorded = rw.Recorder(gym.make("CartPole-v1"), f"{tmp}/cartpole")
    assert cartpole_run(bare, 1) == 500, "the controller must reach 500 steps"
    ok = report(
        "Recorder overhead, CartPole-v1, 500-step episodes",
        {"CartPole-v1": lambda: cartpole_run(bare), "Recorder(CartPole-v1)": lambda: cartpole_run(recorded)},
        {"Recorder(CartPole-v1)": 1.25},
    )
    recorded.close()

    import ale_py

    gym.register_envs(ale_py)
    # 500-step episodes: Pong's own episodes are longer, so truncate them at 500 steps.
    pong = gym.make("ALE/Pong-v5", max_episode_steps=500)
    pong_recorded = rw.Recorder(gym.make("ALE/Pong-v5", max_episode_steps=500), f"{tmp}/pong")
    ok &= report(
        "Recorder overhead, ALE Pong-v5, 500-step episodes",
        {"Pong-v5": lambda: pong_run(pong), "Recorder(Pong-v5)": lambda: pong_run(pong_recorded)},
        {"Recorder(Pong-v5)": 1.03},
    )
    pong_recorded.close()
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
