"""Dynamics shifts start from the env's base parameters and give them back, however they are stacked or dropped.

The base values are read once per simulated env. Shifts dropped without closing never compound, several
shifts on one parameter compose in the order they switched on, and every reset and close leaves the
parameters that no active shift changes at their base, bit for bit.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers.error import InvalidArgument
from rlwrappers.state import simulators

BASE_LENGTH = 0.5  # CartPole's pole half-length


def parameters(env: gym.Env[Any, Any]) -> dict[str, np.ndarray]:
    return simulators.simulator(env, purpose="test").parameters()


def fresh_parameters() -> dict[str, np.ndarray]:
    return parameters(gym.make("CartPole-v1"))


def assert_base(env: gym.Env[Any, Any]) -> None:
    now, base = parameters(env), fresh_parameters()
    assert now.keys() == base.keys()
    for name in base:
        assert np.array_equal(now[name], base[name]), (name, now[name], base[name])


def shift(scale: float, *, when: str = "always", label: str = "dynamics_shift") -> dict[str, Any]:
    return {"name": "dynamics_shift", "scales": {"length": scale}, "when": when, "label": label}


def step(env: gym.Env[Any, Any], steps: int) -> None:
    for t in range(steps):
        env.step(t % 2)


def test_rewrapping_a_base_env_ten_times_never_compounds() -> None:
    base = gym.make("CartPole-v1")
    for i in range(10):
        env = rw.DynamicsShift(base, scales={"length": 1.5})  # the last one is dropped without closing
        env.reset(seed=i)
        assert base.unwrapped.length == BASE_LENGTH * 1.5
        step(env, 3)
    for i in range(10):
        late = rw.DynamicsShift(base, scales={"length": 1.5}, when="starting(step=2)")
        late.reset(seed=i)
        assert base.unwrapped.length == BASE_LENGTH  # not what the dropped wrapper left
        step(late, 2)
        assert base.unwrapped.length == BASE_LENGTH * 1.5
    late.reset(seed=0)
    assert_base(late)
    late.close()
    assert_base(base)


def test_two_shifts_on_one_parameter_in_one_layer_compose_and_give_it_back() -> None:
    env = rw.wrap(gym.make("CartPole-v1"), shift(2.0, label="a"), shift(3.0, when="starting(step=2)", label="b"))
    for seed in range(3):
        env.reset(seed=seed)
        assert env.unwrapped.length == BASE_LENGTH * 2.0
        step(env, 2)
        assert env.unwrapped.length == BASE_LENGTH * 2.0 * 3.0  # both, in the order they switched on
        assert env.unwrapped.polemass_length == env.unwrapped.masspole * env.unwrapped.length
    env.reset(seed=3)
    assert env.unwrapped.length == BASE_LENGTH * 2.0
    env.close()
    assert_base(env)


def test_shifts_on_one_parameter_in_nested_layers_compose_in_the_order_they_switched_on() -> None:
    inner = rw.DynamicsShift(gym.make("CartPole-v1"), scales={"length": 2.0}, when="starting(step=3)")
    outer = rw.DynamicsShift(inner, values={"length": 0.8}, when="starting(step=1)")
    for seed in range(3):
        outer.reset(seed=seed)
        assert_base(outer)
        step(outer, 1)
        assert outer.unwrapped.length == 0.8  # the outer shift's value
        step(outer, 2)
        assert outer.unwrapped.length == 0.8 * 2.0  # then the inner one scales it
    outer.close()  # closes both layers, the outer one first
    assert_base(outer)


def test_a_later_value_replaces_an_earlier_scaled_one() -> None:
    inner = rw.DynamicsShift(gym.make("CartPole-v1"), scales={"length": 2.0})
    outer = rw.DynamicsShift(inner, values={"length": 0.8}, when="starting(step=1)")
    outer.reset(seed=0)
    assert outer.unwrapped.length == BASE_LENGTH * 2.0
    step(outer, 1)
    assert outer.unwrapped.length == 0.8  # the value replaces what the scale made
    outer.reset(seed=1)
    assert outer.unwrapped.length == BASE_LENGTH * 2.0
    outer.close()
    assert_base(outer)


def test_indexed_keys_change_only_the_elements_they_name_and_give_them_back() -> None:
    pytest.importorskip("mujoco")
    env = rw.wrap(
        gym.make("Hopper-v5"),
        "dynamics_shift(values={'geom_friction[0, 0]': 0.3, 'body_mass[1]': 1.5}, scales={'body_mass[2]': 2.0})",
        "dynamics_shift(scales={'body_mass': 0.5}, label='lighter')",
    )
    base = parameters(gym.make("Hopper-v5"))
    env.reset(seed=0)
    model = env.unwrapped.model  # type: ignore[attr-defined]
    masses = base["body_mass"].copy()
    masses[1], masses[2] = 1.5, masses[2] * 2.0
    np.testing.assert_array_equal(model.body_mass, masses * 0.5)  # the whole-array shift composes after
    friction = base["geom_friction"].copy()
    friction[0, 0] = 0.3
    np.testing.assert_array_equal(model.geom_friction, friction)
    env.close()
    for name in ("body_mass", "geom_friction"):
        np.testing.assert_array_equal(getattr(model, name), base[name])


def test_a_column_key_sets_every_row_and_bad_keys_are_refused() -> None:
    pytest.importorskip("mujoco")
    env = rw.wrap(gym.make("HalfCheetah-v5"), "dynamics_shift(values={'geom_friction[:, 0]': 2.5})")
    env.reset(seed=0)
    friction = env.unwrapped.model.geom_friction  # type: ignore[attr-defined]
    assert (friction[:, 0] == 2.5).all() and (
        friction[:, 1:] == parameters(gym.make("HalfCheetah-v5"))["geom_friction"][:, 1:]
    ).all()
    for spec, message in [
        ("dynamics_shift(values={'body_mass[9]': 1.0})", r"indexes outside `body_mass`, of shape \(5,\)"),
        ("dynamics_shift(values={'body_mass[1:2]': 1.0})", "indexed by ints and `:`"),
        ("dynamics_shift(values={'body_mass[1]': -1.0})", "`body_mass\\[1\\]` must stay >= 0"),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            rw.wrap(gym.make("Hopper-v5"), spec)


def test_an_env_that_declares_its_parameters_takes_dynamics_shifts_but_no_state_perturbation() -> None:
    from rlwrappers.error import StateNotSettable
    from rlwrappers.testing.bowl import BOWL_ID

    env = rw.wrap(gym.make(BOWL_ID), "dynamics_shift(values={'x': 0.3}, scales={'y': 1.4})")
    env.reset(seed=0)
    assert env.step(0)[1] == pytest.approx(0.0)  # (0.3, 0.7) is the bowl's bottom
    env.close()
    assert (env.unwrapped.x, env.unwrapped.y) == (0.5, 0.5)  # type: ignore[attr-defined]
    with pytest.raises(StateNotSettable, match="parameters can be set, not its state"):
        rw.wrap(gym.make(BOWL_ID), "init_noise(std=0.1)")


def lander_run(spec: str | None, seed: int = 0, steps: int = 60) -> np.ndarray:
    """The observations of a fixed action sequence on LunarLander-v3, under ``spec`` (None: clean)."""
    env: gym.Env[Any, Any] = gym.make("LunarLander-v3")
    env = env if spec is None else rw.wrap(env, spec)
    observations = [env.reset(seed=seed)[0]]
    for t in range(steps):
        observations.append(env.step(t % 4)[0])
    env.close()
    return np.array(observations)


def test_lunar_lander_takes_gravity_wind_and_turbulence_shifts_and_gives_them_back() -> None:
    pytest.importorskip("Box2D")
    env = rw.wrap(gym.make("LunarLander-v3"), "dynamics_shift(values={'gravity': -5.0, 'wind_power': 10.0})")
    lander = env.unwrapped
    held = (lander.wind_power, lander.turbulence_power)  # type: ignore[attr-defined]
    assert held == (15.0, 1.5) and not lander.enable_wind  # type: ignore[attr-defined]
    assert {k: float(v) for k, v in parameters(env).items()} == {
        "gravity": -10.0,
        "wind_power": 0.0,  # in effect: the wind is off
        "turbulence_power": 0.0,
    }
    env.reset(seed=0)
    assert tuple(lander.world.gravity) == (0.0, -5.0)  # type: ignore[attr-defined]  # the world playing now
    assert lander.enable_wind and (lander.wind_power, lander.turbulence_power) == (10.0, 0.0)  # type: ignore[attr-defined]
    env.close()
    assert lander.gravity == -10.0 and tuple(lander.world.gravity) == (0.0, -10.0)  # type: ignore[attr-defined]
    assert not lander.enable_wind and (lander.wind_power, lander.turbulence_power) == held  # type: ignore[attr-defined]


def test_lunar_lander_shifts_change_its_flight_the_same_way_on_every_run() -> None:
    pytest.importorskip("Box2D")
    clean = lander_run(None)
    np.testing.assert_array_equal(lander_run("dynamics_shift(values={'gravity': -10.0})"), clean)
    lighter = lander_run("dynamics_shift(values={'gravity': -5.0})")
    assert (lighter[1:20, 3] > clean[1:20, 3]).all()  # it falls slower
    windy = lander_run("dynamics_shift(values={'wind_power': 20.0, 'turbulence_power': 2.0})")
    assert not np.array_equal(windy, clean)
    np.testing.assert_array_equal(
        windy, lander_run("dynamics_shift(values={'wind_power': 20.0, 'turbulence_power': 2.0})")
    )
    with pytest.raises(InvalidArgument, match="`wind_power` must stay >= 0"):
        rw.wrap(gym.make("LunarLander-v3"), "dynamics_shift(values={'wind_power': -1.0})")
    from rlwrappers.error import StateNotSettable

    with pytest.raises(StateNotSettable, match="LunarLander's parameters can be set, not its state"):
        rw.wrap(gym.make("LunarLander-v3"), "init_noise(std=0.1)")


def test_a_shift_naming_one_element_twice_is_refused():
    pytest.importorskip("mujoco")
    with pytest.raises(
        InvalidArgument, match=r"`values` names one element twice, as 'body_mass\[1\]' and 'body_mass\[ 1 \]'"
    ):
        rw.DynamicsShift(gym.make("Hopper-v5"), values={"body_mass[1]": 3.0, "body_mass[ 1 ]": 4.0})
    with pytest.raises(InvalidArgument, match=r"`scales` names one element twice"):
        rw.DynamicsShift(gym.make("Hopper-v5"), scales={"geom_friction[:, 0]": 1.1, "geom_friction[ :,0]": 1.2})
    rw.DynamicsShift(gym.make("Hopper-v5"), values={"body_mass[1]": 3.0, "body_mass[2]": 4.0})  # two elements
