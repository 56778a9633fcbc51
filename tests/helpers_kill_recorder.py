"""Records perturbed CartPole episodes into a log and reports each finished one on stdout.

Run as ``python helpers_kill_recorder.py PATH [PAUSE_AFTER]``: it records episodes with seeds 0, 1, 2, ...
until it is killed, printing ``finished <episode>`` after each. With ``PAUSE_AFTER = n`` it stops three steps
into episode ``n``, prints ``midway``, and sleeps there, so that a kill lands inside an open episode.
``test_record.py`` kills it with SIGKILL and reads the log back.

``python helpers_kill_recorder.py PATH --episodes N`` records N episodes and closes the log;
``... PATH --episodes N --kill-in-close K`` sends itself SIGKILL just before the K-th file replacement or
removal that closing the log makes, and prints ``closed after M operations`` when K is past the last of them.
"""

from __future__ import annotations

import os
import pathlib
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import rlwrappers as rw

SPECS = ("obs_noise(std=0.05)", "action_noise(p=0.2)", "reward_noise(std=0.1, when=prob(p=0.5))")


def record(
    path: str,
    episodes: int | None = None,
    pause_after: int = -1,
    report: Callable[[str], None] = print,
    before_close: Callable[[], None] = lambda: None,
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
    before_close()
    env.close()


class KillInClose:
    """Counts the file replacements and removals made from now on, and sends SIGKILL before the ``k``-th."""

    def __init__(self, k: int):
        self.k, self.count = k, 0

    def __call__(self) -> None:
        for name in ("replace", "unlink"):
            setattr(pathlib.Path, name, self._counted(getattr(pathlib.Path, name)))

    def _counted(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(path: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.count == self.k:
                os.kill(os.getpid(), signal.SIGKILL)
            return method(path, *args, **kwargs)

        return counted


if __name__ == "__main__":
    out = lambda line: print(line, flush=True)  # noqa: E731
    if "--episodes" in sys.argv:
        count = int(sys.argv[sys.argv.index("--episodes") + 1])
        kill = KillInClose(int(sys.argv[sys.argv.index("--kill-in-close") + 1]) if "--kill-in-close" in sys.argv else 0)
        record(sys.argv[1], episodes=count, report=out, before_close=kill)
        out(f"closed after {kill.count} operations")
    else:
        record(sys.argv[1], pause_after=int(sys.argv[2]) if len(sys.argv) > 2 else -1, report=out)
