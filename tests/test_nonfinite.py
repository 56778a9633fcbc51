"""Perturbations never turn finite numbers into nan or inf silently.

What can be known when a wrapper is built is refused then, with a message naming the argument and the value:
noise scales that could overflow their dtype, dynamics shifts whose parameters would be non-finite, or not
positive where they must be. What depends on where the env goes is caught while it runs: the layer raises
:class:`~rlwrappers.error.PerturbationError` naming the perturbation, the time and the episode, unless the
perturbation allows non-finite values. The checks change nothing in a run that stays finite.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import rlwrappers as rw
from rlwrappers import core
from rlwrappers.error import Error, InvalidArgument, PerturbationError
from rlwrappers.functional.noise import add_noise
from rlwrappers.testing import SpaceEnv
from rlwrappers.wrappers import ObservationNoisePerturbation, RewardNoisePerturbation

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")

MUJOCO = importlib.util.find_spec("mujoco") is not None
FLOAT32_LIMIT = float(np.finfo(np.float32).max) / 32  # about 1.06e37
FLOAT64_LIMIT = float(np.finfo(np.float64).max) / 32  # about 5.62e306
ACTIONS = gym.spaces.Discrete(2)


def box_env(low: float, high: float, dtype: Any = np.float32, shape: tuple[int, ...] = (4,)) -> SpaceEnv:
    return SpaceEnv(gym.spaces.Box(low, high, shape, dtype), ACTIONS, episode_length=1000)


def unbounded_actions() -> SpaceEnv:
    return SpaceEnv(gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Box(-np.inf, np.inf, (2,), np.float32))


# Each case builds a wrapper that must be refused; the message names the argument and what was received.
REFUSED: dict[str, tuple[Callable[[], Any], str, str]] = {
    "obs_noise std on CartPole's unbounded velocities": (
        lambda: rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=1e300)"),
        "`std`",
        "received 1e+300",
    ),
    "obs_noise std without clipping": (
        lambda: rw.ObservationNoise(gym.make("CartPole-v1"), std=1e38, clip=False),
        "`std` must be at most 1.06e+37 on float32 observations",
        "received 1e+38",
    ),
    "obs_noise per-dimension std on an unbounded dimension": (
        lambda: rw.ObservationNoise(gym.make("CartPole-v1"), std=(0.1, 1e38, 0.1, 0.1)),
        "`std[1]` must be at most 1.06e+37 on float32 observations not clipped to finite bounds",
        "received 1e+38",
    ),
    "obs_noise std beyond float32 on clipped observations": (
        lambda: rw.ObservationNoise(box_env(-1.0, 1.0), std=1e39),
        "`std` must be at most 3.4e+38, the largest float32 value",
        "received 1e+39",
    ),
    "obs_noise std on float64 observations": (
        lambda: rw.ObservationNoise(box_env(-np.inf, np.inf, np.float64), std=1e307),
        "`std` must be at most 5.62e+306 on float64 observations",
        "received 1e+307",
    ),
    "reward_noise std": (lambda: rw.RewardNoise(gym.make("CartPole-v1"), std=1e307), "`std`", "received 1e+307"),
    "reward_noise std without an env": (lambda: RewardNoisePerturbation(std=1e307), "`std`", "received 1e+307"),
    "init_noise std": (lambda: rw.wrap(gym.make("CartPole-v1"), "init_noise(std=1e307)"), "`std`", "1e+307"),
    "action_noise std on unbounded actions": (
        lambda: rw.ActionNoise(unbounded_actions(), std=1e38),
        "`std` must be at most 1.06e+37 on float32 actions",
        "received 1e+38",
    ),
    "a zero length": (
        lambda: rw.DynamicsShift(gym.make("CartPole-v1"), scales={"length": 0}),
        "`scales['length']` must leave `length` > 0",
        "received 0.0",
    ),
    "a negative length": (
        lambda: rw.wrap(gym.make("CartPole-v1"), "dynamics_shift(values={'length': -0.5})"),
        "`values['length']` must be > 0",
        "received -0.5",
    ),
    "a value scaled to zero": (
        lambda: rw.DynamicsShift(gym.make("CartPole-v1"), values={"masspole": 0.2}, scales={"masspole": 0.0}),
        "`scales['masspole']` must leave `masspole` > 0",
        "received 0.0",
    ),
    "a massless pendulum": (
        lambda: rw.DynamicsShift(gym.make("Pendulum-v1"), scales={"m": 0.0}),
        "`scales['m']` must leave `m` > 0",
        "received 0.0",
    ),
    "Acrobot without inertia": (
        lambda: rw.DynamicsShift(gym.make("Acrobot-v1"), scales={"LINK_MOI": 0.0}),
        "`scales['LINK_MOI']` must leave `LINK_MOI` > 0",
        "received 0.0",
    ),
    "a stopped clock": (
        lambda: rw.DynamicsShift(gym.make("CartPole-v1"), values={"tau": 0.0}),
        "`values['tau']` must be > 0",
        "received 0.0",
    ),
    "an overflowing scale": (
        lambda: rw.DynamicsShift(gym.make("CartPole-v1"), scales={"gravity": 1e308}),
        "`scales['gravity']` must leave `gravity` finite, but 9.8 * 1e+308 is not",
        "received 1e+308",
    ),
    "an infinite value": (
        lambda: rw.DynamicsShift(gym.make("CartPole-v1"), values={"gravity": float("inf")}),
        "`values['gravity']` must be finite",
        "received inf",
    ),
}
if MUJOCO:
    REFUSED["a zero MuJoCo time step"] = (
        lambda: rw.wrap(gym.make("Hopper-v5"), "dynamics_shift(scales={'opt.timestep': 0})"),
        "`scales['opt.timestep']` must leave `opt.timestep` > 0",
        "received 0.0",
    )
    REFUSED["an overflowing MuJoCo scale"] = (
        lambda: rw.wrap(gym.make("Hopper-v5"), "dynamics_shift(scales={'body_mass': [1, 1e308, 1, 1, 1]})"),
        "`scales['body_mass']` must leave `body_mass` finite",
        "received [1.0, 1e+308, 1.0, 1.0, 1.0]",
    )


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_construction_refuses_what_would_be_non_finite(case: str) -> None:
    build, rule, received = REFUSED[case]
    with pytest.raises(InvalidArgument) as caught:
        build()
    assert rule in str(caught.value) and received in str(caught.value), str(caught.value)


def test_what_stays_finite_is_accepted() -> None:
    cartpole = gym.make("CartPole-v1")
    rw.ObservationNoise(cartpole, std=FLOAT32_LIMIT, clip=False)  # the largest that cannot overflow
    rw.ObservationNoise(box_env(-1.0, 1.0), std=1e38)  # clipped to finite bounds
    rw.ObservationNoise(box_env(0, 255, np.uint8, (8, 8)), std=1e300)  # integers saturate
    rw.RewardNoise(cartpole, std=FLOAT64_LIMIT)
    # Zero is a legitimate force, gravity or mass of one of two bodies; only non-positive masses, lengths,
    # moments of inertia and time steps are refused.
    rw.DynamicsShift(cartpole, scales={"force_mag": 0.0, "gravity": 0.0})
    rw.DynamicsShift(gym.make("Acrobot-v1"), scales={"LINK_COM_POS_1": 0.0})
    rw.DynamicsShift(gym.make("MountainCar-v0"), values={"gravity": -0.0025})
    rw.DynamicsShift(cartpole, values={"gravity": 1e300})  # finite: whether the state overflows shows at run time
    if MUJOCO:
        rw.DynamicsShift(gym.make("Hopper-v5"), scales={"body_mass": 0.0})  # MuJoCo guards its mass matrix


# -- at run time ----------------------------------------------------------------------------------------------
def step_until_error(env: gym.Env[Any, Any], steps: int = 50, action: Any = 0) -> tuple[list[Any], str]:
    """The observations before the layer raised, and its message."""
    observations = [env.reset(seed=0)[0]]
    with pytest.raises(PerturbationError) as caught:
        for _ in range(steps):
            observations.append(env.step(action)[0])
    return observations, str(caught.value)


def test_a_dynamics_shift_that_blows_up_cartpole_is_named() -> None:
    env = rw.DynamicsShift(gym.make("CartPole-v1"), values={"gravity": 1e38}, label="heavy")
    observations, message = step_until_error(env)
    assert len(observations) == 2 and all(np.isfinite(o).all() for o in observations)  # time 0 and 1
    assert message.startswith(
        "`heavy` (dynamics_shift(values={'gravity': 1e+38}, label='heavy')) made the env produce a non-finite "
        "observation at time 2 of episode 0 (2 of 4 values are nan or inf:"
    ), message
    assert message.endswith("to let non-finite values through, give it allow_nonfinite=True")


def test_a_shift_that_switches_on_mid_episode_is_caught_when_it_acts() -> None:
    env = rw.wrap(gym.make("CartPole-v1"), "dynamics_shift(scales={'force_mag': 1e300}, when=starting(step=3))")
    observations, message = step_until_error(env)
    assert len(observations) == 4
    assert "made the env produce a non-finite observation at time 4 of episode 0" in message


def test_the_error_names_the_episode() -> None:
    env = rw.wrap(
        gym.make("Pendulum-v1"), "dynamics_shift(values={'g': 1e300, 'max_speed': 1e300}, when=starting(episode=2))"
    )
    torque = np.array([1.0], dtype=np.float32)
    for seed in range(2):
        env.reset(seed=seed)
        for _ in range(5):
            env.step(torque)
    with pytest.raises(PerturbationError, match=r"at time \d+ of episode 2"):
        env.reset(seed=2)
        for _ in range(5):
            env.step(torque)


def test_initial_state_noise_that_overflows_is_refused_when_built_or_caught_when_the_env_overflows() -> None:
    # the state comes back as CartPole's float32 observations: noise that could overflow them is refused
    with pytest.raises(InvalidArgument, match=r"`std` must be at most 1.06e\+37 on float32 observations"):
        rw.wrap(gym.make("CartPole-v1"), "init_noise(std=1e300)")
    # noise within the limit leaves a finite state, from which the env's own step overflows: named, typed
    env = rw.wrap(gym.make("CartPole-v1"), "init_noise(std=1e37)")
    env.reset(seed=0)
    with pytest.raises(
        PerturbationError, match=r"^`init_noise` \(init_noise\(std=1e\+37\)\) made the env .* at time 1 of episode 0"
    ):
        env.step(0)


def test_observation_noise_that_overflows_is_named() -> None:
    # float64 observations close to the largest float: noise of the largest allowed std overflows them
    base = box_env(1.7e308, 1.7e308, np.float64)
    env = rw.ObservationNoise(base, std=FLOAT64_LIMIT, clip=False, label="sensor")
    observations, message = step_until_error(env, steps=200)
    assert all(np.isfinite(o).all() for o in observations)
    assert message.startswith(f"`sensor` (obs_noise(std={FLOAT64_LIMIT!r}, clip=False, label='sensor'))"), message
    assert f"produced a non-finite observation at time {len(observations)} of episode 0" in message


def test_reward_noise_that_overflows_is_named() -> None:
    base = gym.wrappers.TransformReward(gym.make("Pendulum-v1"), lambda r: 1.7e308)
    env = rw.wrap(base, "reward_noise(std=5e306)")
    _, message = step_until_error(env, steps=200, action=np.zeros(1, dtype=np.float32))
    assert message.startswith("`reward_noise` (reward_noise(std=5e+306)) produced a non-finite reward at time ")
    assert "(inf)" in message or "(-inf)" in message


def test_it_is_an_arithmetic_error_of_the_library() -> None:
    assert issubclass(PerturbationError, Error) and issubclass(PerturbationError, ArithmeticError)


def test_what_the_env_itself_emits_is_not_blamed_on_a_perturbation() -> None:
    def nan(obs: Any) -> Any:
        return np.full_like(obs, np.nan)

    base = gym.wrappers.TransformObservation(gym.make("CartPole-v1"), nan, gym.make("CartPole-v1").observation_space)
    env = rw.wrap(base, "obs_noise(std=0.1, clip=False)", "reward_noise(std=0.1)")
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(0)
    assert np.isnan(obs).all()


# -- letting non-finite values through ------------------------------------------------------------------------
HEAVY = "dynamics_shift(values={'gravity': 1e+38})"
OPTED_OUT = {
    "rw.wrap(allow_nonfinite=True)": lambda env: rw.wrap(env, HEAVY, allow_nonfinite=True),
    "the spec's own key": lambda env: rw.wrap(env, HEAVY[:-1] + ", allow_nonfinite=True)"),
    "a dict": lambda env: core.Perturb(
        env, [{"name": "dynamics_shift", "values": {"gravity": 1e38}, "allow_nonfinite": True}]
    ),
    "the named wrapper": lambda env: rw.DynamicsShift(env, values={"gravity": 1e38}, allow_nonfinite=True),
}


@pytest.mark.parametrize("how", sorted(OPTED_OUT))
def test_allow_nonfinite_lets_non_finite_values_through(how: str) -> None:
    env = OPTED_OUT[how](gym.make("CartPole-v1"))
    env.reset(seed=0)
    observations = [env.step(0)[0] for _ in range(5)]
    assert not np.isfinite(observations[-1]).all()
    assert env.specs == [HEAVY[:-1] + ", allow_nonfinite=True)"]  # the log's spec says so
    assert env.spec is not None
    rebuilt: Any = gym.make(env.spec)
    assert rebuilt.specs == env.specs and rebuilt.entries[0].allow_nonfinite


def test_a_spec_keeps_its_own_setting_over_the_layers() -> None:
    env = rw.wrap(gym.make("CartPole-v1"), HEAVY[:-1] + ", allow_nonfinite=False)", allow_nonfinite=True)
    step_until_error(env)


def test_allow_nonfinite_must_be_a_bool() -> None:
    with pytest.raises(rw.error.InvalidType, match="`allow_nonfinite` must be a bool, received 'yes'"):
        rw.wrap(gym.make("CartPole-v1"), "obs_noise(allow_nonfinite='yes')")


def test_an_allowed_perturbation_is_not_blamed_on_the_next_one() -> None:
    env = rw.wrap(gym.make("CartPole-v1"), HEAVY[:-1] + ", allow_nonfinite=True)", "obs_noise(std=0.1)")
    env.reset(seed=0)
    observations = [env.step(0)[0] for _ in range(5)]
    assert not np.isfinite(observations[-1]).all()


# -- normal runs and cost -------------------------------------------------------------------------------------
STACKS = {
    "CartPole-v1": (
        "init_noise(std=0.05)",
        "dynamics_shift(scales={'length': 1.5}, when=window(start=5, stop=60))",
        "obs_noise(std=0.1, clip=False)",
        "reward_noise(std=0.5)",
    ),
    "Pendulum-v1": (
        "dynamics_shift(values={'g': 12.0}, scales={'m': 1.3})",
        "obs_noise(std=(0.05, 0.05, 0.2))",
        "reward_noise(std=1.0, dist='uniform')",
    ),
}


def rollout(env: gym.Env[Any, Any], steps: int) -> list[Any]:
    rng = np.random.default_rng(1)
    out: list[Any] = [copy.deepcopy(env.reset(seed=7))]
    for _ in range(steps):
        result = env.step(_action(env, rng))
        out.append(copy.deepcopy(result))
        if result[2] or result[3]:
            out.append(copy.deepcopy(env.reset()))
    return out


def _action(env: gym.Env[Any, Any], rng: np.random.Generator) -> Any:
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        return int(rng.integers(space.n))
    assert isinstance(space, gym.spaces.Box)
    return rng.uniform(space.low, space.high).astype(space.dtype)


@pytest.mark.parametrize("env_id", sorted(STACKS))
def test_a_finite_run_is_the_same_bit_for_bit_with_or_without_the_checks(env_id: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow anywhere in a normal run
        checked = rollout(rw.wrap(gym.make(env_id), *STACKS[env_id]), 300)
        allowed = rollout(rw.wrap(gym.make(env_id), *STACKS[env_id], allow_nonfinite=True), 300)
    assert data_equivalence(checked, allowed, exact=True)


def count_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the arrays checked for non-finite values by the layers built after it is called."""
    calls = [0]
    for name in ("_finite", "_finite_vector"):
        check = getattr(core, name)

        def counted(x: Any, check: Callable[[Any], bool] = check) -> bool:
            calls[0] += 1
            return check(x)

        monkeypatch.setattr(core, name, counted)
    return calls


def test_only_perturbed_float_observations_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_checks(monkeypatch)

    def steps(env: gym.Env[Any, Any], n: int = 10) -> int:
        calls[0] = 0
        env.reset(seed=0)
        for _ in range(n):
            env.step(env.action_space.sample())
        return calls[0]

    frames = SpaceEnv(gym.spaces.Box(0, 255, (8, 8), np.uint8), ACTIONS)
    assert steps(rw.ObservationNoise(frames, std=3.0)) == 0  # integers cannot be nan
    assert steps(rw.wrap(gym.make("CartPole-v1"), "obs_noise(when=never)", "dynamics_shift(when=never)")) == 0
    assert steps(rw.wrap(gym.make("CartPole-v1"), "reward_noise", "action_noise(p=0.5)")) == 0  # a float each
    assert steps(rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.01)")) == 11  # reset and ten steps
    assert steps(rw.wrap(gym.make("CartPole-v1"), "dynamics_shift(scales={'length': 1.1})")) == 10
    assert steps(rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.01)", allow_nonfinite=True)) == 0
    # Noise clipped to finite bounds cannot leave them (test_clipped_noise_stays_finite): nothing to check.
    assert steps(rw.ObservationNoise(box_env(-1.0, 1.0), std=0.1)) == 0
    assert steps(rw.ObservationNoise(box_env(-1.0, 1.0), std=0.1, clip=False)) == 11
    mixed = SpaceEnv(gym.spaces.Box(-1.0, np.array([1.0, 2.0]), (2,), np.float32), ACTIONS)  # one bound a scalar
    assert steps(rw.ObservationNoise(mixed, std=0.1)) == 0


@pytest.mark.parametrize("dist", ["gaussian", "uniform"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_clipped_noise_stays_finite(dtype: Any, dist: str) -> None:
    """Why the layer does not check noise clipped to finite bounds: even the largest scale keeps values finite."""
    largest = float(np.finfo(dtype).max)
    rng = np.random.default_rng(0)
    for std in (largest, largest / 3, 1e3, 0.0):
        space = gym.spaces.Box(np.array([-1.0, -largest, 0.0]), np.array([1.0, largest, 0.0]), (3,), dtype)
        perturbation = ObservationNoisePerturbation(std=std, dist=dist)
        perturbation.bind(SpaceEnv(space, ACTIONS), space, ACTIONS)
        assert perturbation.keeps_finite()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the noise itself overflows to inf, then is clipped
            at_bounds = [np.array([side, side * largest, 0.0], dtype) for side in (-1.0, 1.0) for _ in range(100)]
            noisy = [perturbation.observation(obs, rng)[0] for obs in at_bounds]
        assert np.isfinite(noisy).all()


def test_obs_noise_accepts_its_own_limit_on_any_float_box() -> None:
    for dtype in (np.float16, np.float32, np.float64):
        limit = float(np.finfo(dtype).max) / 32
        perturbation = ObservationNoisePerturbation(std=limit, clip=False)
        space = gym.spaces.Box(-np.inf, np.inf, (3,), dtype)
        perturbation.bind(SpaceEnv(space, ACTIONS), space, ACTIONS)
        rule = re.escape(f"`std` must be at most {limit:.3g} on {np.dtype(dtype)} observations")
        with pytest.raises(InvalidArgument, match=rule):
            ObservationNoisePerturbation(std=limit * 1.01, clip=False).bind(SpaceEnv(space, ACTIONS), space, ACTIONS)


@pytest.mark.parametrize("std", [5e4, 1e20, 1e300])
def test_noise_too_large_for_integer_observations_saturates_them(std: float) -> None:
    grey = np.full(20_000, 128, dtype=np.uint8)
    noisy = add_noise(grey, std, "gaussian", np.random.default_rng(0), 0, 255)
    # P(|N(0, std)| < 128) is about 128 * sqrt(2 / pi) / std: nearly every value goes to an end, half to each.
    ends = np.isin(noisy, [0, 255]).mean()
    assert ends > 1 - 2 * 128 * math.sqrt(2 / math.pi) / std - 0.005
    assert abs((noisy == 0).mean() - (noisy == 255).mean()) < 0.03
