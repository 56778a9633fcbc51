"""A causal sweep of 5 shift levels from the halfway point against one bare run of the same episodes (limit 4x).

The bare arm is ``rw.evaluate`` with no shift: one run of N episodes (the counterfactual alone). The causal arm
adds five shift levels introduced at episode N // 2, with the pre-shift episodes shared: each
shifted run plays from episode T - 1 (which checks the fixed-seed assumption) to the end. Six independent runs
would cost 6x; the third arm plays every pre-shift episode of every run to show it.

The levels are reward noise, which leaves the agent's actions and so every episode's length unchanged: the
ratio counts episodes played, not episodes cut short by a harmful shift. Both arms include everything a user
waits for: env construction, the logs, the index, the fixed-seed check.

Two workloads, 40 episodes each: the image agent ppo-Catch-v0 on rlwrappers/Catch-v0 (a CNN forward pass per
step, as for Atari agents), and ppo-CartPole-v1, a small MLP on the cheapest env, where the shift's own
per-step work and its log (about 3 us on a step of 60-70 us) weigh most. The episodes alone cost
1 + 5 x 21/40 = 3.63 bare runs. The machine's noise moves single rounds by 10% and more: the ratios are medians
of 5 rounds.

Run: python benchmarks/bench_causal.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import torch
from _timing import report

import rlwrappers as rw
from rlwrappers.studies import Execution, Timing

LEVELS = [f"reward_noise(std={s})" for s in (0.1, 0.2, 0.3, 0.4, 0.5)]
#: (agent, env, episodes per run)
WORKLOADS = (("ppo-Catch-v0", "rlwrappers/Catch-v0", 40), ("ppo-CartPole-v1", "CartPole-v1", 40))


def _compare(agent: str, env_id: str, episodes: int, root: Path, runs: Iterator[int]) -> bool:
    def evaluate(shifts: list[str], **options: object) -> int:
        out = root / str(next(runs))
        rw.evaluate(
            agent,
            env_id,
            shifts,
            episodes=episodes,
            seeds=1,
            out=out,
            **options,
            execution=Execution(workers=1, progress=False),
        )
        shutil.rmtree(out)
        return 1

    half = episodes // 2
    return report(
        f"{agent} on {env_id}: {len(LEVELS)} shift levels from episode {half} of {episodes}, against one bare run",
        {
            "one bare run": lambda: evaluate([]),
            "causal sweep, pre-shift shared": lambda: evaluate(LEVELS, timing=Timing(shift_at=half)),
            "causal sweep, every episode played": lambda: evaluate(
                LEVELS, timing=Timing(shift_at=half, share_pre_shift=False)
            ),
        },
        limits={"causal sweep, pre-shift shared": 4.0},
        rounds=5,
    )


def main() -> bool:
    torch.set_num_threads(1)
    root = Path(tempfile.mkdtemp())
    runs = iter(range(10**6))
    ok = True
    try:
        for agent, env_id, episodes in WORKLOADS:
            ok &= _compare(agent, env_id, episodes, root, runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
