"""How long a provisional ladder takes to calibrate on first use (limits: 30 s classic control, 3 min MuJoCo, Atari).

Each env is calibrated into a fresh cache folder (``rlwrappers.ladders.provisional_ladder``), and timed beside its
baseline in the same run: the 10,000 uniform-random steps the calibration plays, alone. The ratio is what the
calibration adds to playing them (measuring the spreads, reading the state, writing the file); reading the
cached ladder afterwards is timed too. Envs whose package is missing are skipped.

Run: python benchmarks/bench_provisional_ladders.py
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time

import gymnasium as gym

from rlwrappers import ladders
from rlwrappers.ladders.definition import CALIBRATION_STEPS
from rlwrappers.ladders.provisional import CACHE_VARIABLE

#: (env ID, the package it needs, the limit in seconds, the reference return where the env states none).
ENVS = (
    ("Acrobot-v1", None, 30.0, None),
    ("MountainCar-v0", None, 30.0, None),
    ("MountainCarContinuous-v0", None, 30.0, None),
    ("LunarLander-v3", "Box2D", 30.0, None),
    ("Swimmer-v5", "mujoco", 180.0, None),
    ("Ant-v5", "mujoco", 180.0, None),
    ("ALE/Pong-v5", "ale_py", 180.0, 21.0),  # Pong's highest score: ALE states no reward_threshold
)


def random_steps(env_id: str) -> float:
    """Seconds for the calibration's random steps alone: the baseline."""
    env = gym.make(env_id)
    env.action_space.seed(0)
    start = time.perf_counter()
    env.reset(seed=0)
    for _ in range(CALIBRATION_STEPS):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    took = time.perf_counter() - start
    env.close()
    return took


def main() -> bool:
    ok = True
    print(f"A provisional ladder on first use ({CALIBRATION_STEPS:,} random steps), against those steps alone")
    for env_id, package, limit, reference in ENVS:
        if package is not None and importlib.util.find_spec(package) is None:
            print(f"  {env_id:<26} skipped: {package} is not installed")
            continue
        if package == "ale_py":
            import ale_py

            gym.register_envs(ale_py)
        baseline = random_steps(env_id)
        with tempfile.TemporaryDirectory() as cache:
            os.environ[CACHE_VARIABLE] = cache
            start = time.perf_counter()
            ladders.provisional_ladder(env_id, reference_return=reference)
            took = time.perf_counter() - start
            start = time.perf_counter()
            ladders.provisional_ladder(env_id, reference_return=reference)
            cached = time.perf_counter() - start
        holds = took <= limit
        ok &= holds
        print(
            f"  {env_id:<26} {took:7.2f} s   random steps alone {baseline:6.2f} s   ratio {took / baseline:5.2f}"
            f"   cached {cached * 1e3:6.1f} ms   (limit {limit:.0f} s: {'ok' if holds else 'EXCEEDED'})"
        )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
