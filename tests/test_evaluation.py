"""Evaluation runs: pairing, determinism, resume, backends, bad input, Atari lives as episodes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch

import rlwrappers as rw
from rlwrappers.agents import CallableAgent, SB3Agent
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, LogError, UnknownName
from rlwrappers.logs import Log
from rlwrappers.studies import EnvSetup, Execution, Timing
from rlwrappers.studies.design import BASELINE, episode_seed
from rlwrappers.studies.results import Evaluation

CARTPOLE = gym.make("CartPole-v1")
SPACES = (CARTPOLE.observation_space, CARTPOLE.action_space)
TIME_COLUMNS = ["start_time", "wall_time"]


def balance(obs: np.ndarray) -> int:
    return int(obs[2] + 0.5 * obs[3] > 0)


def jitter(obs: np.ndarray, rng: np.random.Generator) -> int:
    """Balances, but acts at random one step in four: a stochastic agent whose episodes vary."""
    return int(rng.integers(2)) if rng.random() < 0.25 else balance(obs)


def sweep(out: Path, agent: object = None, **kwargs: object) -> Evaluation:
    options: dict[str, object] = dict(episodes=3, seeds=2, execution=Execution(workers=1, progress=False))
    options.update(kwargs)
    shifts = options.pop("shifts", ["obs_noise(std=0.3)", "action_noise(p=0.3)"])
    agent = agent if agent is not None else CallableAgent(jitter, *SPACES)
    return rw.evaluate(agent, "CartPole-v1", shifts, out=out, **options)  # type: ignore[arg-type]


def logs(evaluation: Evaluation) -> dict[str, Log]:
    return {row.path: rw.read_log(evaluation.path / row.path) for row in evaluation.index.itertuples()}


def test_every_arm_runs_every_seed_and_the_baseline_is_shared(tmp_path):
    result = sweep(tmp_path / "run")
    assert result.complete
    assert sorted(result.index["shift"].unique()) == ["action_noise(p=0.3)", BASELINE, "obs_noise(std=0.3)"]
    assert len(result.index) == 3 * 2
    episodes = result.episodes()
    assert len(episodes) == 3 * 2 * 3
    baseline = episodes[episodes["shift"] == BASELINE]
    assert (baseline["return"] == baseline["baseline_return"]).all()


def test_the_counterfactual_and_the_shifted_run_share_every_seed(tmp_path):
    result = sweep(tmp_path / "run")
    episodes = result.episodes()
    for shift, arm in episodes.groupby("shift"):
        expected = [episode_seed(s, e) for s, e in zip(arm["run_seed"], arm["episode"], strict=True)]
        assert list(arm["seed"]) == expected, shift
    # the shift changes returns: the arms are paired, not equal
    noisy = episodes[episodes["shift"] == "action_noise(p=0.3)"]
    assert (noisy["return"] != noisy["baseline_return"]).any()


def test_same_seeds_give_identical_logs(tmp_path):
    first, second = sweep(tmp_path / "a"), sweep(tmp_path / "b")
    a, b = logs(first), logs(second)
    assert a.keys() == b.keys()
    for key in a:
        pd.testing.assert_frame_equal(a[key].steps, b[key].steps)
        pd.testing.assert_frame_equal(
            a[key].episodes.drop(columns=TIME_COLUMNS), b[key].episodes.drop(columns=TIME_COLUMNS)
        )


def test_other_seeds_give_other_episodes(tmp_path):
    first = sweep(tmp_path / "a", seeds=[0, 1]).episodes()
    second = sweep(tmp_path / "b", seeds=[2, 3]).episodes()
    assert not set(first["seed"]) & set(second["seed"])
    assert list(first["return"]) != list(second["return"])


def test_two_workers_give_the_same_returns_as_one(tmp_path):
    one = sweep(tmp_path / "one", execution=Execution(workers=1, progress=False)).episodes()
    two = sweep(tmp_path / "two", execution=Execution(workers=2, progress=False)).episodes()
    key = ["agent", "shift", "run_seed", "episode"]
    pd.testing.assert_frame_equal(
        one.sort_values(key).reset_index(drop=True), two.sort_values(key).reset_index(drop=True)
    )


@pytest.mark.slow
def test_a_ray_sweep_gives_the_same_returns_as_a_local_one(tmp_path):
    pytest.importorskip("ray")
    # Ray workers import the agent's code: a zoo agent (by name) rather than a function of this test module.
    options = dict(agent="ppo-CartPole-v1", deterministic=False)
    local = sweep(tmp_path / "local", **options, execution=Execution(workers=2, progress=False)).episodes()
    remote = sweep(
        tmp_path / "ray", **options, execution=Execution(backend="ray", workers=2, progress=False)
    ).episodes()
    assert local["return"].nunique() > 1
    key = ["agent", "shift", "run_seed", "episode"]
    pd.testing.assert_frame_equal(
        local.sort_values(key).reset_index(drop=True), remote.sort_values(key).reset_index(drop=True)
    )


def test_an_interrupted_sweep_resumes_without_redoing_finished_runs(tmp_path):
    out = tmp_path / "run"
    first = sweep(out)
    before = logs(first)
    # Interrupt one run: its log lost its compacted tables, and the index says it is pending.
    victim = first.index["path"].iloc[3]
    (out / victim / "episodes.parquet").unlink()
    index = json.loads((out / "index.json").read_text())
    index["runs"][3]["status"] = "pending"
    (out / "index.json").write_text(json.dumps(index))
    stamps = {p: (out / p / "steps.parquet").stat().st_mtime_ns for p in first.index["path"] if p != victim}

    again = sweep(out)
    assert again.complete
    assert {p: (out / p / "steps.parquet").stat().st_mtime_ns for p in stamps} == stamps  # not redone
    after = logs(again)
    pd.testing.assert_frame_equal(after[victim].steps, before[victim].steps)  # redone, identically


def test_resume_trusts_the_logs_over_a_stale_index(tmp_path):
    out = tmp_path / "run"
    first = sweep(out)
    stamps = {p: (out / p / "steps.parquet").stat().st_mtime_ns for p in first.index["path"]}
    # An index written before the runs finished (as after Ctrl-C): every run still "pending".
    index = json.loads((out / "index.json").read_text())
    index["runs"] = [
        {k: row[k] for k in ("agent", "shift", "seed", "path")} | {"status": "pending"} for row in index["runs"]
    ]
    (out / "index.json").write_text(json.dumps(index))

    again = sweep(out)
    assert {p: (out / p / "steps.parquet").stat().st_mtime_ns for p in stamps} == stamps  # nothing was redone
    assert again.complete and (again.index["status"] == "complete").all()
    pd.testing.assert_frame_equal(again.summary(), first.summary())  # no arm is missing
    pd.testing.assert_series_equal(again.index["mean_return"], first.index["mean_return"])


def test_a_run_whose_last_episode_was_cut_short_is_played_again(tmp_path):
    out = tmp_path / "run"
    expected = sweep(out).episodes()
    victim = out / "logs" / "agent" / "baseline" / "seed1"
    # What Ctrl-C in a run's last episode leaves: the earlier episodes, and the cut one closed as incomplete.
    env = rw.Recorder(gym.make("CartPole-v1"), victim, overwrite=True)
    for seed in range(3):
        env.reset(seed=seed)
        for _ in range(2 if seed == 2 else 500):
            if any(env.step(0)[2:4]):
                break
    env.close()
    cut = rw.read_log(victim)
    assert cut.meta["episodes"] == 3 and list(cut.episodes["complete"]) == [True, True, False]

    again = sweep(out)
    pd.testing.assert_frame_equal(again.episodes(), expected)  # the run was played again, identically


@pytest.mark.slow
def test_a_second_evaluation_of_a_folder_in_use_is_refused(tmp_path):
    out = tmp_path / "run"
    script = (
        "import sys, rlwrappers as rw; from rlwrappers.studies import Execution;"
        " rw.evaluate('ppo-CartPole-v1', 'CartPole-v1', ['obs_noise(std=0.05)'], episodes=60, seeds=2,"
        " out=sys.argv[1], execution=Execution(workers=1, progress=False))"
    )
    first = subprocess.Popen([sys.executable, "-c", script, str(out)])
    try:
        for _ in range(600):
            if (out / "index.json").exists() or first.poll() is not None:
                break
            time.sleep(0.05)
        assert first.poll() is None, "the first evaluation ended before the second could start"
        with pytest.raises(LogError, match=rf"being written by another writer \(pid {first.pid} on "):
            rw.evaluate(
                "ppo-CartPole-v1",
                "CartPole-v1",
                ["obs_noise(std=0.05)"],
                episodes=60,
                seeds=2,
                out=out,
                execution=Execution(workers=1, progress=False),
            )
    finally:
        assert first.wait(timeout=300) == 0
    assert rw.open_evaluation(out).complete
    assert not (out / "writer.lock").exists()


def test_a_different_request_for_the_same_folder_is_refused(tmp_path):
    sweep(tmp_path / "run")
    with pytest.raises(LogError, match="different evaluation"):
        sweep(tmp_path / "run", episodes=4)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(LogError, match="not empty"):
        sweep(tmp_path / "other")


def test_a_dict_of_agents_gets_one_baseline_each(tmp_path):
    agents = {"balance": CallableAgent(balance, *SPACES), "jitter": CallableAgent(jitter, *SPACES)}
    result = sweep(tmp_path / "run", agent=agents, shifts=["obs_noise(std=0.1)"])
    assert sorted(map(tuple, result.index[["agent", "shift"]].drop_duplicates().to_numpy())) == [
        ("balance", BASELINE),
        ("balance", "obs_noise(std=0.1)"),
        ("jitter", BASELINE),
        ("jitter", "obs_noise(std=0.1)"),
    ]
    summary = result.summary()
    assert summary.loc[("balance", BASELINE), "mean"] == 500.0


def test_named_shifts_and_shifts_of_several_perturbations(tmp_path):
    shifts = {"sensor": "obs_noise(std=0.1)", "both": ["obs_noise(std=0.1)", "reward_noise(std=1.0)"]}
    result = sweep(tmp_path / "run", shifts=shifts)
    assert set(result.index["shift"]) == {BASELINE, "sensor", "both"}
    both = rw.read_log(result.path / result.index.set_index("shift").loc["both", "path"].iloc[0])
    assert [p["name"] for p in both.meta["perturbations"]] == ["obs_noise", "reward_noise"]


def test_parameter_noise_is_attached_and_the_weights_come_back(tmp_path):
    from stable_baselines3 import PPO

    agent = SB3Agent(PPO("MlpPolicy", "CartPole-v1", seed=0, device="cpu"))
    before = {name: p.detach().clone() for name, p in agent.parameters().items()}
    result = sweep(tmp_path / "run", agent=agent, shifts=["param_noise(std=0.5)"])
    assert all(torch.equal(p, before[name]) for name, p in agent.parameters().items())
    path = result.index.set_index("shift").loc["param_noise(std=0.5)", "path"].iloc[0]
    norms = rw.read_log(result.path / path).episodes["param_noise.norm"]
    assert norms.notna().all() and norms.nunique() == len(norms)  # fresh noise every episode


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"episodes": 0}, InvalidArgument, "`episodes`"),
        ({"seeds": 0}, InvalidArgument, "`seeds`"),
        ({"seeds": [1, 1]}, InvalidArgument, "repeat"),
        ({"seeds": [-1]}, InvalidArgument, "`seeds`"),
        ({"shifts": ["obs_nosie(std=0.1)"]}, UnknownName, "obs_noise"),
        ({"shifts": {"baseline": "obs_noise"}}, InvalidArgument, "baseline"),
        ({"shifts": ["dynamics_shift(scales={'g': 2.0})"]}, UnknownName, "gravity"),
    ],
)
def test_bad_requests_fail_before_any_run(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match):
        sweep(tmp_path / "run", **kwargs)
    assert not (tmp_path / "run" / "index.json").exists()


@pytest.mark.parametrize(
    ("group", "kwargs", "error", "match"),
    [
        (Execution, {"backend": "dask"}, InvalidArgument, "`backend` must be one of"),
        (Execution, {"workers": 0}, InvalidArgument, "`workers` must be an int >= 1, received 0"),
        (Execution, {"start_method": "teleport"}, InvalidArgument, "`start_method` must be one of"),
        (Execution, {"progress": "yes"}, InvalidType, "`progress` must be a bool"),
        (EnvSetup, {"wrappers": "atari"}, InvalidType, "`wrappers` must be a list of callables"),
        (EnvSetup, {"kwargs": ["N", 3]}, InvalidType, "`kwargs` must be a dict"),
        (EnvSetup, {"lives_as_episodes": 1}, InvalidType, "`lives_as_episodes` must be a bool"),
        (Timing, {"shift_at": 2.5}, InvalidArgument, "`shift_at` must be an episode"),
        (Timing, {"share_pre_shift": None}, InvalidType, "`share_pre_shift` must be a bool"),
    ],
)
def test_bad_option_groups_fail_when_built(group, kwargs, error, match):
    with pytest.raises(error, match=match):
        group(**kwargs)


def test_option_groups_are_checked_by_type(tmp_path):
    with pytest.raises(InvalidType, match=r"`execution` must be a rlwrappers\.studies\.Execution, received"):
        sweep(tmp_path / "run", execution={"workers": 1})
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_workers_started_without_fork_give_the_same_runs(tmp_path, start_method):
    agents = {"zoo": rw.load_agent("ppo-CartPole-v1"), "jitter": CallableAgent(jitter, *SPACES)}
    forked = sweep(tmp_path / "fork", agents, execution=Execution(workers=2, progress=False))
    started = sweep(
        tmp_path / start_method, agents, execution=Execution(workers=2, start_method=start_method, progress=False)
    )
    assert forked.episodes()["return"].nunique() > 1
    pd.testing.assert_frame_equal(forked.episodes(), started.episodes())


def test_what_cannot_be_pickled_is_refused_before_any_run_unless_forked(tmp_path):
    closure = CallableAgent(lambda obs: balance(obs), *SPACES)
    with pytest.raises(InvalidArgument, match=r"agent 'agent' cannot be pickled .*start_method='spawn'"):
        sweep(tmp_path / "spawn", closure, execution=Execution(workers=2, start_method="spawn", progress=False))
    wrapper = lambda env: gym.wrappers.ClipReward(env, -1.0, 1.0)  # noqa: E731
    with pytest.raises(InvalidArgument, match=r"wrapper <function .*<lambda>.* cannot be pickled"):
        sweep(
            tmp_path / "spawn",
            env=EnvSetup(wrappers=[wrapper]),
            execution=Execution(workers=2, start_method="forkserver", progress=False),
        )
    assert not (tmp_path / "spawn").exists()
    forked = sweep(
        tmp_path / "fork", closure, execution=Execution(workers=2, progress=False), env=EnvSetup(wrappers=[wrapper])
    )
    assert forked.complete


def test_an_agent_that_does_not_fit_the_env_is_refused(tmp_path):
    pendulum = gym.make("Pendulum-v1")
    agent = CallableAgent(lambda obs: np.zeros(1, np.float32), pendulum.observation_space, pendulum.action_space)
    with pytest.raises(IncompatibleSpace, match="action_space"):
        sweep(tmp_path / "run", agent=agent)


def test_unknown_agents_and_missing_files_are_clear(tmp_path):
    with pytest.raises(UnknownName, match="zoo agent"):
        sweep(tmp_path / "a", agent="ppo-CartPol-v1")
    with pytest.raises(FileNotFoundError, match=r"missing\.zip"):
        sweep(tmp_path / "b", agent=str(tmp_path / "missing.zip"))


def test_reading_back_what_is_not_an_evaluation_fails(tmp_path):
    with pytest.raises(LogError, match=r"evaluation\.json is missing"):
        rw.open_evaluation(tmp_path)
    result = sweep(tmp_path / "run")
    (result.path / "index.json").write_text("{not json")
    with pytest.raises(LogError, match="corrupt"):
        rw.open_evaluation(result.path)


def test_summary_pairs_each_arm_with_its_counterfactual(tmp_path):
    result = sweep(tmp_path / "run", shifts=["reward_noise(std=2.0)"])
    summary = result.summary(alphas=[1.0])
    episodes = result.episodes()
    noisy = episodes[episodes["shift"] == "reward_noise(std=2.0)"]
    row = summary.loc[("agent", "reward_noise(std=2.0)")]
    assert row["episodes"] == len(noisy) == 6
    assert row["delta"] == pytest.approx((noisy["return"] - noisy["baseline_return"]).mean())
    assert row["LCB(1.0)"] == pytest.approx(row["mean"] - row["MAD"])


@pytest.mark.slow
def test_atari_lives_count_as_episodes(tmp_path):
    pytest.importorskip("ale_py")
    import ale_py

    gym.register_envs(ale_py)
    breakout = gym.make("ALE/Breakout-v5")
    agent = CallableAgent(lambda obs, rng: int(rng.integers(4)), breakout.observation_space, breakout.action_space)
    result = rw.evaluate(
        agent,
        "ALE/Breakout-v5",
        [],
        episodes=3,
        seeds=1,
        out=tmp_path / "run",
        env=EnvSetup(lives_as_episodes=True),
        execution=Execution(workers=1, progress=False),
    )
    episodes = rw.read_log(result.path / result.index["path"].iloc[0]).episodes
    assert len(episodes) == 3 and episodes["terminated"].all()
    # one game: only its first life is reset with a seed
    assert episodes["seed"].iloc[0] == episode_seed(0, 0) and episodes["seed"].iloc[1:].isna().all()
    with pytest.raises(InvalidArgument, match="lives"):
        rw.evaluate(
            CallableAgent(balance, *SPACES),
            "CartPole-v1",
            [],
            episodes=1,
            seeds=1,
            out=tmp_path / "cp",
            env=EnvSetup(lives_as_episodes=True),
            execution=Execution(workers=1, progress=False),
        )
