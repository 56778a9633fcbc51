"""Recorder and load: the log layout, its header, its rows, and logs of killed processes."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium.envs.registration import EnvSpec

import rlwrappers as rw
from rlwrappers import logs
from rlwrappers.core import INFO_KEY, layers
from rlwrappers.error import LogError
from rlwrappers.logs import Log, schema

HELPER = Path(__file__).with_name("helpers_kill_recorder.py")
TIME_COLUMNS = ["start_time", "wall_time"]


def _helper() -> Any:
    spec = importlib.util.spec_from_file_location("helpers_kill_recorder", HELPER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(env: gym.Env, seeds: list[int | None], steps: int, actions: Any) -> list[dict[str, Any]]:
    """Runs one episode per seed, at most ``steps`` steps each; returns what the agent saw, per episode."""
    episodes = []
    for seed in seeds:
        _, info = env.reset(seed=seed)
        ep: dict[str, Any] = {"reset": info.get(INFO_KEY, {}), "actions": [], "rewards": [], "records": []}
        for _ in range(steps):
            action = actions()
            _, reward, terminated, truncated, info = env.step(action)
            ep["actions"].append(action)
            ep["rewards"].append(float(reward))
            ep["records"].append(info.get(INFO_KEY, {}))
            if terminated or truncated:
                ep["end"] = (terminated, truncated)
                break
        episodes.append(ep)
    return episodes


def _discrete(seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    return lambda: int(rng.integers(2))


class _MultiDiscreteEnv(gym.Env):
    """Five steps per episode, MultiDiscrete actions, reward = sum of the action."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    action_space = gym.spaces.MultiDiscrete([3, 4])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.full(2, self.t, np.float32)
        return obs, float(np.sum(action)), False, self.t >= 5, {}


def _multidiscrete_env() -> gym.Env:
    """The library's SpaceEnv where it ships one, else the small env above."""
    for module in ("rlwrappers.testing", "rlwrappers.testing.env"):
        try:
            space_env = getattr(importlib.import_module(module), "SpaceEnv", None)
        except ImportError:
            continue
        if space_env is not None:
            observations = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
            return space_env(observations, gym.spaces.MultiDiscrete([3, 4]), episode_length=5)
    return _MultiDiscreteEnv()


# -- layout and header ---------------------------------------------------------------------------------------


def test_close_writes_meta_and_parquet_tables(tmp_path):
    env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)"), tmp_path / "run")
    _run(env, [0, 1], 20, _discrete())
    assert sorted(os.listdir(tmp_path / "run")) == ["meta.json"] + (
        ["stream.arrows"] if (tmp_path / "run" / "stream.arrows").exists() else []
    ) + ["writer.lock"]
    env.close()
    assert sorted(os.listdir(tmp_path / "run")) == ["episodes.parquet", "meta.json", "steps.parquet"]
    import pyarrow.parquet as pq

    header = json.loads((tmp_path / "run" / "meta.json").read_text())
    for name in ("steps", "episodes"):
        metadata = pq.read_schema(tmp_path / "run" / f"{name}.parquet").metadata
        assert json.loads(metadata[b"rlwrappers"]) == header
    log = rw.read_log(tmp_path / "run")
    assert isinstance(log, Log)
    assert log.path == tmp_path / "run"
    assert len(log.episodes) == 2
    assert len(log.steps) == log.episodes["length"].sum()


def test_load_episodes_reads_the_episodes_table_alone_finished_or_not(tmp_path):
    env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)"), tmp_path / "run")
    _run(env, [0, 1], 20, _discrete())
    pd.testing.assert_frame_equal(logs.read_episodes(tmp_path / "run"), rw.read_log(tmp_path / "run").episodes)
    env.close()
    pd.testing.assert_frame_equal(logs.read_episodes(tmp_path / "run"), rw.read_log(tmp_path / "run").episodes)
    with pytest.raises(LogError, match="missing"):
        logs.read_episodes(tmp_path)


def test_header_describes_the_run_and_rebuilds_the_stack(tmp_path):
    base = gym.make("CartPole-v1")
    inner = rw.wrap(
        base,
        "obs_noise(std=0.1, when=starting(episode=1))",
        {"name": "action_noise", "p": 0.3, "label": "flip"},
        "reward_noise(std=0.2, when='window(start=2, stop=6) | prob(p=0.1)')",
    )
    env_to_record = rw.StickyAction(inner, p=0.5, duration=(1, 3), when="bursts(p=0.2, duration=(2, 4))")
    before = time.time()
    env = rw.Recorder(env_to_record, tmp_path / "run", metadata={"agent": "random"})
    _run(env, [5, 6, None], 30, _discrete())
    env.close()
    meta = rw.read_log(tmp_path / "run").meta

    assert meta["format"] == schema.FORMAT
    assert meta["rlwrappers"] == rw.__version__
    assert meta["gymnasium"] == gym.__version__
    assert meta["env_id"] == "CartPole-v1"
    assert meta["metadata"] == {"agent": "random"}
    assert before <= meta["start_time"] <= meta["end_time"] <= time.time()
    assert meta["seeds"] == [5, 6]
    assert meta["episodes"] == 3
    assert meta["action_kind"] == "int"
    assert meta["action_space"] == "Discrete(2)"

    by_label = {p["label"]: p for p in meta["perturbations"]}
    assert list(by_label) == ["sticky_action", "obs_noise", "flip", "reward_noise"]
    assert by_label["sticky_action"]["layer"] == 0 and by_label["obs_noise"]["layer"] == 1
    assert by_label["sticky_action"]["params"] == {"p": 0.5, "duration": [1, 3]}
    assert by_label["sticky_action"]["when"] == "bursts(p=0.2, duration=(2, 4))"
    assert by_label["obs_noise"]["when"] == "starting(episode=1)"
    assert by_label["flip"]["name"] == "action_noise"
    assert by_label["flip"]["params"]["p"] == 0.3
    assert by_label["flip"]["step_fields"] == {"executed": "action", "replaced": "bool"}
    assert by_label["reward_noise"]["when"] == "window(start=2, stop=6) | prob(p=0.1)"
    assert by_label["reward_noise"]["channel"] == "reward"

    rebuilt = gym.make(EnvSpec.from_json(json.dumps(meta["spec"])))
    assert str(rebuilt) == meta["stack"] == str(env_to_record)
    assert [layer.specs for layer in layers(rebuilt)] == [layer.specs for layer in layers(env_to_record)]
    assert [layer.labels for layer in layers(rebuilt)] == [layer.labels for layer in layers(env_to_record)]


def test_rebuilt_stack_replays_the_logged_run(tmp_path):
    make = lambda: rw.wrap(  # noqa: E731
        gym.make("Pendulum-v1"),
        "action_noise(std=0.2, when=prob(p=0.5))",
        "reward_noise(std=0.3)",
        "init_noise(std=0.1)",
    )
    rng = np.random.default_rng(1)
    actions = [rng.uniform(-2, 2, size=1).astype(np.float32) for _ in range(40)]
    it = iter(actions)
    env = rw.Recorder(make(), tmp_path / "run")
    _run(env, [3, 4], 20, lambda: next(it))
    env.close()
    log = rw.read_log(tmp_path / "run")

    it = iter(actions)
    replay = _run(gym.make(EnvSpec.from_json(json.dumps(log.meta["spec"]))), [3, 4], 20, lambda: next(it))
    np.testing.assert_array_equal(log.steps["reward"].to_numpy(), [r for ep in replay for r in ep["rewards"]])
    np.testing.assert_array_equal(
        np.stack(log.episodes["init_noise.delta"].to_list()), [ep["reset"]["init_noise"]["delta"] for ep in replay]
    )


def test_registered_id_header_rebuilds(tmp_path):
    env = rw.Recorder(gym.make("rlwrappers/CartPole-Sticky-v1"), tmp_path / "run")
    _run(env, [0], 5, _discrete())
    env.close()
    meta = rw.read_log(tmp_path / "run").meta
    assert meta["env_id"] == "rlwrappers/CartPole-Sticky-v1"
    assert [p["spec"] for p in meta["perturbations"]] == ["sticky_action"]
    rebuilt = gym.make(EnvSpec.from_json(json.dumps(meta["spec"])))
    assert rebuilt.spec.id == "rlwrappers/CartPole-Sticky-v1"
    assert str(rebuilt) == meta["stack"]


# -- rows ----------------------------------------------------------------------------------------------------


def test_step_rows_match_what_the_agent_saw(tmp_path):
    inner = rw.wrap(
        gym.make("CartPole-v1"),
        "obs_noise(std=0.05, when=window(start=1, stop=4))",
        "action_noise(p=0.5)",
        "reward_noise(std=0.2, when=prob(p=0.5), label='rn')",
    )
    env = rw.Recorder(rw.StickyAction(inner, p=0.3, duration=(1, 2)), tmp_path / "run")
    seen = _run(env, [0, 1, 2], 40, _discrete(7))
    env.close()
    steps = rw.read_log(tmp_path / "run").steps

    rows = [
        (e, t, a, r, rec)
        for e, ep in enumerate(seen)
        for t, (a, r, rec) in enumerate(zip(ep["actions"], ep["rewards"], ep["records"], strict=True))
    ]
    assert len(steps) == len(rows)
    assert steps.columns.tolist() == [
        "episode", "step", "action", "reward", "terminated", "truncated",
        "sticky_action.active", "obs_noise.active", "action_noise.active", "rn.active",
        "sticky_action.executed", "sticky_action.stuck", "action_noise.executed", "action_noise.replaced", "rn.noise",
    ]  # fmt: skip
    counts = dict.fromkeys(["sticky_action", "obs_noise", "action_noise", "rn"], 0)
    for i, (e, t, action, reward, records) in enumerate(rows):
        row = steps.iloc[i]
        assert (row["episode"], row["step"], row["action"], row["reward"]) == (e, t, action, reward)
        for label in counts:
            assert bool(row[f"{label}.active"]) == (label in records), (i, label)
            counts[label] += label in records
        for label, fields in (("sticky_action", ("executed", "stuck")), ("action_noise", ("executed", "replaced"))):
            for f in fields:
                if label in records:
                    assert row[f"{label}.{f}"] == records[label][f]
                else:
                    assert pd.isna(row[f"{label}.{f}"])
        if "rn" in records:
            assert row["rn.noise"] == records["rn"]["noise"]
        else:
            assert math.isnan(row["rn.noise"])
    # every perturbation acted on some steps, and the scheduled ones not on all of them
    assert all(counts.values())
    assert counts["obs_noise"] == 3 * 3 and counts["rn"] < len(rows)


def test_episode_rows(tmp_path):
    env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), "reward_noise(std=0.5)"), tmp_path / "run")
    seen = _run(env, [11, None, 13], 500, _discrete())
    env.close()
    log = rw.read_log(tmp_path / "run")
    episodes = log.episodes
    assert episodes["episode"].tolist() == [0, 1, 2]
    assert episodes["seed"].tolist() == [11, pd.NA, 13]
    assert episodes["entropy"].map(list).tolist() == [[11], [11], [13]]
    assert episodes["length"].tolist() == [len(ep["rewards"]) for ep in seen]
    assert episodes["terminated"].all() and not episodes["truncated"].any() and episodes["complete"].all()
    for e, ep in enumerate(seen):
        per_step = log.steps[log.steps["episode"] == e]["reward"].to_numpy()
        np.testing.assert_array_equal(per_step, ep["rewards"])
        assert episodes["return"][e] == pytest.approx(per_step.sum(), abs=1e-12)
        assert episodes["return"][e] != len(per_step)  # the noisy rewards are the ones recorded
    assert (episodes["start_time"].diff().dropna() >= 0).all()
    assert (episodes["wall_time"] >= 0).all()
    assert log.steps.groupby("episode")["terminated"].sum().tolist() == [1, 1, 1]


def test_truncated_episode(tmp_path):
    env = rw.Recorder(gym.make("Pendulum-v1"), tmp_path / "run")
    _run(env, [0], 300, lambda: np.zeros(1, np.float32))
    env.close()
    episodes = rw.read_log(tmp_path / "run").episodes
    assert episodes[["length", "terminated", "truncated", "complete"]].values.tolist() == [[200, False, True, True]]


def test_episodes_cut_by_reset_or_close_are_incomplete(tmp_path):
    env = rw.Recorder(rw.RewardNoise(gym.make("CartPole-v1"), std=0.1), tmp_path / "run")
    env.reset(seed=0)
    for _ in range(3):
        env.step(0)
    env.reset(seed=1)  # cuts episode 0
    for _ in range(4):
        env.step(1)
    env.reset(seed=2)  # cuts episode 1 ...
    env.close()  # ... and close cuts episode 2, before any step
    log = rw.read_log(tmp_path / "run")
    assert log.episodes["complete"].tolist() == [False, False, False]
    assert log.episodes["terminated"].tolist() == [False, False, False]
    assert log.episodes["truncated"].tolist() == [False, False, False]
    assert log.episodes["length"].tolist() == [3, 4, 0]
    assert log.episodes["seed"].tolist() == [0, 1, 2]
    assert log.steps.groupby("episode").size().tolist() == [3, 4]
    assert not log.steps["terminated"].any()


def test_close_cuts_an_open_episode_after_finished_ones(tmp_path):
    env = rw.Recorder(gym.make("CartPole-v1"), tmp_path / "run")
    _run(env, [0], 500, _discrete())
    env.reset(seed=1)
    env.step(0)
    env.step(0)
    env.close()
    episodes = rw.read_log(tmp_path / "run").episodes
    assert episodes["complete"].tolist() == [True, False]
    assert episodes["length"].iloc[1] == 2


def test_discrete_action_column(tmp_path):
    env = rw.Recorder(rw.ActionNoise(gym.make("CartPole-v1"), p=1.0), tmp_path / "run")
    seen = _run(env, [0], 10, _discrete(3))
    env.close()
    steps = rw.read_log(tmp_path / "run").steps
    assert str(steps["action"].dtype) == "Int64"
    assert steps["action"].tolist() == seen[0]["actions"]
    assert steps["action_noise.executed"].tolist() == [int(r["action_noise"]["executed"]) for r in seen[0]["records"]]
    assert steps["action_noise.replaced"].all()


def test_box_action_column(tmp_path):
    env = rw.Recorder(rw.ActionNoise(gym.make("Pendulum-v1"), std=0.5), tmp_path / "run")
    rng = np.random.default_rng(0)
    seen = _run(env, [0], 10, lambda: rng.uniform(-2, 2, size=1).astype(np.float32))
    env.close()
    log = rw.read_log(tmp_path / "run")
    assert log.meta["action_kind"] == "float[]"
    for i, action in enumerate(seen[0]["actions"]):
        logged = log.steps["action"].iloc[i]
        assert logged.dtype == np.float64 and logged.shape == (1,)
        np.testing.assert_array_equal(logged, action.astype(np.float64))
        executed = log.steps["action_noise.executed"].iloc[i]
        np.testing.assert_array_equal(
            executed, np.asarray(seen[0]["records"][i]["action_noise"]["executed"], np.float64)
        )
        assert not np.array_equal(executed, logged)
        assert -2.0 <= executed[0] <= 2.0


def test_box_action_is_copied_when_the_agent_reuses_its_buffer(tmp_path):
    env = rw.Recorder(gym.make("Pendulum-v1"), tmp_path / "run")
    env.reset(seed=0)
    buffer = np.zeros(1, np.float32)
    for i in range(5):
        buffer[0] = i / 4
        env.step(buffer)
    env.close()
    logged = rw.read_log(tmp_path / "run").steps["action"]
    assert [a[0] for a in logged] == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_multidiscrete_action_column(tmp_path):
    base = _multidiscrete_env()
    env = rw.Recorder(rw.ActionNoise(base, p=0.5, per_element=True), tmp_path / "run")
    rng = np.random.default_rng(0)
    seen = _run(env, [0, 1], 5, lambda: rng.integers([0, 0], [3, 4]))
    env.close()
    log = rw.read_log(tmp_path / "run")
    assert log.meta["action_kind"] == "int[]"
    actions = [a for ep in seen for a in ep["actions"]]
    executed = [r["action_noise"]["executed"] for ep in seen for r in ep["records"]]
    assert len(log.steps) == len(actions) == 10
    for i in range(len(actions)):
        assert log.steps["action"].iloc[i].dtype == np.int64
        np.testing.assert_array_equal(log.steps["action"].iloc[i], actions[i])
        np.testing.assert_array_equal(log.steps["action_noise.executed"].iloc[i], executed[i])
        assert base.action_space.contains(
            np.asarray(log.steps["action_noise.executed"].iloc[i], base.action_space.dtype)
        )
    assert any(not np.array_equal(a, x) for a, x in zip(actions, executed, strict=True))


def test_log_without_perturbations(tmp_path):
    env = rw.Recorder(gym.make("MountainCar-v0"), tmp_path / "run")
    seen = _run(env, [0, 1], 7, _discrete())
    env.close()
    log = rw.read_log(tmp_path / "run")
    assert log.meta["perturbations"] == []
    assert log.meta["spec"]["additional_wrappers"] == []
    assert log.steps.columns.tolist() == ["episode", "step", "action", "reward", "terminated", "truncated"]
    assert log.episodes.columns.tolist() == [
        "episode", "seed", "entropy", "return", "length", "terminated", "truncated", "complete", "start_time",
        "wall_time",
    ]  # fmt: skip
    assert log.steps["reward"].tolist() == [r for ep in seen for r in ep["rewards"]]
    assert log.episodes["entropy"].map(list).tolist() == [[], []]
    assert log.episodes["return"].tolist() == [-7.0, -7.0]


def test_reset_fields_go_to_the_episodes_table(tmp_path):
    env = rw.Recorder(
        rw.InitialStateNoise(gym.make("CartPole-v1"), std=0.05, when="starting(episode=1)"), tmp_path / "run"
    )
    seen = _run(env, [0, 1, 2], 5, _discrete())
    env.close()
    episodes = rw.read_log(tmp_path / "run").episodes
    assert episodes["init_noise.active"].tolist() == [False, True, True]
    assert episodes["init_noise.delta"].iloc[0] is None
    for e in (1, 2):
        delta = seen[e]["reset"]["init_noise"]["delta"]
        assert len(delta) == 4
        np.testing.assert_array_equal(episodes["init_noise.delta"].iloc[e], delta)
    assert not np.array_equal(episodes["init_noise.delta"].iloc[1], episodes["init_noise.delta"].iloc[2])
    steps = rw.read_log(tmp_path / "run").steps
    assert not steps["init_noise.active"].any()  # acts only at reset


def test_same_seeds_give_identical_logs(tmp_path):
    def one(path):
        stack = rw.wrap(
            gym.make("CartPole-v1"),
            "obs_noise(std=0.05, when=prob(p=0.3))",
            "action_noise(p=0.2)",
            "sticky_action(p=0.3, duration=(1, 3), when=bursts(p=0.2, duration=(2, 5)))",
            "reward_noise(std=0.1)",
            "init_noise(std=0.05)",
            "dynamics_shift(scales={'length': 1.5}, when=starting(step=5))",
        )
        env = rw.Recorder(stack, path)
        _run(env, [0, 1, None, 7], 60, _discrete(4))
        env.close()
        return rw.read_log(path)

    a, b = one(tmp_path / "a"), one(tmp_path / "b")
    assert len(a.steps) > 50
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.episodes.drop(columns=TIME_COLUMNS), b.episodes.drop(columns=TIME_COLUMNS))


def test_unseeded_run_reports_entropy_that_repeats_its_perturbations(tmp_path):
    env = rw.Recorder(rw.RewardNoise(gym.make("CartPole-v1"), std=1.0), tmp_path / "a")
    _run(env, [None], 8, lambda: 0)
    env.close()
    a = rw.read_log(tmp_path / "a")
    assert a.meta["seeds"] == []
    assert pd.isna(a.episodes["seed"].iloc[0])
    (entropy,) = a.episodes["entropy"].iloc[0]
    assert int(entropy) >= 0

    replay = _run(rw.RewardNoise(gym.make("CartPole-v1"), std=1.0), [int(entropy)], 8, lambda: 0)[0]
    n = min(len(a.steps), len(replay["records"]))
    assert n >= 8 or a.episodes["terminated"].iloc[0]
    np.testing.assert_array_equal(
        a.steps["reward_noise.noise"][:n], [r["reward_noise"]["noise"] for r in replay["records"][:n]]
    )


def test_recorder_takes_every_64_bit_seed(tmp_path):
    seed = 2**64 - 12345  # beyond int64; unseeded layers draw 64-bit entropy, so every logged seed fits
    env = rw.Recorder(rw.RewardNoise(gym.make("CartPole-v1"), std=1.0), tmp_path / "run")
    _run(env, [seed], 5, lambda: 0)
    env.close()
    log = rw.read_log(tmp_path / "run")
    assert log.meta["seeds"] == [seed]
    assert int(log.episodes["seed"].iloc[0]) == seed
    assert log.episodes["entropy"].iloc[0].tolist() == [seed]


def test_recorder_rejects_a_seed_it_cannot_log(tmp_path):
    env = rw.Recorder(gym.make("CartPole-v1"), tmp_path / "run")
    with pytest.raises(rw.error.InvalidArgument, match=r"`seed`.*received 1267650600228229401496703205376"):
        env.reset(seed=2**100)


# -- errors --------------------------------------------------------------------------------------------------


def test_load_missing_directory_raises(tmp_path):
    with pytest.raises(LogError, match="no rlwrappers log"):
        rw.read_log(tmp_path / "nothing here")
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError, match=r"meta\.json"):
        rw.read_log(tmp_path / "empty")


def test_load_rejects_a_foreign_header(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(LogError, match="not an rlwrappers log"):
        rw.read_log(tmp_path)


def test_recorder_refuses_to_overwrite_unless_asked(tmp_path):
    env = rw.Recorder(gym.make("CartPole-v1"), tmp_path / "run")
    _run(env, [0, 1, 2], 500, _discrete())
    env.close()
    with pytest.raises(LogError, match="already holds a log"):
        rw.Recorder(gym.make("CartPole-v1"), tmp_path / "run")
    assert len(rw.read_log(tmp_path / "run").episodes) == 3  # untouched

    env = rw.Recorder(gym.make("CartPole-v1"), tmp_path / "run", overwrite=True)
    _run(env, [5], 500, _discrete())
    env.close()
    log = rw.read_log(tmp_path / "run")
    assert log.episodes["seed"].tolist() == [5]
    assert log.meta["seeds"] == [5]


def test_a_log_without_episodes_loads_with_its_columns(tmp_path):
    env = rw.Recorder(rw.RewardNoise(gym.make("CartPole-v1")), tmp_path / "run")
    env.close()
    log = rw.read_log(tmp_path / "run")
    assert len(log.steps) == len(log.episodes) == 0
    assert "reward_noise.noise" in log.steps.columns
    assert "complete" in log.episodes.columns


def test_recorder_argument_errors(tmp_path):
    with pytest.raises(rw.error.InvalidType, match="`path`"):
        rw.Recorder(gym.make("CartPole-v1"), 42)
    with pytest.raises(rw.error.InvalidType, match="`metadata`"):
        rw.Recorder(gym.make("CartPole-v1"), tmp_path / "run", metadata=["not", "a", "dict"])


# -- killed processes ----------------------------------------------------------------------------------------


def _start(path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(HELPER), str(path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_until(proc: subprocess.Popen, done: Any, timeout: float = 60.0) -> list[str]:
    """Reads the recorder's lines until ``done(lines)``; a watchdog kills it if it stalls."""
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        while True:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"recorder exited or stalled after {lines}: {proc.stderr.read()}")
            lines.append(line.strip())
            if done(lines):
                return lines
    finally:
        watchdog.cancel()


def _kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def _assert_consistent(log: Log) -> None:
    episodes, steps = log.episodes, log.steps
    assert episodes["episode"].tolist() == list(range(len(episodes)))
    assert episodes["complete"].all()
    assert len(steps) == episodes["length"].sum()
    assert steps.groupby("episode").size().tolist() == episodes["length"].tolist()
    for e, group in steps.groupby("episode"):
        assert group["step"].tolist() == list(range(len(group)))
        assert episodes["return"][e] == pytest.approx(group["reward"].sum(), abs=1e-12)
        assert group["terminated"].iloc[-1] or group["truncated"].iloc[-1]
    assert episodes["seed"].tolist() == list(range(len(episodes)))


def test_kill_9_mid_episode_keeps_every_finished_episode(tmp_path):
    path = tmp_path / "run"
    proc = _start(path, "3")
    lines = _read_until(proc, lambda lines: lines[-1] == "midway")
    _kill(proc)
    assert lines == ["finished 0", "finished 1", "finished 2", "midway"]
    assert (path / "stream.arrows").exists() and not (path / "steps.parquet").exists()

    log = rw.read_log(path)
    assert len(log.episodes) == 3
    _assert_consistent(log)
    assert "end_time" not in log.meta
    assert log.meta["seeds"] == [0, 1, 2]
    assert [p["label"] for p in log.meta["perturbations"]] == ["obs_noise", "action_noise", "reward_noise"]

    # the killed run holds exactly what an uninterrupted run of three episodes writes
    _helper().record(str(tmp_path / "full"), episodes=3, report=lambda line: None)
    full = rw.read_log(tmp_path / "full")
    pd.testing.assert_frame_equal(log.steps, full.steps)
    pd.testing.assert_frame_equal(log.episodes.drop(columns=TIME_COLUMNS), full.episodes.drop(columns=TIME_COLUMNS))

    logs.compact(path)
    assert sorted(os.listdir(path)) == ["episodes.parquet", "meta.json", "steps.parquet"]
    compacted = rw.read_log(path)
    pd.testing.assert_frame_equal(compacted.steps, log.steps)
    pd.testing.assert_frame_equal(compacted.episodes, log.episodes)
    assert compacted.meta == log.meta


def test_kill_9_at_full_speed_keeps_every_reported_episode(tmp_path):
    path = tmp_path / "run"
    proc = _start(path)
    lines = _read_until(proc, lambda lines: len(lines) >= 12)
    _kill(proc)
    reported = len(lines)
    assert lines[-1] == f"finished {reported - 1}"

    log = rw.read_log(path)
    assert len(log.episodes) >= reported
    _assert_consistent(log)

    logs.compact(path)
    assert not (path / "stream.arrows").exists()
    compacted = rw.read_log(path)
    pd.testing.assert_frame_equal(compacted.steps, log.steps)
    pd.testing.assert_frame_equal(compacted.episodes, log.episodes)


def test_compact_of_a_finished_log_is_a_no_op(tmp_path):
    env = rw.Recorder(gym.make("CartPole-v1"), tmp_path / "run")
    _run(env, [0], 500, _discrete())
    env.close()
    before = rw.read_log(tmp_path / "run")
    logs.compact(tmp_path / "run")
    after = rw.read_log(tmp_path / "run")
    pd.testing.assert_frame_equal(before.steps, after.steps)
    pd.testing.assert_frame_equal(before.episodes, after.episodes)
