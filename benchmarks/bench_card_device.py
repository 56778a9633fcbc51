"""The Breakout robustness card with its agent on a chosen device: agent steps per second, and network vs env time.

1. The whole card (every family of the ladder, ``--seeds`` x ``--games`` per arm, fast mode) with the agent's
   network on ``--device``, ``--workers`` processes started with spawn (a forked process cannot use a GPU its
   parent has touched): agent steps per second.
2. A share of it in this process alone (``--share-families``, one worker): the time spent in the acting
   network passes (one per batch of runs) against everything else (the envs, their wrappers, attacks, logs),
   for ``--device`` and for the CPU, in the same run.

Run: python benchmarks/bench_card_device.py --agent PPO_ZIP [--device cuda] [--workers 14]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import rlwrappers as rw
from rlwrappers.studies import batched

ENV = "BreakoutNoFrameskip-v4"


def timed_actions(spent: list[float]) -> Any:
    """``batched._actions``, adding the seconds of each call to ``spent``."""
    original = batched._actions

    def actions(requests: Any, exact: bool) -> Any:
        started = time.perf_counter()
        out = original(requests, exact)
        spent[0] += time.perf_counter() - started
        return out

    return actions


def share(path: str, device: str, families: list[str], batch: int) -> None:
    """Plays part of the card in this process and splits its time between acting passes and the rest."""
    agent = rw.load_agent(path, trusted=True, device=device)
    spent = [0.0]
    original, batched._actions = batched._actions, timed_actions(spent)
    try:
        started = time.perf_counter()
        record = rw.robustness_card(
            agent,
            ENV,
            out=tempfile.mkdtemp(),
            families=families,
            seeds=2,
            episodes=1,
            batch=batch,
            workers=1,
            progress=False,
            reps=200,
        )
        took = time.perf_counter() - started
    finally:
        batched._actions = original
    steps = record["timings"]["agent_steps"]
    print(
        f"  {device:<6} {steps:>8,} agent steps in {took:6.1f} s: {steps / took:7.0f} steps/s;"
        f" acting passes {spent[0]:6.1f} s ({spent[0] / took:5.1%}), the rest {took - spent[0]:6.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True, help="an SB3 PPO Breakout zip")
    parser.add_argument("--device", default="cuda", help="where the network runs (default: cuda)")
    parser.add_argument("--workers", type=int, default=4, help="worker processes of the whole card (default: 4)")
    parser.add_argument("--batch", type=int, default=32, help="runs stepped together per worker (default: 32)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per arm (default: 5)")
    parser.add_argument("--games", type=int, default=4, help="whole games per seed and arm (default: 4)")
    parser.add_argument("--share-families", default="obs_noise,attack", help="families of part 2")
    parser.add_argument("--skip-card", action="store_true", help="skip part 1")
    args = parser.parse_args()
    import torch

    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    print(f"device {args.device} ({name}); torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    if not args.skip_card:
        agent = rw.load_agent(args.agent, trusted=True, device=args.device)
        started = time.perf_counter()
        record = rw.robustness_card(
            agent,
            ENV,
            out=tempfile.mkdtemp(),
            seeds=args.seeds,
            episodes=args.games,
            batch=args.batch,
            workers=args.workers,
            start_method="spawn",
            progress=False,
        )
        took = time.perf_counter() - started
        steps = record["timings"]["agent_steps"]
        print(
            f"1. whole card, {args.workers} workers x batch {args.batch}: {steps:,} agent steps in {took:.1f} s"
            f" (runs {record['timings']['seconds']:.1f} s): {steps / took:.0f} agent steps/s;"
            f" overall {record['overall']['stars']}/5, mean AUSC {record['overall']['mean_ausc']:.3f}"
        )
    families = args.share_families.split(",")
    print(f"2. {', '.join(families)} at 2 seeds x 1 game per arm, one process, batch {args.batch}:")
    for device in dict.fromkeys([args.device, "cpu"]):
        share(args.agent, device, families, args.batch)


if __name__ == "__main__":
    main()
