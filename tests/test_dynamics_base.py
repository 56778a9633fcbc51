"""Dynamics shifts start from the env's base parameters and give them back, however they are stacked or dropped.

The base values are read once per simulated env. Shifts dropped without closing never compound, several
shifts on one parameter compose in the order they switched on, and every reset and close leaves the
parameters that no active shift changes at their base, bit for bit.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import rlwrappers as rw
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
