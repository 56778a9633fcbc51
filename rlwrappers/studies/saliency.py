"""Seed 003's saliency study of one agent on states of its own play: maps, insertion metric, sanity checks.

Seed 003 benchmarks five perturbation-based saliency maps on states of the agents' own games. This module runs
that study for one agent: :func:`collect_states` plays a game and picks states from it (at random, or by
HIGHLIGHTS-DIV), and :func:`study` computes, for each method, the map of every state (timed), the insertion
metric's four variants (:func:`rlwrappers.explain.insertion.insertion`) and, on the first few states, the
cascading-randomization sanity check (:func:`rlwrappers.explain.sanity.sanity_check`). A :class:`Study`
saves itself to a directory that :func:`rlwrappers.report.saliency.write_saliency_report` turns into a report.
:func:`parameter_search` runs the study over a grid of a method's parameters (Section 3.4).

Example:
    >>> import gymnasium as gym
    >>> from rlwrappers import zoo
    >>> from rlwrappers.studies import saliency
    >>> agent = zoo.load_agent("ppo-CartPole-v1")
    >>> states = saliency.collect_states(gym.make("CartPole-v1"), agent, 4, seed=0)
    >>> result = saliency.study(agent, states, ["occlusion", "rise"], sanity=0)
    >>> sorted(result.maps), result.maps["rise"].shape, list(result.insertion.columns)[:3]
    (['occlusion', 'rise'], (4, 4), ['method', 'state', 'action'])
"""

from __future__ import annotations

import inspect
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.agents import Agent, check_compatible
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile, UnknownName, did_you_mean
from rlwrappers.explain import insertion, sanity, selection
from rlwrappers.explain.maps import METHODS, action_scores, check_observations, saliency_map
from rlwrappers.metrics.saliency import INSERTION_COLUMNS, SIMILARITIES, select, standardized_scores
from rlwrappers.spec import format_call
from rlwrappers.studies.states import play_game

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_STEPS",
    "PAPER_BUDGET",
    "PAPER_REFERENCE",
    "REQUEST_FILE",
    "SELECTIONS",
    "Search",
    "Study",
    "collect_states",
    "parameter_search",
    "scaled_budget",
    "study",
]

#: The longest game :func:`collect_states` plays by default, in decisions.
MAX_STEPS: Final = 27_000
#: How :func:`collect_states` picks states from the game.
SELECTIONS: Final = ("random", "highlights")
#: The paper's time budget per map for its parameter search (Section 3.4.1), in seconds, on its GPU.
PAPER_BUDGET: Final = 3.0
#: The reference the budget is scaled by: a configuration and its time per map in the paper (Table 2).
PAPER_REFERENCE: Final = ("occlusion", {"patch": 2, "color": 0.0, "softmax": False}, 2.80)
_MAPS_FILE: Final = "maps.npz"
REQUEST_FILE: Final = "explain.json"


def collect_states(
    env: gym.Env[Any, Any],
    agent: Agent,
    n: int,
    *,
    seed: int = 0,
    select: str = "random",
    threshold: float = 30.0,
    max_steps: int = MAX_STEPS,
) -> NDArray[Any]:
    """The agent plays one game of ``env``; ``n`` of the observations it acted on are picked.

    ``select="random"`` draws n distinct decisions uniformly (in the order of play); ``"highlights"`` runs
    HIGHLIGHTS-DIV (:func:`rlwrappers.explain.selection.highlights_div`) with the agent's own scores as importance,
    the flattened observations as features and the diversity ``threshold`` as a percentile (30 did best in the
    paper), which may give fewer than n states. Where a life ends an episode (SB3's Atari preprocessing), the
    game goes on through every life.

    Args:
        env: the env as the agent sees it.
        agent: the agent to explain; a stochastic one draws from a generator seeded with ``seed``.
        n: how many states to pick.
        seed: seeds the game's reset, the agent's draws and the random pick.
        select: "random" or "highlights".
        threshold: HIGHLIGHTS-DIV's diversity threshold, a percentile in [0, 100].
        max_steps: the game stops after this many decisions.

    Returns:
        The observations, shape (n, *observation shape) (fewer with "highlights" when too few are diverse).

    Raises:
        IncompatibleSpace: the agent's observations are neither an image nor a vector (a Dict or Tuple space),
            which saliency maps cannot perturb (:func:`rlwrappers.explain.maps.check_observations`).
    """
    _check.integer("n", n, minimum=1)
    _check.integer("seed", seed, minimum=0)
    _check.integer("max_steps", max_steps, minimum=1)
    select = _check.choice("select", select, SELECTIONS)
    check_compatible(agent, env)
    check_observations(agent)  # before the game: the states are stacked into one array
    act_rng, pick_rng = (np.random.default_rng([seed, k]) for k in (0, 1))
    states = np.stack([np.asarray(obs) for obs, _ in play_game(env, agent, act_rng, seed=seed, max_steps=max_steps)])
    if n > len(states):
        raise InvalidArgument(f"`n` must be <= {len(states)}, the decisions of the agent's game; received {n}")
    if select == "random":
        return states[np.sort(pick_rng.choice(len(states), size=n, replace=False))]
    scores = action_scores(agent, states)
    chosen = selection.highlights_div(selection.importance(scores), states.reshape(len(states), -1), n, threshold)
    return states[np.sort(chosen)]


@dataclass(frozen=True)
class Study:
    """Saliency maps of several methods on the same states, with their insertion metric and sanity checks.

    Attributes:
        states: the explained observations, shape (n, *observation shape).
        maps: per method, the maps, shape (n, *map shape).
        actions: per method, the analysed action of each state.
        segments: per method with superpixels (LIME), each state's segmentation.
        insertion: one row per (method, state): ``action``, the four AUCs of
            :data:`~rlwrappers.metrics.saliency.INSERTION_COLUMNS` and ``seconds``, the time the map took.
        sanity: one row per (method, state, randomized layer) with the three similarities (empty when not run).
        params: per method, its parameters with the defaults resolved.
        flatten_ssim: whether the sanity check's SSIM compared the flattened maps rather than the 2-D ones.
    """

    states: NDArray[Any]
    maps: Mapping[str, NDArray[np.float64]]
    actions: Mapping[str, NDArray[np.int64]]
    insertion: pd.DataFrame
    sanity: pd.DataFrame
    params: Mapping[str, Mapping[str, Any]]
    segments: Mapping[str, NDArray[np.int64]] = field(default_factory=dict)
    flatten_ssim: bool = False

    def summary(self) -> pd.DataFrame:
        """Per method: the mean of each insertion AUC and of the seconds per map, and the states."""
        table = self.insertion.groupby("method", sort=False)
        out = table[[*INSERTION_COLUMNS, "seconds"]].mean()
        return out.assign(states=table.size())

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Writes the study into ``directory`` and returns it.

        Files: ``maps.npz`` (states, maps, actions, segments), ``insertion.csv``, ``sanity.csv`` and
        ``explain.json`` (the parameters and the SSIM form).
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, NDArray[Any]] = {"states": self.states}
        for method in self.maps:
            arrays[f"map.{method}"] = self.maps[method]
            arrays[f"action.{method}"] = self.actions[method]
        for method, segments in self.segments.items():
            arrays[f"segments.{method}"] = segments
        np.savez_compressed(out / _MAPS_FILE, **arrays)  # type: ignore[arg-type]
        self.insertion.to_csv(out / "insertion.csv", index=False)
        self.sanity.to_csv(out / "sanity.csv", index=False)
        request = {"params": self.params, "flatten_ssim": self.flatten_ssim}
        (out / REQUEST_FILE).write_text(json.dumps(request, indent=1, default=str) + "\n")
        return out

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Study:
        """The study :meth:`save` wrote to ``directory``.

        Raises:
            MissingFile: the directory holds no study.
        """
        pandas = require("pandas", purpose="saliency studies")
        source = Path(directory)
        if not (source / _MAPS_FILE).is_file():
            raise MissingFile(f"no saliency study in {str(source)!r}: {_MAPS_FILE} is missing")
        with np.load(source / _MAPS_FILE) as data:
            arrays = {key: data[key] for key in data.files}
        request = json.loads((source / REQUEST_FILE).read_text())
        maps = {key[4:]: value for key, value in arrays.items() if key.startswith("map.")}
        return cls(
            states=arrays["states"],
            maps=maps,
            actions={method: arrays[f"action.{method}"] for method in maps},
            insertion=pandas.read_csv(source / "insertion.csv"),
            sanity=pandas.read_csv(source / "sanity.csv"),
            params=request["params"],
            segments={key[9:]: value for key, value in arrays.items() if key.startswith("segments.")},
            flatten_ssim=bool(request.get("flatten_ssim", False)),
        )


def _methods(methods: Sequence[str] | Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    if isinstance(methods, str):
        raise InvalidType(
            f"`methods` must be a list of method names or a dict of their parameters, received {methods!r}"
        )
    out = {m: {} for m in methods} if not isinstance(methods, Mapping) else {m: dict(p) for m, p in methods.items()}
    if not out:
        raise InvalidArgument("`methods` must name at least one method")
    for method in out:
        if method not in METHODS:
            raise UnknownName(
                f"`methods` names no saliency method {method!r}; they are {sorted(METHODS)}."
                + did_you_mean(method, METHODS)
            )
    return out


def study(
    agent: Agent,
    states: NDArray[Any],
    methods: Sequence[str] | Mapping[str, Mapping[str, Any]],
    *,
    sanity: int = 5,
    seed: int = 0,
    flatten_ssim: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Study:
    """Every method's map of every state, timed, with its insertion metric and, on ``sanity`` states, its sanity check.

    Args:
        agent: the agent to explain (discrete actions, with a network).
        states: observations, shape (n, *observation shape), e.g. from :func:`collect_states`.
        methods: method names (defaults) or ``{name: params}``; see :data:`rlwrappers.explain.maps.METHODS`.
        sanity: how many of the states (the first ones) get the cascading-randomization check; image
            observations only (the similarities compare 2-D maps). 0 skips it.
        seed: seeds the methods that draw (RISE, LIME: every state with the same seed), the insertion metric's
            random substrate and order (state i with ``seed + i``) and the randomized layers.
        flatten_ssim: the sanity check's SSIM on the flattened maps, as the paper's reference code, instead of
            the 2-D maps (:func:`rlwrappers.metrics.saliency.ssim`).
        progress: called with a line of text as each method finishes.
    """
    pandas = require("pandas", purpose="saliency studies")
    chosen = _methods(methods)
    if not isinstance(agent, Agent):
        raise InvalidType(
            f"`agent` must be an rlwrappers Agent (see rlwrappers.agents.adapt), received {type(agent).__name__}"
        )
    check_observations(agent)
    batch = np.asarray(states)
    if batch.ndim < 2 or len(batch) == 0:
        raise InvalidArgument(f"`states` must be a batch of at least one observation, received shape {batch.shape}")
    _check.integer("sanity", sanity, minimum=0)
    image = batch.ndim >= 3
    step = insertion.STEP if image else 1
    maps: dict[str, NDArray[np.float64]] = {}
    actions: dict[str, NDArray[np.int64]] = {}
    segments: dict[str, NDArray[np.int64]] = {}
    params: dict[str, Mapping[str, Any]] = {}
    rows, checks = [], []
    for method, given in chosen.items():
        drawn = {"seed": seed} if "seed" in _parameters(method) and "seed" not in given else {}
        results = []
        for i, obs in enumerate(batch):
            start = time.perf_counter()
            result = saliency_map(agent, obs, method, **given, **drawn)
            seconds = time.perf_counter() - start
            results.append(result)
            row = insertion.insertion(
                agent, obs, result.values, action=result.action, step=step, segments=result.segments, seed=seed + i
            )
            rows.append({"method": method, "state": i, **row, "seconds": seconds})
        maps[method] = np.stack([r.values for r in results])
        actions[method] = np.array([r.action for r in results], dtype=np.int64)
        if results[0].segments is not None:
            segments[method] = np.stack([r.segments for r in results if r.segments is not None])
        params[method] = dict(results[0].params)
        if image and sanity:
            check = _sanity_check(agent, batch[:sanity], method, {**given, **drawn}, seed, flatten_ssim)
            checks.append(check.assign(method=method))
        if progress is not None:
            per_map = float(np.mean([row["seconds"] for row in rows if row["method"] == method]))
            progress(
                f"{method}: {len(batch)} maps, {per_map:.3f} s per map"
                + (f", sanity check on {sanity}" if image and sanity else "")
            )
    columns = ["method", "state", "action", *INSERTION_COLUMNS, "seconds"]
    sanity_table = (
        pandas.concat(checks, ignore_index=True)[["method", "state", "level", "layer", *SIMILARITIES]]
        if checks
        else pandas.DataFrame(columns=["method", "state", "level", "layer", *SIMILARITIES])
    )
    insertion_table = pandas.DataFrame(rows, columns=columns)
    return Study(batch, maps, actions, insertion_table, sanity_table, params, segments, flatten_ssim)


def _parameters(method: str) -> set[str]:
    return set(inspect.signature(METHODS[method]).parameters)


def _sanity_check(
    agent: Agent, states: NDArray[Any], method: str, params: dict[str, Any], seed: int, flatten_ssim: bool
) -> pd.DataFrame:
    """The method's sanity check on ``states``: randomized agents explain the action the original one analysed."""
    analysed: list[int] = []

    def explain(explained: Agent, obs: NDArray[Any]) -> NDArray[np.float64]:
        if explained is agent:  # sanity_check explains each state with the original agent first
            result = saliency_map(agent, obs, method, **params)
            analysed.append(result.action)
            return result.values
        return saliency_map(explained, obs, method, **{**params, "action": analysed[-1]}).values

    return sanity.sanity_check(explain, agent, states, seed=seed, flatten_ssim=flatten_ssim)


# -- parameter search --------------------------------------------------------------------------------------
def scaled_budget(agent: Agent, states: NDArray[Any], *, repeats: int = 3) -> float:
    """The paper's 3-second budget per map, scaled to this machine and implementation.

    The paper timed its maps on a GPU, one forward pass per perturbed input; here they are batched on whatever
    runs this. The budget is scaled by the time of one reference map: :data:`PAPER_REFERENCE`, occlusion with
    2 x 2 black patches, took 2.80 s per map in the paper (Table 2), so the budget is
    ``3 s x (its time here) / 2.80 s``, the fastest of ``repeats`` maps of the first state. A parameter set passes
    when it costs at most what about 1.07 reference maps cost, as in the paper.
    """
    method, params, paper_seconds = PAPER_REFERENCE
    obs = np.asarray(states)[0]
    times = []
    for _ in range(_check.integer("repeats", repeats, minimum=1)):
        start = time.perf_counter()
        saliency_map(agent, obs, method, **params)
        times.append(time.perf_counter() - start)
    return PAPER_BUDGET * min(times) / paper_seconds


@dataclass(frozen=True)
class Search:
    """A parameter search of one method (Section 3.4).

    Attributes:
        method: the method searched.
        table: one row per (parameter set, state): ``params`` (the call), the four insertion AUCs and ``seconds``.
        scores: :func:`~rlwrappers.metrics.saliency.standardized_scores` of the table, best first.
        budget: the time budget per map, in seconds.
        chosen: the best parameter set within the budget (a row of ``scores``; its name is the call).
        grid: the parameter sets tried, in order, by their call.
    """

    method: str
    table: pd.DataFrame
    scores: pd.DataFrame
    budget: float
    chosen: pd.Series
    grid: Mapping[str, Mapping[str, Any]]

    @property
    def best(self) -> dict[str, Any]:
        """The chosen parameters."""
        return dict(self.grid[str(self.chosen.name)])


def parameter_search(
    agent: Agent,
    states: NDArray[Any],
    method: str,
    grid: Mapping[str, Sequence[Any]],
    *,
    budget: float | None = None,
    seed: int = 0,
) -> Search:
    """The paper's parameter search (Section 3.4) for one method: every combination of ``grid`` on ``states``.

    Each parameter set explains every state (timed) and gets the insertion metric's four AUCs; the sets are
    scored by :func:`~rlwrappers.metrics.saliency.standardized_scores` (standardized mean AUCs of the q-value and
    the advantage, summed), and the best one whose mean time per map is within ``budget`` is chosen. The paper
    searched on 10 states chosen by HIGHLIGHTS-DIV at the 30th percentile: ``collect_states(env, agent, 10,
    select="highlights")``.

    Args:
        agent: the agent to explain.
        states: the test states, shape (n, *observation shape).
        method: a name in :data:`rlwrappers.explain.maps.METHODS`.
        grid: each parameter's values to try, e.g. ``{"patch": [2, 4, 8], "color": [0.0, "gray"]}``.
        budget: the most seconds per map (default: :func:`scaled_budget`, the paper's 3 s scaled to this machine).
        seed: as for :func:`study`.
    """
    import itertools

    pandas = require("pandas", purpose="parameter search")
    _methods([method])
    if not isinstance(grid, Mapping) or not grid:
        raise InvalidArgument(f"`grid` must map parameter names to lists of values, received {grid!r}")
    for name, values in grid.items():
        if isinstance(values, str) or not isinstance(values, Sequence) or not values:
            raise InvalidArgument(f"`grid[{name!r}]` must be a non-empty list of values, received {values!r}")
    names = list(grid)
    sets = {
        format_call(method, dict(zip(names, combo, strict=True))): dict(zip(names, combo, strict=True))
        for combo in itertools.product(*(grid[n] for n in names))
    }
    tables = []
    for call, params in sets.items():
        result = study(agent, states, {method: params}, sanity=0, seed=seed)
        tables.append(result.insertion.drop(columns="method").assign(params=call))
    table = pandas.concat(tables, ignore_index=True)
    scores = standardized_scores(table, by="params")
    limit = scaled_budget(agent, states) if budget is None else float(budget)
    return Search(method, table, scores, limit, select(scores, limit), sets)
