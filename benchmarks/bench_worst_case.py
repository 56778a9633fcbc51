"""The worst-case search on its runner: a 10 x 10 grid over CartPole:2, 10 episodes per cell.

Two workers against one, one thread each: at least 1.7x. Then the refinement, given half the grid's episode
budget, must reach the grid's worst value or lower; the script prints what it found.

Run: python benchmarks/bench_worst_case.py
"""

from __future__ import annotations

import sys
import tempfile
import time

import torch

from rlwrappers.studies import Execution
from rlwrappers.studies.worst_case import WorstCase, worst_case

AGENT, SET = "ppo-CartPole-v1", "CartPole:2"
POINTS, EPISODES, SEEDS = 10, 5, 2  # 100 cells x 10 episodes


def search(workers: int, budget: int) -> tuple[float, WorstCase]:
    started = time.perf_counter()
    found = worst_case(
        AGENT,
        SET,
        out=tempfile.mkdtemp(),
        points=POINTS,
        episodes=EPISODES,
        seeds=SEEDS,
        budget=budget,
        holdout=10,
        execution=Execution(workers=workers, progress=False),
    )
    return time.perf_counter() - started, found


def main() -> bool:
    torch.set_num_threads(1)  # one thread in the process that runs the single worker, as in each of the two
    worst_case(AGENT, SET, out=tempfile.mkdtemp(), points=2, episodes=1, seeds=1, budget=0, holdout=5)  # warm-up
    one, _ = search(1, budget=0)
    two, _ = search(2, budget=0)
    ratio = one / two
    print(f"Grid of 100 cells x 10 episodes over {SET}: 1 worker {one:.1f} s, 2 workers {two:.1f} s")
    print(f"  speed-up {ratio:.2f}x  (limit 1.70: {'ok' if ratio >= 1.7 else 'NOT REACHED'})")
    budget = POINTS**2 * EPISODES * SEEDS // 2
    _, found = search(2, budget=budget)
    spent = int((found.points["phase"] != "grid").sum()) * EPISODES * SEEDS
    low, high = found.ci
    print(
        f"Refinement with a budget of {budget} episodes spent {spent}: search minimum {found.search_min:.1f}"
        f" against the grid's {found.grid_min:.1f}, at {dict(found.argmin)}; held-out worst case"
        f" {found.worst:.1f} [{low:.1f}, {high:.1f}]"
    )
    return ratio >= 1.7 and found.search_min <= found.grid_min


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
