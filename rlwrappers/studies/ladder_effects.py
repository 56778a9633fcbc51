"""Measures a ladder's families by their effect on the env's vanilla reference agents, for the ladder's calibration.

:func:`measure_effects` plays every point of each family's grid (:data:`~rlwrappers.ladders.definition.GRIDS`,
the entries :class:`~rlwrappers.ladders.calibration.Scales` builds) with each reference agent the ladder names,
beside a clean arm, as one batched evaluation (fast mode, :func:`~rlwrappers.studies.run.evaluate`), and returns
each grid's :class:`~rlwrappers.ladders.effect.Effect`: the agents' mean skill drop per point with a 95% interval
from a paired bootstrap over the episodes of each (agent, seed). :func:`write_effects` keeps them in the ladder
version's ``effects/`` folder, from which :func:`rlwrappers.ladders.calibration.calibrate` chooses the levels.
Same seeds, same numbers.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from rlwrappers import ladders as ladders_module
from rlwrappers.error import MissingFile, UnknownName, did_you_mean
from rlwrappers.ladders import calibration
from rlwrappers.ladders import definition as card
from rlwrappers.ladders.effect import Effect, level_values
from rlwrappers.logs.reader import read_episodes
from rlwrappers.metrics import grade
from rlwrappers.studies.design import BASELINE, EnvSetup, Execution
from rlwrappers.studies.run import evaluate

__all__ = ["grid_keys", "measure_effects", "write_effects"]

#: Bootstrap replicates of each drop's interval.
REPS: Final = 2000


def grid_keys(scales: calibration.Scales) -> list[str]:
    """The grids of an env's families, in the ladder's order."""
    keys = []
    for name in scales.families():
        subs = scales.sub_families(name)
        keys += [scales.grid_key(name)] if subs is None else [scales.grid_key(name, sub) for sub in subs]
    return keys


def _agent_source(name: str, agents_dir: Path | None) -> str:
    """A reference agent as ``evaluate`` takes it: a zoo name, or its file in ``agents_dir``."""
    if name.endswith(".zip"):
        if agents_dir is None or not (agents_dir / name).exists():
            raise MissingFile(f"the reference agent {name} is not in `agents_dir` {str(agents_dir)!r}")
        return str(agents_dir / name)
    return name


def measure_effects(
    env_id: str,
    *,
    out: str | os.PathLike[str],
    keys: Sequence[str] | None = None,
    seeds: int | None = None,
    episodes: int | None = None,
    agents_dir: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> dict[str, Effect]:
    """Each grid's effect on ``env_id``'s reference agents; ``out`` holds the evaluation (and resumes it).

    Args:
        env_id: an env of the ladder version.
        out: the evaluation's folder.
        keys: the grids to measure (default: every grid of the env).
        seeds: evaluation seeds per agent and point (default: the env's in
            :data:`~rlwrappers.ladders.definition.EFFECT_SIZES`, else ``EFFECT_SEEDS``).
        episodes: episodes per seed (default: likewise, else ``EFFECT_EPISODES``).
        agents_dir: the folder of the reference agents that are files (Breakout's).
        workers: worker processes (default: one per core).
        progress: show a progress bar.
    """
    default = card.EFFECT_SIZES.get(env_id, (card.EFFECT_SEEDS, card.EFFECT_EPISODES))
    seeds, episodes = seeds or default[0], episodes or default[1]
    scales = calibration.env_scales(env_id)
    known = grid_keys(scales)
    chosen = list(known if keys is None else keys)
    for key in chosen:
        if key not in known:
            raise UnknownName(
                f"`keys` holds {key!r}, not a grid of {env_id}; its grids: {known}." + did_you_mean(key, known)
            )
    published = card.PUBLISHED_RANDOM.get(env_id)
    random = scales.measurement.random_return if published is None else published.value
    folder = None if agents_dir is None else Path(agents_dir)
    names = [agent.name for agent in card.REFERENCE_AGENTS[env_id]]
    play = _Play(
        env_id,
        {f"reference{i}": _agent_source(name, folder) for i, name in enumerate(names)},
        random,
        card.REFERENCES[env_id].value - random,
        seeds,
        episodes,
        Execution(workers=workers, progress=progress, batch=16, exact=False),
    )
    grid = play({f"{key}#{i}": scales.entries(key, v) for key in chosen for i, v in enumerate(card.GRIDS[key])}, out)
    effects = {}
    for key in chosen:
        drop, low, high = _columns([grid[f"{key}#{i}"] for i in range(len(card.GRIDS[key]))])
        effects[key] = Effect(list(card.GRIDS[key]), drop, low, high, clean=grid[BASELINE][0])
    # Levels 2 to 4 of the continuous grids lie between grid points: a second pass measures them.
    between: dict[str, list[float]] = {}
    for key, effect in effects.items():
        values = level_values(effect, top=calibration.top_of(key, effect), continuous=key not in card.DISCRETE_GRIDS)
        between[key] = [v for v in values if v not in effect.grid]
    extra = {f"{key}@{v!r}": scales.entries(key, v) for key, vs in between.items() for v in vs}
    digest = zlib.crc32(" ".join(extra).encode())
    levels = play(extra, Path(out) / f"levels-{digest:08x}")  # a folder of its own for each set of levels
    for key, values in between.items():
        if values:
            drop, low, high = _columns([levels[f"{key}@{v!r}"] for v in values])
            effects[key] = replace(effects[key], extra={"values": values, "drop": drop, "low": low, "high": high})
    return effects


@dataclass(frozen=True)
class _Play:
    """Plays shifts with the reference agents beside a clean arm and measures their skill drops."""

    env_id: str
    agents: dict[str, str]
    random: float
    span: float
    seeds: int
    episodes: int
    execution: Execution

    def __call__(
        self, shifts: dict[str, list[dict[str, Any]]], out: str | os.PathLike[str]
    ) -> dict[str, tuple[float, float, float]]:
        """Each shift's (drop, low, high): the agents' mean skill drop from the clean arm and its 95% interval."""
        if not shifts:
            return {}
        preprocessing = ladders_module.preprocessing_wrappers(card.ENV_PREPROCESSING.get(self.env_id))
        setup = EnvSetup(kwargs=card.ENV_KWARGS.get(self.env_id, {}), wrappers=preprocessing)
        evaluation = evaluate(
            self.agents,
            self.env_id,
            shifts,
            episodes=self.episodes,
            seeds=self.seeds,
            out=out,
            env=setup,
            execution=self.execution,
        )
        index = evaluation.index.sort_values(["agent", "seed"])
        arms = [BASELINE, *shifts]
        table = np.stack(
            [
                np.stack(
                    [
                        read_episodes(evaluation.path / path)["return"].to_numpy(dtype=np.float64)
                        for path in index.loc[index["shift"] == arm, "path"]
                    ]
                )
                for arm in arms
            ]
        )  # (arms, agents x seeds, episodes): each (agent, seed) a stratum, every arm paired
        rng = np.random.default_rng(zlib.crc32(f"{self.env_id} {Path(out).name}".encode()))
        means = grade.resampled_means(table, rng, REPS)
        point = table.mean(axis=(1, 2))
        drops = (point[0] - point[1:]) / self.span
        low, high = np.percentile((means[:, :1] - means[:, 1:]) / self.span, [2.5, 97.5], axis=0)
        measured = {arm: (_rounded(drops[i]), _rounded(low[i]), _rounded(high[i])) for i, arm in enumerate(shifts)}
        clean = _rounded((point[0] - self.random) / self.span)
        measured[BASELINE] = (clean, clean, clean)  # the reference agents' clean skill
        return measured


def _columns(rows: list[tuple[float, float, float]]) -> tuple[list[float], list[float], list[float]]:
    """(drop, low, high) rows as three lists."""
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def _rounded(x: float) -> float:
    """A measured drop, to six decimals: the files read cleanly, and the last bits of a platform do not show."""
    return round(float(x), 6)


def write_effects(
    env_id: str,
    effects: dict[str, Effect],
    *,
    seeds: int | None = None,
    episodes: int | None = None,
    directory: str | os.PathLike[str] | None = None,
) -> Path:
    """Writes (or adds to) ``env_id``'s effects file, measured with ``seeds`` x ``episodes``; returns its path."""
    default = card.EFFECT_SIZES.get(env_id, (card.EFFECT_SEEDS, card.EFFECT_EPISODES))
    seeds, episodes = seeds or default[0], episodes or default[1]
    path = calibration.effects_path(env_id, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    old: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"effects": {}}
    agents = [calibration.reference_agent(agent) for agent in card.REFERENCE_AGENTS[env_id]]
    merged = {**old["effects"], **{key: effect.to_dict() for key, effect in effects.items()}}
    data = {
        "env_id": env_id,
        "agents": agents,
        "seeds": seeds,
        "episodes": episodes,
        "reps": REPS,
        "mode": "fast",
        "effects": {key: merged[key] for key in card.GRIDS if key in merged},
    }
    path.write_text(calibration.to_json(data), encoding="utf-8")
    return path
