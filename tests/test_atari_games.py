"""Whole Atari games as episodes (atari_wrapper(env, games=True)): on real ALE, against SB3's own evaluation stack."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlwrappers import error
from rlwrappers.wrappers.atari import GamesAsEpisodes, atari_wrapper

ale_py = pytest.importorskip("ale_py")
gym.register_envs(ale_py)

ID = "BreakoutNoFrameskip-v4"
#: The Atari cap, in raw frames.
CAP = 18_000
#: Breakout's RAM byte that holds the lives left.
LIVES_BYTE = 57


def games(max_episode_steps: int | None = CAP) -> gym.Env[Any, Any]:
    return atari_wrapper(gym.make(ID, max_episode_steps=max_episode_steps), games=True)


def actions(n: int, seed: int = 0) -> list[int]:
    return np.random.default_rng(seed).integers(0, 4, size=n).tolist()


def play(env: gym.Env[Any, Any], seed: int, acts: list[int]) -> dict[str, list[Any]]:
    """One episode under ``acts`` (the episode may end first): observations, rewards, flags and infos."""
    obs, info = env.reset(seed=seed)
    out: dict[str, list[Any]] = {"obs": [obs], "reward": [], "terminated": [], "truncated": [], "info": [info]}
    for action in acts:
        obs, reward, terminated, truncated, info = env.step(action)
        for key, value in zip(out, (obs, reward, terminated, truncated, info), strict=True):
            out[key].append(value)
        if terminated or truncated:
            break
    return out


def test_an_episode_of_a_random_policy_spans_every_life_of_the_game():
    episode = play(games(), 0, actions(20_000))
    lives = [info["lives"] for info in episode["info"][1:]]
    assert episode["terminated"][-1] and not any(episode["terminated"][:-1]) and not any(episode["truncated"])
    assert lives[-1] == 0 and lives == sorted(lives, reverse=True) and set(lives) == {0, 1, 2, 3, 4, 5}
    assert all(o.shape == (4, 84, 84) and o.dtype == np.uint8 for o in episode["obs"])


def test_a_policy_that_never_presses_fire_loses_its_lives_rather_than_sticking():
    """SB3's reset presses FIRE at each life's start, so the ball comes back into play without the agent."""
    episode = play(games(), 0, [0] * 20_000)
    assert episode["terminated"][-1] and episode["info"][-1]["lives"] == 0 and len(episode["reward"]) < 200


def test_rewards_equal_a_life_by_life_loop_with_the_same_actions():
    acts = actions(20_000, seed=1)
    episode = play(games(), 3, acts)
    lives = atari_wrapper(gym.make(ID, max_episode_steps=CAP))  # a lost life ends the episode
    obs, _ = lives.reset(seed=3)
    rewards, last_frames = [], [obs[-1]]
    for action in acts:
        obs, reward, terminated, truncated, info = lives.step(action)
        rewards.append(reward)
        if terminated and info["lives"] > 0 and not truncated:
            obs, _ = lives.reset()  # the same game goes on
        last_frames.append(obs[-1])
        if (terminated and info["lives"] == 0) or truncated:
            break
    assert episode["reward"] == rewards and sum(rewards) > 0
    np.testing.assert_array_equal(np.stack([o[-1] for o in episode["obs"]]), np.stack(last_frames))


def test_it_plays_as_sb3s_vectorized_evaluation_and_its_return_is_the_monitors_game_score():
    """SB3's make_atari_env stack (Monitor under the AtariWrapper, VecFrameStack, VecTransposeImage), unclipped."""
    from stable_baselines3.common.atari_wrappers import AtariWrapper
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecTransposeImage

    def make() -> gym.Env[Any, Any]:
        return AtariWrapper(Monitor(gym.make(ID, max_episode_steps=CAP)), clip_reward=False)

    venv = VecTransposeImage(VecFrameStack(DummyVecEnv([make]), n_stack=4))
    venv.seed(5)
    acts = actions(20_000, seed=2)
    episode = play(games(), 5, acts)
    obs, lost = venv.reset(), 0
    np.testing.assert_array_equal(obs[0], episode["obs"][0])
    for t, action in enumerate(acts[: len(episode["reward"])]):
        obs, reward, done, info = venv.step(np.array([action]))
        game_over = "episode" in info[0]  # SB3's Monitor ends the game; its vector env then starts the next one
        seen = info[0]["terminal_observation"] if game_over else obs[0]
        np.testing.assert_array_equal(seen, episode["obs"][t + 1], err_msg=f"step {t}")
        assert reward[0] == episode["reward"][t]
        lost += int(done[0])
    assert lost == 5 and game_over  # SB3's vector env ends an episode at each lost life, the game with the last
    assert info[0]["episode"]["r"] == sum(episode["reward"])
    assert info[0]["episode"]["l"] == episode["info"][-1]["episode_frame_number"]  # raw frames, as the cap counts


def test_equal_seeds_give_equal_episodes_and_reset_starts_a_new_game_even_mid_game():
    acts = actions(20_000, seed=4)
    first, second = play(games(), 7, acts), play(games(), 7, acts)
    env = games()
    play(env, 0, acts[:50])  # a game left half-played
    third = play(env, 7, acts)
    for other in (second, third):
        assert len(other["reward"]) == len(first["reward"]) and other["reward"] == first["reward"]
        np.testing.assert_array_equal(np.stack(other["obs"]), np.stack(first["obs"]))
        assert other["terminated"] == first["terminated"] and other["truncated"] == first["truncated"]
    starts = {play(games(), seed, [])["obs"][0].tobytes() for seed in range(6)}
    assert len(starts) > 1  # the seed draws SB3's no-ops at reset


def test_a_time_limit_counts_raw_frames_and_truncates_the_game():
    """400 frames: truncated mid-game (NOOP loses its five lives in 535 frames), at frame 400 exactly."""
    episode = play(games(max_episode_steps=400), 0, [0] * 1000)
    assert episode["truncated"][-1] and not any(episode["terminated"])
    info = episode["info"][-1]
    assert info["episode_frame_number"] == 400 and 0 < info["lives"] < 5
    assert len(episode["reward"]) < 100  # four frames an agent step, and the resets' frames


def test_a_game_that_ends_within_a_lifes_restart_ends_the_episode_and_the_next_reset_is_seeded():
    free = play(games(), 0, [0] * 1000)
    step = next(t for t, info in enumerate(free["info"][1:]) if info["lives"] == 4)  # the first lost life
    frame = free["info"][step + 1]["episode_frame_number"]
    env = games(max_episode_steps=frame + 6)  # the cap strikes within the restart's no-op and FIRE steps
    capped = play(env, 0, [0] * 1000)
    assert len(capped["reward"]) == step + 1 and capped["truncated"][-1] and not capped["terminated"][-1]
    assert capped["reward"] == free["reward"][: step + 1]
    by_lives = atari_wrapper(gym.make(ID))  # the frame that lost the life, not the next game's first
    lost = play(by_lives, 0, [0] * 1000)
    np.testing.assert_array_equal(capped["obs"][-1][-1], lost["obs"][-1][-1])
    again, fresh = play(env, 0, [0] * 10), play(games(max_episode_steps=frame + 6), 0, [0] * 10)
    np.testing.assert_array_equal(np.stack(again["obs"]), np.stack(fresh["obs"]))


def test_the_18000_frame_cap_truncates_a_game_that_would_never_end():
    """Lives refilled through the RAM at every step: the game goes on until the cap, 18,000 raw frames."""
    env = games()
    ram = env.unwrapped.ale
    env.action_space.seed(0)
    env.reset(seed=0)
    steps, truncated, terminated = 0, False, False
    while not (terminated or truncated):
        ram.setRAM(LIVES_BYTE, 5)
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        steps += 1
    assert truncated and not terminated and info["episode_frame_number"] == CAP
    assert 4000 < steps <= CAP // 4  # the lost lives' restarts and the reset's no-ops take frames too


def test_bad_arguments_raise_typed_errors_naming_the_argument():
    with pytest.raises(error.InvalidType, match="`games` must be a bool, received 'yes'"):
        atari_wrapper(gym.make(ID), games="yes")  # type: ignore[arg-type]
    with pytest.raises(error.InvalidArgument, match="`frame_stack` must be an int >= 1, received 0"):
        atari_wrapper(gym.make(ID), frame_stack=0, games=True)
    with pytest.raises(error.InvalidArgument, match=r"`frame_stack` must be an int >= 1, received 2\.0"):
        GamesAsEpisodes(gym.make(ID), frame_stack=2.0)  # type: ignore[arg-type]


def test_the_constructor_records_its_arguments():
    env = GamesAsEpisodes(gym.make(ID), frame_stack=2)
    assert env.observation_space.shape == (2, 84, 84)
    assert env.spec is not None and env.spec.additional_wrappers[-1].kwargs == {"frame_stack": 2}


BOTTOM_ROW = "; ".join(f"ram[{i}]=0" for i in range(0, 36, 6))  # Breakout's bottom row of bricks


@pytest.mark.parametrize("games_as_episodes", [True, False])
@pytest.mark.parametrize("frame", [41, 42, 43, 44])
def test_what_a_layer_under_the_preprocessing_did_on_any_frame_reaches_the_agents_step(
    games_as_episodes: bool, frame: int
) -> None:
    # SB3's frame skip keeps the info of a step's last frame only: an intervention made on another frame of
    # the step used to vanish from the records. Each of the four frames of a step is tried.
    from rlwrappers.wrappers.state import Intervene

    raw = Intervene(gym.make(ID, max_episode_steps=CAP), BOTTOM_ROW, when=f"starting(step={frame})")
    env = atari_wrapper(raw, games=games_as_episodes)

    def active(info: dict[str, Any]) -> bool:
        return bool(info.get("rlwrappers", {}).get("intervene", {}).get("active", False))

    _, info = env.reset(seed=0)
    assert not active(info)
    made = []
    for _ in range(12):  # frame 44 at the latest: within the first 11 steps after the reset's no-ops and FIRE
        _, _, terminated, truncated, info = env.step(0)
        made.append(active(info))
        assert not (terminated or truncated)
    assert made.count(True) == 1  # once, on the step whose frames held the one it was made on
    assert not any(env.unwrapped.ale.getRAM()[i] for i in range(0, 36, 6))  # and it held


def _random_action(obs: Any, rng: np.random.Generator) -> int:
    return int(rng.integers(4))


def test_an_evaluation_makes_an_intervention_under_the_atari_preprocessing(tmp_path: Any) -> None:
    # An intervention renders the raw frame of the state it changed, so it sits on the raw game, under the
    # preprocessing the agent sees through; its schedule counts raw frames and whole games.
    import rlwrappers as rw
    from rlwrappers.agents import CallableAgent
    from rlwrappers.ladders import preprocessing_wrappers
    from rlwrappers.studies import EnvSetup, Execution

    env = games()
    agent = CallableAgent(_random_action, env.observation_space, env.action_space)
    setup = EnvSetup(kwargs={"max_episode_steps": 4000}, wrappers=preprocessing_wrappers("atari-games"))
    shift = {"bottom": [{"name": "intervene", "interventions": [BOTTOM_ROW], "when": "starting(step=42)"}]}
    result = rw.evaluate(
        {"random": agent}, ID, shift, episodes=2, seeds=1, out=tmp_path, env=setup,
        execution=Execution(workers=1, progress=False),
    )  # fmt: skip
    path = result.index.loc[result.index["shift"] == "bottom", "path"].iloc[0]
    steps = rw.read_log(result.path / path).steps
    assert steps.groupby("episode")["intervene.active"].sum().tolist() == [1, 1]  # once in each game
