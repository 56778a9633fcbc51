"""The SB3 callback logs what the perturbations did during training: activity, drawn values, returns by bin."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import rlwrappers as rw
from rlwrappers.error import InvalidArgument

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure

from rlwrappers.logs.training import PerturbationCallback


def train(tmp_path: Path, callback: PerturbationCallback) -> list[dict[str, str]]:
    env_id = rw.register(
        "CartPole-v1",
        "dynamics_shift(values={'length': uniform(0.25, 1.0)})",
        "action_noise(p=0.5, when=window(start=0, stop=5))",
        name="CallbackTest",
    )
    model = PPO("MlpPolicy", make_vec_env(env_id, n_envs=2, seed=0), n_steps=128, seed=0)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(768, callback=callback)
    with open(tmp_path / "progress.csv") as f:
        return list(csv.DictReader(f))


def test_the_callback_records_activity_draws_and_returns_by_bin(tmp_path: Path) -> None:
    rows = train(tmp_path, PerturbationCallback())
    last = {k: v for k, v in rows[-1].items() if k.startswith("rlwrappers/") and v}
    assert float(last["rlwrappers/dynamics_shift/active"]) == 1.0  # always on
    assert 0.0 < float(last["rlwrappers/action_noise/active"]) < 1.0  # the first 5 steps of each episode
    assert 0.0 <= float(last["rlwrappers/action_noise/replaced"]) <= 1.0
    quarters = {k for k in last if k.startswith("rlwrappers/dynamics_shift/return_by_values.length/")}
    assert quarters == {f"rlwrappers/dynamics_shift/return_by_values.length/q{k}" for k in range(1, 5)}
    assert all(float(last[k]) >= 8 for k in quarters)  # CartPole episodes last at least 8 steps


def test_given_edges_name_the_bins_and_bad_edges_are_refused(tmp_path: Path) -> None:
    rows = train(tmp_path, PerturbationCallback(bins={"values.length": [0.25, 0.5, 1.0]}))
    keys = {k for row in rows for k, v in row.items() if "return_by_" in k and v}
    assert keys <= {
        "rlwrappers/dynamics_shift/return_by_values.length/0.25-0.5",
        "rlwrappers/dynamics_shift/return_by_values.length/0.5-1",
    }
    assert keys  # at least one bin holds finished episodes
    with pytest.raises(InvalidArgument, match="at least two increasing edges"):
        PerturbationCallback(bins={"values.length": [1.0, 0.5]})
