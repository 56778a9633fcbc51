"""Loading 1,000,000 logged steps and computing P, MAD, IQR and LCB over a grid of alpha (limit 1.5x).

The baseline is a bare ``pandas.read_parquet`` of the same files (every run's ``steps.parquet`` and
``episodes.parquet``). The measured arm reads every run with ``rw.read_log`` and computes the reproducibility
table (mean, median, MAD, IQR, std and LCB at 31 values of alpha) per shift; bootstrap intervals are left out.
A third arm times ``Evaluation.summary``, which reads only the episode tables.

The logs come from ``rw.evaluate`` with a balancing controller on CartPole-v1: 4 shifts plus the baseline,
8 seeds, 50 episodes of 500 steps per run (1,000,000 steps). Writing them takes a minute.

Run: python benchmarks/bench_log_metrics.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
from _timing import report

import rlwrappers as rw
from rlwrappers.agents import CallableAgent
from rlwrappers.metrics import reproducibility_table
from rlwrappers.studies import Execution

ALPHAS = list(np.linspace(0.0, 3.0, 31))
SHIFTS = ["obs_noise(std=0.01)", "reward_noise(std=1.0)", "init_noise(std=0.01)", "action_noise(p=0.01)"]


def balance(obs: np.ndarray) -> int:
    return int(obs[2] + 0.5 * obs[3] > 0)


def main() -> bool:
    env = gym.make("CartPole-v1")
    agent = CallableAgent(balance, env.observation_space, env.action_space)
    out = Path(tempfile.mkdtemp()) / "sweep"
    evaluation = rw.evaluate(
        agent, "CartPole-v1", SHIFTS, episodes=50, seeds=8, out=out, execution=Execution(workers=2, progress=False)
    )
    runs = [out / p for p in evaluation.index["path"]]
    steps = sum(len(pd.read_parquet(r / "steps.parquet", columns=["step"])) for r in runs)
    print(f"{len(runs)} runs, {steps:,} steps logged")

    def bare() -> int:
        for r in runs:
            pd.read_parquet(r / "steps.parquet")
            pd.read_parquet(r / "episodes.parquet")
        return 1

    def metrics() -> int:
        returns: dict[str, list[np.ndarray]] = {}
        for r in runs:
            log = rw.read_log(r)
            returns.setdefault(log.meta["metadata"]["shift"], []).append(log.episodes["return"].to_numpy(float))
        reproducibility_table({k: np.concatenate(v) for k, v in returns.items()}, ALPHAS)
        return 1

    def summary() -> int:
        rw.open_evaluation(out).summary(ALPHAS)
        return 1

    return report(
        "Loading 1M logged steps + P, MAD, IQR, LCB over 31 alphas",
        {
            "bare pandas.read_parquet (steps + episodes)": bare,
            "rw.read_log + metrics": metrics,
            "Evaluation.summary": summary,
        },
        {"rw.read_log + metrics": 1.5},
        rounds=7,
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
