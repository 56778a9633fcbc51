"""Does training with domain randomization raise the worst case? Vanilla against randomized PPO.

``--study cartpole``: each seed of ``ppo-CartPole-v1`` (trained on the nominal physics) and of
``ppo-CartPole-v1-randomized`` (the pole's length and mass drawn per episode from ``CartPole:2``) is searched for
its worst case over ``CartPole:2``: a 5 x 5 grid of 10 paired episodes per point, a refinement of half the grid's
budget, and the argmin played again on 50 held-out episodes, beside the nominal env on the same episodes.
``--study hopper`` does the same for ``ppo-Hopper-v5`` and ``ppo-Hopper-v5-randomized`` over ``Hopper:3``, with a
3 x 3 x 3 grid of 4 episodes per point. Writes ``study.csv`` into ``--out``, and into ``--figures`` the
figure ``robust-training[-hopper].png`` and the map of the first vanilla seed over the set,
``robust-training-<agent>.png``.

    python scripts/robust_training_study.py --study cartpole --out runs/robust-training --figures docs/img
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from rlwrappers.report.html import png
from rlwrappers.report.plots import figure_row
from rlwrappers.report.worst_case import worst_case_map
from rlwrappers.studies import Execution
from rlwrappers.studies.worst_case import worst_case

#: Per study: the two agents, the set, grid points per parameter, episodes and seeds per point, the figure.
STUDIES = {
    "cartpole": (("ppo-CartPole-v1", "ppo-CartPole-v1-randomized"), "CartPole:2", 5, 5, 2, "robust-training.png"),
    "hopper": (("ppo-Hopper-v5", "ppo-Hopper-v5-randomized"), "Hopper:3", 3, 2, 2, "robust-training-hopper.png"),
}


def main() -> None:
    """Searches every agent's worst case, prints the table, writes it and the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", choices=sorted(STUDIES), default="cartpole")
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2], help="the zoo agents' training seeds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="runs/robust-training")
    parser.add_argument("--figures", default="runs/robust-training")
    args = parser.parse_args()
    out, figures = Path(args.out), Path(args.figures)
    agents, box, points, episodes, seeds, name = STUDIES[args.study]
    rows, maps = [], {}
    for agent in agents:
        for seed in args.seeds:
            found = worst_case(
                f"{agent}@{seed}",
                box,
                out=out / f"{agent}-seed{seed}",
                points=points,
                episodes=episodes,
                seeds=seeds,
                holdout=50,
                execution=Execution(workers=args.workers, progress=False),
            )
            rows.append({"agent": agent, "seed": seed, **found.summary()})
            if agent == agents[0]:
                maps.setdefault(agent, (found.points, dict(found.argmin)))  # the first seed's, as the docs show
            print(
                f"{agent} seed {seed}: worst {found.worst:.1f} [{found.ci[0]:.1f}, {found.ci[1]:.1f}] at"
                f" {dict(found.argmin)}; mean over the set {found.set_mean:.1f}; nominal {found.nominal:.1f}",
                flush=True,
            )
    table = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "study.csv", index=False)
    means = table.groupby("agent")[["worst", "set_mean", "nominal"]].agg(["mean", "std"])
    print(means.round(1).to_string())

    fig, axes = figure_row(3, 4.6, 3.8)
    for ax, measure, title in zip(
        axes, ("nominal", "set_mean", "worst"), ("nominal env", "mean over the set", "worst case"), strict=True
    ):
        for i, agent in enumerate(agents):
            values = table.loc[table["agent"] == agent, measure].to_numpy(dtype=float)
            ax.bar(i, values.mean(), color=f"C{i}", alpha=0.6)
            ax.scatter(np.full(len(values), i), values, color="black", s=12, zorder=3)
        ax.set_xticks(range(len(agents)), ["vanilla", "randomized"])
        ax.set_title(title)
        ax.set_ylim(0, 1.04 * float(table[["nominal", "set_mean", "worst"]].to_numpy().max()))
    axes[0].set_ylabel("mean return (dots: seeds)")
    figures.mkdir(parents=True, exist_ok=True)
    png(fig, figures / name, None)
    for agent, (played, argmin) in maps.items():
        png(worst_case_map(played, list(argmin), argmin), figures / f"robust-training-{agent}.png", None)


if __name__ == "__main__":
    main()
