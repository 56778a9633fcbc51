"""A learned adversary: its channels on real envs, the two Gymnasium views of the game, the PettingZoo one, RARL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from rlwrappers.error import IncompatibleSpace, InvalidArgument
from rlwrappers.wrappers.rarl import (
    ActionDisturbance,
    AgainstProtagonist,
    BodyForces,
    WithAdversary,
    two_player_env,
)

ROOT = Path(__file__).resolve().parents[1]


def full_push(obs: np.ndarray) -> np.ndarray:
    return np.ones(1, np.float32)


def idle(obs: np.ndarray) -> np.ndarray:
    return np.zeros(1, np.float32)


def test_an_action_disturbance_moves_the_action_within_its_bounds() -> None:
    env = WithAdversary(gym.make("Pendulum-v1"), ActionDisturbance(0.2), full_push)
    env.reset(seed=0)
    info = env.step(np.array([0.0], np.float32))[4]
    assert env.unwrapped.last_u == pytest.approx(0.2 * 2.0)  # type: ignore[attr-defined]  # a fifth of half of [-2, 2]
    assert info["adversary"].tolist() == [1.0]
    env.step(np.array([2.0], np.float32))
    assert env.unwrapped.last_u == pytest.approx(2.0)  # type: ignore[attr-defined]  # clipped to the bound
    with pytest.raises(IncompatibleSpace, match="bounded Box action space"):
        WithAdversary(gym.make("CartPole-v1"), ActionDisturbance(), full_push)
    with pytest.raises(InvalidArgument, match="`scale` must lie in"):
        ActionDisturbance(1.5)


def test_the_adversary_earns_the_protagonists_reward_negated() -> None:
    plain = gym.make("Pendulum-v1")
    plain.reset(seed=3)
    game = AgainstProtagonist(gym.make("Pendulum-v1"), ActionDisturbance(0.5), lambda obs: np.array([1.0], np.float32))
    game.reset(seed=3)
    for push in (-1.0, 0.5, 1.0):
        expected = plain.step(np.array([min(1.0 + 0.5 * 2.0 * push, 2.0)], np.float32))[1]
        _, reward, _, _, info = game.step(np.array([push], np.float32))
        assert reward == -expected and info["protagonist_reward"] == expected


def test_body_forces_push_mujoco_bodies_for_one_step() -> None:
    pytest.importorskip("mujoco")
    channel = BodyForces(("pole",), magnitude=3.0, axes="x")
    pushed = WithAdversary(gym.make("InvertedPendulum-v5"), channel, full_push)
    still = WithAdversary(gym.make("InvertedPendulum-v5"), channel, idle)
    a, b = pushed.reset(seed=0)[0], still.reset(seed=0)[0]
    assert np.array_equal(a, b)
    action = np.zeros(1, np.float32)
    assert not np.array_equal(pushed.step(action)[0], still.step(action)[0])
    assert not pushed.unwrapped.data.xfrc_applied.any()  # type: ignore[attr-defined]  # held for one step only
    with pytest.raises(InvalidArgument, match=r"`bodies` \['wheel'\] are not bodies of the model"):
        WithAdversary(gym.make("InvertedPendulum-v5"), BodyForces(("wheel",)), full_push)
    with pytest.raises(IncompatibleSpace, match="body forces need a MuJoCo env"):
        WithAdversary(gym.make("Pendulum-v1"), BodyForces(("pole",)), full_push)


def test_the_two_player_env_passes_pettingzoos_api_test() -> None:
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    parallel_api_test(two_player_env(gym.make("Pendulum-v1"), ActionDisturbance(0.3)), num_cycles=50)
    game = two_player_env(gym.make("Pendulum-v1"), ActionDisturbance(0.3))
    game.reset(seed=0)
    _, rewards, *_ = game.step({"protagonist": np.zeros(1, np.float32), "adversary": np.ones(1, np.float32)})
    assert rewards["adversary"] == -rewards["protagonist"] > 0  # Pendulum pays costs: the adversary gains


@pytest.mark.slow
def test_the_rarl_script_trains_both_players_and_finds_the_worst_case(tmp_path: Path) -> None:
    pytest.importorskip("mujoco")
    args = ["--iterations", "2", "--steps", "128", "--rollout", "128", "--points", "3", "--holdout", "5"]
    runs = []
    for name in ("a", "b"):
        done = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "rarl_ppo.py"), *args, "--out", str(tmp_path / name)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        runs.append(done.stdout)
        assert (tmp_path / name / "protagonist.zip").exists() and (tmp_path / name / "adversary.zip").exists()
    assert "iteration 2/2: 256 steps each" in runs[0] and "worst case over InvertedPendulum:1:" in runs[0]
    assert runs[0] == runs[1]  # seeded: the same players, the same worst case
