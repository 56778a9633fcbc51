"""Normalized impact of a perturbation on a score, and the fixed minimum scores of Atari games.

From *Assessing Reinforcement Learning Policies via Natural Corruptions at the Edge of Imperceptibility*,
Section 2.5, eq. 3:

``I = (score_clean - score_perturbed) / (score_clean - score_min)``: 0 when the perturbation costs nothing,
1 when it drives the score down to the game's fixed minimum, negative when the perturbed score is higher.
Scores broadcast like numpy arrays. ``score_min`` is a number, or the name of an Atari game (or of one of its
env IDs), looked up in :data:`MIN_SCORES`.

The paper does not list its fixed minima. :data:`MIN_SCORES` holds, for each game, the **lowest score the
game's rules allow** over a whole game: 0 for games whose score never falls, -21 for Pong, where the
opponent can win 21 points to none. Table 1 of the paper agrees for Pong: perturbed scores of -21.0 have
impact 1.0, which eq. 3 gives only when the minimum is -21.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike

from rlwrappers import _check
from rlwrappers.error import InvalidArgument, InvalidType, UnknownName, did_you_mean

__all__ = ["MIN_SCORES", "min_score", "normalized_impact"]

#: The lowest score each game's rules allow over one game (all lives), by ALE game name.
MIN_SCORES: Final = MappingProxyType(
    {
        "Asteroids": 0.0,
        "BankHeist": 0.0,
        "BeamRider": 0.0,
        "Breakout": 0.0,
        "JamesBond": 0.0,
        "MsPacman": 0.0,
        "Pong": -21.0,
        "Qbert": 0.0,
        "Riverraid": 0.0,
        "RoadRunner": 0.0,
        "Seaquest": 0.0,
        "SpaceInvaders": 0.0,
        "TimePilot": 0.0,
    }
)

# An env ID around a game name: an optional namespace ("ALE/"), then the game, an optional "-ram",
# "NoFrameskip" or "Deterministic", and an optional version ("-v4", "-v5").
_ENV_ID: Final = re.compile(r"^(?:[\w.-]+/)?(?P<game>\w+?)(?:-ram)?(?:NoFrameskip|Deterministic)?(?:-v\d+)?$")


def _key(name: str) -> str:
    """The comparison key of a game name: ``"JamesBond"``, ``"Jamesbond"`` and ``"james_bond"`` agree."""
    return name.replace("_", "").lower()


_BY_KEY: Final = {_key(game): game for game in MIN_SCORES}


def min_score(game: str) -> float:
    """The fixed minimum score of an Atari game, from its name or any of its env IDs.

    ``"Pong"``, ``"PongNoFrameskip-v4"``, ``"ALE/Pong-v5"`` and ``"pong"`` all name Pong; ALE's own
    spellings (``"Jamesbond"``, ``"ms_pacman"``) are accepted too.

    Raises:
        UnknownName: the game is not in :data:`MIN_SCORES`; pass the minimum as a number instead.

    Example:
        >>> min_score("PongNoFrameskip-v4"), min_score("ALE/Breakout-v5")
        (-21.0, 0.0)
    """
    if not isinstance(game, str):
        raise InvalidType(f"`game` must be a game name or env ID, received {game!r} ({type(game).__name__})")
    match = _ENV_ID.match(game.strip())
    name = _BY_KEY.get(_key(match.group("game"))) if match else None
    if name is None:
        raise UnknownName(
            f"no fixed minimum score for `{game}`; known games: {sorted(MIN_SCORES)}; pass the minimum as a"
            f" number instead.{did_you_mean(match.group('game') if match else game, MIN_SCORES)}"
        )
    return MIN_SCORES[name]


def normalized_impact(clean: ArrayLike, perturbed: ArrayLike, minimum: ArrayLike | str) -> Any:
    """Normalized impact ``(clean - perturbed) / (clean - minimum)``, broadcast (eq. 3).

    Where ``clean <= minimum`` the impact is undefined (there is no room for the score to fall, and eq. 3
    would divide by zero or flip its sign): the result there is NaN, never inf, so a table of many games and
    perturbations still fills in and shows the gap.

    Args:
        clean: the scores without perturbation (e.g. means over episodes).
        perturbed: the scores under the perturbation; broadcast against ``clean``.
        minimum: the fixed minimum score: a number (or an array that broadcasts), or a game name or env ID
            resolved by :func:`min_score`.

    Returns:
        A float for scalar inputs, otherwise a float64 array of the broadcast shape.

    Raises:
        InvalidArgument: a score is not finite, the shapes do not broadcast, or (with a game name) a score lies
            below that game's minimum, so it cannot come from that game.
        UnknownName: ``minimum`` names a game that is not in :data:`MIN_SCORES`.

    Example:
        >>> round(normalized_impact(21.0, -20.8, "PongNoFrameskip-v4"), 4)  # 41.8 / 42
        0.9952
        >>> normalized_impact([400.0, 0.0], 100.0, 0.0)  # a clean score at the minimum gives NaN
        array([0.75,  nan])
    """
    c = _check.finite_array("clean", clean)
    p = _check.finite_array("perturbed", perturbed)
    m = _check.finite_array("minimum", min_score(minimum) if isinstance(minimum, str) else minimum)
    try:
        c, p, m = np.broadcast_arrays(c, p, m)
    except ValueError:
        raise InvalidArgument(
            f"`clean`, `perturbed` and `minimum` must broadcast together, received shapes"
            f" {np.shape(c)}, {np.shape(p)} and {np.shape(m)}"
        ) from None
    if isinstance(minimum, str):
        for name, scores in (("clean", c), ("perturbed", p)):
            if np.any(scores < m):
                raise InvalidArgument(
                    f"`{name}` must be >= {m.flat[0]}, the lowest score of `{minimum}`, received"
                    f" {float(scores.min())}: check that the scores come from that game"
                )
    room = c - m
    defined = room > 0
    impact = np.divide(c - p, room, out=np.full(room.shape, np.nan), where=defined)
    return float(impact) if impact.ndim == 0 else impact
