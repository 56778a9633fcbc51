"""The perturbation layer's semantics: time convention, composition, labels, randomness, dynamics restore."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import rlwrappers as rw
from rlwrappers.core import Perturb, layers
from rlwrappers.error import MissingExtra


def rollout(env: gym.Env, seed: int, steps: int) -> list[tuple]:
    out = []
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    out.append((obs, info.get("rlwrappers")))
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        out.append((obs, reward, info.get("rlwrappers")))
        if terminated or truncated:
            break
    return out


def same(a: list[tuple], b: list[tuple]) -> bool:
    return len(a) == len(b) and all(data_equivalence(x, y, exact=True) for x, y in zip(a, b, strict=True))


def test_wrap_with_several_specs_equals_nesting_the_named_wrappers():
    specs = ("obs_noise(std=0.2)", "action_noise(p=0.3)", "reward_noise(std=0.5)")
    one_layer = rw.wrap(gym.make("CartPole-v1"), *specs)
    nested = rw.RewardNoise(rw.ActionNoise(rw.ObservationNoise(gym.make("CartPole-v1"), std=0.2), p=0.3), std=0.5)
    assert same(rollout(one_layer, 3, 40), rollout(nested, 3, 40))


def test_labels_are_unique_across_layers_and_draw_independently():
    env = rw.ObservationNoise(rw.ObservationNoise(gym.make("CartPole-v1"), std=0.1), std=0.1)
    assert [layer.labels for layer in layers(env)] == [("obs_noise-2",), ("obs_noise",)]
    clean, _ = gym.make("CartPole-v1").reset(seed=0)
    inner_only, _ = rw.ObservationNoise(gym.make("CartPole-v1"), std=0.1).reset(seed=0)
    both, info = env.reset(seed=0)
    assert set(info["rlwrappers"]) == {"obs_noise", "obs_noise-2"}
    first, second = inner_only - clean, both - inner_only
    assert np.all(np.abs(second) > 0) and not np.allclose(first, second)


def test_time_convention_observation_noise_starts_with_the_observation_of_time_t():
    bare = gym.make("CartPole-v1")
    env = rw.ObservationNoise(gym.make("CartPole-v1"), std=0.5, when="starting(step=3)")
    clean, _ = bare.reset(seed=1)
    noisy, info = env.reset(seed=1)
    assert np.array_equal(clean, noisy) and "rlwrappers" not in info
    for t in range(1, 6):
        clean, *_ = bare.step(0)
        noisy, _, _, _, info = env.step(0)
        # The step call that moves to time t returns the observation of time t.
        assert np.array_equal(clean, noisy) == (t < 3)
        assert ("rlwrappers" in info) == (t >= 3)


def test_action_and_reward_follow_the_decision_of_the_time_the_action_is_taken():
    env = rw.wrap(gym.make("CartPole-v1"), "action_noise(p=1.0)", "reward_noise(std=1.0)", when="window(2, 4)")
    env.reset(seed=0)
    acted = []
    for _ in range(6):
        *_, info = env.step(0)
        acted.append(sorted(info.get("rlwrappers", {})))
    assert acted == [[], [], ["action_noise", "reward_noise"], ["action_noise", "reward_noise"], [], []]


def test_perturbations_never_touch_the_env_generator():
    bare = gym.make("CartPole-v1")
    env = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)", "reward_noise(std=0.1)", "init_noise(std=0.01)")
    bare.reset(seed=5)
    env.reset(seed=5)
    for _ in range(8):
        bare.step(1)
        env.step(1)
        assert bare.unwrapped.np_random.bit_generator.state == env.unwrapped.np_random.bit_generator.state


def test_same_seed_same_run_different_seed_different_noise():
    make = lambda: rw.wrap(gym.make("Pendulum-v1"), "obs_noise(std=0.1)", "action_noise(std=0.2)")  # noqa: E731
    assert same(rollout(make(), 7, 30), rollout(make(), 7, 30))
    assert not same(rollout(make(), 7, 30), rollout(make(), 8, 30))


def test_reset_with_the_same_seed_repeats_the_noise_whatever_came_before():
    env = rw.ObservationNoise(gym.make("CartPole-v1"), std=0.3)
    first = rollout(env, 11, 10)
    rollout(env, 12, 10)
    assert same(first, rollout(env, 11, 10))


def test_unseeded_layers_draw_fresh_entropy_and_report_it():
    a = rw.ObservationNoise(gym.make("CartPole-v1"))
    b = rw.ObservationNoise(gym.make("CartPole-v1"))
    a.reset()
    b.reset()
    assert isinstance(a.entropy, int) and a.entropy != b.entropy


def test_dynamics_are_restored_bit_exactly_when_the_schedule_switches_off_and_at_reset():
    env = rw.DynamicsShift(gym.make("CartPole-v1"), scales={"length": 3.0, "masspole": 0.7}, when="window(2, 5)")
    base = env.unwrapped
    original = (base.length, base.masspole, base.total_mass, base.polemass_length)
    env.reset(seed=0)
    seen = []
    for _ in range(7):
        env.step(1)
        seen.append((base.length, base.masspole))
    assert seen[1] == (1.5, 0.1 * 0.7) and seen[3] == (1.5, 0.1 * 0.7)
    assert seen[0] == seen[4] == seen[6] == original[:2]
    assert (base.length, base.masspole, base.total_mass, base.polemass_length) == original


def test_mujoco_dynamics_shift_and_restore():
    env = rw.DynamicsShift(gym.make("Hopper-v5"), values={"opt.gravity": [0.0, 0.0, -5.0]}, scales={"body_mass": 2.0})
    model = env.unwrapped.model
    mass, gravity = model.body_mass.copy(), model.opt.gravity.copy()
    env.reset(seed=0)
    assert np.array_equal(model.body_mass, 2.0 * mass) and np.array_equal(model.opt.gravity, [0.0, 0.0, -5.0])
    env.close()
    assert np.array_equal(model.body_mass, mass) and np.array_equal(model.opt.gravity, gravity)


def test_a_perturbation_object_given_to_wrap_is_copied_not_bound():
    p = rw.wrappers.ObservationNoisePerturbation(std=0.2)
    env = rw.wrap(gym.make("CartPole-v1"), p)
    assert env.perturbations[0] == p and env.perturbations[0] is not p
    assert not hasattr(p, "_std")


def test_the_caller_arrays_are_not_modified():
    env = rw.ActionNoise(gym.make("Pendulum-v1"), std=0.5)
    env.reset(seed=0)
    action = np.array([0.25], dtype=np.float32)
    env.step(action)
    assert action[0] == np.float32(0.25)


def test_import_is_light():
    heavy = ("torch", "pandas", "pyarrow", "mujoco", "ale_py", "stable_baselines3")
    code = f"import sys, rlwrappers\nprint([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_missing_extra_raises_one_error_naming_it(monkeypatch):
    from rlwrappers._optional import require

    monkeypatch.setitem(sys.modules, "lpips", None)  # what an environment without the package gives
    with pytest.raises(MissingExtra, match=r"rlwrappers\[perceptual\]") as caught:
        require("lpips", purpose="perceptual distance")
    assert isinstance(caught.value, ImportError) and "perceptual distance" in str(caught.value)


def test_a_sticky_repetition_under_way_ends_when_the_schedule_switches_off():
    env = rw.StickyAction(gym.make("CartPole-v1"), p=1.0, duration=50, when="window(1, 4) | window(8, 12)")
    env.reset(seed=0)
    stuck = []
    for i in range(12):
        *_, info = env.step(i % 2)
        stuck.append(info.get("rlwrappers", {}).get("sticky_action", {}).get("stuck"))
    # Time 0 is off; the repetition that starts at time 1 ends at time 4. At time 8 the previous action is the
    # agent's own (time 7), so a new repetition starts from it rather than resuming the old one.
    assert stuck[:4] == [None, True, True, True] and stuck[4:8] == [None] * 4 and all(stuck[8:])
    assert info["rlwrappers"]["sticky_action"]["executed"] == 1  # the action executed at time 7 was 7 % 2


def test_init_noise_must_sit_below_wrappers_that_change_observations():
    with pytest.raises(rw.error.InvalidArgument, match="below every wrapper that changes observations"):
        rw.InitialStateNoise(rw.ObservationNoise(gym.make("CartPole-v1")))
    with pytest.raises(rw.error.InvalidArgument, match="`std` has 3 entries"):
        rw.InitialStateNoise(gym.make("Pendulum-v1"), std=(0.5, 0.0, 1.0))
    # in one layer, state perturbations act first, so this order is fine
    env = rw.wrap(gym.make("CartPole-v1"), "obs_noise", "init_noise")
    _, info = env.reset(seed=0)
    assert set(info["rlwrappers"]) == {"obs_noise", "init_noise"}


@pytest.mark.parametrize(
    ("env_id", "spec", "name"),
    [
        ("rlwrappers/Bowl-v0", "obs_noise(std=(0.1, 0.2, 0.3))", "std"),  # a (1,) observation
        ("Pendulum-v1", "action_noise(std=(0.1, 0.2))", "std"),  # a (1,) action
        ("rlwrappers/Bowl-v0", "fgsm(eps=(0.1, 0.2))", "eps"),
    ],
)
def test_a_per_dimension_scale_that_would_grow_the_array_is_refused_when_built(env_id, spec, name):
    import rlwrappers.testing.bowl  # noqa: F401  (registers the Bowl)

    size = len(spec.split("=(")[1].split(","))
    with pytest.raises(rw.error.InvalidArgument, match=rf"`{name}` has {size} entries, which does not broadcast"):
        rw.wrap(gym.make(env_id), spec)


@pytest.mark.parametrize(
    "build",
    [
        lambda env: rw.wrap(env, "obs_noise(std=0.1)"),
        lambda env: rw.ObservationNoise(env, std=0.1),
        lambda env: Perturb(env, ["reward_noise"]),
    ],
)
def test_an_env_id_in_place_of_an_env_is_refused_with_the_fix(build):
    with pytest.raises(rw.error.InvalidType, match=r"`env` must be a gymnasium.Env, received 'CartPole-v1' \(str\); "):
        build("CartPole-v1")


def test_a_label_given_twice_in_one_stack_is_refused_and_default_labels_are_numbered():
    with pytest.raises(rw.error.InvalidArgument, match="`label` 'a' of `reward_noise` is taken"):
        rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1, label='a')", "reward_noise(std=0.2, label='a')")
    below = rw.ObservationNoise(gym.make("CartPole-v1"), label="x")
    with pytest.raises(rw.error.InvalidArgument, match="`label` 'x' of `sticky_action` is taken"):
        rw.StickyAction(below, p=0.1, label="x")
    assert rw.wrap(gym.make("CartPole-v1"), "obs_noise", "obs_noise").labels == ("obs_noise", "obs_noise-2")


def test_attack_budgets_take_numpy_numbers_and_refuse_other_types():
    env = rw.FGSM(gym.make("CartPole-v1"), eps=np.float32(0.25))
    assert env.perturbations[0].eps == 0.25
    with pytest.raises(rw.error.InvalidType, match=r"`eps` must be a finite number >= 0, received '0.1' \(str\)"):
        rw.FGSM(gym.make("CartPole-v1"), eps="0.1")


@pytest.mark.parametrize(
    "build",
    [
        lambda: rw.StickyAction(gym.make("CartPole-v1"), p=1.0, duration=10**30),
        lambda: rw.StickyAction(gym.make("CartPole-v1"), p=1.0, duration=(2, 2**63)),
        lambda: rw.wrap(gym.make("CartPole-v1"), f"obs_noise(when=bursts(p=0.5, duration={10**30}))"),
    ],
)
def test_a_duration_beyond_64_bits_is_refused_when_built(build):
    with pytest.raises(rw.error.InvalidArgument, match=r"must be at most 9223372036854775807 \(2\*\*63 - 1\)"):
        build()
    env = rw.StickyAction(gym.make("CartPole-v1"), p=1.0, duration=(1, 2**63 - 1))  # the largest is drawn fine
    env.reset(seed=0)
    env.step(0)


def test_init_noise_that_could_overflow_the_observations_dtype_is_refused_when_built():
    with pytest.raises(rw.error.InvalidArgument, match=r"`std` must be at most 1.06e\+37 on float32 observations"):
        rw.InitialStateNoise(gym.make("CartPole-v1"), std=1e38)  # CartPole observes its state as float32
    rw.InitialStateNoise(gym.make("CartPole-v1"), std=1e30)
