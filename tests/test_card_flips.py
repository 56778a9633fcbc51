"""The card's flip rates: from the logs for attacks and action noise, on the clean arm's states for the rest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers.ladders import Arm
from rlwrappers.studies.design import Stack
from rlwrappers.studies.flips import BOX_FLIP, PER_SEED, STRIDE, flip_rates
from rlwrappers.studies.recipe import EnvRecipe


def _evaluate(agent: str, env_id: str, arms: list[Arm], out: Path) -> rw.Evaluation:
    return rw.evaluate({"agent": agent}, env_id, {arm.name: arm.entries for arm in arms}, episodes=1, seeds=2, out=out)


def test_each_family_is_compared_with_the_clean_policy_on_the_same_observations(tmp_path: Path) -> None:
    arms = [
        Arm("obs_noise", None, 1, [{"name": "obs_noise", "std": 0.0}]),
        Arm("obs_noise", None, 2, [{"name": "obs_noise", "std": 1.0}]),
        Arm("param_noise", None, 1, [{"name": "param_noise", "std": 0.0}]),
        Arm("param_noise", None, 2, [{"name": "param_noise", "std": 0.5}]),
        Arm("action_noise", None, 3, [{"name": "action_noise", "p": 0.5}]),
        Arm("init_noise", None, 1, [{"name": "init_noise", "std": 0.05}]),
    ]
    evaluation = _evaluate("ppo-CartPole-v1", "CartPole-v1", arms, tmp_path)
    rates = flip_rates("ppo-CartPole-v1", evaluation, arms)
    assert rates["obs_noise@1"] == 0.0 and rates["param_noise@1"] == 0.0  # no shift: no flip
    assert rates["obs_noise@2"] > 0.2 and rates["param_noise@2"] > 0.1
    assert "init_noise@1" not in rates  # it changes the states, not what the agent makes of one
    steps = [
        rw.read_log(evaluation.path / path).steps
        for path in evaluation.index.loc[evaluation.index["shift"] == "action_noise@3", "path"]
    ]
    executed = np.concatenate([s["action_noise.executed"].to_numpy(dtype=np.int64) for s in steps])
    chosen = np.concatenate([s["action"].to_numpy(dtype=np.int64) for s in steps])
    assert rates["action_noise@3"] == np.mean(executed != chosen)  # a random action is sometimes the agent's own
    assert 0.1 < rates["action_noise@3"] < 0.4
    assert flip_rates("ppo-CartPole-v1", evaluation, arms) == rates  # every draw is seeded


def test_a_box_action_flips_only_when_it_moves_by_a_tenth_of_half_its_range(tmp_path: Path) -> None:
    # Pendulum's torque spans [-2, 2]: a flip moves it by more than 0.2.
    arms = [
        Arm("action_noise", None, 1, [{"name": "action_noise", "std": 0.01}]),
        Arm("action_noise", None, 5, [{"name": "action_noise", "std": 1.0}]),
    ]
    evaluation = _evaluate("td3-Pendulum-v1", "Pendulum-v1", arms, tmp_path)
    rates = flip_rates("td3-Pendulum-v1", evaluation, arms)
    assert rates["action_noise@1"] == 0.0  # every executed torque differs, by about 0.01: no flip
    assert rates["action_noise@5"] > 0.5
    assert BOX_FLIP == 0.1


def test_the_states_are_every_stride_th_of_the_first_clean_episode(tmp_path: Path) -> None:
    arms = [Arm("obs_noise", None, 2, [{"name": "obs_noise", "std": 1.0}])]
    evaluation = _evaluate("ppo-CartPole-v1", "CartPole-v1", arms, tmp_path)
    rate = flip_rates("ppo-CartPole-v1", evaluation, arms)["obs_noise@2"]
    # CartPole's episodes last 500 steps: each seed gives PER_SEED states, so the rate is a count over 2 * PER_SEED.
    assert STRIDE * PER_SEED <= 500
    assert (rate * 2 * PER_SEED) == pytest.approx(round(rate * 2 * PER_SEED), abs=1e-9)


def test_a_replayed_episode_that_strays_from_its_log_is_refused(tmp_path: Path) -> None:
    from rlwrappers.error import LogError
    from rlwrappers.studies.arms import replay
    from rlwrappers.studies.design import BASELINE, episode_seed

    evaluation = _evaluate("ppo-CartPole-v1", "CartPole-v1", [], tmp_path)
    path, steps = evaluation.logged_episode(BASELINE, 1, 0)
    env, _ = EnvRecipe.of(evaluation.settings, BASELINE, Stack()).build()
    played = list(replay(env, steps, episode_seed(1, 0), path))
    assert len(played) == len(steps) and np.array_equal(played[0], env.reset(seed=episode_seed(1, 0))[0])
    bad = steps.copy()
    bad.loc[bad.index[5], "reward"] = 2.0  # as if the log held another episode
    with pytest.raises(LogError, match="at step 5"):
        list(replay(env, bad, episode_seed(1, 0), path))
