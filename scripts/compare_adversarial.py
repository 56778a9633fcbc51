"""Vanilla against adversarially trained: robustness to each natural corruption over seed 004's ranges.

Seed 004 (Korkmaz 2023, Section 4, Figures 2-3) finds that an adversarially trained agent is *less* robust
than a vanilla one to most natural corruptions. This script asks the same of the zoo's two Catch agents,
``ppo-Catch-v0`` (vanilla) and ``ppo-Catch-v0-fgsm`` (FGSM on its observations during training; see
``scripts/train_zoo.py``): it sweeps each of the six corruptions over its default range
(:data:`rlwrappers.sweeps.SWEEPS`: contrast, brightness, blur, rotation, shift, perspective, JPEG) and on
to stronger values until the agents fail, and FGSM (eps 0.02 to 0.3),
both agents in one evaluation with same-seed clean runs, and writes the report (one figure per sweep, both
agents on it) and a table of the mildest value at which each agent's impact reaches 0.5.

    python scripts/compare_adversarial.py                     # about 10 minutes on two cores
    python scripts/compare_adversarial.py --seeds 1 --episodes 2 --only jpeg rotation --out /tmp/quick

Catch's frames are 84x84 grayscale, so the corruptions act on the agent's input; its minimum score, -10 (every
ball missed), makes impact 1 mean total failure.
"""

from __future__ import annotations

import argparse
import math
import time

import rlwrappers as rw
from rlwrappers.report.evaluation import write_report
from rlwrappers.report.tables import format_table
from rlwrappers.studies import Execution
from rlwrappers.studies import sweep as sweep_study

AGENTS = {"vanilla": "ppo-Catch-v0", "adversarial": "ppo-Catch-v0-fgsm"}
ENV_ID = "rlwrappers/Catch-v0"
SWEPT = ("contrast", "brightness", "blur", "rotation", "shift", "perspective", "jpeg", "fgsm")
#: Each sweep's default range (seed 004's), then stronger values until these agents fail: Catch's blocks are
#: 8 x 16 pixels, far coarser than Atari sprites. FGSM starts where the vanilla agent starts to flip.
VALUES = {
    "contrast": (*sweep_study.SWEEPS["contrast"].values, 3.0, 4.0),
    "brightness": (*sweep_study.SWEEPS["brightness"].values, 120.0, 160.0, 200.0),
    "blur": (*sweep_study.SWEEPS["blur"].values, 15, 21),
    "rotation": (*sweep_study.SWEEPS["rotation"].values, 10.0, 20.0, 30.0),
    "shift": (*sweep_study.SWEEPS["shift"].values, 8, 12, 16),
    "perspective": (*sweep_study.SWEEPS["perspective"].values, 10.0, 20.0),
    "jpeg": (*sweep_study.SWEEPS["jpeg"].values, 2, 1),
    "fgsm": (0.02, 0.05, 0.1, 0.2, 0.3),
}
TARGET = 0.5


def main() -> None:
    """Runs the sweeps, writes the report and prints the edges."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--probe", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="runs/catch-adversarial")
    parser.add_argument("--only", nargs="+", choices=SWEPT, default=list(SWEPT), help="the sweeps to run")
    args = parser.parse_args()

    start = time.time()
    shifts = [spec for name in args.only for spec in sweep_study.specs(name, values=VALUES[name])]
    evaluation = rw.evaluate(
        AGENTS,
        ENV_ID,
        shifts,
        episodes=args.episodes,
        seeds=args.seeds,
        probe=args.probe,
        out=args.out,
        execution=Execution(workers=args.workers),
    )
    table = sweep_study.sweep_table(evaluation)
    print(f"{len(shifts)} shifts x {len(AGENTS)} agents x {args.seeds} seeds x {args.episodes} episodes")
    print(format_table(evaluation.summary().loc[:, ["mean", "delta"]]))
    rows = []
    for curve in sweep_study.curves(evaluation):
        edges = [sweep_study.edge(table, curve, TARGET, agent=agent)["value"] for agent in AGENTS]
        rows.append((curve.title, *(math.nan if e is None else e for e in edges)))
    print(f"\nThe mildest value whose impact reaches {TARGET} (nan: none in the range; stronger is worse):")
    width = max(len(r[0]) for r in rows)
    print(f"{'sweep':<{width}}  " + "  ".join(f"{a:>11}" for a in AGENTS))
    for title, *edges in rows:
        print(f"{title:<{width}}  " + "  ".join(f"{e:>11.4g}" for e in edges))
    print(f"Report: {write_report(evaluation).resolve()}")
    print(f"Took {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
