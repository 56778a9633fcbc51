"""Records perturbed CartPole episodes into a log and reports each finished one on stdout.

Run as ``python helpers_kill_recorder.py PATH [PAUSE_AFTER]``: it records episodes with seeds 0, 1, 2, ...
until it is killed, printing ``finished <episode>`` after each. With ``PAUSE_AFTER = n`` it stops three steps
into episode ``n``, prints ``midway``, and sleeps there, so that a kill lands inside an open episode.
``test_record.py`` kills it with SIGKILL and reads the log back.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

import rlwrappers as rw

SPECS = ("obs_noise(std=0.05)", "action_noise(p=0.2)", "reward_noise(std=0.1, when=prob(p=0.5))")


def record(
    path: str, episodes: int | None = None, pause_after: int = -1, report: Callable[[str], None] = print
) -> None:
    """Records ``episodes`` episodes (forever if None) with seeds 0, 1, ... and closes the log."""
    env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), *SPECS), path)
    rng = np.random.default_rng(0)
    episode = 0
    while episodes is None or episode < episodes:
        env.reset(seed=episode)
        done, t = False, 0
        while not done:
            _, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
            done, t = terminated or truncated, t + 1
            if episode == pause_after and t == 3:
                report("midway")
                time.sleep(600)
        report(f"finished {episode}")
        episode += 1
    env.close()


if __name__ == "__main__":
    pause = int(sys.argv[2]) if len(sys.argv) > 2 else -1
    record(sys.argv[1], pause_after=pause, report=lambda line: print(line, flush=True))
