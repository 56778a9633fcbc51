"""Parallel speed-up of a 16-run sweep: 2 local worker processes against 1 (at least 1.7x).

The sweep: the zoo agent ppo-CartPole-v1 under 7 shifts plus the baseline, 2 seeds, 4 episodes per run
(16 runs of about 2,000 steps each). Each arm is a whole ``rw.evaluate`` call into a fresh directory.

Run: python benchmarks/bench_parallel.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

import torch

import rlwrappers as rw
from rlwrappers.studies import Execution
from rlwrappers.zoo import UNCERTAINTIES

SHIFTS = [*UNCERTAINTIES["CartPole-v1"].values(), "sticky_action(p=0.25)"]
ROUNDS = 3


def sweep(workers: int, out: str) -> float:
    start = time.perf_counter()
    result = rw.evaluate(
        "ppo-CartPole-v1",
        "CartPole-v1",
        SHIFTS,
        episodes=4,
        seeds=2,
        out=out,
        execution=Execution(workers=workers, progress=False),
    )
    took = time.perf_counter() - start
    assert len(result.index) == 16 and result.complete
    return took


def main() -> bool:
    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp()
    sweep(1, f"{tmp}/warm")
    one, two = [], []
    for r in range(ROUNDS):
        one.append(sweep(1, f"{tmp}/one{r}"))
        two.append(sweep(2, f"{tmp}/two{r}"))
    speedup = statistics.median(a / b for a, b in zip(one, two, strict=True))
    print("Parallel speed-up, 16-run sweep (ppo-CartPole-v1, 8 arms x 2 seeds x 4 episodes)")
    print(f"  1 worker   {statistics.median(one):6.2f} s")
    verdict = "ok" if speedup >= 1.7 else "NOT MET"
    print(f"  2 workers  {statistics.median(two):6.2f} s   speed-up {speedup:4.2f}x  (at least 1.70: {verdict})")
    return speedup >= 1.7


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
