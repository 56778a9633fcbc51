"""The shipped contract (rlwrappers.testing) applied to every wrapper, the checks' own power to fail, and
invalid arguments of every wrapper."""

from __future__ import annotations

import ast
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import RecordConstructorArgs

import rlwrappers as rw
from rlwrappers import error
from rlwrappers.testing import (
    CHECKS,
    ContractError,
    SpaceEnv,
    check_determinism,
    check_env_rng_untouched,
    check_gymnasium_env,
    check_no_mutation,
    check_sb3_env,
    check_spaces,
    check_spec_roundtrip,
    check_vector_equivalence,
    check_wrapper,
)

gym.register_envs(ale_py)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def make(env_id: str, **kwargs: Any) -> Callable[[], gym.Env]:
    def env_fn() -> gym.Env:
        return gym.make(env_id, **kwargs)

    env_fn.__name__ = env_id
    return env_fn


CLASSIC = ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1"]
ALL_CHECKS = list(CHECKS)
NO_VECTOR = [c for c in CHECKS if c != "check_vector_equivalence"]

# (id, env_fn, wrap_fn, options for check_wrapper)
CASES: list[tuple[str, Callable[[], gym.Env], Callable[[gym.Env], gym.Env], dict[str, Any]]] = [
    # ObservationNoise
    ("obs_noise-cartpole", make("CartPole-v1"), lambda e: rw.ObservationNoise(e, std=0.1), {}),
    (
        "obs_noise-cartpole-per-dim",
        make("CartPole-v1"),
        lambda e: rw.ObservationNoise(e, std=(0.1, 0.2, 0.01, 0.3), dist="uniform"),
        {"async_vector": False},
    ),
    ("obs_noise-pendulum", make("Pendulum-v1"), lambda e: rw.ObservationNoise(e, std=0.5), {"async_vector": False}),
    (
        "obs_noise-pendulum-unclipped",
        make("Pendulum-v1"),
        lambda e: rw.ObservationNoise(e, std=0.5, clip=False),
        {"async_vector": False},
    ),
    (
        "obs_noise-pong-uint8",
        make("ALE/Pong-v5"),
        lambda e: rw.ObservationNoise(e, std=8.0),
        {"steps": 25, "vector": False},
    ),
    # ActionNoise
    ("action_noise-cartpole-p", make("CartPole-v1"), lambda e: rw.ActionNoise(e, p=0.3), {}),
    (
        "action_noise-pendulum-std",
        make("Pendulum-v1"),
        lambda e: rw.ActionNoise(e, std=0.5),
        {"async_vector": False},
    ),
    (
        "action_noise-mcc-both",
        make("MountainCarContinuous-v0"),
        lambda e: rw.ActionNoise(e, std=0.2, p=0.3),
        {"async_vector": False},
    ),
    (
        "action_noise-hopper-per-element",
        make("Hopper-v5"),
        lambda e: rw.ActionNoise(e, std=(0.1, 0.2, 0.0), p=0.3, per_element=True),
        {"steps": 50, "async_vector": False},
    ),
    # StickyAction
    ("sticky-cartpole", make("CartPole-v1"), lambda e: rw.StickyAction(e, p=0.3, duration=(1, 3)), {}),
    (
        "sticky-pendulum",
        make("Pendulum-v1"),
        lambda e: rw.StickyAction(e, p=0.5, duration=2),
        {"async_vector": False},
    ),
    # RewardNoise
    ("reward_noise-cartpole", make("CartPole-v1"), lambda e: rw.RewardNoise(e, std=0.5), {}),
    (
        "reward_noise-pendulum-uniform",
        make("Pendulum-v1"),
        lambda e: rw.RewardNoise(e, std=1.0, dist="uniform"),
        {"async_vector": False},
    ),
    # InitialStateNoise: every classic-control env and two MuJoCo envs
    *[
        (f"init_noise-{env_id}", make(env_id), lambda e: rw.InitialStateNoise(e, std=0.1), {"async_vector": False})
        for env_id in CLASSIC
    ],
    (
        "init_noise-cartpole-large",
        make("CartPole-v1"),
        lambda e: rw.InitialStateNoise(e, std=1.0),
        {"async_vector": False},
    ),
    (
        "init_noise-inverted-pendulum",
        make("InvertedPendulum-v5"),
        lambda e: rw.InitialStateNoise(e, std=0.05, dist="uniform"),
        {"steps": 60},
    ),
    ("init_noise-hopper", make("Hopper-v5"), lambda e: rw.InitialStateNoise(e, std=0.05), {"steps": 60}),
    # DynamicsShift
    (
        "dynamics_shift-cartpole-mid-episode",
        make("CartPole-v1"),
        lambda e: rw.DynamicsShift(e, scales={"length": 2.0, "masspole": 3.0}, when="starting(step=5)"),
        {},
    ),
    (
        "dynamics_shift-pendulum",
        make("Pendulum-v1"),
        lambda e: rw.DynamicsShift(e, values={"g": 12.0}),
        {"async_vector": False},
    ),
    (
        "dynamics_shift-acrobot",
        make("Acrobot-v1"),
        lambda e: rw.DynamicsShift(e, scales={"LINK_MASS_2": 1.5, "LINK_LENGTH_1": 0.8}),
        {"async_vector": False},
    ),
    (
        "dynamics_shift-mountaincar-window",
        make("MountainCar-v0"),
        lambda e: rw.DynamicsShift(e, scales={"force": 0.5}, when="window(start=10, stop=40)"),
        {"async_vector": False},
    ),
    (
        "dynamics_shift-hopper",
        make("Hopper-v5"),
        lambda e: rw.DynamicsShift(
            e,
            values={"opt.gravity": [0.0, 0.0, -12.0]},
            scales={"body_mass": 1.25, "geom_friction": 0.7, "actuator_gear": [[1.2] * 6, [0.8] * 6, [1.0] * 6]},
            when="window(start=5, stop=30)",
        ),
        {"steps": 60},
    ),
    # schedules that switch on and off
    (
        "obs_noise-window",
        make("CartPole-v1"),
        lambda e: rw.ObservationNoise(e, std=0.3, when="window(start=3, stop=9) | window(start=15, stop=18)"),
        {"async_vector": False},
    ),
    (
        "action_noise-prob-step",
        make("CartPole-v1"),
        lambda e: rw.ActionNoise(e, p=0.5, when="prob(p=0.4)"),
        {"async_vector": False},
    ),
    (
        "reward_noise-prob-episode",
        make("CartPole-v1"),
        lambda e: rw.RewardNoise(e, std=0.5, when="prob(p=0.5, per='episode')"),
        {"async_vector": False},
    ),
    (
        "obs_noise-bursts",
        make("Pendulum-v1"),
        lambda e: rw.ObservationNoise(e, std=0.4, when="bursts(p=0.2, duration=(2, 5))"),
        {"async_vector": False},
    ),
    (
        "dynamics_shift-pendulum-bursts",
        make("Pendulum-v1"),
        lambda e: rw.DynamicsShift(e, scales={"m": 2.0}, when="bursts(p=0.1, duration=(3, 8))"),
        {},
    ),
    (
        "sticky-not-window-and-prob",
        make("CartPole-v1"),
        lambda e: rw.StickyAction(e, p=0.8, when="~window(start=2, stop=6) & prob(p=0.7)"),
        {"async_vector": False},
    ),
    (
        "init_noise-starting-episode",
        make("CartPole-v1"),
        lambda e: rw.InitialStateNoise(e, std=0.05, when="starting(episode=1)"),
        {"async_vector": False},
    ),
    # several perturbations in one layer, and stacked layers
    (
        "wrap-cartpole-all-channels",
        make("CartPole-v1"),
        lambda e: rw.wrap(
            e,
            "obs_noise(std=0.1, when=window(start=3, stop=12))",
            "action_noise(p=0.2, when=prob(p=0.5))",
            "sticky_action(p=0.3, duration=(1, 2))",
            "reward_noise(std=0.1, when=bursts(p=0.2, duration=(1, 4)))",
            "init_noise(std=0.05)",
            "dynamics_shift(scales={'length': 1.5}, when=starting(step=4))",
        ),
        {},
    ),
    (
        "wrap-pendulum-dicts-and-labels",
        make("Pendulum-v1"),
        lambda e: rw.wrap(
            e,
            {"name": "obs_noise", "std": 0.05, "label": "sensor"},
            {"name": "action_noise", "std": 0.3, "when": "prob(p=0.5)"},
            "obs_noise(std=0.2, dist='uniform', label='sensor2', when=window(start=5, stop=50))",
            "dynamics_shift(values={'g': 11.0}, scales={'l': 1.2})",
            when="starting(step=1)",
        ),
        {"async_vector": False},
    ),
    (
        "wrap-hopper",
        make("Hopper-v5"),
        lambda e: rw.wrap(
            e,
            "init_noise(std=0.02)",
            "action_noise(std=0.1, p=0.1)",
            "dynamics_shift(scales={'body_mass': 1.2}, when=window(start=10, stop=40))",
            "obs_noise(std=0.01)",
        ),
        {"steps": 60, "async_vector": False},
    ),
    (
        "stacked-layers",
        make("CartPole-v1"),
        lambda e: rw.RewardNoise(rw.StickyAction(rw.ObservationNoise(e, std=0.1), p=0.2), std=0.2),
        {},
    ),
    # Box2D (the box2d extra): the channels that need no simulator adapter, and corruptions on CarRacing's pixels
    *[
        (f"{spec.split('(')[0]}-{env_id}", make(env_id), lambda e, spec=spec: rw.wrap(e, spec), {"async_vector": False})
        for env_id, spec in (
            ("LunarLander-v3", "obs_noise(std=0.05)"),
            ("LunarLander-v3", "action_noise(p=0.2)"),
            ("LunarLander-v3", "sticky_action(p=0.25)"),
            ("LunarLander-v3", "reward_noise(std=0.5)"),
            ("LunarLanderContinuous-v3", "action_noise(std=0.1, p=0.1)"),
        )  # not BipedalWalker-v3: its rewards are numpy floats, which SB3's checker refuses unwrapped too
    ],
    ("jpeg-CarRacing-v3", make("CarRacing-v3"), lambda e: rw.JPEG(e, quality=30), {"steps": 10, "vector": False}),
    (
        "obs_noise-CarRacing-v3",
        make("CarRacing-v3"),
        lambda e: rw.ObservationNoise(e, std=4.0),
        {"steps": 10, "vector": False},
    ),
    # a registered ID of the catalogue, unwrapped: gym.make builds the perturbation from the registry
    ("catalogue-id", make("rlwrappers/Acrobot-Sticky-v1"), lambda e: e, {"async_vector": False}),
    ("catalogue-id-shifted", make("rlwrappers/Hopper-Shifted-v5"), lambda e: e, {"steps": 40, "vector": False}),
]


@pytest.mark.parametrize(("env_fn", "wrap_fn", "options"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check_wrapper(env_fn, wrap_fn, options):
    ran = check_wrapper(env_fn, wrap_fn, **options)
    expected = NO_VECTOR if options.get("vector") is False else ALL_CHECKS
    assert ran == expected


def test_check_wrapper_on_space_env_skips_the_spec_check():
    def env_fn():
        return SpaceEnv(gym.spaces.Box(0, 255, (6, 6, 3), np.uint8), gym.spaces.MultiDiscrete([3, 4], start=[-1, 2]))

    ran = check_wrapper(env_fn, lambda e: rw.wrap(e, "obs_noise(std=4.0)", "action_noise(p=0.5, per_element=True)"))
    assert ran == [c for c in CHECKS if c != "check_spec_roundtrip"]


def test_check_wrapper_skips_sb3_when_it_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)
    with pytest.raises(error.MissingExtra, match=r"rlwrappers\[sb3\]"):
        check_sb3_env(make("CartPole-v1"), lambda e: e)
    ran = check_wrapper(make("CartPole-v1"), lambda e: rw.RewardNoise(e), steps=20, vector=False, spec=False)
    assert "check_sb3_env" not in ran
    assert ran == [
        "check_gymnasium_env",
        "check_determinism",
        "check_spaces",
        "check_no_mutation",
        "check_env_rng_untouched",
    ]


def test_the_contract_uses_no_assert_statements():
    package = pathlib.Path(rw.__file__).parent / "testing"
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text())
        asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
        assert asserts == [], f"{path.name} uses assert at lines {asserts} (stripped by python -O)"


def test_contract_error_is_an_assertion_error():
    assert issubclass(ContractError, AssertionError)


# -- every check can fail: wrappers that break one rule each ----------------------------------------------------


class DrawsFromEnvRng(gym.ObservationWrapper):
    def observation(self, obs):
        return obs + np.float32(1e-3) * self.env.unwrapped.np_random.standard_normal(obs.shape).astype(np.float32)


class ReseedsEnv(gym.Wrapper):
    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=None if seed is None else seed + 1, options=options)


class MutatesObservation(gym.Wrapper):
    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs *= 0.5
        return obs, reward, terminated, truncated, info


class MutatesAction(gym.Wrapper):
    def step(self, action):
        action *= 0.5
        return self.env.step(action)


class EditsLastObservationLater(gym.Wrapper):
    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.last = obs
        return obs.copy(), info

    def step(self, action):
        self.last[0] = 0.0  # a stale reference, edited one call later
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.last = obs
        return obs.copy(), reward, terminated, truncated, info


class EditsLastActionLater(gym.Wrapper):
    last = None

    def step(self, action):
        if self.last is not None:
            self.last[...] = 0.0
        self.last = action
        return self.env.step(action.copy())


class RepeatsByReference(gym.Wrapper):
    """Repeats the previous action every other step, keeping a reference to the caller's array."""

    previous = None

    def step(self, action):
        chosen = action if self.previous is None else self.previous
        self.previous = None if self.previous is not None else action
        return self.env.step(chosen)


class GlobalRandom(gym.ObservationWrapper):
    def observation(self, obs):
        return (obs + np.random.normal(0.0, 0.01, obs.shape)).astype(obs.dtype)


class IgnoresSeed(gym.Wrapper):
    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=0, options=options)


class LeavesSpace(gym.ObservationWrapper):
    def observation(self, obs):
        return obs * np.float32(100.0)


class ChangesDtype(gym.ObservationWrapper):
    def observation(self, obs):
        return obs.astype(np.float64)


class ActionOutOfBounds(gym.ActionWrapper):
    def action(self, action):
        return action + np.float32(10.0)


class DoesNotRecord(gym.ObservationWrapper):
    def observation(self, obs):
        return obs


class RecordsTooLittle(gym.ObservationWrapper, RecordConstructorArgs):
    def __init__(self, env, scale=1.0):
        RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        self.scale = scale

    def observation(self, obs):
        return np.clip(obs * np.float32(self.scale), self.observation_space.low, self.observation_space.high)


class DependsOnProcess(gym.ObservationWrapper):
    def observation(self, obs):
        return obs + np.float32(os.getpid() % 97 + 1) * np.float32(1e-4)


class ResetReturnsList(gym.Wrapper):
    def reset(self, **kwargs):
        return list(self.env.reset(**kwargs))


class NumpyTerminated(gym.Wrapper):
    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, np.bool_(terminated), truncated, info


def test_check_env_rng_untouched_catches_draws_from_the_env_generator():
    with pytest.raises(ContractError, match="np_random"):
        check_env_rng_untouched(make("CartPole-v1"), DrawsFromEnvRng, steps=20)
    check_determinism(make("CartPole-v1"), DrawsFromEnvRng, steps=20)  # same-seed runs alone do not see it


def test_check_env_rng_untouched_catches_changed_seeds():
    with pytest.raises(ContractError, match=r"caller reset with seeds \[0"):
        check_env_rng_untouched(make("CartPole-v1"), ReseedsEnv, steps=20)


def test_check_no_mutation_catches_an_edited_observation():
    with pytest.raises(ContractError, match="modified in place the observation"):
        check_no_mutation(make("CartPole-v1"), MutatesObservation, steps=20)


@pytest.mark.parametrize(
    ("env_id", "wrapper", "match"),
    [
        ("CartPole-v1", EditsLastObservationLater, "the observation the env returned at reset"),
        ("Pendulum-v1", EditsLastActionLater, "the caller's action of step \\(after 1 steps\\)"),
    ],
)
def test_check_no_mutation_catches_later_edits_of_kept_references(env_id, wrapper, match):
    with pytest.raises(ContractError, match=match):
        check_no_mutation(make(env_id), wrapper, steps=20)


def test_check_no_mutation_catches_references_to_the_callers_action():
    with pytest.raises(ContractError, match="one reused array"):
        check_no_mutation(make("Pendulum-v1"), RepeatsByReference, steps=20)


def test_sticky_action_repeats_what_was_executed_when_the_caller_reuses_its_buffer():
    env = rw.StickyAction(gym.make("Pendulum-v1"), p=1.0, duration=5)
    env.reset(seed=0)
    buffer = np.zeros(1, dtype=np.float32)
    executed = []
    for value in (0.5, 1.5, -1.0):
        buffer[:] = value
        executed.append(env.step(buffer)[4]["rlwrappers"]["sticky_action"]["executed"].item())
    assert executed == [0.5, 0.5, 0.5]


def test_initial_state_noise_keeps_cartpole_inside_its_limits():
    env = rw.InitialStateNoise(gym.make("CartPole-v1"), std=5.0)
    base = env.unwrapped
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        assert obs in env.observation_space
        assert abs(obs[0]) <= base.x_threshold and abs(obs[2]) <= base.theta_threshold_radians


def test_check_no_mutation_catches_an_edited_action():
    with pytest.raises(ContractError, match="caller's action"):
        check_no_mutation(make("Pendulum-v1"), MutatesAction, steps=20)


def test_check_determinism_catches_global_randomness():
    with pytest.raises(ContractError, match="diverge"):
        check_determinism(make("CartPole-v1"), GlobalRandom, steps=20)


def test_check_determinism_catches_an_ignored_seed():
    with pytest.raises(ContractError, match="identical"):
        check_determinism(make("CartPole-v1"), IgnoresSeed, steps=20)


@pytest.mark.parametrize(
    ("env_id", "wrapper", "match"),
    [
        ("Pendulum-v1", LeavesSpace, "is not in Box"),
        ("CartPole-v1", ChangesDtype, "has dtype float64"),
        ("Pendulum-v1", ActionOutOfBounds, "not in the env's action space"),
    ],
)
def test_check_spaces_catches_values_outside_their_space(env_id, wrapper, match):
    with pytest.raises(ContractError, match=match):
        check_spaces(make(env_id), wrapper, steps=20)


def test_check_spec_roundtrip_catches_a_wrapper_without_recorded_arguments():
    with pytest.raises(ContractError, match="does not record its constructor arguments"):
        check_spec_roundtrip(make("Pendulum-v1"), DoesNotRecord, steps=10)


def test_check_spec_roundtrip_catches_a_forgotten_argument():
    with pytest.raises(ContractError, match="differs"):
        check_spec_roundtrip(make("Pendulum-v1"), lambda e: RecordsTooLittle(e, scale=0.5), steps=10)


def test_check_spec_roundtrip_needs_a_spec():
    with pytest.raises(ContractError, match="has no spec"):
        check_spec_roundtrip(lambda: SpaceEnv(gym.spaces.Discrete(3), gym.spaces.Discrete(2)), lambda e: e)


def test_check_vector_equivalence_catches_what_only_async_workers_see():
    check_vector_equivalence(make("CartPole-v1"), DependsOnProcess, steps=20, async_vector=False)
    with pytest.raises(ContractError, match="AsyncVectorEnv"):
        check_vector_equivalence(make("CartPole-v1"), DependsOnProcess, steps=20)


def test_check_gymnasium_env_reports_gymnasium_faults():
    with pytest.raises(ContractError, match="check_gymnasium_env"):
        check_gymnasium_env(make("CartPole-v1"), ResetReturnsList)


def test_check_sb3_env_reports_sb3_faults():
    with pytest.raises(ContractError, match=r"check_sb3_env.*boolean"):
        check_sb3_env(make("CartPole-v1"), NumpyTerminated)


# -- invalid arguments ------------------------------------------------------------------------------------------


def cartpole():
    return gym.make("CartPole-v1")


def pendulum():
    return gym.make("Pendulum-v1")


def hopper():
    return gym.make("Hopper-v5")


def pong():
    return gym.make("ALE/Pong-v5")


def discrete_obs():
    return SpaceEnv(gym.spaces.Discrete(5), gym.spaces.Discrete(2))


def unbounded_actions():
    return SpaceEnv(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-np.inf, np.inf, (2,), np.float32))


def box_space_env():
    return SpaceEnv(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-1, 1, (2,), np.float32))


# (id, build, rlwrappers error, builtin, substrings of the message)
INVALID: list[tuple[str, Callable[[], Any], type[Exception], type[Exception], tuple[str, ...]]] = [
    # ObservationNoise
    (
        "obs-negative-std",
        lambda: rw.ObservationNoise(cartpole(), std=-1.0),
        error.InvalidArgument,
        ValueError,
        ("`std`", ">= 0", "-1.0"),
    ),
    (
        "obs-negative-std-entry",
        lambda: rw.ObservationNoise(cartpole(), std=(0.1, -0.2, 0.1, 0.1)),
        error.InvalidArgument,
        ValueError,
        ("`std[1]`", "-0.2"),
    ),
    (
        "obs-nan-std",
        lambda: rw.ObservationNoise(cartpole(), std=float("nan")),
        error.InvalidArgument,
        ValueError,
        ("`std`", "finite", "nan"),
    ),
    (
        "obs-std-type",
        lambda: rw.ObservationNoise(cartpole(), std="0.1"),
        error.InvalidType,
        TypeError,
        ("`std`", "'0.1'"),
    ),
    (
        "obs-std-shape",
        lambda: rw.ObservationNoise(cartpole(), std=(0.1, 0.2, 0.3)),
        error.InvalidArgument,
        ValueError,
        ("`std`", "3 entries", "(4,)"),
    ),
    (
        "obs-unknown-dist",
        lambda: rw.ObservationNoise(cartpole(), dist="gausian"),
        error.UnknownName,
        ValueError,
        ("`dist`", "'gausian'", "Did you mean `gaussian`"),
    ),
    (
        "obs-clip-type",
        lambda: rw.ObservationNoise(cartpole(), clip="yes"),
        error.InvalidType,
        TypeError,
        ("`clip`", "'yes'"),
    ),
    (
        "obs-discrete-space",
        lambda: rw.ObservationNoise(discrete_obs(), std=0.1),
        error.IncompatibleSpace,
        TypeError,
        ("obs_noise", "Box", "Discrete(5)"),
    ),
    (
        "obs-bad-label",
        lambda: rw.ObservationNoise(cartpole(), label="my label"),
        error.InvalidArgument,
        ValueError,
        ("`label`", "'my label'"),
    ),
    # ActionNoise
    (
        "action-p-above-one",
        lambda: rw.ActionNoise(cartpole(), p=1.5),
        error.InvalidProbability,
        ValueError,
        ("`p`", "[0, 1]", "1.5"),
    ),
    (
        "action-p-negative",
        lambda: rw.ActionNoise(cartpole(), p=-0.1),
        error.InvalidProbability,
        ValueError,
        ("`p`", "-0.1"),
    ),
    (
        "action-negative-std",
        lambda: rw.ActionNoise(pendulum(), std=-0.5),
        error.InvalidArgument,
        ValueError,
        ("`std`", "-0.5"),
    ),
    (
        "action-std-on-discrete",
        lambda: rw.ActionNoise(cartpole(), std=0.1),
        error.IncompatibleSpace,
        TypeError,
        ("`std`", "Box", "Discrete(2)"),
    ),
    (
        "action-p-on-unbounded",
        lambda: rw.ActionNoise(unbounded_actions(), p=0.1),
        error.IncompatibleSpace,
        TypeError,
        ("`p`", "bounded", "inf"),
    ),
    (
        "action-per-element-type",
        lambda: rw.ActionNoise(cartpole(), p=0.1, per_element=1),
        error.InvalidType,
        TypeError,
        ("`per_element`", "1"),
    ),
    (
        "action-std-shape",
        lambda: rw.ActionNoise(hopper(), std=(0.1, 0.2)),
        error.InvalidArgument,
        ValueError,
        ("`std`", "2 entries", "(3,)"),
    ),
    # StickyAction
    (
        "sticky-p-above-one",
        lambda: rw.StickyAction(cartpole(), p=2.0),
        error.InvalidProbability,
        ValueError,
        ("`p`", "2.0"),
    ),
    (
        "sticky-duration-zero",
        lambda: rw.StickyAction(cartpole(), duration=0),
        error.InvalidArgument,
        ValueError,
        ("`duration`", ">= 1", "0"),
    ),
    (
        "sticky-duration-reversed",
        lambda: rw.StickyAction(cartpole(), duration=(3, 1)),
        error.InvalidArgument,
        ValueError,
        ("`duration`", "low <= high", "(3, 1)"),
    ),
    (
        "sticky-duration-float",
        lambda: rw.StickyAction(cartpole(), duration=1.5),
        error.InvalidType,
        TypeError,
        ("`duration`", "1.5"),
    ),
    (
        "sticky-duration-triple",
        lambda: rw.StickyAction(cartpole(), duration=(1, 2, 3)),
        error.InvalidArgument,
        ValueError,
        ("`duration`", "(1, 2, 3)"),
    ),
    # RewardNoise
    (
        "reward-negative-std",
        lambda: rw.RewardNoise(cartpole(), std=-0.5),
        error.InvalidArgument,
        ValueError,
        ("`std`", "-0.5"),
    ),
    (
        "reward-unknown-dist",
        lambda: rw.RewardNoise(cartpole(), dist="unifrom"),
        error.UnknownName,
        ValueError,
        ("`dist`", "'unifrom'", "Did you mean `uniform`"),
    ),
    # InitialStateNoise
    (
        "init-negative-std",
        lambda: rw.InitialStateNoise(cartpole(), std=-1),
        error.InvalidArgument,
        ValueError,
        ("`std`", "-1"),
    ),
    (
        "init-unknown-dist",
        lambda: rw.InitialStateNoise(cartpole(), dist="normal"),
        error.UnknownName,
        ValueError,
        ("`dist`", "'normal'"),
    ),
    (
        "init-on-pong",
        lambda: rw.InitialStateNoise(pong()),
        error.StateNotSettable,
        TypeError,
        ("init_noise", "AtariEnv"),
    ),
    (
        "init-on-space-env",
        lambda: rw.InitialStateNoise(box_space_env()),
        error.StateNotSettable,
        TypeError,
        ("init_noise", "SpaceEnv"),
    ),
    # DynamicsShift
    (
        "dynamics-unknown-classic",
        lambda: rw.DynamicsShift(cartpole(), scales={"lenght": 2.0}),
        error.UnknownName,
        ValueError,
        ("`scales`", "`lenght`", "Did you mean `length`"),
    ),
    (
        "dynamics-unknown-mujoco",
        lambda: rw.DynamicsShift(hopper(), scales={"body_mas": 1.2}),
        error.UnknownName,
        ValueError,
        ("`scales`", "`body_mas`", "Did you mean `body_mass`"),
    ),
    (
        "dynamics-negative-scale",
        lambda: rw.DynamicsShift(cartpole(), scales={"length": -1.0}),
        error.InvalidArgument,
        ValueError,
        ("`scales['length']`", "-1.0"),
    ),
    (
        "dynamics-value-type",
        lambda: rw.DynamicsShift(cartpole(), values={"gravity": "high"}),
        error.InvalidType,
        TypeError,
        ("`values['gravity']`", "'high'"),
    ),
    (
        "dynamics-not-a-dict",
        lambda: rw.DynamicsShift(cartpole(), values=5),
        error.InvalidType,
        TypeError,
        ("`values`", "5"),
    ),
    (
        "dynamics-shape",
        lambda: rw.DynamicsShift(hopper(), values={"opt.gravity": [0.0, -9.0]}),
        error.InvalidArgument,
        ValueError,
        ("`values['opt.gravity']`", "(2,)", "(3,)"),
    ),
    (
        "dynamics-on-pong",
        lambda: rw.DynamicsShift(pong(), scales={"gravity": 2.0}),
        error.StateNotSettable,
        TypeError,
        ("dynamics_shift", "AtariEnv"),
    ),
    (
        "dynamics-on-space-env",
        lambda: rw.DynamicsShift(box_space_env(), values={"g": 1.0}),
        error.StateNotSettable,
        TypeError,
        ("dynamics_shift", "SpaceEnv"),
    ),
    # schedules, through any wrapper
    (
        "when-unknown",
        lambda: rw.RewardNoise(cartpole(), when="windw(start=1, stop=3)"),
        error.UnknownName,
        ValueError,
        ("`windw`", "Did you mean `window`"),
    ),
    (
        "when-malformed",
        lambda: rw.StickyAction(cartpole(), when="window(start=1,, stop=3)"),
        error.SpecSyntaxError,
        ValueError,
        ("column 16", "window(start=1,, stop=3)", "^"),
    ),
    (
        "when-stop-before-start",
        lambda: rw.ObservationNoise(cartpole(), when="window(start=5, stop=2)"),
        error.InvalidArgument,
        ValueError,
        ("`stop`", "2"),
    ),
    (
        "when-prob",
        lambda: rw.ActionNoise(cartpole(), p=0.1, when="prob(p=1.5)"),
        error.InvalidProbability,
        ValueError,
        ("`p`", "1.5"),
    ),
    (
        "when-negative-start",
        lambda: rw.DynamicsShift(cartpole(), when="starting(step=-1)"),
        error.InvalidArgument,
        ValueError,
        ("`step`", "-1"),
    ),
    (
        "when-bad-unit",
        lambda: rw.ObservationNoise(cartpole(), when="window(start=1, stop=3, unit='epsiode')"),
        error.UnknownName,
        ValueError,
        ("`unit`", "'epsiode'", "Did you mean `episode`"),
    ),
    ("when-type", lambda: rw.ObservationNoise(cartpole(), when=3), error.InvalidType, TypeError, ("`when`", "3")),
    (
        "when-bursts-duration",
        lambda: rw.RewardNoise(cartpole(), when="bursts(p=0.1, duration=(0, 2))"),
        error.InvalidArgument,
        ValueError,
        ("`duration[0]`", "0"),
    ),
    # spec strings through rw.wrap
    (
        "wrap-unknown-perturbation",
        lambda: rw.wrap(cartpole(), "obs_nosie(std=0.1)"),
        error.UnknownName,
        ValueError,
        ("`obs_nosie`", "Did you mean `obs_noise`"),
    ),
    (
        "wrap-unknown-parameter",
        lambda: rw.wrap(cartpole(), "obs_noise(sdt=0.1)"),
        error.UnknownName,
        ValueError,
        ("`sdt`", "Did you mean `std`"),
    ),
    (
        "wrap-unclosed",
        lambda: rw.wrap(cartpole(), "obs_noise(std=0.1"),
        error.SpecSyntaxError,
        ValueError,
        ("column", "obs_noise(std=0.1", "^"),
    ),
    (
        "wrap-not-literal",
        lambda: rw.wrap(cartpole(), "obs_noise(std=1 + x)"),
        error.SpecSyntaxError,
        ValueError,
        ("column 15", "`1 + x`"),
    ),
    (
        "wrap-positional",
        lambda: rw.wrap(cartpole(), "obs_noise(0.1)"),
        error.InvalidArgument,
        ValueError,
        ("'obs_noise(0.1)'", "key=value"),
    ),
    ("wrap-nothing", lambda: rw.wrap(cartpole()), error.InvalidArgument, ValueError, ("`perturbations`", "none")),
    (
        "wrap-dict-without-name",
        lambda: rw.wrap(cartpole(), {"std": 0.1}),
        error.InvalidArgument,
        ValueError,
        ("`name`", "{'std': 0.1}"),
    ),
    ("wrap-spec-type", lambda: rw.wrap(cartpole(), 0.1), error.InvalidType, TypeError, ("0.1",)),
    (
        "wrap-bad-value",
        lambda: rw.wrap(cartpole(), "sticky_action(p=1.1)"),
        error.InvalidProbability,
        ValueError,
        ("`p`", "1.1"),
    ),
    (
        "wrap-box-only-on-discrete",
        lambda: rw.wrap(discrete_obs(), "obs_noise(std=0.1)"),
        error.IncompatibleSpace,
        TypeError,
        ("obs_noise", "Discrete(5)"),
    ),
    (
        "wrap-state-on-pong",
        lambda: rw.wrap(pong(), "init_noise(std=0.1)"),
        error.StateNotSettable,
        TypeError,
        ("init_noise", "AtariEnv"),
    ),
    (
        "register-unknown-env",
        lambda: rw.register("CartPol-v1", "obs_noise(std=0.1)"),
        error.UnknownName,
        ValueError,
        ("`CartPol-v1`", "Did you mean `CartPole-v1`"),
    ),
]


@pytest.mark.parametrize(("build", "cls", "builtin", "parts"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_arguments(build, cls, builtin, parts):
    with pytest.raises(cls) as info:
        build()
    assert isinstance(info.value, builtin)
    assert isinstance(info.value, error.Error)
    message = str(info.value)
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"


def test_invalid_spec_string_points_at_the_column():
    with pytest.raises(error.SpecSyntaxError) as info:
        rw.ObservationNoise(cartpole(), when="window(start=1,, stop=3)")
    source_line, caret_line = str(info.value).splitlines()[1:3]
    column = caret_line.index("^") - source_line.index("w")
    assert "window(start=1,, stop=3)"[column] == ","
