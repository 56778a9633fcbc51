"""A causal sweep of 5 shift levels from the halfway point against one bare run of the same episodes (limit 4x).

The bare arm is ``rw.evaluate`` with no shift: one run of EPISODES episodes (the counterfactual alone). The
causal arm adds five shift levels introduced at episode EPISODES // 2, with the pre-shift episodes shared: each
shifted run plays from episode T - 1 (which checks the fixed-seed assumption) to the end. Six independent runs
would cost 6x; the third arm plays every pre-shift episode of every run to show it.

The levels are reward noise, which leaves the agent's actions and so every episode's length unchanged: the
ratio counts episodes played, not episodes cut short by a harmful shift. Both arms include everything a user
waits for: env construction, the logs, the index, the fixed-seed check.

Run: python benchmarks/bench_causal.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import torch
from _timing import report

import rlwrappers as rw

EPISODES = 40
LEVELS = [f"reward_noise(std={s})" for s in (0.1, 0.2, 0.3, 0.4, 0.5)]


def main() -> bool:
    torch.set_num_threads(1)
    root = Path(tempfile.mkdtemp())
    runs = iter(range(10**6))

    def evaluate(shifts: list[str], **options: object) -> int:
        out = root / str(next(runs))
        rw.evaluate("ppo-CartPole-v1", "CartPole-v1", shifts, episodes=EPISODES, seeds=1, out=out, workers=1,
                    progress=False, **options)  # fmt: skip
        shutil.rmtree(out)
        return 1

    try:
        return report(
            f"{len(LEVELS)} shift levels from episode {EPISODES // 2} of {EPISODES}, against one bare run",
            {
                "one bare run": lambda: evaluate([]),
                "causal sweep, pre-shift shared": lambda: evaluate(LEVELS, shift_at=EPISODES // 2),
                "causal sweep, every episode played": lambda: evaluate(
                    LEVELS, shift_at=EPISODES // 2, share_pre_shift=False
                ),
            },
            limits={"causal sweep, pre-shift shared": 4.0},
            rounds=3,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
