"""Toybox envs: registration, ALE compatibility, Atari wrappers, seeding, state and config JSON, bad arguments."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from rlwrappers.envs.toybox import game as toybox_game

from rlwrappers import envs, error

pytest.importorskip("ctoybox")

TOYBOX_IDS = envs.TOYBOX_IDS

IDS = list(TOYBOX_IDS.values())
#: The ALE env of the same game, for comparing action sets.
ALE_IDS = {
    "breakout": "BreakoutNoFrameskip-v4",
    "amidar": "AmidarNoFrameskip-v4",
    "space_invaders": "SpaceInvadersNoFrameskip-v4",
}


def game(env: gym.Env) -> envs.ToyboxEnv:
    """The Toybox env under ``env``'s wrappers."""
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, envs.ToyboxEnv)
    return unwrapped


def rollout(env: gym.Env, seed: int | None, actions: np.ndarray) -> tuple[list[np.ndarray], list[float], list[dict]]:
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


def same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


# -- registration and spaces -----------------------------------------------------------------------------------
def test_importing_rlwrappers_envs_registers_the_three_games() -> None:
    assert TOYBOX_IDS == {
        "breakout": "rlwrappers/ToyboxBreakout-v0",
        "amidar": "rlwrappers/ToyboxAmidar-v0",
        "space_invaders": "rlwrappers/ToyboxSpaceInvaders-v0",
    }
    shapes = {"breakout": (160, 240, 3), "amidar": (250, 160, 3), "space_invaders": (210, 320, 3)}
    for name, env_id in TOYBOX_IDS.items():
        env = gym.make(env_id)
        assert env.spec is not None and env.spec.max_episode_steps == 108_000
        assert game(env).game == name and game(env).frameskip == 1
        assert env.observation_space == gym.spaces.Box(0, 255, shapes[name], np.uint8)
        obs, info = env.reset(seed=0)
        assert obs.shape == shapes[name] and obs.dtype == np.uint8 and obs.flags.c_contiguous
        assert info["lives"] == game(env).toybox.get_lives() + 1 and info["episode_frame_number"] == 0


@pytest.mark.parametrize("name", list(TOYBOX_IDS))
def test_actions_are_ales_minimal_set_in_ales_order(name: str) -> None:
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    ale = gym.make(ALE_IDS[name])
    env = gym.make(TOYBOX_IDS[name])
    meanings = game(env).get_action_meanings()
    assert meanings == ale.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
    assert env.action_space == ale.action_space == gym.spaces.Discrete(len(meanings))
    assert meanings[:2] == ["NOOP", "FIRE"]
    assert [envs.toybox.ACTION_MEANINGS[a] for a in game(env).ale.getMinimalActionSet()] == meanings
    full = envs.ToyboxEnv(name, full_action_space=True)
    assert full.action_space == gym.spaces.Discrete(18)
    assert full.get_action_meanings() == gym.make(ALE_IDS[name], full_action_space=True).unwrapped.get_action_meanings()  # type: ignore[attr-defined]


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_check_env(env_id: str) -> None:
    check_env(gym.make(env_id, render_mode="rgb_array").unwrapped, skip_render_check=False)
    check_env(gym.make(env_id, obs_type="grayscale").unwrapped)


def test_grayscale_frames_are_toyboxs_own_and_rgb_frames_match_ctoybox() -> None:
    rgb, gray = gym.make(IDS[0], render_mode="rgb_array"), gym.make(IDS[0], obs_type="grayscale")
    actions = np.random.default_rng(1).integers(0, 4, 60)
    rgb_frames, _, _ = rollout(rgb, 3, actions)
    gray_frames, _, _ = rollout(gray, 3, actions)
    assert gray.observation_space.shape == (160, 240)
    assert np.array_equal(gray_frames[-1], game(gray).toybox.get_state()[:, :, 0])
    assert np.array_equal(rgb_frames[-1], game(rgb).toybox.get_rgb_frame())
    rendered = rgb.render()
    assert isinstance(rendered, np.ndarray) and np.array_equal(rendered, rgb_frames[-1])
    assert len(np.unique(rgb_frames[-1].reshape(-1, 3), axis=0)) > 3  # a colour frame, not an empty one
    # every observation is a new array
    assert not np.shares_memory(rgb_frames[-1], rgb_frames[-2])
    assert not np.shares_memory(gray_frames[-1], gray_frames[-2])


@pytest.mark.parametrize("shape", [(1, 1), (1, 2), (3, 5), (160, 240)])
def test_the_numpy_rgba_to_rgb_copy_is_exact(shape: tuple[int, int]) -> None:
    rgba = np.random.default_rng(0).integers(0, 256, (*shape, 4), dtype=np.uint8)
    out = np.full((*shape, 3), 7, np.uint8)
    toybox_game._rgba_to_rgb_numpy(rgba, out)
    assert np.array_equal(out, rgba[..., :3])


def test_the_rgb_frame_is_the_same_with_and_without_opencv() -> None:
    env = envs.ToyboxEnv("space_invaders")
    env.reset(seed=0)
    for _ in range(30):
        env.step(1)
    with_cv2 = env.observe()
    env._cv2 = None
    assert np.array_equal(env.observe(), with_cv2)


# -- rewards, lives, episodes -----------------------------------------------------------------------------------
def test_lives_count_as_ales_do_and_reach_zero_at_game_over() -> None:
    env = gym.make(IDS[0], obs_type="grayscale")
    frames, rewards, infos = rollout(env, 0, np.random.default_rng(0).integers(0, 4, 5000))
    lives = [info["lives"] for info in infos]
    assert lives[0] == 6  # Toybox Breakout's 5 spare balls and the one in play
    assert lives[-1] == 0 and game(env).ale.lives() == 0 and game(env).game_over
    assert sorted(set(lives), reverse=True) == [6, 5, 4, 3, 2, 1, 0]
    assert all(b in (a, a - 1) for a, b in itertools.pairwise(lives))
    assert sum(rewards) == game(env).score > 0
    assert infos[-1]["episode_frame_number"] == len(frames) - 1 == game(env).ale.getEpisodeFrameNumber()


def test_frameskip_repeats_the_action_and_sums_rewards() -> None:
    one, four = envs.ToyboxEnv("space_invaders", obs_type="grayscale"), envs.ToyboxEnv("space_invaders", frameskip=4)
    actions = np.random.default_rng(0).integers(0, 6, 150)
    frames, rewards, _ = rollout(one, 5, np.repeat(actions, 4))
    skipped, skipped_rewards, infos = rollout(four, 5, actions)
    assert len(frames) == 601 and len(skipped) == 151
    assert sum(rewards) == sum(skipped_rewards) > 0
    assert np.array_equal(frames[-1], four.ale.getScreenGrayscale())
    assert infos[-1]["episode_frame_number"] == 600


# -- Atari wrappers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("env_id", "loses_a_life"), [(IDS[0], True), (IDS[1], False), (IDS[2], True)])
def test_sb3_atari_wrapper_runs_unchanged(env_id: str, loses_a_life: bool) -> None:
    atari_wrappers = pytest.importorskip("stable_baselines3.common.atari_wrappers")
    pytest.importorskip("cv2")

    def run() -> tuple[list[np.ndarray], list[float], int]:
        env = atari_wrappers.AtariWrapper(gym.make(env_id))
        env.action_space.seed(0)
        obs, _ = env.reset(seed=0)
        frames, rewards, life_losses = [obs], [], 0
        for _ in range(300):
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            frames.append(obs)
            rewards.append(float(reward))
            if terminated or truncated:
                life_losses += game(env).lives > 0  # EpisodicLifeEnv ended the episode on a life lost
                obs, _ = env.reset()
        return frames, rewards, life_losses

    frames, rewards, life_losses = run()
    assert all(frame.shape == (84, 84, 1) and frame.dtype == np.uint8 for frame in frames)
    assert set(rewards) <= {-1.0, 0.0, 1.0}
    assert life_losses >= loses_a_life  # a random Amidar player survives 1,200 frames
    again = run()
    assert same(frames, again[0]) and rewards == again[1]


def test_gymnasium_atari_preprocessing_runs_on_both_buffers() -> None:
    pytest.importorskip("cv2")
    for grayscale in (True, False):
        env = gym.wrappers.AtariPreprocessing(gym.make(IDS[0]), grayscale_obs=grayscale, terminal_on_life_loss=True)
        obs, _ = env.reset(seed=0)
        for action in [1] + [3] * 40:
            obs, *_ = env.step(action)
        assert obs.shape == ((84, 84) if grayscale else (84, 84, 3)) and obs.max() > 0


def test_screen_buffers_must_fit_the_frame() -> None:
    ale = envs.ToyboxEnv("breakout").ale
    assert ale.getScreenDims() == (160, 240)
    gray = np.zeros((160, 240), np.uint8)
    assert ale.getScreenGrayscale(gray) is gray and gray.max() > 0
    for bad in (np.zeros((160, 239), np.uint8), np.zeros((160, 240), np.float32), np.zeros((240, 160), np.uint8).T):
        with pytest.raises(error.InvalidArgument, match="screen_data"):
            ale.getScreenGrayscale(bad)
    with pytest.raises(error.InvalidArgument, match="160 x 240 x 3"):
        ale.getScreenRGB(np.zeros((160, 240), np.uint8))


# -- seeding ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", [IDS[0], IDS[2]])  # Amidar's default game draws no random numbers
def test_same_seed_is_bit_identical_and_other_seeds_differ(env_id: str) -> None:
    actions = np.random.default_rng(0).integers(0, 4, 600)
    first = rollout(gym.make(env_id, obs_type="grayscale"), 7, actions)
    again = rollout(gym.make(env_id, obs_type="grayscale"), 7, actions)
    other = rollout(gym.make(env_id, obs_type="grayscale"), 8, actions)
    assert len(first[0]) > 200
    assert same(first[0], again[0]) and first[1] == again[1] and first[2] == again[2]
    assert not same(first[0], other[0])


def test_unseeded_resets_continue_the_seeded_stream() -> None:
    actions = np.random.default_rng(0).integers(0, 4, 40)
    a, b = gym.make(IDS[0], obs_type="grayscale"), gym.make(IDS[0], obs_type="grayscale")
    games: list[list[tuple[list[np.ndarray], dict]]] = []
    for env in (a, b):
        env.reset(seed=3)
        games.append([(rollout(env, None, actions)[0], game(env).state_json()) for _ in range(3)])
    for (frames_a, state_a), (frames_b, state_b) in zip(games[0], games[1], strict=True):
        assert same(frames_a, frames_b) and state_a == state_b
    assert len({str(state["rand"]) for _, state in games[0]}) == 3  # each reset is a new game


# -- state and config -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", IDS)
def test_a_written_state_restores_the_frame_and_the_game_that_follows(env_id: str) -> None:
    env = game(gym.make(env_id))
    actions = np.random.default_rng(2).integers(0, env.action_space.n, 200)
    env.reset(seed=1)
    for action in actions[:100]:
        env.step(int(action))
    state, frame = env.state_json(), env.observe()
    later = [env.step(int(action)) for action in actions[100:]]
    assert not np.array_equal(later[-1][0], frame)
    env.write_state_json(state)
    assert np.array_equal(env.observe(), frame)
    replayed = [env.step(int(action)) for action in actions[100:]]
    assert same([s[0] for s in later], [s[0] for s in replayed])
    # rewards, flags and lives too (the frame counters go on)
    assert [(*s[1:4], s[4]["lives"]) for s in later] == [(*s[1:4], s[4]["lives"]) for s in replayed]
    # state_json hands out a copy
    state["score"] = -1
    assert env.state_json()["score"] != -1


def test_an_edited_state_changes_the_game_but_pays_no_reward() -> None:
    env = game(gym.make(IDS[0]))
    env.reset(seed=0)
    state = env.state_json()
    before = env.observe()
    state["paddle"]["position"]["x"] = 40.0
    state["score"] = 100
    env.write_state_json(state)
    assert env.state_json()["paddle"]["position"]["x"] == 40.0 and env.score == 100
    assert not np.array_equal(env.observe(), before)
    _, reward, *_ = env.step(0)
    assert reward == 0.0


def test_clone_and_restore_state_round_trip() -> None:
    env = game(gym.make(IDS[2], obs_type="grayscale"))
    env.reset(seed=0)
    for _ in range(50):
        env.step(4)
    snapshot, frame = env.clone_state(), env.observe()
    first = [env.step(1)[0] for _ in range(100)]
    for _ in range(2):  # the snapshot can be restored again
        env.restore_state(snapshot)
        assert np.array_equal(env.observe(), frame)
        assert same([env.step(1)[0] for _ in range(100)], first)
    with pytest.raises(error.InvalidType, match="clone_state"):
        env.restore_state(game(gym.make(IDS[0])).clone_state())
    with pytest.raises(error.InvalidType, match="clone_state"):
        env.restore_state(env.state_json())


def test_bad_states_and_configs_raise_typed_errors() -> None:
    env = game(gym.make(IDS[0]))
    env.reset(seed=0)
    with pytest.raises(error.InvalidType, match="`state` must be a dict"):
        env.write_state_json('{"score": 1}')
    state = env.state_json()
    del state["paddle"]
    with pytest.raises(error.InvalidArgument, match="not a valid Toybox breakout state"):
        env.write_state_json(state)
    with pytest.raises(error.InvalidArgument, match="not a valid Toybox breakout state"):
        env.write_state_json(gym.make(IDS[1]).unwrapped.state_json())  # type: ignore[attr-defined]
    state = env.state_json()
    state["paddle"]["position"]["x"] = object()
    with pytest.raises(error.InvalidType, match="only JSON values"):
        env.write_state_json(state)
    state["paddle"]["position"]["x"] = np.float64(40.5)  # numpy numbers are written as numbers
    env.write_state_json(state)
    assert env.state_json()["paddle"]["position"]["x"] == 40.5
    with pytest.raises(error.InvalidType, match="`config` must be a dict"):
        env.write_config_json([])
    config = env.config_json()
    config["start_lives"] = "many"
    with pytest.raises(error.InvalidArgument, match="not a valid Toybox breakout config"):
        env.write_config_json(config)
    env.step(1)  # the env still plays


def test_a_written_config_lasts_across_resets() -> None:
    env = game(gym.make(IDS[0]))
    config = env.config_json()
    config["start_lives"] = 2
    config["bg_color"] = {"r": 10, "g": 20, "b": 30, "a": 255}
    env.write_config_json(config)
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        assert info["lives"] == 3 and env.config_json()["start_lives"] == 2
        assert (obs == np.array([10, 20, 30], np.uint8)).all(axis=-1).mean() > 0.5  # the background


# -- arguments --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"game": "breakot"}, error.UnknownName, "Did you mean `breakout`"),
        ({"game": "pong"}, error.UnknownName, "`game` must be one of"),
        ({"game": 3}, error.InvalidType, "`game`"),
        ({"obs_type": "grey"}, error.UnknownName, "`obs_type`"),
        ({"obs_type": "ram"}, error.UnknownName, "`obs_type`"),
        ({"frameskip": 0}, error.InvalidArgument, "`frameskip` must be >= 1"),
        ({"frameskip": 2.0}, error.InvalidType, "`frameskip` must be an integer"),
        ({"full_action_space": "yes"}, error.InvalidType, "`full_action_space` must be a bool"),
        ({"render_mode": "human"}, error.InvalidArgument, "`render_mode`"),
    ],
)
def test_bad_constructor_arguments_raise_typed_errors(kwargs: dict, err: type[Exception], match: str) -> None:
    with pytest.raises(err, match=match):
        envs.ToyboxEnv(**kwargs)
    if "render_mode" not in kwargs:  # gym.make answers render_mode="human" with its HumanRendering wrapper
        with pytest.raises(err, match=match):
            gym.make(IDS[0], **{"game": "breakout", **kwargs})


def test_bad_actions_raise_typed_errors() -> None:
    env = gym.make(IDS[0]).unwrapped
    env.reset(seed=0)
    for action in (4, -1):
        with pytest.raises(error.InvalidArgument, match=r"`action` must be in \[0, 4\)"):
            env.step(action)
    with pytest.raises(error.InvalidType, match="`action` must be an integer"):
        env.step(1.0)
    obs, *_ = env.step(np.int64(3))  # numpy integers are actions
    assert obs.shape == (160, 240, 3)


def test_render_without_a_mode_warns_and_close_is_idempotent() -> None:
    env = envs.ToyboxEnv("amidar")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None
    env.close()
    env.close()
    assert env.toybox.deleted


def test_the_module_example_runs() -> None:
    import doctest

    result = doctest.testmod(toybox_game)
    assert result.attempted >= 7 and result.failed == 0
