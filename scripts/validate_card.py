"""Checks that a card's 95% intervals cover the truth as often as they claim, against a truth from many seeds.

    python scripts/validate_card.py                          # CartPole-v1 and Pendulum-v1, 100 seeds each
    python scripts/validate_card.py --env CartPole-v1 --seeds 200
    python scripts/validate_card.py --work coverage-work     # keeps the evaluations (resumable)

For each env, the zoo's vanilla agent (training seed 0) plays the clean arm and two families' five levels
(observation noise and sticky actions) on ``--seeds`` evaluation seeds of 10 episodes each, in fast mode, as a card
plays them. The **truth** is every quantity computed from the whole pool: the clean mean return, each level's
skill, each family's score and the score over both families. The pool is then cut into disjoint groups of the
card's standard size (5 seeds of 10 episodes), and each group is graded as a card grades its episodes
(:func:`rlwrappers.metrics.grade.grade`, 2,000 replicates). The **coverage** of a kind of quantity is the share of
(group, quantity) pairs whose 95% interval holds the truth, given with a 95% Clopper-Pearson interval over the
pairs (the pairs of one group are not independent, so that interval is, if anything, too narrow). The script
prints a Markdown table per env; docs/card-validity.md holds the one it printed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

import rlwrappers as rw
from rlwrappers import ladders
from rlwrappers.metrics import grade
from rlwrappers.studies import EnvSetup, Execution
from rlwrappers.studies.design import BASELINE

#: The envs and agents validated by default.
CASES = {"CartPole-v1": "ppo-CartPole-v1@0", "Pendulum-v1": "td3-Pendulum-v1@0"}
#: The families played (their five levels each).
FAMILIES = ("obs_noise", "sticky_action")
#: A card's standard size: seeds of a group, episodes per seed.
GROUP, EPISODES = 5, 10
CONFIDENCE = 0.95


@dataclass
class Coverage:
    """How often the groups' intervals held the truth, for one kind of quantity."""

    held: int = 0
    pairs: int = 0

    def add(self, truth: float, estimate: grade.Estimate) -> None:
        """Counts one (group, quantity) pair."""
        self.pairs += 1
        self.held += int(estimate.low <= truth <= estimate.high)

    def interval(self) -> tuple[float, float]:
        """The Clopper-Pearson 95% interval of the coverage."""
        low = stats.beta.ppf(0.025, self.held, self.pairs - self.held + 1) if self.held else 0.0
        high = stats.beta.ppf(0.975, self.held + 1, self.pairs - self.held) if self.held < self.pairs else 1.0
        return float(low), float(high)


def _quantities(g: grade.CardGrade) -> dict[str, list[grade.Estimate]]:
    """The graded quantities by kind."""
    return {
        "clean mean return": [g.clean_return],
        "level skill": [e for family in g.families.values() for e in family.skill],
        "family score": [family.score for family in g.families.values()],
        "score": [g.score],
    }


def validate(
    env_id: str,
    agent: str,
    seeds: int,
    workers: int | None,
    reps: int,
    episodes: int = EPISODES,
    work: str | None = None,
) -> dict[str, Coverage]:
    """Plays the pool, grades every group, returns the coverage per kind of quantity."""
    ladder = ladders.ladder(env_id)
    arms = ladder.arms(list(FAMILIES))
    shifts = {arm.name: arm.entries for arm in arms}
    setup = EnvSetup(kwargs=ladder.env_kwargs, wrappers=ladders.preprocessing_wrappers(ladder.preprocessing))
    evaluation = rw.evaluate(
        agent,
        env_id,
        shifts,
        episodes=episodes,
        seeds=seeds,
        out=Path(work) / env_id.replace("/", "-") if work else tempfile.mkdtemp(prefix="validate-card-"),
        env=setup,
        execution=Execution(workers=workers, progress=False, batch=16, exact=False),
    )
    index = evaluation.index.sort_values("seed")

    def table(shift: str) -> np.ndarray:
        paths = index.loc[index["shift"] == shift, "path"]
        return np.stack([rw.read_log(evaluation.path / p).episodes["return"].to_numpy(dtype=float) for p in paths])

    pool = {name: table(name) for name in [BASELINE, *shifts]}
    reference = ladder.reference_return
    assert reference is not None

    def graded(rows: slice, reps: int) -> grade.CardGrade:
        families = {f: [pool[a.name][rows] for a in arms if a.family == f] for f in FAMILIES}
        rng = np.random.default_rng(rows.start or 0)
        return grade.grade(pool[BASELINE][rows], families, ladder.random_return, reference, rng, reps=reps)

    truth = _quantities(graded(slice(0, seeds), 1))
    coverage = {kind: Coverage() for kind in truth}
    for start in range(0, seeds - GROUP + 1, GROUP):
        estimates = _quantities(graded(slice(start, start + GROUP), reps))
        for kind, values in estimates.items():
            for true, estimate in zip(truth[kind], values, strict=True):
                coverage[kind].add(true.value, estimate)
    return coverage


def table(env_id: str, agent: str, seeds: int, episodes: int, coverage: dict[str, Coverage]) -> str:
    """The Markdown table of one env's coverage."""
    groups = seeds // GROUP
    lines = [
        f"`{env_id}`, `{agent}`: truth from {seeds} seeds x {episodes} episodes, {groups} groups of {GROUP} seeds",
        "",
        "| quantity | pairs | held | coverage | 95% interval of the coverage |",
        "|---|---|---|---|---|",
    ]
    for kind, c in coverage.items():
        low, high = c.interval()
        lines.append(f"| {kind} | {c.pairs} | {c.held} | {c.held / c.pairs:.3f} | [{low:.3f}, {high:.3f}] |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Validates each env asked for; prints the tables; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", choices=sorted(CASES), help="the envs (default: all)")
    parser.add_argument("--seeds", type=int, default=100, help="evaluation seeds of the truth (default 100)")
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap replicates of each group's intervals")
    parser.add_argument("--episodes", type=int, default=EPISODES, help=f"episodes per seed (default {EPISODES})")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    parser.add_argument("--work", default=None, help="the evaluations' folder, one per env (resumable; default: temp)")
    args = parser.parse_args(argv)
    if args.seeds < 2 * GROUP:
        parser.error(f"--seeds must be at least {2 * GROUP}: the truth needs several groups")
    for env_id in args.env or list(CASES):
        coverage = validate(env_id, CASES[env_id], args.seeds, args.workers, args.reps, args.episodes, args.work)
        print(table(env_id, CASES[env_id], args.seeds, args.episodes, coverage) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
