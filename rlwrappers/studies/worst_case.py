"""The worst case of an agent over an uncertainty set: a grid, a refining search, and an unbiased re-evaluation.

:func:`worst_case` plays the agent at every point of a grid over the set (both bounds included), with the same
seeds and episodes at every point, so that points differ only by their physics. It then refines around the
worst point it has seen: each round plays the 3^d points of a local grid of half the previous spacing around it,
until the refinement's episode budget is spent. The minimum of noisy means is biased low (the search picks the
point that was unlucky as well as bad), so the reported worst case is the argmin played again on held-out
episodes, seeds the search never used, with a 95% confidence interval, beside the search's own minimum.

Every phase is an :func:`~rlwrappers.studies.run.evaluate` run in a folder of its own (``grid/``,
``refine1/``, ... and ``holdout/``), on local workers or Ray, and resumes after an interruption: a rerun
replays the same rounds from the logs and plays only what is missing.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile
from rlwrappers.studies.design import BASELINE, EnvSetup, Execution
from rlwrappers.studies.run import evaluate
from rlwrappers.uncertainty import SETS, UncertaintySet, uncertainty_set

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HOLDOUT_SEED", "RESULT_FILE", "WorstCase", "load_worst_case", "worst_case"]

#: The first held-out seed: far from the search's seeds (0, 1, ...), so no episode is played twice.
HOLDOUT_SEED: Final = 1_000_000
RESULT_FILE: Final = "worst_case.json"


@dataclass(frozen=True)
class WorstCase:
    """What :func:`worst_case` found.

    Args:
        set_name: the uncertainty set, e.g. "CartPole:2".
        points: every point played, one row each: the parameters, ``phase`` ("grid" or "refine<k>"), ``mean``
            (the mean return over the search's episodes) and ``episodes``.
        argmin: the parameters of the lowest mean.
        search_min: that lowest mean, biased low.
        worst: the argmin's mean return on the held-out episodes: the reported worst case.
        ci: its 95% confidence interval (Student's t over the held-out episodes).
        holdout: held-out episodes played.
        nominal: the env's own physics on the same held-out episodes.
        set_mean: the mean over the grid, the average case over the set.
        grid_min: the lowest mean of the grid alone.
    """

    set_name: str
    points: pd.DataFrame = field(repr=False)
    argmin: Mapping[str, float]
    search_min: float
    worst: float
    ci: tuple[float, float]
    holdout: int
    nominal: float
    set_mean: float
    grid_min: float

    def summary(self) -> dict[str, Any]:
        """The numbers, JSON-ready."""
        return {
            "set": self.set_name,
            "worst": self.worst,
            "ci": list(self.ci),
            "holdout": self.holdout,
            "argmin": dict(self.argmin),
            "search_min": self.search_min,
            "grid_min": self.grid_min,
            "set_mean": self.set_mean,
            "nominal": self.nominal,
            "points": len(self.points),
        }


def worst_case(
    agent: Any,
    box: UncertaintySet | str,
    *,
    out: str | os.PathLike[str],
    points: int = 5,
    episodes: int = 5,
    seeds: int = 2,
    budget: int | None = None,
    holdout: int = 50,
    deterministic: bool = True,
    env: EnvSetup = EnvSetup(),
    execution: Execution = Execution(),
) -> WorstCase:
    """Searches the worst return of ``agent`` over the uncertainty set ``box``; see the module's docs.

    Args:
        agent: anything :func:`~rlwrappers.studies.run.evaluate` takes as one agent.
        box: an :class:`~rlwrappers.uncertainty.UncertaintySet` or a set's name ("Hopper:3").
        out: the folder of the search; an earlier search of the same request there is resumed.
        points: grid points per parameter, both bounds included.
        episodes: episodes per seed at each point.
        seeds: seeds at each point (0, 1, ...): each point plays ``episodes * seeds`` paired episodes.
        budget: episodes the refinement may play (default: half the grid's); 0 skips it.
        holdout: held-out episodes for the argmin and the nominal env, in 5 seeds (a multiple of 5).
        deterministic: let the agent act greedily, as for :func:`~rlwrappers.studies.run.evaluate`.
        env: how each point's env is built (:class:`~rlwrappers.studies.design.EnvSetup`).
        execution: local workers or Ray (:class:`~rlwrappers.studies.design.Execution`).

    Returns:
        The :class:`WorstCase`, also written to ``out/worst_case.json`` with ``out/points.csv``.
    """
    box = _box(box)
    _check.integer("points", points, minimum=2)
    _check.integer("episodes", episodes, minimum=1)
    _check.integer("seeds", seeds, minimum=1)
    _check.integer("holdout", holdout, minimum=5)
    if holdout % 5:
        raise InvalidArgument(f"`holdout` must be a multiple of 5 (5 held-out seeds), received {holdout!r}")
    per_point = episodes * seeds
    grid = box.grid(points)
    budget = len(grid) * per_point // 2 if budget is None else _check.integer("budget", budget, minimum=0)
    root = Path(out)

    def play(phase: str, candidates: Sequence[Mapping[str, float]]) -> list[float]:
        shifts = {f"p{i:04d}": box.spec_at(p, label="set") for i, p in enumerate(candidates)}
        result = evaluate(
            agent,
            box.env_id,
            shifts,
            episodes=episodes,
            seeds=seeds,
            out=root / phase,
            deterministic=deterministic,
            env=env,
            execution=execution,
        )
        means = result.episodes().groupby("shift")["return"].mean()
        return [float(means[name]) for name in shifts]

    rows: list[dict[str, Any]] = [
        {**p, "phase": "grid", "mean": m} for p, m in zip(grid, play("grid", grid), strict=True)
    ]
    steps = np.array([(d.high - d.low) / (points - 1) for d in box.dims])
    spent, round_ = 0, 0
    while True:
        best = min(rows, key=lambda row: row["mean"])
        seen = {_key(box, row) for row in rows}
        round_ += 1
        candidates = [c for c in _local_grid(box, best, steps / 2**round_) if _key(box, c) not in seen]
        if not candidates or spent + len(candidates) * per_point > budget:
            break
        phase = f"refine{round_}"
        rows += [{**c, "phase": phase, "mean": m} for c, m in zip(candidates, play(phase, candidates), strict=True)]
        spent += len(candidates) * per_point

    table = require("pandas", purpose="worst-case searches").DataFrame(rows).assign(episodes=per_point)
    best = min(rows, key=lambda row: row["mean"])
    argmin = {d.name: float(best[d.name]) for d in box.dims}
    worst, ci, nominal = _holdout(agent, box, argmin, root / "holdout", holdout, deterministic, env, execution)
    grid_rows = table[table["phase"] == "grid"]
    found = WorstCase(
        set_name=box.name,
        points=table,
        argmin=argmin,
        search_min=float(best["mean"]),
        worst=worst,
        ci=ci,
        holdout=holdout,
        nominal=nominal,
        set_mean=float(grid_rows["mean"].mean()),
        grid_min=float(grid_rows["mean"].min()),
    )
    table.to_csv(root / "points.csv", index=False)
    (root / RESULT_FILE).write_text(json.dumps(found.summary(), indent=1) + "\n")
    return found


def _box(box: UncertaintySet | str) -> UncertaintySet:
    if isinstance(box, UncertaintySet):
        return box
    if not isinstance(box, str):
        raise InvalidType(f"`box` must be an UncertaintySet or a set's name such as 'Hopper:3', received {box!r}")
    return SETS[box] if box in SETS else uncertainty_set(box)


def _key(box: UncertaintySet, point: Mapping[str, Any]) -> tuple[float, ...]:
    return tuple(round(float(point[d.name]), 12) for d in box.dims)


def _local_grid(box: UncertaintySet, center: Mapping[str, Any], half: Any) -> list[dict[str, float]]:
    """The 3^d points at ``center`` and ``half`` a step either side in each parameter, kept inside the box."""
    axes = []
    for d, h in zip(box.dims, half, strict=True):
        c = float(center[d.name])
        axes.append(sorted({min(max(v, d.low), d.high) for v in (c - h, c, c + h)}))
    return [dict(zip((d.name for d in box.dims), values, strict=True)) for values in itertools.product(*axes)]


def _holdout(
    agent: Any,
    box: UncertaintySet,
    argmin: Mapping[str, float],
    out: Path,
    holdout: int,
    deterministic: bool,
    env: EnvSetup,
    execution: Execution,
) -> tuple[float, tuple[float, float], float]:
    """The argmin's and the nominal env's mean return on held-out seeds, with the argmin's 95% t interval."""
    result = evaluate(
        agent,
        box.env_id,
        {"argmin": box.spec_at(argmin, label="set")},
        episodes=holdout // 5,
        seeds=list(range(HOLDOUT_SEED, HOLDOUT_SEED + 5)),
        out=out,
        deterministic=deterministic,
        env=env,
        execution=execution,
    )
    table = result.episodes()
    returns = table.loc[table["shift"] == "argmin", "return"].to_numpy(dtype=float)
    nominal = float(table.loc[table["shift"] == BASELINE, "return"].mean())
    stats = require("scipy.stats", purpose="confidence intervals")
    half = float(stats.t.ppf(0.975, len(returns) - 1) * returns.std(ddof=1) / math.sqrt(len(returns)))
    mean = float(returns.mean())
    return mean, (mean - half, mean + half), nominal


def load_worst_case(out: str | os.PathLike[str]) -> dict[str, Any]:
    """The summary a finished search wrote into ``out``."""
    path = Path(out) / RESULT_FILE
    if not path.exists():
        raise MissingFile(f"no worst-case search in {str(out)!r}: {RESULT_FILE} is missing")
    return dict(json.loads(path.read_text()))
