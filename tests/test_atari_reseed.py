"""ReseedWithoutReload: a seeded reset of an ALE game without loading its ROM gives the bits of a reload."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlwrappers.error import InvalidArgument
from rlwrappers.ladders import calibration
from rlwrappers.studies.design import BASELINE, Settings, Stack
from rlwrappers.studies.recipe import EnvRecipe
from rlwrappers.wrappers.atari import ReseedWithoutReload, atari_wrapper, without_reloads

ale_py = pytest.importorskip("ale_py")
gym.register_envs(ale_py)


def loads(env: gym.Env[Any, Any], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the ROM loads of ``env`` from now on (the real load still runs)."""
    game: Any = env.unwrapped
    count = [0]
    load = game.load_game

    def counted() -> None:
        count[0] += 1
        load()

    monkeypatch.setattr(game, "load_game", counted)
    return count


def games(env: gym.Env[Any, Any], seeds: list[int | None], frames: int) -> list[Any]:
    """Plays a game from each reset in ``seeds`` (None: an unseeded reset) with seeded random actions.

    Returns every observation, reward, flag and info, the env's generator draws after each reset, and the
    emulator's serialized state at the end of each game.
    """
    out: list[Any] = []
    rng = np.random.default_rng(0)
    actions: Any = env.action_space
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        game: Any = env.unwrapped
        out += [obs.tobytes(), sorted(info.items()), game.np_random.bit_generator.state, game.np_random_seed]
        for _ in range(frames):
            obs, reward, terminated, truncated, info = env.step(int(rng.integers(actions.n)))
            out.append((obs.tobytes(), reward, terminated, truncated, sorted(info.items())))
            if terminated or truncated:
                break
        out.append(game.ale.cloneState().serialize())
    return out


SEEDS: list[int | None] = [0, 7, None, 2**62 + 5, 0]


@pytest.mark.parametrize(
    "env_id", ["BreakoutNoFrameskip-v4", "PongNoFrameskip-v4", "SeaquestNoFrameskip-v4", "PitfallNoFrameskip-v4"]
)
def test_games_after_seeded_resets_equal_those_after_reloads_and_the_rom_loads_once(
    env_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reloaded = gym.make(env_id)
    reseeded = ReseedWithoutReload(gym.make(env_id))
    count = loads(reseeded, monkeypatch)
    assert games(reseeded, SEEDS, 1500) == games(reloaded, SEEDS, 1500)
    assert count[0] == 0  # the ROM gym.make loaded served every seed


def test_under_the_atari_preprocessing_whole_games_are_the_same() -> None:
    def breakout() -> gym.Env[Any, Any]:
        return gym.make("BreakoutNoFrameskip-v4", max_episode_steps=18_000)

    reloaded = atari_wrapper(breakout(), games=True)
    reseeded = atari_wrapper(ReseedWithoutReload(breakout()), games=True)
    assert games(reseeded, [3, 4, 3], 20_000) == games(reloaded, [3, 4, 3], 20_000)


def test_wrapped_after_a_reset_it_loads_once_more_and_then_never(monkeypatch: pytest.MonkeyPatch) -> None:
    used = gym.make("BreakoutNoFrameskip-v4")
    used.reset(seed=1)
    for _ in range(300):
        used.step(1)
    reseeded = ReseedWithoutReload(used)
    count = loads(reseeded, monkeypatch)
    assert games(reseeded, SEEDS, 800) == games(gym.make("BreakoutNoFrameskip-v4"), SEEDS, 800)
    assert count[0] == 1


def test_with_sticky_actions_each_seeded_reset_loads_the_rom_as_ale_py_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """ALE's own generator draws the sticky actions, and only a load seeds it."""
    reseeded = ReseedWithoutReload(gym.make("ALE/Breakout-v5", frameskip=1))
    count = loads(reseeded, monkeypatch)
    assert games(reseeded, SEEDS, 800) == games(gym.make("ALE/Breakout-v5", frameskip=1), SEEDS, 800)
    assert count[0] == 4  # the seeded resets


def test_it_wraps_only_an_ale_env_as_gym_make_returns_it() -> None:
    breakout = gym.make("BreakoutNoFrameskip-v4")
    assert ReseedWithoutReload.fits(breakout)
    for env in (gym.make("CartPole-v1"), gym.wrappers.ClipReward(breakout, 0, 1)):
        assert not ReseedWithoutReload.fits(env)
        with pytest.raises(InvalidArgument, match="ReseedWithoutReload wraps an ALE env"):
            ReseedWithoutReload(env)


def layers(env: gym.Env[Any, Any]) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def test_evaluations_and_calibrations_reseed_atari_envs_without_reloads_and_leave_others_alone() -> None:
    def arm(env_id: str) -> gym.Env[Any, Any]:
        settings = Settings(env_id, {}, {}, episodes=1, deterministic=True, lives_as_episodes=False)
        return EnvRecipe.of(settings, BASELINE, Stack()).build()[0]

    assert "ReseedWithoutReload" in layers(arm("BreakoutNoFrameskip-v4"))
    assert "ReseedWithoutReload" in layers(calibration.make_env("BreakoutNoFrameskip-v4"))
    assert "ReseedWithoutReload" not in layers(arm("CartPole-v1"))
    cartpole = gym.make("CartPole-v1")
    assert without_reloads(cartpole) is cartpole
