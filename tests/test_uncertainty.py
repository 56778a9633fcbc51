"""Uncertainty sets: their boxes, specs and grids on the real envs, nominal values, dead zones, the command line."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers import cli
from rlwrappers.error import InvalidArgument, UnknownName
from rlwrappers.uncertainty import SETS
from rlwrappers.wrappers.state import Intervene


def test_the_m2td3_boxes_are_the_published_ones() -> None:
    expected = {
        "Hopper:3": {"world_friction": (0.1, 3.0), "torso_mass": (0.1, 3.0), "thigh_mass": (0.1, 4.0)},
        "HalfCheetah:1": {"world_friction": (0.1, 3.0)},
        "HalfCheetah:3": {"world_friction": (0.1, 4.0), "torso_mass": (0.1, 7.0), "back_thigh_mass": (0.1, 3.0)},
        "Walker2d:3": {"world_friction": (0.1, 4.0), "torso_mass": (0.1, 5.0), "thigh_mass": (0.1, 6.0)},
        "Ant:3": {"torso_mass": (0.1, 3.0), "front_left_leg_mass": (0.01, 3.0), "front_right_leg_mass": (0.01, 3.0)},
        "HumanoidStandup:2": {"torso_mass": (0.1, 16.0), "right_foot_mass": (0.1, 8.0)},
        "HumanoidStandup:3": {"torso_mass": (0.1, 16.0), "left_thigh_mass": (0.1, 5.0), "right_foot_mass": (0.1, 8.0)},
        "InvertedPendulum:2": {"pole_mass": (1.0, 31.0), "cart_mass": (1.0, 11.0)},
    }
    for name, bounds in expected.items():
        assert SETS[name].bounds == bounds
    families = {box.family for box in SETS.values()}
    assert {"CartPole", "Pendulum", "Acrobot", "MountainCar", "MountainCarContinuous"} <= families


@pytest.mark.parametrize("name", sorted(SETS))
def test_each_set_draws_inside_its_box_on_its_env(name: str) -> None:
    box = SETS[name]
    if box.env_id.endswith("-v5"):
        pytest.importorskip("mujoco")
    env = rw.wrap(gym.make(box.env_id), box.spec())
    record = env.reset(seed=0)[1]["rlwrappers"]["dynamics_shift"]
    for d in box.dims:
        assert d.low <= record[f"values.{d.key}"] <= d.high
    corner = box.grid(2)[-1]
    at = rw.wrap(gym.make(box.env_id), box.spec_at(corner))
    at.reset(seed=0)
    assert box.read(at) == {d.name: d.high for d in box.dims}  # the corner's values, set exactly
    env.close()
    at.close()


def test_grids_hold_both_bounds_and_every_combination() -> None:
    box = rw.uncertainty_set("CartPole", dims=2)
    grid = box.grid(10)
    assert len(grid) == 100 and grid[0] == {"length": 0.25, "masspole": 0.05}
    assert grid[-1] == {"length": 1.0, "masspole": 0.2}
    assert sorted({point["length"] for point in grid}) == np.linspace(0.25, 1.0, 10).tolist()
    assert len(box.grid([3, 4])) == 12
    with pytest.raises(InvalidArgument, match="`points` must be an int >= 2"):
        box.grid(1)
    with pytest.raises(InvalidArgument, match="lies outside CartPole:2's"):
        box.spec_at({"length": 2.0, "masspole": 0.1})


def test_sets_say_whether_they_hold_the_nominal_env() -> None:
    pytest.importorskip("mujoco")
    hopper = rw.uncertainty_set("Hopper-v5", dims=3)
    assert hopper.nominal()["torso_mass"] == pytest.approx(3.66519, abs=1e-5)
    assert hopper.holds_nominal() == {"world_friction": True, "torso_mass": False, "thigh_mass": False}
    assert all(rw.uncertainty_set("CartPole", dims=3).holds_nominal().values())


def _hopper(friction: float, seed: int) -> np.ndarray:
    env = rw.wrap(gym.make("Hopper-v5"), f"dynamics_shift(values={{'geom_friction[0, 0]': {friction}}})")
    rng = np.random.default_rng(seed)
    observations = [env.reset(seed=seed)[0]]
    done = False
    while not done:
        obs, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, 3))
        observations.append(obs)
        done = terminated or truncated
    return np.stack(observations)


def test_hoppers_floor_friction_is_dead_below_its_foots() -> None:
    pytest.importorskip("mujoco")
    assert rw.uncertainty_set("Hopper", dims=1).dead_zones() == {"world_friction": (0.1, 2.0)}
    assert rw.uncertainty_set("Walker2d", dims=1).dead_zones() == {"world_friction": (0.1, 1.9)}
    assert rw.uncertainty_set("HalfCheetah", dims=1).dead_zones() == {}  # its friction is every geom's
    for seed in range(3):
        low = _hopper(0.1, seed)
        assert np.array_equal(_hopper(1.99, seed), low)  # anywhere in the dead zone: the same run, bit for bit
        above = _hopper(2.5, seed)
        assert above.shape != low.shape or not np.array_equal(above, low)


def test_sets_are_found_by_family_id_or_name() -> None:
    assert rw.uncertainty_set("Hopper") is SETS["Hopper:3"]
    assert rw.uncertainty_set("Hopper-v5", dims=1) is rw.uncertainty_set("Hopper:1") is SETS["Hopper:1"]
    with pytest.raises(UnknownName, match="Did you mean `Hopper`"):
        rw.uncertainty_set("Hoper")
    with pytest.raises(UnknownName, match=r"InvertedPendulum has uncertainty sets of \[1, 2\] dimensions"):
        rw.uncertainty_set("InvertedPendulum", dims=3)


def test_the_command_line_lists_the_sets(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("mujoco")
    assert cli.main(["list", "--sets"]) == 0
    out = capsys.readouterr().out
    assert "Hopper:3" in out and "torso_mass [0.1, 3] (nominal 3.665, outside)" in out
    assert "dead zone: world_friction from 0.1 to 2 changes nothing" in out
    assert "CartPole:3" in out and "Perturbations" not in out


#: The sets of the MuJoCo tasks M2TD3 leaves out, at their size with every knob.
HALVES = ["Humanoid:2", "InvertedDoublePendulum:3", "Pusher:3", "Reacher:2", "Swimmer:2"]


def _run_at(box: Any, key: str, value: float) -> np.ndarray:
    """Observations of 60 steps of seeded random actions with one knob set; Pusher's object is pushed first."""
    env = rw.wrap(gym.make(box.env_id), f"dynamics_shift(values={{{key!r}: {value!r}}})")
    if key in ("dof_damping[7]", "dof_damping[8]"):  # the object's slides: only a moving object feels them
        dof = key.removeprefix("dof_damping[").removesuffix("]")
        env = Intervene(env, f"qvel[{dof}]=1.0")
    rng = np.random.default_rng(0)
    observations = [env.reset(seed=0)[0]]
    for _ in range(60):
        obs, _, terminated, truncated, _ = env.step(rng.uniform(env.action_space.low, env.action_space.high))
        observations.append(obs)
        if terminated or truncated:
            break
    return np.stack(observations)


@pytest.mark.parametrize("name", HALVES)
def test_every_knob_of_the_other_mujoco_tasks_changes_the_run(name: str) -> None:
    pytest.importorskip("mujoco")
    box = SETS[name]
    assert box.source == rw.uncertainty.HALF_TO_TWICE and all(box.holds_nominal().values())
    nominal = box.nominal()
    for d in box.dims:
        assert d.low == pytest.approx(nominal[d.name] / 2, rel=0.02)  # half to twice the model's own value
        low, high = _run_at(box, d.key, d.low), _run_at(box, d.key, d.high)
        steps = min(len(low), len(high))
        assert np.abs(low[:steps] - high[:steps]).max() > 1e-3, d.name
