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

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rlwrappers import _optional
from rlwrappers.error import InvalidType, UnknownName, did_you_mean
from rlwrappers.ladders.definition import PREPROCESSING

__all__ = ["Wrapper", "atari_games", "preprocessing_wrappers"]

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


def _register_ale() -> None:
    """Registers ALE's envs with Gymnasium (``BreakoutNoFrameskip-v4``), so that ``gym.make`` finds them."""
    ale_py = _optional.require("ale_py", purpose="the Atari ladders' envs")
    gym.register_envs(ale_py)


#: Each preprocessing's wrappers, in order, and what it needs done before ``gym.make`` can build its env.
_PREPROCESSING: dict[str, tuple[tuple[Wrapper, ...], Callable[[], None]]] = {
    "atari-games": ((atari_games,), _register_ale),
}


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
