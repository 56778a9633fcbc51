"""Seed 001's protocol for measuring performance under distribution shift, on top of :func:`~rlwrappers.evaluate`.

Seed 001 (*Using Causal Inference to Evaluate RL Agents under Distribution Shift*, Section 4) gives two ways:

- **Causal (2a)**, when you control when the shift happens: :func:`causal` runs each agent for ``episodes``
  episodes with the shift introduced at episode ``T`` (halfway by default) and, with the same seeds, a
  counterfactual run without it. :func:`did_table` gives the difference-in-differences impact with a standard
  error and interval over seeds; :func:`impact_verdicts` states which agent copes better: A beats B under a shift
  when A's cumulative impact is higher at the end.
- **Observational (2b)**, when shifts strike at random: :func:`observational` runs the agents with shifts that
  strike per step or per episode, or in bursts of random length. :func:`forecasts` fits Holt's linear damped
  trend to each arm's per-episode returns, aggregated over seeds, and forecasts the next 100 episodes with 99%
  prediction intervals; :func:`forecast_verdicts` applies the rule "A is significantly better than B when its
  forecast is higher and the intervals never overlap".

Both default to the protocol's 10 seeds. Every table says why a number is missing instead of showing a verdict it
could not compute. :func:`rlwrappers.report.evaluation.write_report` draws the plots and writes these verdicts;
the command line runs them with ``rlwrappers evaluate --shift-at-episode`` and ``--observational``.

Needs the ``causal`` extra (statsmodels and scipy).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType, LogError
from rlwrappers.metrics.did import difference_in_differences
from rlwrappers.metrics.forecast import (
    AGGREGATES,
    Forecast,
    damped_trend_forecast,
    episode_series,
    significantly_better,
)
from rlwrappers.studies.design import BASELINE, ShiftSpec, Timing
from rlwrappers.studies.results import Evaluation
from rlwrappers.studies.run import evaluate

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_STRIKE",
    "SEEDS",
    "ArmForecast",
    "causal",
    "did_table",
    "forecasts",
    "forecast_table",
    "forecast_verdicts",
    "impact_verdicts",
    "observational",
    "returns",
]

#: The protocol's number of seeds (seed 001, after Agarwal et al. 2021).
SEEDS: Final = 10
#: How shifts strike in :func:`observational` unless told otherwise: at each step with probability 0.1.
DEFAULT_STRIKE: Final = "prob(p=0.1)"


def causal(
    agent: Any,
    env_id: str,
    shifts: Sequence[ShiftSpec] | Mapping[str, ShiftSpec | Sequence[ShiftSpec]],
    *,
    out: str | os.PathLike[str],
    episodes: int = 100,
    seeds: int | Sequence[int] = SEEDS,
    shift_at: int | None = None,
    share_pre_shift: bool = True,
    **options: Any,
) -> Evaluation:
    """The causal protocol: each shift introduced at episode ``shift_at`` against the same seeds' counterfactual.

    Args:
        agent: as for :func:`~rlwrappers.evaluate`: a zoo name, an SB3 zip, a model, or a dict of them.
        env_id: a Gymnasium ID.
        shifts: the shift levels compared, as for :func:`~rlwrappers.evaluate`.
        out: the run directory.
        episodes: episodes per run.
        seeds: run seeds (default: the protocol's 10).
        shift_at: the first shifted episode ``T`` (default ``episodes // 2``).
        share_pre_shift: take the episodes before ``T - 1`` from the counterfactual (see
            :class:`~rlwrappers.studies.design.Timing`).
        **options: any other :func:`~rlwrappers.evaluate` option but ``timing`` (``when`` for a shift that, once
            introduced, acts only sometimes; ``env``; ``execution``; ...).

    Returns:
        The :class:`~rlwrappers.studies.results.Evaluation`; read it with :func:`did_table` and
        :meth:`~rlwrappers.studies.results.Evaluation.fixed_seed_check`.

    Example:
        >>> import tempfile
        >>> from rlwrappers.studies import Execution
        >>> run = causal("ppo-CartPole-v1", "CartPole-v1", ["obs_noise(std=1.0)"], episodes=6, seeds=2,
        ...              out=tempfile.mkdtemp(), execution=Execution(workers=1, progress=False))
        >>> run.shift_at, bool(run.fixed_seed_check()["identical"].all())
        (3, True)
    """
    if shift_at is None:
        if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes < 2:
            raise InvalidArgument(f"`episodes` must be an int >= 2 for a shift halfway, received {episodes!r}")
        shift_at = episodes // 2
    _check_no_timing(options)
    timing = Timing(shift_at=shift_at, share_pre_shift=share_pre_shift)
    return evaluate(agent, env_id, shifts, out=out, episodes=episodes, seeds=seeds, timing=timing, **options)


def observational(
    agent: Any,
    env_id: str,
    shifts: Sequence[ShiftSpec] | Mapping[str, ShiftSpec | Sequence[ShiftSpec]],
    *,
    out: str | os.PathLike[str],
    when: str = DEFAULT_STRIKE,
    episodes: int = 100,
    seeds: int | Sequence[int] = SEEDS,
    **options: Any,
) -> Evaluation:
    """The observational protocol: shifts that strike at random, for forecasting each arm's trend.

    Args:
        agent: as for :func:`~rlwrappers.evaluate`: a zoo name, an SB3 zip, a model, or a dict of them.
        env_id: a Gymnasium ID.
        shifts: the shifts, as for :func:`~rlwrappers.evaluate`.
        out: the run directory.
        when: how the shifts strike, for those that set no schedule of their own: ``prob(p=0.1)`` (each step with
            probability 0.1, the default), ``prob(p=0.3, per="episode")`` (whole episodes), or
            ``bursts(p=0.01, duration=(10, 50))`` (spans whose length is drawn uniformly).
        episodes: episodes per run (the forecast needs at least 10).
        seeds: run seeds (default: the protocol's 10).
        **options: any other :func:`~rlwrappers.evaluate` option but ``timing``.

    Returns:
        The :class:`~rlwrappers.studies.results.Evaluation`; read it with :func:`forecasts`.
    """
    _check_no_timing(options)
    timing = Timing(observational=True)
    return evaluate(agent, env_id, shifts, out=out, episodes=episodes, seeds=seeds, when=when, timing=timing, **options)


def _check_no_timing(options: Mapping[str, Any]) -> None:
    if "timing" in options:
        raise InvalidArgument("`timing` is the protocol's own; pass `shift_at` to causal(), or call evaluate()")


def returns(episodes: pd.DataFrame, agent: str, shift: str) -> NDArray[np.float64]:
    """The returns of one arm as a (seeds, episodes) array, from :meth:`Evaluation.episodes`.

    Raises:
        LogError: the arm has no episode, or its seeds hold different numbers of episodes (unfinished runs).
    """
    arm = episodes[(episodes["agent"] == agent) & (episodes["shift"] == shift)]
    if arm.empty:
        raise LogError(f"no finished episode of agent {agent!r} under {shift!r}")
    per_seed = [g.sort_values("episode")["return"].to_numpy(np.float64) for _, g in arm.groupby("run_seed", sort=True)]
    if len({len(r) for r in per_seed}) != 1:
        raise LogError(f"the runs of agent {agent!r} under {shift!r} hold different numbers of episodes")
    return np.stack(per_seed)


def _causal_request(evaluation: Evaluation) -> int:
    if not isinstance(evaluation, Evaluation):
        raise InvalidType(f"`evaluation` must be an Evaluation, received {type(evaluation).__name__}")
    if evaluation.shift_at is None:
        raise InvalidArgument(f"the evaluation at {str(evaluation.path)!r} is not causal: it has no `shift_at`")
    return evaluation.shift_at


def did_table(evaluation: Evaluation, level: float = 0.95) -> pd.DataFrame:
    """The difference-in-differences impact of every shift of a causal evaluation (seed 001, eqs. 4-6).

    The estimate is eq. 4 per seed, averaged; its standard error is over seeds (``std(ddof=1) / sqrt(seeds)``,
    see :mod:`rlwrappers.metrics.did`) and the interval is Student's t with ``seeds - 1`` degrees of freedom.

    Args:
        evaluation: a causal evaluation (:func:`causal`).
        level: the interval's coverage, in (0, 1).

    Returns:
        One row per (agent, shift), indexed so: ``seeds``, ``estimate``, ``se``, ``lower``, ``upper``,
        ``cumulative`` (the cumulative impact at the last episode), ``identical`` (the fixed-seed check passed
        for every seed) and ``verdict``: a sentence, ``n/a: ...`` when the numbers cannot support one.
    """
    shift_at = _causal_request(evaluation)
    if not isinstance(level, float) or not 0.0 < level < 1.0:
        raise InvalidArgument(f"`level` must be a float in (0, 1), received {level!r}")
    pd = require("pandas", purpose="causal tables")
    stats = require("scipy.stats", purpose="difference-in-differences intervals")
    episodes = evaluation.episodes()
    check = evaluation.fixed_seed_check()
    rows = []
    for (agent, shift), _ in episodes.groupby(["agent", "shift"], sort=False):
        if shift == BASELINE:
            continue
        row: dict[str, Any] = {"agent": agent, "shift": shift}
        mine = check[(check["agent"] == agent) & (check["shift"] == shift)]
        try:
            treated, control = _paired(episodes, str(agent), str(shift))
            result = difference_in_differences(treated, control, shift_at)
        except (LogError, InvalidArgument) as exc:
            rows.append({**row, "verdict": f"n/a: {exc}"})
            continue
        seeds = len(result.per_seed)
        half = float(stats.t.ppf(0.5 + level / 2, seeds - 1)) * result.se if seeds > 1 else math.nan
        identical = bool(mine["identical"].all()) and result.pre_identical
        row |= {
            "seeds": seeds,
            "estimate": result.estimate,
            "se": result.se,
            "lower": result.estimate - half,
            "upper": result.estimate + half,
            "cumulative": float(result.cumulative[-1]),
            "identical": identical,
        }
        row["verdict"] = _did_verdict(row, level)
        rows.append(row)
    columns = ["agent", "shift", "seeds", "estimate", "se", "lower", "upper", "cumulative", "identical", "verdict"]
    return pd.DataFrame(rows, columns=columns).set_index(["agent", "shift"])


def _paired(episodes: pd.DataFrame, agent: str, shift: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The treated and control returns of the seeds both arms finished."""
    arm = episodes[(episodes["agent"] == agent) & (episodes["shift"] == shift)]
    done = sorted(set(arm["run_seed"]) & set(episodes[episodes["shift"] == BASELINE]["run_seed"]))
    if not done:
        raise LogError(f"agent {agent!r} has no seed finished both under {shift!r} and without it")
    finished = episodes[episodes["run_seed"].isin(done)]
    return returns(finished, agent, shift), returns(finished, agent, BASELINE)


def _did_verdict(row: Mapping[str, Any], level: float) -> str:
    if not row["identical"]:
        return "n/a: the runs differ before the shift (the fixed-seed assumption failed), so this is no causal effect"
    if math.isnan(row["se"]):
        return "n/a: one seed gives no interval"
    interval = f"{level:.0%} interval [{row['lower']:.4g}, {row['upper']:.4g}]"
    if row["lower"] > 0 or row["upper"] < 0:
        direction = "raises" if row["estimate"] > 0 else "lowers"
        return f"significant: the shift {direction} the mean return by {abs(row['estimate']):.4g} ({interval})"
    return f"not significant: the {interval} contains 0"


def impact_verdicts(table: pd.DataFrame) -> list[str]:
    """Seed 001's comparison of agents under each shift: A beats B when A's cumulative impact is higher at the end.

    Args:
        table: :func:`did_table`'s result.

    Returns:
        One sentence per pair of agents per shift; pairs whose cumulative impact is missing, or whose fixed-seed
        check failed, are named as not comparable.
    """
    out = []
    for shift in dict.fromkeys(table.index.get_level_values("shift")):
        rows = table.xs(shift, level="shift")
        identical = rows["identical"].eq(True)
        for a, b in itertools.combinations(rows.index, 2):
            ca, cb = float(rows.loc[a, "cumulative"]), float(rows.loc[b, "cumulative"])
            if not (identical[a] and identical[b]) or math.isnan(ca) or math.isnan(cb):
                out.append(f"Under {shift}: {a} and {b} cannot be compared (a run is missing or not deterministic).")
            elif ca == cb:
                out.append(f"Under {shift}: {a} and {b} tie (cumulative impact {ca:.4g} each).")
            else:
                (win, cw), (lose, cl) = sorted(((a, ca), (b, cb)), key=lambda x: -x[1])
                out.append(
                    f"Under {shift}: {win} beats {lose} (cumulative impact at the end {cw:.4g} against {cl:.4g})."
                )
    return out


@dataclass(frozen=True)
class ArmForecast:
    """The observed per-episode series of one (agent, arm) and its forecast, or why there is none.

    Attributes:
        series: the per-episode returns aggregated over seeds (what the forecast was fitted to).
        forecast: the :class:`~rlwrappers.metrics.forecast.Forecast`, or None.
        error: why there is no forecast ("" when there is one).
    """

    series: NDArray[np.float64]
    forecast: Forecast | None
    error: str = ""


def forecasts(
    evaluation: Evaluation, *, horizon: int = 100, level: float = 0.99, how: str = "mean"
) -> dict[tuple[str, str], ArmForecast]:
    """Damped-trend forecasts of every (agent, arm) of an evaluation, the counterfactual arm included.

    Each arm's returns are aggregated per episode over seeds (``how``: "mean" or "iqm", Appendix A Definition 1)
    and the raw series, not its rolling mean, is fitted.

    Returns:
        (agent, shift) -> :class:`ArmForecast`; an arm too short to fit (fewer than 10 episodes) or unfinished
        holds the reason instead of a forecast.
    """
    if not isinstance(evaluation, Evaluation):
        raise InvalidType(f"`evaluation` must be an Evaluation, received {type(evaluation).__name__}")
    if how not in AGGREGATES:
        raise InvalidArgument(f"`how` must be one of {AGGREGATES}, received {how!r}")
    episodes = evaluation.episodes()
    out = {}
    for (agent, shift), _ in episodes.groupby(["agent", "shift"], sort=False):
        key = (str(agent), str(shift))
        try:
            series = episode_series(returns(episodes, *key), how)
        except LogError as exc:
            out[key] = ArmForecast(np.empty(0), None, str(exc))
            continue
        try:
            out[key] = ArmForecast(series, damped_trend_forecast(series, horizon, level))
        except InvalidArgument as exc:
            out[key] = ArmForecast(series, None, str(exc))
    return out


def forecast_table(arms: Mapping[tuple[str, str], ArmForecast]) -> pd.DataFrame:
    """One row per (agent, arm): the last observed mean, and the forecast and interval at the horizon's end."""
    pd = require("pandas", purpose="forecast tables")
    rows = []
    for (agent, shift), arm in arms.items():
        row: dict[str, Any] = {"agent": agent, "shift": shift, "episodes": len(arm.series)}
        if arm.forecast is None:
            row["note"] = f"n/a: {arm.error}"
        else:
            f = arm.forecast
            row |= {
                "forecast": f.mean[-1],
                "lower": f.lower[-1],
                "upper": f.upper[-1],
                "damping": f.params["damping_trend"],
            }
            row["note"] = ""
        rows.append(row)
    columns = ["agent", "shift", "episodes", "forecast", "lower", "upper", "damping", "note"]
    return pd.DataFrame(rows, columns=columns).set_index(["agent", "shift"])


def forecast_verdicts(arms: Mapping[tuple[str, str], ArmForecast]) -> list[str]:
    """Seed 001's significance rule in words.

    For every shift, each pair of agents: "A is significantly better than B" when A's forecast is higher and
    the intervals never overlap, else "no significant difference". For every agent, each shift against the same
    agent without it. Arms without a forecast are named as such.
    """
    out = []
    agents = list(dict.fromkeys(a for a, _ in arms))
    shifts = list(dict.fromkeys(s for _, s in arms))
    for shift in shifts:
        for a, b in itertools.combinations([x for x in agents if (x, shift) in arms], 2):
            out.append(f"Under {_arm(shift)}: {_compare(a, arms[a, shift], b, arms[b, shift])}")
    for agent in agents:
        clean = arms.get((agent, BASELINE))
        for shift in shifts:
            if shift != BASELINE and clean is not None and (agent, shift) in arms:
                sentence = _compare(f"{shift}", arms[agent, shift], "no shift", clean)
                out.append(f"{agent}: {sentence}")
    return out


def _arm(shift: str) -> str:
    return "no shift" if shift == BASELINE else shift


def _compare(a: str, fa: ArmForecast, b: str, fb: ArmForecast) -> str:
    if fa.forecast is None or fb.forecast is None:
        missing = a if fa.forecast is None else b
        return f"{a} and {b} cannot be compared: {missing} has no forecast."
    if significantly_better(fa.forecast, fb.forecast):
        return f"{a} is significantly better than {b}."
    if significantly_better(fb.forecast, fa.forecast):
        return f"{b} is significantly better than {a}."
    return f"no significant difference between {a} and {b} (the {fa.forecast.level:.0%} intervals overlap)."
