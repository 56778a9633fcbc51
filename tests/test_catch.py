"""Catch: the env's contract, its rules and frames, its seeding, and the two zoo agents trained on it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rlwrappers as rw
from rlwrappers import envs, error
from rlwrappers.core import INFO_KEY
from rlwrappers.testing import check_wrapper

#: The FGSM the adversarial agent was trained against (its card's "trained_under", always on here).
TRAINING_FGSM = "fgsm(eps=0.1)"


def cell(frame: np.ndarray, row: int, col: int) -> np.ndarray:
    """The pixel block of cell (row, col), as documented in rlwrappers.envs.catch."""
    return frame[2 + 8 * row : 2 + 8 * row + 8, 2 + 16 * col : 2 + 16 * col + 16]


def game(env: gym.Env) -> envs.Catch:
    """The Catch env under ``env``'s wrappers, to read its state."""
    catch = env.unwrapped
    assert isinstance(catch, envs.Catch)
    return catch


def toward_ball(env: gym.Env) -> int:
    """The scripted perfect policy: move the paddle toward the ball's column."""
    _, col = game(env).ball
    return int(np.sign(col - game(env).paddle)) + 1


def rollout(env: gym.Env, seed: int, actions: np.ndarray) -> tuple[list[np.ndarray], list[float], list[dict]]:
    obs, info = env.reset(seed=seed)
    frames, rewards, infos = [obs], [], [info]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(int(action))
        frames.append(obs)
        rewards.append(float(reward))
        infos.append(info)
        if terminated or truncated:
            break
    return frames, rewards, infos


# -- the env ---------------------------------------------------------------------------------------------
def test_importing_rlwrappers_envs_registers_catch() -> None:
    assert envs.CATCH_ID == "rlwrappers/Catch-v0"
    env = gym.make("rlwrappers/Catch-v0", balls=3)
    assert game(env).balls == 3
    assert env.observation_space == gym.spaces.Box(0, 255, (84, 84, 1), np.uint8)
    assert env.action_space == gym.spaces.Discrete(3)


def test_gymnasium_and_sb3_check_env() -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    check_env(gym.make("rlwrappers/Catch-v0", render_mode="rgb_array").unwrapped, skip_render_check=False)
    sb3_check_env(envs.Catch(balls=2))


def test_same_seed_is_bit_identical_and_other_seeds_differ() -> None:
    actions = np.random.default_rng(0).integers(0, 3, 90)
    first = rollout(gym.make("rlwrappers/Catch-v0"), 7, actions)
    again = rollout(gym.make("rlwrappers/Catch-v0"), 7, actions)
    other = rollout(gym.make("rlwrappers/Catch-v0"), 8, actions)
    assert len(first[0]) == len(again[0]) == 91
    assert all(np.array_equal(a, b) for a, b in zip(first[0], again[0], strict=True))
    assert first[1] == again[1] and first[2] == again[2]
    assert not all(np.array_equal(a, b) for a, b in zip(first[0], other[0], strict=True))


@pytest.mark.parametrize("balls", [1, 3, 10])
def test_an_episode_is_balls_drops_and_its_return_is_bounded(balls: int) -> None:
    env = gym.make("rlwrappers/Catch-v0", balls=balls)
    assert game(env).min_score == -balls and game(env).max_score == balls
    rng = np.random.default_rng(balls)
    for seed in range(3):
        _, rewards, infos = rollout(env, seed, rng.integers(0, 3, 1000))
        assert len(rewards) == 9 * balls  # terminated after the last drop, never before
        assert set(rewards) <= {-1.0, 0.0, 1.0}
        scored = [t for t, r in enumerate(rewards) if r != 0.0]
        assert scored == [9 * k + 8 for k in range(balls)]  # one score per drop, when the ball lands
        assert -balls <= sum(rewards) <= balls
        assert infos[-1]["drops"] == balls
        assert infos[-1]["caught"] == sum(r > 0 for r in rewards)


def test_the_frame_draws_ball_and_paddle_where_documented() -> None:
    env = gym.make("rlwrappers/Catch-v0", render_mode="rgb_array")
    obs, _ = env.reset(seed=3)
    row, col = game(env).ball
    assert (row, game(env).paddle) == (0, 2)
    expected = np.zeros((84, 84, 1), np.uint8)
    expected[2:10, 2 + 16 * col : 18 + 16 * col] = 255  # the ball, white, in the top row
    expected[74:82, 34:50] = 128  # the paddle, grey, in the middle column of the bottom row
    assert np.array_equal(obs, expected)
    rendered = env.render()
    assert isinstance(rendered, np.ndarray) and np.array_equal(rendered, np.repeat(expected, 3, axis=2))

    obs, *_ = env.step(0)  # left: the paddle moves to column 1, the ball falls to row 1
    obs, *_ = env.step(0)  # left again: column 0, row 2
    assert game(env).ball == (2, col) and game(env).paddle == 0
    assert (cell(obs, 2, col) == 255).all() and (cell(obs, 9, 0) == 128).all()
    assert np.count_nonzero(obs) == 2 * 8 * 16
    obs, *_ = env.step(0)  # the wall: the paddle stays in column 0
    assert game(env).paddle == 0 and (cell(obs, 9, 0) == 128).all()


def test_the_last_frame_of_a_caught_ball_shows_the_ball_on_the_paddle() -> None:
    env = gym.make("rlwrappers/Catch-v0", balls=1)
    env.reset(seed=0)
    terminated = False
    while not terminated:
        obs, reward, terminated, _, _ = env.step(toward_ball(env))
    assert reward == 1.0 and game(env).ball == (9, game(env).paddle)
    assert (cell(obs, 9, game(env).paddle) == 255).all() and np.count_nonzero(obs) == 8 * 16


def test_the_scripted_perfect_policy_catches_every_ball() -> None:
    env = gym.make("rlwrappers/Catch-v0")
    for seed in range(3):
        env.reset(seed=seed)
        total, terminated = 0.0, False
        while not terminated:
            _, reward, terminated, _, _ = env.step(toward_ball(env))
            total += float(reward)
        assert total == game(env).balls == 10


def test_bad_arguments_raise() -> None:
    with pytest.raises(error.InvalidArgument, match=r"`balls` must be >= 1, received 0"):
        envs.Catch(balls=0)
    with pytest.raises(error.InvalidArgument, match=r"`balls` must be >= 1, received -3"):
        gym.make("rlwrappers/Catch-v0", balls=-3)
    with pytest.raises(error.InvalidType, match=r"`balls` must be an integer, received 2.5"):
        envs.Catch(balls=2.5)
    with pytest.raises(error.InvalidArgument, match=r"`render_mode` must be None or 'rgb_array', received 'human'"):
        envs.Catch(render_mode="human")
    env = envs.Catch()
    env.reset(seed=0)
    with pytest.raises(error.InvalidArgument, match=r"`action` must be 0 \(left\), 1 \(stay\) or 2 \(right\)"):
        env.step(3)


def test_a_corruption_passes_the_contract_on_catch() -> None:
    pytest.importorskip("cv2")
    ran = check_wrapper(
        lambda: gym.make("rlwrappers/Catch-v0", balls=2), lambda env: rw.wrap(env, "jpeg(quality=20)"), steps=20
    )
    assert ran[-2:] == ["check_vector_equivalence", "check_spec_roundtrip"]


# -- the zoo agents --------------------------------------------------------------------------------------
def play(agent: rw.agents.Agent, env: gym.Env, seeds: range) -> tuple[list[float], float]:
    """Returns per episode and the FGSM flip rate (0 when the env has no attack)."""
    returns, flips = [], []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act_one(obs))
            total += float(reward)
            done = terminated or truncated
            if "fgsm" in info.get(INFO_KEY, {}):
                flips.append(info[INFO_KEY]["fgsm"]["flipped"])
        returns.append(total)
    return returns, float(np.mean(flips)) if flips else 0.0


def test_the_clean_zoo_agent_catches_nearly_every_ball() -> None:
    pytest.importorskip("stable_baselines3")
    card = rw.zoo.card("ppo-Catch-v0")
    assert card["env_id"] == "rlwrappers/Catch-v0" and card["policy"] == "CnnPolicy" and card["trained_under"] is None
    agent = rw.load_agent("ppo-Catch-v0", seed=0)
    returns, _ = play(agent, gym.make("rlwrappers/Catch-v0"), range(100, 103))
    assert min(returns) >= 8 and np.mean(returns) >= 9


def test_the_adversarially_trained_agent_flips_less_under_fgsm() -> None:
    pytest.importorskip("stable_baselines3")
    assert rw.zoo.card("ppo-Catch-v0-fgsm")["trained_under"].startswith(TRAINING_FGSM[:-1])
    rates = {}
    for name in ("ppo-Catch-v0", "ppo-Catch-v0-fgsm"):
        agent = rw.load_agent(name, seed=0)
        env = rw.wrap(gym.make("rlwrappers/Catch-v0", balls=2), TRAINING_FGSM)
        assert rw.attach(env, agent) == 1
        _, rates[name] = play(agent, env, range(200, 203))
    assert rates["ppo-Catch-v0"] > 0.05  # the attack does flip the vanilla agent's actions
    assert rates["ppo-Catch-v0-fgsm"] < rates["ppo-Catch-v0"] / 2


def test_the_module_example_runs() -> None:
    import doctest

    from rlwrappers.envs import catch

    result = doctest.testmod(catch)
    assert result.attempted >= 5 and result.failed == 0
