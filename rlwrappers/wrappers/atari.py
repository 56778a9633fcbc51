"""Atari: SB3's Atari preprocessing for one env, with lives (seed 001, Appendix C.1) or whole games as episodes."""

from __future__ import annotations

import sys
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

from rlwrappers import _optional
from rlwrappers.core import INFO_KEY, wrapper_chain
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType

__all__ = ["GamesAsEpisodes", "LivesAsEpisodes", "ReseedWithoutReload", "atari_wrapper", "without_reloads"]

#: The side of the square grayscale frames SB3's Atari agents see.
SCREEN_SIZE = 84


#: The wrappers ``gym.make`` puts on an env, which pass ``reset``'s seed on untouched.
_MAKE_WRAPPERS = (OrderEnforcing, PassiveEnvChecker, TimeLimit)


class ReseedWithoutReload(gym.Wrapper[Any, Any, Any, Any]):
    """Seeds an ALE game at ``reset(seed=...)`` without loading its ROM again, to the bits of a reload.

    ale-py loads the ROM at every seeded reset: about 65 ms on one core, a tenth of a game of Breakout. Without
    sticky actions the seed reaches only the env's generator (which draws SB3's no-ops) and ALE's own, which
    draws for sticky actions alone: the emulator's state after a seeded reset is the same whatever the seed.
    So this wrapper keeps the state the ROM had when loaded, and a seeded reset seeds the generators as ale-py
    does, restores that state and resets the game. The observations, rewards, infos and emulator states are
    those of a reload (tested game by game). With sticky actions on (``repeat_action_probability > 0``, as in
    the v5 IDs) ALE's generator matters, and every seeded reset loads the ROM as before.

    Wrap the env as ``gym.make`` returns it: a wrapper in between would not see the seed. Until its first
    reset the env holds the loaded ROM's state; wrapped after it, the first seeded reset loads the ROM once more.

    Example:
        >>> import ale_py, gymnasium as gym
        >>> gym.register_envs(ale_py)
        >>> env = ReseedWithoutReload(gym.make("BreakoutNoFrameskip-v4"))
        >>> obs, info = env.reset(seed=3)
        >>> info["seeds"] == gym.make("BreakoutNoFrameskip-v4").reset(seed=3)[1]["seeds"]
        True
    """

    def __init__(self, env: gym.Env[Any, Any]):
        if not self.fits(env):
            raise InvalidArgument(
                "ReseedWithoutReload wraps an ALE env (ale_py's AtariEnv) as gym.make returns it, with no wrapper"
                f" but {[w.__name__ for w in _MAKE_WRAPPERS]} over it; received {env}"
            )
        super().__init__(env)
        fresh = any(isinstance(layer, OrderEnforcing) and not layer.has_reset for layer in wrapper_chain(env))
        self._loaded = env.unwrapped.ale.cloneState() if fresh else None  # type: ignore[attr-defined]

    @staticmethod
    def fits(env: gym.Env[Any, Any]) -> bool:
        """Whether ``env`` is an ALE env as ``gym.make`` returns it (ale_py's own ``AtariEnv``, not a subclass)."""
        ale_env = sys.modules.get("ale_py.env")
        if ale_env is None or type(env.unwrapped) is not ale_env.AtariEnv:
            return False
        return all(isinstance(layer, _MAKE_WRAPPERS) for layer in wrapper_chain(env))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Starts a game; a seed restores the loaded ROM's state where a reload would give the same bits."""
        game: Any = self.env.unwrapped
        if seed is None or game.ale.getFloat("repeat_action_probability") > 0:
            return self.env.reset(seed=seed, options=options)
        gym.Env.reset(game, seed=seed)  # what AtariEnv.reset does first; seed_game then replaces the generator
        seeds = game.seed_game(seed)
        if self._loaded is None:
            game.load_game()
            self._loaded = game.ale.cloneState()
        else:
            game.ale.restoreState(self._loaded)
        obs, info = self.env.reset(options=options)
        info["seeds"] = seeds
        return obs, info


def without_reloads(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
    """``env`` in :class:`ReseedWithoutReload` where it fits (an ALE env as ``gym.make`` returns it), else ``env``."""
    return ReseedWithoutReload(env) if ReseedWithoutReload.fits(env) else env


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


class _Game(gym.Wrapper[Any, Any, Any, Any]):
    """Watches the raw game under SB3's ``AtariWrapper``: its end, and its rewards since :meth:`clear`.

    Attributes:
        end: ``(terminated, truncated)`` of the raw step that ended the game since the last :meth:`clear`, or None.
        reward: the raw rewards since the last :meth:`clear`, up to the game's end.
    """

    def __init__(self, env: gym.Env[Any, Any]):
        super().__init__(env)
        self.end: tuple[bool, bool] | None = None
        self.reward = 0.0

    def clear(self) -> None:
        """Forgets the end and the rewards seen so far."""
        self.end, self.reward = None, 0.0

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Steps the game; adds its reward, and records its end."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.end is None:
            self.reward += float(reward)
            if terminated or truncated:
                self.end = (bool(terminated), bool(truncated))
        return obs, reward, terminated, truncated, info


class _FrameRecords(gym.Wrapper[Any, Any, Any, Any]):
    """Keeps what the perturbation layers under the preprocessing reported at each raw frame, for the agent's step.

    SB3's frame skip keeps the ``info`` of a step's last frame only, and its FIRE reset returns an empty one, so
    a layer under the preprocessing (an :class:`~rlwrappers.wrappers.state.Intervene` on the raw game) would see
    its records dropped whenever it acted on another frame. This wrapper, right above the raw env, keeps them;
    :class:`_AgentRecords`, above the preprocessing, hands them to the agent's step: see :func:`_merge_frames`.
    """

    def __init__(self, env: gym.Env[Any, Any]):
        super().__init__(env)
        self._reset: dict[str, Any] | None = None
        self._steps: list[dict[str, Any]] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._reset, self._steps = info.get(INFO_KEY), []
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        records = info.get(INFO_KEY)
        if records:
            self._steps.append(records)
        return obs, reward, terminated, truncated, info

    def take_reset(self) -> dict[str, Any] | None:
        """The records of the raw env's last reset, once."""
        records, self._reset = self._reset, None
        return records

    def take_steps(self) -> dict[str, Any] | None:
        """The records of the raw frames stepped since the last call, merged (:func:`_merge_frames`); None if none."""
        steps, self._steps = self._steps, []
        return _merge_frames(steps) if steps else None


def _merge_frames(frames: list[dict[str, Any]]) -> dict[str, Any]:
    """One agent step's records from those of its raw frames, by label.

    Each label keeps its last frame's record if that one acted (``active``), else the first record that did, else
    the last one: what a layer did on any frame of the step is reported, and an always-on layer reports its last
    frame, as SB3's frame skip would.
    """
    out: dict[str, Any] = {}
    for label in dict.fromkeys(label for records in frames for label in records):
        seen = [records[label] for records in frames if label in records]
        record = seen[-1]
        if not record.get("active", False):
            record = next((r for r in seen if r.get("active", False)), record)
        out[label] = record
    return out


class _AgentRecords(gym.Wrapper[Any, Any, Any, Any]):
    """Above the preprocessing: puts the records :class:`_FrameRecords` kept into each agent step's ``info``.

    A reset reports the raw env's reset; the records of the frames it steps (no-ops, FIRE) join the first step.
    """

    def __init__(self, env: gym.Env[Any, Any], frames: _FrameRecords):
        super().__init__(env)
        self.frames = frames

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        records = self.frames.take_reset()
        if records is not None:
            info[INFO_KEY] = records
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        records = self.frames.take_steps()
        if records is not None:
            info[INFO_KEY] = records
        return obs, reward, terminated, truncated, info


def _check_frame_stack(frame_stack: Any) -> int:
    if not isinstance(frame_stack, int) or isinstance(frame_stack, bool) or frame_stack < 1:
        raise InvalidArgument(f"`frame_stack` must be an int >= 1, received {frame_stack!r}")
    return frame_stack


def _preprocessing(env: gym.Env[Any, Any], frame_stack: int, padding: str) -> tuple[gym.Env[Any, Any], Any]:
    """SB3's ``AtariWrapper`` (a life ends the episode, rewards unclipped) under a channel-first frame stack.

    Returns the stack and the ``AtariWrapper``'s ``EpisodicLifeEnv`` layer.
    """
    atari_wrappers = _optional.require("stable_baselines3.common.atari_wrappers", purpose="SB3's Atari preprocessing")
    frames = _FrameRecords(env)
    env = atari = atari_wrappers.AtariWrapper(  # terminal_on_life_loss=True: it holds an EpisodicLifeEnv
        frames, screen_size=SCREEN_SIZE, terminal_on_life_loss=True, clip_reward=False
    )
    lives = next(w for w in wrapper_chain(atari) if isinstance(w, atari_wrappers.EpisodicLifeEnv))
    env = gym.wrappers.ReshapeObservation(env, (SCREEN_SIZE, SCREEN_SIZE))
    return _AgentRecords(gym.wrappers.FrameStackObservation(env, frame_stack, padding_type=padding), frames), lives


class GamesAsEpisodes(gym.Wrapper[Any, Any, Any, Any], gym.utils.RecordConstructorArgs):
    """SB3's Atari preprocessing with whole games as episodes, as SB3's ``evaluate_policy`` counts them.

    Builds :func:`atari_wrapper`'s stack over the raw ALE ``env`` (SB3's ``AtariWrapper``, where a lost life
    ends the episode, rewards unclipped, and a channel-first stack of ``frame_stack`` frames), and hides the
    lives from the caller: when a life is lost, it resets the stack itself, which goes on with the same game
    (SB3's reset after a lost life: a no-op step, then FIRE), and returns that observation with
    ``terminated=False``. The episode ends only when the game is over (``terminated``, ``info["lives"]`` 0) or
    truncated (a ``TimeLimit`` on the raw env, e.g. ``gym.make(id, max_episode_steps=18000)``, counts raw
    frames: four per step). So the episode's return is the game's score, as SB3's ``Monitor`` (under its
    ``AtariWrapper``) sums it while its vector env resets the ``AtariWrapper`` at each lost life: the rewards of
    the restart's steps, which the ``AtariWrapper`` drops, are added to the step that lost the life.

    As SB3's ``VecFrameStack`` does at each reset and at each ``done`` (a lost life), the stack restarts from
    zeros with the new frame last. ``reset`` always starts a new game from its seed (SB3's 1 to 30 random
    no-ops, drawn from the env's generator, then FIRE), even within a game. If a game ends during a life's
    restart (its time limit strikes within the restart's steps), the episode ends there with the game's
    flags, and the observation is the last one before the restart.

    No vector version: wrap each sub-env.

    Args:
        env: the raw ALE env, without frame skip of its own (``BreakoutNoFrameskip-v4``, or
            ``ALE/Breakout-v5`` with ``frameskip=1``).
        frame_stack: how many frames the agent sees.

    Example:
        >>> import ale_py, gymnasium as gym
        >>> gym.register_envs(ale_py)
        >>> from rlwrappers.wrappers.atari import GamesAsEpisodes
        >>> env = GamesAsEpisodes(gym.make("BreakoutNoFrameskip-v4", max_episode_steps=18_000))
        >>> obs, _ = env.reset(seed=0)
        >>> obs.shape, obs[:3].max()  # zeros, then the first frame
        ((4, 84, 84), np.uint8(0))
        >>> steps, terminated = 0, False
        >>> while not terminated:  # NOOP: the ball goes past the paddle, once per life
        ...     _, _, terminated, truncated, info = env.step(0)
        ...     steps += 1
        >>> steps, info["lives"], truncated
        (115, 0, False)
    """

    def __init__(self, env: gym.Env[Any, Any], frame_stack: int = 4):
        frame_stack = _check_frame_stack(frame_stack)
        gym.utils.RecordConstructorArgs.__init__(self, frame_stack=frame_stack)
        self._game = _Game(env)
        stack, self._lives = _preprocessing(self._game, frame_stack, "zero")
        assert isinstance(stack, _AgentRecords)
        self._records = stack
        gym.Wrapper.__init__(self, stack)
        self.frame_stack = frame_stack

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Starts a new game, seeded by ``seed``, whether or not the last one is over."""
        self._lives.was_real_done = True  # SB3's EpisodicLifeEnv resets the game only when this says it ended
        self._game.clear()
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Steps the game; a lost life restarts the next one within the episode, which ends with the game."""
        self._game.clear()
        obs, _, terminated, truncated, info = self.env.step(action)
        if terminated and not truncated and self._game.end is None:  # a lost life: the game goes on
            last = obs
            obs, _ = self.env.reset()  # the seed is unused: SB3's EpisodicLifeEnv goes on with the game
            restart = self._records.frames.take_steps()  # what layers under it did in the restart's frames
            if restart is not None:
                info[INFO_KEY] = _merge_frames([info.get(INFO_KEY, {}), restart])
            if self._game.end is not None:  # the game ended within the restart, which then began a new one
                obs = last
                terminated, truncated = self._game.end
            else:
                terminated = False
        return obs, self._game.reward, bool(terminated), bool(truncated), info


def atari_wrapper(env: gym.Env[Any, Any], frame_stack: int = 4, games: bool = False) -> gym.Env[Any, Any]:
    """The input SB3's Atari agents see, for one env: uint8 ``(frame_stack, 84, 84)``, channel first.

    SB3's ``AtariWrapper`` as ``make_atari_env`` applies it (30 random no-ops at reset, frame skip 4 with a max
    over the last two frames, 84x84 grayscale, FIRE at the start of each life where the game needs it) with
    two changes for evaluation: rewards are not clipped, and while a life ends the episode (as in training),
    the next ``reset`` goes on with the same game and ignores its seed until the game is over. Then the last
    ``frame_stack`` frames are stacked channel first, as SB3's ``VecTransposeImage`` hands them to the policy
    (padded with the reset frame at each reset).

    With ``games=True``, an episode is a whole game instead, as SB3's ``evaluate_policy`` counts it: see
    :class:`GamesAsEpisodes` (which also pads the stack with zeros, as SB3's ``VecFrameStack`` does).

    Wrap the raw ALE env, with no frame skip of its own (``BreakoutNoFrameskip-v4``, or
    ``ALE/Breakout-v5`` with ``frameskip=1``). A corruption that wraps ``env`` before this acts on the raw
    frame, one that wraps the result acts on the network's input. What a perturbation layer under it reports
    on any raw frame reaches the agent's step: an intervention made on the second of a step's four frames is
    in that step's ``info``, and a reset's records come through the FIRE reset (SB3's frame skip alone keeps
    the last frame's ``info``).

    Args:
        env: the raw ALE env.
        frame_stack: how many frames the agent sees.
        games: whole games as episodes (:class:`GamesAsEpisodes`) rather than lives.

    Example:
        >>> import ale_py, gymnasium as gym
        >>> gym.register_envs(ale_py)
        >>> from rlwrappers.wrappers.atari import atari_wrapper
        >>> env = atari_wrapper(gym.make("BreakoutNoFrameskip-v4"))
        >>> env.observation_space.shape
        (4, 84, 84)
        >>> type(atari_wrapper(gym.make("BreakoutNoFrameskip-v4"), games=True)).__name__
        'GamesAsEpisodes'
    """
    frame_stack = _check_frame_stack(frame_stack)
    if not isinstance(games, bool):
        raise InvalidType(f"`games` must be a bool, received {games!r}")
    if not callable(getattr(env.unwrapped, "get_action_meanings", None)):
        raise IncompatibleSpace(
            f"SB3's Atari preprocessing (--atari) needs an Atari env (ALE, or a Toybox game), whose actions have"
            f" meanings (get_action_meanings); {type(env.unwrapped).__name__} is not one"
        )
    if games:
        return GamesAsEpisodes(env, frame_stack)
    return _preprocessing(env, frame_stack, "reset")[0]
