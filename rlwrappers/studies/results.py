"""Reading an evaluation back: :func:`open_evaluation` gives an :class:`Evaluation` of a run folder.

An :class:`Evaluation` holds what was asked and the index of runs; its :meth:`~Evaluation.episodes` pairs every
episode with its counterfactual's, :meth:`~Evaluation.summary` gives the reproducibility table with the paired
change, and :meth:`~Evaluation.fixed_seed_check` checks a causal study's fixed-seed assumption.
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, LogError
from rlwrappers.logs import read_episodes, read_log
from rlwrappers.metrics.reproducibility import reproducibility_table
from rlwrappers.studies.design import BASELINE, INDEX_FILE, SPEC_FILE, Settings
from rlwrappers.studies.probes import Probe, probe_path

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Evaluation",
    "FixedSeedWarning",
    "fixed_seed_coverage",
    "open_evaluation",
    "summarize",
    "warn_if_not_identical",
]


class FixedSeedWarning(UserWarning):
    """Runs that should be identical before the shift are not: the env or the agent is not deterministic."""


def warn_if_not_identical(check: pd.DataFrame) -> None:
    """Warns (:class:`FixedSeedWarning`) when a fixed-seed check finds runs whose shared episode differs."""
    broken = check[~check["identical"]]
    if len(broken):
        runs = ", ".join(f"{r.agent}/{r.shift}/seed {r.run_seed}" for r in broken.itertuples())
        warnings.warn(
            f"THE FIXED-SEED ASSUMPTION FAILED: {len(broken)} of {len(check)} shifted runs differ from their"
            f" counterfactual before the shift ({runs}). The env or the agent is not deterministic, and the"
            " difference-in-differences estimate is not a causal effect of the shift.",
            FixedSeedWarning,
            stacklevel=3,
        )


def fixed_seed_coverage(check: pd.DataFrame) -> str:
    """What a fixed-seed check compared, in words: the episodes it compared and those it did not.

    Example:
        >>> import pandas as pd
        >>> coverage = fixed_seed_coverage(pd.DataFrame({"compared": [1, 1], "shared": [4, 4]}))
        >>> coverage.split(" step by step")[0], "the other 8 were taken from the counterfactual" in coverage
        ('2 of the 10 pre-shift episodes of the 2 shifted runs were compared', True)
    """
    compared, shared = int(check["compared"].sum()), int(check["shared"].sum())
    runs = f"{len(check)} shifted run" + ("" if len(check) == 1 else "s")
    text = f"{compared} of the {compared + shared} pre-shift episodes of the {runs} were compared step by step"
    if not shared:
        return text + "."
    return (
        f"{text}; the other {shared} were taken from the counterfactual, not played, so they equal it by "
        "construction and were not checked (share_pre_shift=False plays and checks every one)."
    )


@dataclass(frozen=True)
class Evaluation:
    """A finished (or partly finished) evaluation read back from its run directory.

    Attributes:
        path: the run directory.
        request: what was asked (``evaluation.json``).
        index: one row per run (pandas DataFrame): agent, shift, seed, path, status, episodes, mean_return.
    """

    path: Path
    request: dict[str, Any]
    index: pd.DataFrame

    @property
    def complete(self) -> bool:
        """Whether every run finished."""
        return bool((self.index["status"] == "complete").all())

    @property
    def shift_at(self) -> int | None:
        """The causal protocol's first shifted episode ``T``, or None."""
        value = self.request.get("shift_at")
        return None if value is None else int(value)

    @property
    def observational(self) -> bool:
        """Whether the evaluation ran seed 001's observational protocol."""
        return bool(self.request.get("observational", False))

    @property
    def agent_name(self) -> str:
        """The name of the evaluation's one agent (a card's); :class:`InvalidArgument` when it has several."""
        names = sorted(set(self.index["agent"]))
        if len(names) != 1:
            raise InvalidArgument(f"the evaluation in {str(self.path)!r} has agents {names}, not one")
        return str(names[0])

    @property
    def settings(self) -> Settings:
        """The settings the runs were played with, as the request holds them."""
        return Settings(**{f.name: self.request[f.name] for f in fields(Settings) if f.name in self.request})

    def logged_episode(self, shift: str, seed: int, episode: int) -> tuple[str, pd.DataFrame]:
        """The path of the run of (``shift``, ``seed``) and the step rows of its episode ``episode``."""
        rows = self.index[(self.index["shift"] == shift) & (self.index["seed"] == seed)]
        path = str(rows["path"].iloc[0])
        steps = read_log(self.path / path).steps
        return path, steps[steps["episode"] == episode]

    def _runs(self) -> Iterator[tuple[Any, int]]:
        """The finished runs' index rows, with each one's first episode."""
        for row in self.index.itertuples():
            if row.status == "complete":
                first = getattr(row, "first_episode", 0)
                yield row, 0 if first is None or first != first else int(first)  # NaN in older rows

    def episodes(self) -> pd.DataFrame:
        """Every complete episode of every finished run, with its counterfactual's return beside it.

        Columns: agent, shift, run_seed, episode, seed (given to reset), return, length, ``baseline_return``
        (the return of the same episode in the counterfactual run) and ``shared``: True for the episodes a
        causal run took from its counterfactual instead of playing them (see ``share_pre_shift`` in
        :func:`~rlwrappers.studies.run.evaluate`).
        """
        pd = require("pandas", purpose="reading evaluations")
        frames = []
        firsts = {}
        for row, first in self._runs():
            e = read_episodes(self.path / row.path)[["episode", "seed", "return", "length", "complete"]]
            e["episode"] += first
            e.insert(0, "agent", row.agent)
            e.insert(1, "shift", row.shift)
            e.insert(2, "run_seed", row.seed)
            frames.append(e)
            firsts[row.agent, row.shift, row.seed] = first
        if not frames:
            raise LogError(f"{str(self.path)!r} holds no finished run")
        table = pd.concat(frames, ignore_index=True)
        table = table[table["complete"].astype(bool)].drop(columns="complete")
        table["shared"] = False
        baseline = table[table["shift"] == BASELINE]
        shared = [
            baseline[
                (baseline["agent"] == agent) & (baseline["run_seed"] == seed) & (baseline["episode"] < first)
            ].assign(shift=shift, shared=True)
            for (agent, shift, seed), first in firsts.items()
            if first > 0
        ]
        if shared:  # each run's shared episodes go before its own, runs stay in index order
            order = {run: i for i, run in enumerate(firsts)}
            table = pd.concat([table, *shared], ignore_index=True)
            table["run"] = [order[k] for k in zip(table["agent"], table["shift"], table["run_seed"], strict=True)]
            table = table.sort_values(["run", "episode"], kind="stable").drop(columns="run")
        baseline = table[table["shift"] == BASELINE][["agent", "run_seed", "episode", "return"]]
        table = table.merge(
            baseline.rename(columns={"return": "baseline_return"}), on=["agent", "run_seed", "episode"], how="left"
        )
        return table.reset_index(drop=True)

    def summary(self, alphas: Sequence[float] = (0.5, 1.0, 2.0)) -> pd.DataFrame:
        """The reproducibility table per (agent, shift), with the paired change against the counterfactual.

        Columns: episodes, mean, median, MAD, IQR, std, LCB(alpha) per alpha, and ``delta``, the mean over
        episodes of the return minus the same episode's return in the counterfactual run.
        """
        return summarize(self.episodes(), alphas)

    def fixed_seed_check(self) -> pd.DataFrame:
        """Checks the RL fixed-seed assumption of a causal evaluation: shifted runs equal the counterfactual before T.

        Every episode a shifted run played before ``shift_at`` is compared step by step with the same episode of
        the counterfactual: actions, rewards and ends. With the pre-shift episodes shared (the default), that is
        episode ``T - 1`` alone: episodes 0 .. ``T - 2`` were taken from the counterfactual, not played, and are
        not checked. ``share_pre_shift=False`` plays and checks all of them. :func:`fixed_seed_coverage` says
        which in words.

        Returns:
            One row per finished shifted run: agent, shift, run_seed, ``compared`` (episodes compared),
            ``shared`` (pre-shift episodes taken from the counterfactual, not compared), ``identical`` and
            ``first_difference`` (the first episode that differs, or -1).

        Raises:
            LogError: the evaluation is not causal (no ``shift_at``).
        """
        if self.shift_at is None:
            raise LogError(f"the evaluation at {str(self.path)!r} has no `shift_at`: it is not causal")
        return self._checked

    @functools.cached_property
    def _checked(self) -> pd.DataFrame:
        """:meth:`fixed_seed_check`'s table, read once per Evaluation: the runner, DiD table and report reuse it."""
        pd = require("pandas", purpose="reading evaluations")
        shift_at = self.shift_at
        assert shift_at is not None, "fixed_seed_check() checks it"
        runs = list(self._runs())
        baselines = {(row.agent, row.seed): row.path for row, _ in runs if row.shift == BASELINE}
        rows = []
        for row, first in runs:
            counterfactual = baselines.get((row.agent, row.seed))
            if row.shift == BASELINE or counterfactual is None:
                continue
            mine = _pre_shift_steps(self.path / row.path, 0, shift_at - first)
            theirs = _pre_shift_steps(self.path / counterfactual, first, shift_at)
            differing = [e for e in range(shift_at - first) if not _same(mine.get(e), theirs.get(e))]
            rows.append(
                {
                    "agent": row.agent,
                    "shift": row.shift,
                    "run_seed": row.seed,
                    "compared": shift_at - first,
                    "shared": first,
                    "identical": not differing,
                    "first_difference": differing[0] + first if differing else -1,
                }
            )
        columns = ["agent", "shift", "run_seed", "compared", "shared", "identical", "first_difference"]
        return pd.DataFrame(rows, columns=columns)

    def probes(self) -> dict[tuple[str, str], Probe]:
        """The probe of every (agent, shift) that has one, by (agent, shift); see :class:`Probe`."""
        out = {}
        for agent in self.index["agent"].unique():
            for shift in self.request.get("shifts") or {}:
                path = self.path / probe_path(str(agent), shift)
                if path.exists():
                    out[str(agent), shift] = Probe.load(path)
        return out


_STEP_COLUMNS: Final = ["step", "action", "reward", "terminated", "truncated"]


def _pre_shift_steps(path: Path, start: int, stop: int) -> dict[int, Any]:
    """The steps of episodes ``start .. stop - 1`` of a finished log, as one Arrow table per episode."""
    pa = require("pyarrow")
    pq = require("pyarrow.parquet", purpose="reading logs")
    bounds = [("episode", ">=", start), ("episode", "<", stop)]
    table = pq.read_table(path / "steps.parquet", columns=["episode", *_STEP_COLUMNS], filters=bounds)
    episodes = table.column("episode").to_numpy()
    return {
        int(e) - start: table.filter(pa.array(episodes == e)).select(_STEP_COLUMNS).combine_chunks()
        for e in np.unique(episodes)
    }


def _same(a: Any, b: Any) -> bool:
    """Whether two episodes' step tables are present and equal."""
    return a is not None and b is not None and bool(a.equals(b))


def summarize(episodes: pd.DataFrame, alphas: Sequence[float] = (0.5, 1.0, 2.0)) -> pd.DataFrame:
    """:meth:`Evaluation.summary` of a table that :meth:`Evaluation.episodes` returned."""
    groups = dict(list(episodes.groupby(["agent", "shift"], sort=False)))
    summary = reproducibility_table({k: g["return"].to_numpy() for k, g in groups.items()}, alphas)
    summary.index = summary.index.set_names(["agent", "shift"])
    summary["delta"] = [float((g["return"] - g["baseline_return"]).mean()) for g in groups.values()]
    return summary


def open_evaluation(path: str | os.PathLike[str]) -> Evaluation:
    """Reads an evaluation's run directory.

    Raises:
        LogError: ``path`` holds no evaluation, or its index is missing or corrupt.
    """
    pd = require("pandas", purpose="reading evaluations")
    root = Path(path)
    for name in (SPEC_FILE, INDEX_FILE):
        if not (root / name).exists():
            raise LogError(f"no rlwrappers evaluation at {str(root)!r}: {name} is missing")
    try:
        request = json.loads((root / SPEC_FILE).read_text())
        runs = json.loads((root / INDEX_FILE).read_text())["runs"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise LogError(f"the evaluation at {str(root)!r} is corrupt: {exc}") from exc
    broken = _broken_row(runs)
    if broken is not None:
        raise LogError(f"the evaluation at {str(root)!r} is corrupt: {INDEX_FILE} {broken}")
    return Evaluation(root, request, pd.DataFrame(runs))


#: What every row of an evaluation's index holds.
_INDEX_FIELDS: Final = ("agent", "shift", "seed", "path", "status")


def _broken_row(runs: Any) -> str | None:
    """What is wrong with an index's runs, or None: a list of rows, each with every field of :data:`_INDEX_FIELDS`."""
    if not isinstance(runs, list):
        return f"lists its runs as {type(runs).__name__}, not a list"
    for i, row in enumerate(runs):
        missing = [name for name in _INDEX_FIELDS if name not in row] if isinstance(row, dict) else list(_INDEX_FIELDS)
        if missing:
            return f"run {i} lacks {missing} (received {row!r})"
    return None
