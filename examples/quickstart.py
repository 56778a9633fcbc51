"""Quickstart: perturb CartPole on schedules, record both runs, and compare with a same-seed clean run.

A fixed controller balances CartPole-v1 twice with the same seeds: once under three scheduled perturbations
(the treatment), once without any (the counterfactual). Both runs are recorded with ``rw.Recorder``, read back
with ``rw.read_log``, and summarised episode by episode.

    python examples/quickstart.py --episodes 5 --out runs/quickstart
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd

import rlwrappers as rw
from rlwrappers import schedule
from rlwrappers.logs import Log
from rlwrappers.spec import format_call


@dataclass
class Settings:
    env_id: str = "CartPole-v1"
    episodes: int = 5
    """episodes per run; episode i is reset with seed `seed + i` in both runs"""
    seed: int = 0
    out: str = "runs/quickstart"
    """the two logs go to OUT/perturbed and OUT/clean"""

    obs_noise_std: float = 0.1
    """Gaussian sensor noise, in the observation's own units (metres, radians, ...)"""
    obs_noise_from_episode: int = 2
    """episodes count from 0: the first two episodes see clean observations"""
    sticky_p: float = 0.25
    """inside a burst, each step repeats the previous action with this probability"""
    burst_p: float = 0.01
    """probability per step that a burst of sticky actions starts"""
    burst_duration: tuple[int, int] = (20, 50)
    """steps a burst lasts, drawn uniformly (both ends included)"""
    pole_scale: float = 2.0
    """the pole's length is multiplied by this factor ..."""
    shift_window: tuple[int, int] = (100, 300)
    """... for the steps start <= t < stop of every episode, then restored exactly"""


def perturbed_env(s: Settings) -> gym.Env[Any, Any]:
    """The treatment: the wrapper stack, innermost first."""
    env = gym.make(s.env_id)
    env = rw.DynamicsShift(
        env, scales={"length": s.pole_scale}, when=schedule.Window(start=s.shift_window[0], stop=s.shift_window[1])
    )
    env = rw.StickyAction(env, p=s.sticky_p, when=schedule.Bursts(p=s.burst_p, duration=s.burst_duration))
    env = rw.ObservationNoise(env, std=s.obs_noise_std, when=schedule.Starting(episode=s.obs_noise_from_episode))
    return env


def clean_env(s: Settings) -> gym.Env[Any, Any]:
    """The counterfactual: the same env, no perturbations."""
    return gym.make(s.env_id)


def controller(obs: np.ndarray) -> int:
    """Push the cart towards the side the pole is falling to (pole angle plus half its angular velocity)."""
    return int(obs[2] + 0.5 * obs[3] > 0)


def run(env: gym.Env[Any, Any], s: Settings, path: Path, name: str) -> None:
    """Runs the controller for `s.episodes` episodes under a Recorder (outermost, so it sees what the agent sees)."""
    env = rw.Recorder(env, path, overwrite=True, metadata={"run": name, "controller": "theta + 0.5 * theta_dot > 0"})
    for episode in range(s.episodes):
        obs, _ = env.reset(seed=s.seed + episode)
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(controller(obs))
            done = terminated or truncated
    env.close()


def summary(clean: Log, perturbed: Log) -> pd.DataFrame:
    """One row per episode: both returns, and how many steps each perturbation was active."""
    table = pd.DataFrame(
        {
            "episode": perturbed.episodes["episode"],
            "seed": perturbed.episodes["seed"],
            "clean return": clean.episodes["return"],
            "perturbed return": perturbed.episodes["return"],
        }
    )
    steps = perturbed.steps.groupby("episode")
    for p in perturbed.meta["perturbations"]:
        label = p["label"]
        table[f"{label} steps"] = steps[f"{label}.active"].sum().to_numpy()
        if p["name"] == "sticky_action":
            table["stuck steps"] = steps[f"{label}.stuck"].sum().to_numpy()
    return table


def main(s: Settings) -> None:
    out = Path(s.out)
    start = time.perf_counter()
    run(perturbed_env(s), s, out / "perturbed", "perturbed")
    run(clean_env(s), s, out / "clean", "clean")
    clean, perturbed = rw.read_log(out / "clean"), rw.read_log(out / "perturbed")

    print(f"{s.env_id}, fixed controller, {s.episodes} episodes, seeds {s.seed}..{s.seed + s.episodes - 1}")
    print("Perturbations (label: parameters, schedule), read back from the log's header:")
    for p in perturbed.meta["perturbations"]:
        print(f"  {p['label']}: {format_call(p['name'], p['params'])}, when={p['when']}")
    print()
    print(summary(clean, perturbed).to_string(index=False))
    print()
    means = clean.episodes["return"].mean(), perturbed.episodes["return"].mean()
    print(f"mean return: clean {means[0]:.1f}, perturbed {means[1]:.1f}")
    print(
        f"logs: {out / 'perturbed'}, {out / 'clean'} (read them with rw.read_log); {time.perf_counter() - start:.2f} s"
    )


def parse_args() -> Settings:
    defaults = Settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=defaults.episodes, help="episodes per run")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of the first episode")
    parser.add_argument("--out", default=defaults.out, help="directory for the two logs")
    args = parser.parse_args()
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, received {args.episodes}")
    return Settings(episodes=args.episodes, seed=args.seed, out=args.out)


if __name__ == "__main__":
    main(parse_args())
