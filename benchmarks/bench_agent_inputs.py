"""What an agent's training pipeline costs per step: VecNormalize statistics and a frame stack, on CartPole-v1.

Times, per agent step, in microseconds:

- **per run**: one observation at a time, as an evaluation's per-run runner asks (``act_one``), for a PPO agent
  bare and with ``VecNormalize`` statistics; and one env step, bare and under a 4-frame stack;
- **batched fast mode**: one network pass for 16 observations (``act`` on a batch), per observation, bare and
  with the statistics (the stack is env-side, so it costs what it costs per run).

The statistics are a real ``VecNormalize`` file saved by SB3. Ratios are to the bare step of the same kind.

Run: python benchmarks/bench_agent_inputs.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from _timing import cycle, report
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from rlwrappers.agents import SB3Agent
from rlwrappers.agents.training import read_normalization
from rlwrappers.wrappers.frames import StackFrames

STEPS = 2000
BATCH = 16


def statistics(folder: Path) -> Path:
    """A VecNormalize file of CartPole's observations, as training leaves it."""
    venv = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    venv.seed(0)
    venv.reset()
    for t in range(500):
        venv.step(np.array([t % 2]))
    path = folder / "vecnormalize.pkl"
    venv.save(str(path))
    return path


def main() -> bool:
    torch.set_num_threads(1)
    model = PPO("MlpPolicy", "CartPole-v1", seed=0, device="cpu")
    with tempfile.TemporaryDirectory() as folder:
        normalization = read_normalization(statistics(Path(folder)))
    bare, normalized = SB3Agent(model), SB3Agent(model, normalization=normalization)
    env = gym.make("CartPole-v1")
    observations = [env.reset(seed=s)[0] for s in range(STEPS)]
    batch = np.stack(observations[:BATCH])

    def one_at_a_time(agent: SB3Agent) -> int:
        for obs in observations:
            agent.act_one(obs)
        return len(observations)

    def batched(agent: SB3Agent) -> int:
        for _ in range(STEPS // BATCH):
            agent.act(batch)
        return (STEPS // BATCH) * BATCH

    ok = report(
        "Agent step, one observation at a time (per-run runner):",
        {"bare": lambda: one_at_a_time(bare), "VecNormalize statistics": lambda: one_at_a_time(normalized)},
        {},
    )
    ok &= report(
        f"Agent step, batched fast mode ({BATCH} observations per pass), per observation:",
        {"bare": lambda: batched(bare), "VecNormalize statistics": lambda: batched(normalized)},
        {},
    )
    plain, stacked = gym.make("CartPole-v1"), StackFrames(gym.make("CartPole-v1"), 4)
    ok &= report(
        "Env step:",
        {"bare": lambda: cycle(plain, STEPS, actions=2), "4-frame stack": lambda: cycle(stacked, STEPS, actions=2)},
        {},
    )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
