"""Seed 001's protocol on the evaluation runner: the causal run with its fixed-seed check, and the forecasts."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import rlwrappers as rw
from rlwrappers.agents import CallableAgent
from rlwrappers.error import InvalidArgument, LogError
from rlwrappers.report.evaluation import write_report
from rlwrappers.studies import EnvSetup, Execution, Timing, shift_impact
from rlwrappers.studies.design import BASELINE
from rlwrappers.studies.results import Evaluation, FixedSeedWarning

pytest.importorskip("statsmodels")
pytest.importorskip("scipy")

AGENT = "ppo-CartPole-v1"
ENV = "CartPole-v1"
SHIFTS = {"mild": "obs_noise(std=0.3)", "strong": "obs_noise(std=1.0)"}


def _causal(out: Path, **options: Any) -> Evaluation:
    settings: dict[str, Any] = {"episodes": 6, "seeds": 2, "execution": Execution(workers=1, progress=False)}
    return shift_impact.causal(AGENT, ENV, SHIFTS, out=out, **(settings | options))


@pytest.mark.slow
def test_shifted_runs_equal_the_counterfactual_before_t_and_did_is_the_post_shift_difference(tmp_path: Path) -> None:
    played = _causal(tmp_path / "played", share_pre_shift=False)
    assert played.shift_at == 3  # halfway by default
    check = played.fixed_seed_check()
    assert check["identical"].all() and (check["compared"] == 3).all()  # every pre-shift episode, step by step
    episodes = played.episodes()
    for shift in SHIFTS:
        treated = shift_impact.returns(episodes, AGENT, shift)
        control = shift_impact.returns(episodes, AGENT, BASELINE)
        np.testing.assert_array_equal(treated[:, :3], control[:, :3])
        assert not np.array_equal(treated[:, 3:], control[:, 3:])  # the shift acts from episode 3 on
        row = shift_impact.did_table(played).loc[(AGENT, shift)]
        eq5 = float((treated[:, 3:].mean(axis=1) - control[:, 3:].mean(axis=1)).mean())
        assert row["estimate"] == eq5  # eq. 4 = eq. 5 exactly when the pre-shift episodes are identical
        assert row["lower"] < row["estimate"] < row["upper"] and row["identical"]


@pytest.mark.slow
def test_sharing_the_pre_shift_episodes_gives_the_same_returns(tmp_path: Path) -> None:
    played = _causal(tmp_path / "played", share_pre_shift=False)
    shared = _causal(tmp_path / "shared")
    assert set(shared.index.loc[shared.index["shift"] != BASELINE, "first_episode"]) == {2}
    check = shared.fixed_seed_check()
    assert check["identical"].all() and (check["compared"] == 1).all()  # episode T - 1, played by both
    a, b = played.episodes(), shared.episodes()
    np.testing.assert_array_equal(a["return"].to_numpy(), b["return"].to_numpy())
    np.testing.assert_array_equal(a["seed"].to_numpy(), b["seed"].to_numpy())
    assert b["shared"].sum() == 2 * 2 * 2 and not a["shared"].any()  # 2 shifts x 2 seeds x episodes 0-1
    pd.testing.assert_frame_equal(shift_impact.did_table(played), shift_impact.did_table(shared))


def test_the_check_compares_every_pre_shift_episode_a_run_plays_and_says_which(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rlwrappers.studies.results import open_evaluation

    settings: dict[str, Any] = {"episodes": 4, "seeds": 1, "execution": Execution(workers=1, progress=False)}
    shared = shift_impact.causal(AGENT, ENV, ["obs_noise(std=1.0)"], out=tmp_path / "shared", **settings)
    row = shared.fixed_seed_check().iloc[0]  # T = 2: episode 1 is compared, episode 0 was copied
    assert (row["compared"], row["shared"], row["identical"]) == (1, 1, True)
    page = write_report(shared).read_text()
    assert "1 of the 2 pre-shift episodes" in page and "the other 1 were taken from the counterfactual" in page

    played = shift_impact.causal(
        AGENT, ENV, ["obs_noise(std=1.0)"], out=tmp_path / "played", share_pre_shift=False, **settings
    )
    run = played.index[played.index["shift"] != BASELINE].iloc[0]
    steps = played.path / run["path"] / "steps.parquet"
    table = pq.read_table(steps)
    actions = table.column("action").to_numpy().copy()
    first = int(np.flatnonzero(table.column("episode").to_numpy() == 0)[0])
    actions[first] = 1 - actions[first]  # the first action of episode 0, not of episode T - 1, now differs
    column = table.schema.get_field_index("action")
    pq.write_table(table.set_column(column, table.schema.field(column), pa.array(actions)), steps)
    check = open_evaluation(played.path).fixed_seed_check()
    assert check[["compared", "shared", "identical", "first_difference"]].iloc[0].tolist() == [2, 0, False, 0]


def _unseeded_policy(obs: np.ndarray) -> int:
    return int(np.random.randint(0, 2))  # numpy's global state: not reproducible


def test_a_nondeterministic_agent_fails_the_check_loudly_and_gets_no_verdict(tmp_path: Path) -> None:
    env = gym.make(ENV)
    agent = CallableAgent(_unseeded_policy, env.observation_space, env.action_space)
    with pytest.warns(FixedSeedWarning, match="FIXED-SEED ASSUMPTION FAILED"):
        result = shift_impact.causal(
            agent,
            ENV,
            ["obs_noise(std=1.0)"],
            out=tmp_path,
            episodes=4,
            seeds=2,
            execution=Execution(workers=1, progress=False),
        )
    assert not result.fixed_seed_check()["identical"].any()
    table = shift_impact.did_table(result)
    assert table["verdict"].str.startswith("n/a: the runs differ before the shift").all()
    assert not table["identical"].any()
    page = write_report(result).read_text()
    assert "FIXED-SEED CHECK FAILED" in page and "significant:" not in page


@pytest.mark.slow
def test_verdicts_compare_agents_by_cumulative_impact(tmp_path: Path) -> None:
    result = _causal(tmp_path, episodes=8)
    agents = {AGENT: AGENT, "robust": "ppo-CartPole-v1-obs_noise"}
    both = shift_impact.causal(
        agents, ENV, SHIFTS, out=tmp_path / "two", episodes=8, seeds=2, execution=Execution(workers=1, progress=False)
    )
    table = shift_impact.did_table(both)
    sentences = shift_impact.impact_verdicts(table)
    assert len(sentences) == 2  # one pair of agents per shift
    for shift, sentence in zip(SHIFTS, sentences, strict=True):
        ranked = table.xs(shift, level="shift")["cumulative"].sort_values(ascending=False)
        assert sentence.startswith(f"Under {shift}: {ranked.index[0]} beats {ranked.index[1]}")
    assert shift_impact.impact_verdicts(shift_impact.did_table(result)) == []  # one agent: nothing to compare
    report = write_report(both)
    assert (report.parent / "did.csv").exists() and (report.parent / "impact-1.png").exists()
    assert "Fixed-seed check passed" in report.read_text()


def test_bad_causal_settings_are_refused(tmp_path: Path) -> None:
    base: dict[str, Any] = {
        "episodes": 4,
        "seeds": 1,
        "out": tmp_path,
        "execution": Execution(workers=1, progress=False),
    }
    with pytest.raises(InvalidArgument, match=r"`shift_at` must be an episode in 1 \.\. 3"):
        rw.evaluate(AGENT, ENV, ["obs_noise(std=1.0)"], **base, timing=Timing(shift_at=4))
    with pytest.raises(InvalidArgument, match="`shift_at` must be an episode"):
        rw.evaluate(AGENT, ENV, ["obs_noise(std=1.0)"], **base, timing=Timing(shift_at=0))
    with pytest.raises(InvalidArgument, match="needs at least one shift"):
        rw.evaluate(AGENT, ENV, [], **base, timing=Timing(shift_at=2))
    with pytest.raises(InvalidArgument, match="counts episodes or steps over the run"):
        rw.evaluate(AGENT, ENV, ["obs_noise(std=1.0, when=starting(episode=1))"], **base, timing=Timing(shift_at=2))
    with pytest.raises(InvalidArgument, match="exclude each other"):
        rw.evaluate(AGENT, ENV, ["obs_noise(std=1.0)"], **base, timing=Timing(shift_at=2, observational=True))
    with pytest.raises(InvalidArgument, match="cannot start at a life"):
        rw.evaluate(
            AGENT,
            ENV,
            ["obs_noise(std=1.0)"],
            **base,
            env=EnvSetup(lives_as_episodes=True, outer_wrappers=[gym.Wrapper]),
            timing=Timing(shift_at=2),
        )
    assert not any(tmp_path.iterdir())  # refused before anything was written
    plain = rw.evaluate(AGENT, ENV, ["obs_noise(std=1.0)"], **base)
    with pytest.raises(InvalidArgument, match="is not causal"):
        shift_impact.did_table(plain)
    with pytest.raises(LogError, match="no `shift_at`"):
        plain.fixed_seed_check()


def test_a_shift_that_strikes_sometimes_once_introduced(tmp_path: Path) -> None:
    result = _causal(tmp_path, when="prob(p=0.5)", share_pre_shift=False)
    assert result.fixed_seed_check()["identical"].all()
    entries = result.request["shifts"]["strong"]
    assert entries[0]["when"] == "prob(p=0.5)"  # the request keeps the shift's own schedule


@pytest.mark.slow
def test_observational_forecasts_equal_statsmodels_on_the_per_episode_mean(tmp_path: Path) -> None:
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    result = shift_impact.observational(
        AGENT,
        ENV,
        ["obs_noise(std=1.0)"],
        out=tmp_path,
        episodes=12,
        seeds=2,
        execution=Execution(workers=1, progress=False),
    )
    assert result.observational and result.request["shifts"]["obs_noise(std=1.0)"][0]["when"] == "prob(p=0.1)"
    arms = shift_impact.forecasts(result, horizon=100)
    episodes = result.episodes()
    for (agent, shift), arm in arms.items():
        series = shift_impact.returns(episodes, agent, shift).mean(axis=0)
        np.testing.assert_array_equal(arm.series, series)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = ETSModel(pd.Series(series), error="add", trend="add", damped_trend=True).fit(disp=False)
        frame = fit.get_prediction(start=12, end=111).summary_frame(alpha=0.01)
        assert arm.forecast is not None
        np.testing.assert_allclose(arm.forecast.mean, frame["mean"], rtol=0, atol=0)
        np.testing.assert_allclose(arm.forecast.lower, frame["pi_lower"], rtol=0, atol=0)
        np.testing.assert_allclose(arm.forecast.upper, frame["pi_upper"], rtol=0, atol=0)
    assert len(shift_impact.forecast_verdicts(arms)) == 1  # one agent: the shift against no shift
    report = write_report(result)
    assert (report.parent / "forecast.csv").exists() and (report.parent / "forecast-0.png").exists()


def test_series_too_short_to_forecast_give_no_verdict(tmp_path: Path) -> None:
    result = shift_impact.observational(
        AGENT,
        ENV,
        ["obs_noise(std=1.0)"],
        out=tmp_path,
        episodes=5,
        seeds=1,
        execution=Execution(workers=1, progress=False),
    )
    arms = shift_impact.forecasts(result)
    assert all(arm.forecast is None and "at least 10" in arm.error for arm in arms.values())
    assert shift_impact.forecast_table(arms)["note"].str.startswith("n/a").all()
    (sentence,) = shift_impact.forecast_verdicts(arms)
    assert "cannot be compared" in sentence
    page = write_report(result).read_text()
    assert "is significantly better than" not in page and "cannot be compared" in page


@pytest.mark.slow
def test_lives_as_episodes_play_every_episode_and_forecast_over_lives(tmp_path: Path) -> None:
    pytest.importorskip("ale_py")
    import ale_py

    gym.register_envs(ale_py)
    breakout = gym.make("ALE/Breakout-v5")
    agent = CallableAgent(lambda obs, rng: int(rng.integers(4)), breakout.observation_space, breakout.action_space)
    result = shift_impact.causal(
        agent,
        "ALE/Breakout-v5",
        ["reward_noise(std=1.0)"],
        out=tmp_path,
        episodes=4,
        seeds=1,
        env=EnvSetup(lives_as_episodes=True),
        execution=Execution(workers=1, progress=False),
    )
    assert (result.index["first_episode"] == 0).all()  # one game goes on across lives: nothing is shared
    check = result.fixed_seed_check()
    assert check["identical"].all() and (check["compared"] == 2).all()
    episodes = result.episodes()
    assert not episodes["shared"].any() and len(episodes) == 2 * 4  # four lives per run
    assert shift_impact.did_table(result).loc[("agent", "reward_noise(std=1.0)"), "identical"]


def test_the_report_forecasts_the_iqm_when_asked(tmp_path: Path) -> None:
    result = shift_impact.observational(
        AGENT,
        ENV,
        ["obs_noise(std=1.0)"],
        out=tmp_path,
        episodes=10,
        seeds=4,
        execution=Execution(workers=1, progress=False),
    )
    arms = shift_impact.forecasts(result, how="iqm")
    series = np.sort(shift_impact.returns(result.episodes(), AGENT, "obs_noise(std=1.0)"), axis=0)
    np.testing.assert_allclose(arms[AGENT, "obs_noise(std=1.0)"].series, series[1:3].mean(axis=0))  # the middle 2
    page = write_report(result, aggregate="iqm")
    written = pd.read_csv(page.parent / "forecast.csv", index_col=[0, 1])
    assert written["forecast"].to_numpy() == pytest.approx(shift_impact.forecast_table(arms)["forecast"].to_numpy())
    with pytest.raises(InvalidArgument, match="`aggregate` must be one of"):
        write_report(result, aggregate="median")
