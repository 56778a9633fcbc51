"""Evaluation runner overhead over a bare loop of ``model.predict`` + ``env.step`` (limit 1.10).

Both arms run the same SB3 PPO agent (untrained, so episodes vary in length but are the same in both arms)
on CartPole-v1 for the same seeded episodes. The runner's arm is a whole ``rw.evaluate`` call with no shift
(one run): env construction, the Recorder log, the index, and reading the result back are all inside the
timed call.

A third arm, the same bare loop acting through the agent adapter, shows what the log and the runner cost.

Run: python benchmarks/bench_evaluation.py
"""

from __future__ import annotations

import sys
import tempfile

import gymnasium as gym
import torch
from _timing import report
from stable_baselines3 import PPO

import rlwrappers as rw
from rlwrappers.agents import SB3Agent
from rlwrappers.studies import Execution
from rlwrappers.studies.design import episode_seed

EPISODES = 40


def main() -> bool:
    torch.set_num_threads(1)
    model = PPO("MlpPolicy", "CartPole-v1", seed=0, device="cpu", policy_kwargs={"net_arch": [64, 64]})
    model.learn(2_000)  # a little learning: episodes of a few dozen to a few hundred steps
    env = gym.make("CartPole-v1")
    tmp = tempfile.mkdtemp()
    calls = iter(range(10**6))

    def bare() -> int:
        steps = 0
        for episode in range(EPISODES):
            obs, _ = env.reset(seed=episode_seed(0, episode))
            done = False
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, _, terminated, truncated, _ = env.step(action)
                done = terminated or truncated
                steps += 1
        return steps

    agent = SB3Agent(model)

    def adapter() -> int:
        steps = 0
        for episode in range(EPISODES):
            obs, _ = env.reset(seed=episode_seed(0, episode))
            done = False
            while not done:
                obs, _, terminated, truncated, _ = env.step(agent.act(obs[None])[0])
                done = terminated or truncated
                steps += 1
        return steps

    def runner() -> int:
        result = rw.evaluate(
            model,
            "CartPole-v1",
            [],
            episodes=EPISODES,
            seeds=[0],
            out=f"{tmp}/{next(calls)}",
            execution=Execution(workers=1, progress=False),
        )
        return int(result.episodes()["length"].sum())

    assert bare() == runner(), "both arms must run the same episodes"
    return report(
        f"Evaluation overhead, PPO on CartPole-v1, {EPISODES} episodes per call",
        {
            "bare predict + step loop": bare,
            "bare SB3Agent.act + step loop": adapter,
            "rw.evaluate (one run, logged)": runner,
        },
        {"rw.evaluate (one run, logged)": 1.10},
        rounds=9,
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
