"""Property tests over random spaces: perturbations keep spaces true, stay seeded and never edit inputs."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rlwrappers as rw
from rlwrappers.testing import SpaceEnv, check_no_mutation, check_spaces, sample
from rlwrappers.testing.strategies import (
    BOX_DTYPES,
    INT_DTYPES,
    action_spaces,
    box_spaces,
    discrete_spaces,
    multi_discrete_spaces,
    scales,
    spaces,
)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STEPS = 8
DISTS = st.sampled_from(["gaussian", "uniform"])
ACTIONS = gym.spaces.Discrete(3)
OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def space_env(obs_space, action_space, episode_length=5):
    return lambda: SpaceEnv(obs_space, action_space, episode_length=episode_length)


def rollout(env, seed, actions):
    out = [copy.deepcopy(env.reset(seed=seed))]
    for action in actions:
        result = env.step(copy.deepcopy(action))
        out.append(copy.deepcopy(result))
        if result[2] or result[3]:
            out.append(copy.deepcopy(env.reset()))
    return out


def same_seed_same_rollout(env_fn, wrap_fn, seed):
    first, second = wrap_fn(env_fn()), wrap_fn(env_fn())
    rng = np.random.default_rng(seed)
    actions = [sample(first.action_space, rng) for _ in range(STEPS)]
    return data_equivalence(rollout(first, seed, actions), rollout(second, seed, actions), exact=True)


@SETTINGS
@given(space=spaces(), seed=st.integers(0, 2**32 - 1))
def test_space_env_emits_elements_of_its_space(space, seed):
    env = SpaceEnv(space, ACTIONS, episode_length=3)
    for obs in [env.reset(seed=seed)[0]] + [env.step(0)[0] for _ in range(3)]:
        assert space.contains(obs)
        if isinstance(space, gym.spaces.Box):
            assert obs.dtype == space.dtype and obs.shape == space.shape
    assert data_equivalence(SpaceEnv(space, ACTIONS).reset(seed=seed)[0], env.reset(seed=seed)[0], exact=True)


@SETTINGS
@given(data=st.data(), space=box_spaces(), dist=DISTS, clip=st.booleans(), seed=st.integers(0, 2**16))
def test_observation_noise_keeps_observations_in_the_space_and_dtype(data, space, dist, clip, seed):
    std = data.draw(scales(space.shape))
    env_fn = space_env(space, ACTIONS)

    def wrap_fn(env):
        # Unclipped noise on observations at the dtype's extremes can overflow: that raises PerturbationError
        # (tests/test_nonfinite.py), while this test is about spaces and dtypes.
        return rw.ObservationNoise(env, std=std, dist=dist, clip=clip, allow_nonfinite=True)

    wrapped = wrap_fn(env_fn())
    assert wrapped.observation_space.dtype == space.dtype
    assert wrapped.observation_space.shape == space.shape
    if clip:
        assert wrapped.observation_space == space
    obs, _ = wrapped.reset(seed=seed)
    assert obs.dtype == space.dtype
    check_spaces(env_fn, wrap_fn, seed=seed, steps=STEPS)
    check_no_mutation(env_fn, wrap_fn, seed=seed, steps=STEPS)
    assert same_seed_same_rollout(env_fn, wrap_fn, seed)


@SETTINGS
@given(data=st.data(), space=action_spaces(), p=st.floats(0.0, 1.0), per_element=st.booleans(), seed=st.integers(0, 99))
def test_action_noise_executes_actions_of_the_space(data, space, p, per_element, seed):
    if isinstance(space, gym.spaces.Box) and space.dtype == np.float64:
        # numpy cannot draw uniformly over a float64 range wider than the largest float64 (nor can Box.sample)
        assume(np.all(np.isfinite(space.high - space.low)))
    std = data.draw(scales(space.shape)) if isinstance(space, gym.spaces.Box) else 0.0
    env_fn = space_env(OBS, space)

    def wrap_fn(env):
        return rw.ActionNoise(env, std=std, p=p, per_element=per_element)

    check_spaces(env_fn, wrap_fn, seed=seed, steps=STEPS)
    check_no_mutation(env_fn, wrap_fn, seed=seed, steps=STEPS)
    assert same_seed_same_rollout(env_fn, wrap_fn, seed)


@SETTINGS
@given(data=st.data(), space=box_spaces(infinite=True, full_range=False), seed=st.integers(0, 99))
def test_gaussian_action_noise_works_on_unbounded_boxes(data, space, seed):
    std = data.draw(scales(space.shape))
    env_fn = space_env(OBS, space)

    def wrap_fn(env):
        return rw.ActionNoise(env, std=std)

    check_spaces(env_fn, wrap_fn, seed=seed, steps=STEPS)
    check_no_mutation(env_fn, wrap_fn, seed=seed, steps=STEPS)


@SETTINGS
@given(
    space=spaces(),
    p=st.floats(0.0, 1.0),
    low=st.integers(1, 3),
    extra=st.integers(0, 3),
    seed=st.integers(0, 99),
)
def test_sticky_actions_execute_actions_the_agent_chose(space, p, low, extra, seed):
    env_fn = space_env(OBS, space)

    def wrap_fn(env):
        return rw.StickyAction(env, p=p, duration=(low, low + extra))

    check_spaces(env_fn, wrap_fn, seed=seed, steps=STEPS)
    check_no_mutation(env_fn, wrap_fn, seed=seed, steps=STEPS)
    assert same_seed_same_rollout(env_fn, wrap_fn, seed)


@SETTINGS
@given(
    obs_space=box_spaces(),
    action_space=st.one_of(discrete_spaces(), multi_discrete_spaces()),
    std=st.floats(0.0, 50.0),
    p=st.floats(0.0, 1.0),
    seed=st.integers(0, 99),
)
def test_several_perturbations_in_one_layer(obs_space, action_space, std, p, seed):
    env_fn = space_env(obs_space, action_space, episode_length=3)

    def wrap_fn(env):
        return rw.wrap(
            env,
            f"obs_noise(std={std}, when=prob(p=0.5))",
            f"action_noise(p={p})",
            "sticky_action(p=0.5, duration=(1, 2))",
            f"reward_noise(std={std}, when=window(start=1, stop=3))",
            allow_nonfinite=True,  # observations at the dtype's extremes can overflow, as above
        )

    check_spaces(env_fn, wrap_fn, seed=seed, steps=STEPS)
    check_no_mutation(env_fn, wrap_fn, seed=seed, steps=STEPS)
    assert same_seed_same_rollout(env_fn, wrap_fn, seed)


@SETTINGS
@given(space=box_spaces(), std=st.floats(0.0, 100.0), seed=st.integers(0, 99))
def test_observation_noise_leaves_the_callers_array_alone(space, std, seed):
    rng = np.random.default_rng(seed)
    obs = sample(space, rng)
    reference = obs.copy()
    perturbation = rw.wrappers.ObservationNoisePerturbation(std=std)
    env = SpaceEnv(space, ACTIONS)
    perturbation.bind(env, space, ACTIONS)
    noisy, _ = perturbation.observation(obs, np.random.default_rng(seed))
    assert np.array_equal(obs, reference, equal_nan=True)
    assert noisy is not obs
    assert noisy.dtype == space.dtype and space.contains(noisy)


@SETTINGS
@given(space=box_spaces(INT_DTYPES, infinite=False), p=st.floats(0.01, 1.0), seed=st.integers(0, 99))
def test_random_integer_actions_reach_both_bounds_of_the_dtype(space, p, seed):
    env_fn = space_env(OBS, space)

    def wrap_fn(env):
        return rw.ActionNoise(env, p=p, per_element=True)

    check_spaces(env_fn, wrap_fn, seed=seed, steps=STEPS)


@pytest.mark.parametrize("dtype", BOX_DTYPES)
@pytest.mark.parametrize("shape", [(), (3,), (2, 2, 2)])
def test_noise_on_boxes_spanning_the_whole_dtype(dtype, shape):
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    space = gym.spaces.Box(info.min, info.max, shape, dtype)
    obs_fn, action_fn = space_env(space, ACTIONS), space_env(OBS, space)
    std = float(info.max) / 4

    def obs_noise(env):
        return rw.ObservationNoise(env, std=std)

    def action_noise(env):
        return rw.ActionNoise(env, std=std, p=0.5 if np.dtype(dtype) != np.float64 else 0.0, per_element=True)

    for env_fn, wrap_fn in ((obs_fn, obs_noise), (action_fn, action_noise)):
        check_spaces(env_fn, wrap_fn, steps=STEPS)
        check_no_mutation(env_fn, wrap_fn, steps=STEPS)
        assert same_seed_same_rollout(env_fn, wrap_fn, 0)


def test_integer_noise_has_the_requested_std_on_int32():
    space = gym.spaces.Box(-(2**30), 2**30, (20000,), np.int32)
    std = 1e5
    env = rw.ObservationNoise(SpaceEnv(space, ACTIONS), std=std)
    clean = SpaceEnv(space, ACTIONS).reset(seed=0)[0].astype(np.float64)
    noisy = env.reset(seed=0)[0].astype(np.float64)
    assert abs((noisy - clean).std() / std - 1.0) < 0.05


@given(
    std=st.floats(0.0, 100.0),
    dist=st.sampled_from(["gaussian", "uniform"]),
    seed=st.integers(0, 2**32 - 1),
)
@SETTINGS
def test_scalar_noise_is_the_same_draw_as_noise_of_shape_unit(std, dist, seed):
    from rlwrappers.functional import noise

    array = noise.noise((), std, dist, np.random.default_rng(seed))
    assert noise.scalar_noise(std, dist, np.random.default_rng(seed)) == float(array[()])


@st.composite
def float_noise_cases(draw):
    """An array of float32 or float64, a scale (one, or one per element) and bounds (none, one, or per element)."""
    from hypothesis.extra import numpy as hnp

    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=5))
    values = st.floats(-1e6, 1e6, width=8 * dtype.itemsize)
    x = draw(hnp.arrays(dtype, shape, elements=values | st.sampled_from([0.0, -0.0])))
    std = draw(st.floats(0.0, 10.0) | hnp.arrays(np.float64, shape, elements=st.floats(0.0, 10.0)))
    bound = st.floats(-10.0, 10.0) | st.sampled_from([-np.inf, np.inf, 0.0, -0.0])
    low, high = draw(st.one_of(st.just((None, None)), st.tuples(bound, bound).map(sorted)))
    if low is not None and draw(st.booleans()):  # per element, as a Box of varying bounds gives them
        low, high = np.full(shape, low, dtype), np.full(shape, high, dtype)
    return x, std, low, high


@given(case=float_noise_cases(), dist=DISTS, seed=st.integers(0, 2**32 - 1))
@SETTINGS
def test_prepared_float_noise_gives_add_noises_bits(case, dist, seed):
    from rlwrappers.functional import noise

    x, std, low, high = case
    prepared = noise.FloatNoise(std, dist, x.dtype, low, high)
    expected = noise.add_noise(x, std, dist, np.random.default_rng(seed), low, high)
    result = prepared.add(x, np.random.default_rng(seed))
    in_place = x.copy()
    prepared.add_in_place(in_place, np.random.default_rng(seed))
    assert result.dtype == in_place.dtype == expected.dtype
    assert result.tobytes() == in_place.tobytes() == expected.tobytes()  # signed zeros and NaNs included


@pytest.mark.parametrize("dtype", [np.float16, np.uint8, np.int64])
def test_prepared_float_noise_refuses_other_dtypes(dtype):
    from rlwrappers.error import InvalidType
    from rlwrappers.functional import noise

    with pytest.raises(InvalidType, match=f"`dtype` must be float32 or float64.*{np.dtype(dtype)}"):
        noise.FloatNoise(0.1, "gaussian", dtype)


def test_prepared_float_noise_refuses_an_unknown_distribution():
    from rlwrappers.error import UnknownName
    from rlwrappers.functional import noise

    with pytest.raises(UnknownName, match="`dist` must be one of \\['gaussian', 'uniform'\\], received 'gausian'"):
        noise.FloatNoise(0.1, "gausian", np.float32)


@pytest.mark.parametrize("dist", ["Gaussian", "laplace", ""])
def test_every_noise_function_refuses_an_unknown_distribution(dist):
    from rlwrappers.error import UnknownName
    from rlwrappers.functional import noise

    rng = np.random.default_rng(0)
    calls = [
        lambda: noise.add_noise(np.zeros(3), 1.0, dist, rng),
        lambda: noise.add_noise(np.zeros(3, np.uint8), 1.0, dist, rng),  # the integer table
        lambda: noise.noise((3,), 1.0, dist, rng),
        lambda: noise.scalar_noise(1.0, dist, rng),
        lambda: noise.FloatNoise(1.0, dist, np.float32),
    ]
    for call in calls:
        with pytest.raises(UnknownName, match=f"`dist` must be one of \\['gaussian', 'uniform'\\], received '{dist}'"):
            call()
