"""Atari: SB3's Atari preprocessing for one env, and lives counted as episodes (seed 001, Appendix C.1)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rlwrappers.error import InvalidArgument

__all__ = ["LivesAsEpisodes", "atari_wrapper"]


class LivesAsEpisodes(gym.Wrapper[Any, Any, Any, Any]):
    """Counts each life of an Atari game as one episode (seed 001, Appendix C.1).

    A lost life ends the episode (``terminated``); the next ``reset`` continues the same game from there
    (its seed is not used) unless the game is over. Needs an env that reports ``info["lives"]`` (ALE).
    """

    def __init__(self, env: gym.Env[Any, Any]):
        super().__init__(env)
        self.game_over = True
        self._lives = 0
        self._obs: Any = None
        self._info: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Starts a new game if the last one is over; otherwise goes on with the next life."""
        if self.game_over:
            obs, info = self.env.reset(seed=seed, options=options)
            if "lives" not in info:
                raise InvalidArgument(f"lives_as_episodes needs an env whose info reports 'lives'; {self.env} does not")
            self.game_over = False
            self._lives = int(info["lives"])
            return obs, info
        return self._obs, dict(self._info)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Steps the game; losing a life terminates the episode."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = bool(terminated or truncated)
        lives = int(info.get("lives", self._lives))
        life_lost = 0 < lives < self._lives
        self._lives = lives
        self._obs, self._info = obs, info
        return obs, reward, terminated or life_lost, truncated, info


def atari_wrapper(env: gym.Env[Any, Any], frame_stack: int = 4) -> gym.Env[Any, Any]:
    """The input SB3's Atari agents see, for one env: uint8 ``(frame_stack, 84, 84)``, channel first.

    SB3's ``AtariWrapper`` as ``make_atari_env`` applies it (30 random no-ops at reset, frame skip 4 with a max
    over the last two frames, 84x84 grayscale, FIRE at the start of each life where the game needs it) with
    two changes for evaluation: rewards are not clipped, and while a life ends the episode (as in training),
    the next ``reset`` goes on with the same game and ignores its seed until the game is over. Then the last
    ``frame_stack`` frames are stacked channel first, as SB3's ``VecTransposeImage`` hands them to the policy.

    Wrap the raw ALE env, with no frame skip of its own (``BreakoutNoFrameskip-v4``, or
    ``ALE/Breakout-v5`` with ``frameskip=1``). A corruption that wraps ``env`` before this acts on the raw
    frame, one that wraps the result acts on the network's input.

    Example:
        >>> import ale_py, gymnasium as gym
        >>> gym.register_envs(ale_py)
        >>> from rlwrappers.wrappers.atari import atari_wrapper
        >>> env = atari_wrapper(gym.make("BreakoutNoFrameskip-v4"))
        >>> env.observation_space.shape
        (4, 84, 84)
    """
    from stable_baselines3.common.atari_wrappers import AtariWrapper

    if not isinstance(frame_stack, int) or isinstance(frame_stack, bool) or frame_stack < 1:
        raise InvalidArgument(f"`frame_stack` must be an int >= 1, received {frame_stack!r}")
    env = AtariWrapper(env, screen_size=84, terminal_on_life_loss=True, clip_reward=False)
    env = gym.wrappers.ReshapeObservation(env, (84, 84))
    return gym.wrappers.FrameStackObservation(env, frame_stack)
