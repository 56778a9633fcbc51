"""The preprocessing a ladder names: the wrappers that build its env as the agents see it, under the shifts.

A ladder's file holds ``gym.make``'s keyword arguments (``env_kwargs``) and the name of its preprocessing
(``preprocessing``, or null), since JSON cannot hold callables. :func:`preprocessing_wrappers` turns the name into
the wrappers, for :class:`rlwrappers.studies.EnvSetup`'s ``wrappers`` (applied under the shifts, so the shifts act
on the agent's input) or by hand::

    env = gym.make(ladder.env_id, **ladder.env_kwargs)
    for wrapper in preprocessing_wrappers(ladder.preprocessing):
        env = wrapper(env)

The names, and what each does, are :data:`~rlwrappers.ladders.definition.PREPROCESSING`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from rlwrappers import _optional
from rlwrappers.error import InvalidType, UnknownName, did_you_mean
from rlwrappers.ladders.definition import PREPROCESSING

__all__ = ["MiniGridPixels", "Wrapper", "atari_games", "build_env", "minigrid_pixels", "preprocessing_wrappers"]

#: A wrapper of a preprocessing: a callable env -> env.
Wrapper = Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]


def atari_games(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
    """The ``"atari-games"`` preprocessing: ``atari_wrapper(env, frame_stack=4, games=True)``.

    SB3's Atari preprocessing as SB3's Atari agents see it (a channel-first stack of four 84x84 grayscale
    frames, rewards unclipped) with whole games as episodes; see
    :class:`rlwrappers.wrappers.atari.GamesAsEpisodes`. A module-level function, so that it pickles.
    """
    from rlwrappers.wrappers.atari import atari_wrapper

    return atari_wrapper(env, frame_stack=4, games=True)


class MiniGridPixels(gym.ObservationWrapper[Any, Any, Any], gym.utils.RecordConstructorArgs):
    """The agent's partial view of a MiniGrid env as an RGB picture, alone: the ``"minigrid-rgb"`` preprocessing.

    The pixels of MiniGrid's own ``RGBImgPartialObsWrapper`` followed by ``ImgObsWrapper`` (the same
    ``get_frame(tile_size, agent_pov=True)`` call), ``tile_size`` pixels a cell: 56x56x3 for the 7x7 view at
    the default 8. The direction and the mission entries are left out, and MiniGrid's symbolic grid never reaches
    the agent. Unlike MiniGrid's wrappers it records its arguments, so the env's spec rebuilds it.
    """

    def __init__(self, env: gym.Env[Any, Any], tile_size: int = 8) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, tile_size=tile_size)
        super().__init__(env)
        self.tile_size = tile_size
        rows, columns = env.observation_space["image"].shape[:2]  # type: ignore[index]
        self.observation_space = gym.spaces.Box(0, 255, (rows * tile_size, columns * tile_size, 3), np.uint8)

    def observation(self, observation: Any) -> Any:
        """The picture of the agent's view (the observation MiniGrid gives is not read)."""
        return self.unwrapped.get_frame(tile_size=self.tile_size, agent_pov=True)  # type: ignore[attr-defined]


def minigrid_pixels(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
    """The ``"minigrid-rgb"`` preprocessing: :class:`MiniGridPixels` (a module-level function, so that it pickles)."""
    return MiniGridPixels(env)


def _register_minigrid() -> None:
    """Registers MiniGrid's envs with Gymnasium (importing the package does)."""
    _optional.require("minigrid", purpose="the MiniGrid ladders' envs")


def _register_ale() -> None:
    """Registers ALE's envs with Gymnasium (``BreakoutNoFrameskip-v4``), so that ``gym.make`` finds them."""
    ale_py = _optional.require("ale_py", purpose="the Atari ladders' envs")
    gym.register_envs(ale_py)


#: Each preprocessing's wrappers, in order, and what it needs done before ``gym.make`` can build its env.
_PREPROCESSING: dict[str, tuple[tuple[Wrapper, ...], Callable[[], None]]] = {
    "atari-games": ((atari_games,), _register_ale),
    "minigrid-rgb": ((minigrid_pixels,), _register_minigrid),
}


def build_env(env_id: str, env_kwargs: Mapping[str, Any], preprocessing: str | None) -> gym.Env[Any, Any]:
    """A ladder's env: ``gym.make(env_id, **env_kwargs)``, then the wrappers of the preprocessing named.

    An ALE game is made in :func:`rlwrappers.wrappers.atari.without_reloads` first, so that a seeded reset loads
    no ROM.
    """
    from rlwrappers.wrappers.atari import without_reloads

    wrappers = preprocessing_wrappers(preprocessing)  # first: it may register the env's ID
    env = without_reloads(gym.make(env_id, **env_kwargs))
    for wrapper in wrappers:
        env = wrapper(env)
    return env


def preprocessing_wrappers(name: str | None) -> list[Wrapper]:
    """The wrappers of the preprocessing ``name`` (a ladder's :attr:`~rlwrappers.ladders.Ladder.preprocessing`).

    Each is a callable env -> env, to apply in order to ``gym.make(env_id, **env_kwargs)``. None (no
    preprocessing) gives none. An Atari preprocessing also registers ALE's envs with Gymnasium, so that
    ``gym.make`` finds the ladder's env afterwards.

    Example:
        >>> from rlwrappers.ladders import preprocessing_wrappers
        >>> preprocessing_wrappers(None)
        []
        >>> [wrapper.__name__ for wrapper in preprocessing_wrappers("atari-games")]
        ['atari_games']

    Raises:
        UnknownName: ``name`` is not a preprocessing (with a suggestion).
        InvalidType: ``name`` is not a string or None.
        MissingExtra: the preprocessing needs an extra that is not installed (ale_py for Atari).
    """
    if name is None:
        return []
    if not isinstance(name, str):
        raise InvalidType(f"`name` must be a preprocessing name or None, received {name!r}")
    if name not in _PREPROCESSING:
        raise UnknownName(
            f"`name` {name!r} is not a preprocessing; preprocessings: {list(PREPROCESSING)}."
            + did_you_mean(name, PREPROCESSING)
        )
    wrappers, prepare = _PREPROCESSING[name]
    prepare()
    return list(wrappers)
