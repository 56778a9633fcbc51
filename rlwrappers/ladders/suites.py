"""The standard suites that ship card-v2 ladders, and how each of their envs' ladders is made.

:data:`SUITES` names them; :func:`suite_envs` lists each suite's envs. An env with vanilla reference agents
(:data:`~rlwrappers.ladders.definition.ENVS`: CartPole-v1, Pendulum-v1, Hopper-v5, Catch, Breakout, Toybox's
Breakout, Acrobot-v1, MountainCar-v0, MountainCarContinuous-v0, LunarLander-v3, MiniGrid-Empty-5x5-v0,
InvertedPendulum-v5 and InvertedDoublePendulum-v5) has its levels chosen by their effect
(:func:`rlwrappers.ladders.calibration.calibrate`). Every other env of a suite ships a ladder made by the rules of
a provisional one (:mod:`rlwrappers.ladders.provisional`: card-v1's constant levels in units the random policy
measures), with the suite's own recipe: how the env is built, its reference return and its source, and the
recovery window where the rule does not fit. Such a file says ``provisional.origin`` =
:data:`~rlwrappers.ladders.provisional.SHIPPED`, and so does its card.

- ``classic-control``: Gymnasium's five; skill 1 at each env's ``reward_threshold``.
- ``mujoco``: the eleven MuJoCo v5 tasks, with their uncertainty sets (:mod:`rlwrappers.uncertainty`); skill 1
  at each ``reward_threshold``. Humanoid, HumanoidStandup and Walker2d state none: their files hold no
  reference, and their cards need one given (``--reference-return``).
- ``box2d``: LunarLander, LunarLanderContinuous and BipedalWalker (the ``box2d`` extra). The LunarLanders' dynamics
  family shifts their gravity, wind and turbulence (``LunarLander:3``); BipedalWalker takes no physical arguments,
  so it has none; no Box2D env's state can be set, so none has initial-state noise. CarRacing is refused
  (:data:`REFUSED`).
- ``atari``: every game ale-py ships, as ``*NoFrameskip-v4`` where Gymnasium registers that ID, else as
  ``ALE/*-v5`` with ``frameskip=1, repeat_action_probability=0`` (so that both forms play the same raw game),
  under the card's whole-game preprocessing (``atari-games``), capped at 18,000 frames. Skill runs from the
  published random score to the published human score for the Atari-57 games
  (:mod:`rlwrappers.ladders.atari`); other games state none. Recovery follows Breakout's window. Backgammon
  and Video Checkers are left out and refused (:data:`WITHOUT_NOOP`).
- ``minigrid``: MiniGrid's envs seen through its RGB image wrapper (``minigrid-rgb``), but the WFC mazes
  (their pattern images are missing from MiniGrid's wheel); skill 1 at a return of 1, the bound of MiniGrid's
  rewards (success scores ``1 - 0.9 t / max_steps``).
- ``toybox``: Toybox's Breakout, Amidar and Space Invaders under the Atari preprocessing; skill 1 at ALE's
  human score for the same game (Toybox publishes none of its own).
- ``rlwrappers``: the package's own Catch.

:func:`calibrate` makes any shipped env's file; :func:`write` writes a suite's files
(``scripts/calibrate_ladders.py --suite NAME``).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

import gymnasium as gym

from rlwrappers import _optional
from rlwrappers.error import CannotCalibrate, UnknownName, did_you_mean
from rlwrappers.ladders import calibration
from rlwrappers.ladders import definition as card
from rlwrappers.ladders.provisional import SHIPPED, Recipe, calibrate_provisional

__all__ = ["REFUSED", "SUITES", "WITHOUT_NOOP", "calibrate", "recipe", "suite_envs", "suite_of", "write"]

#: Gymnasium's classic-control envs.
CLASSIC_CONTROL: Final = ("Acrobot-v1", "CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1")
#: The MuJoCo v5 tasks.
MUJOCO: Final = (
    "Ant-v5",
    "HalfCheetah-v5",
    "Hopper-v5",
    "Humanoid-v5",
    "HumanoidStandup-v5",
    "InvertedDoublePendulum-v5",
    "InvertedPendulum-v5",
    "Pusher-v5",
    "Reacher-v5",
    "Swimmer-v5",
    "Walker2d-v5",
)
BOX2D: Final = ("BipedalWalker-v3", "LunarLander-v3", "LunarLanderContinuous-v3")
TOYBOX: Final = ("rlwrappers/ToyboxAmidar-v0", "rlwrappers/ToyboxBreakout-v0", "rlwrappers/ToyboxSpaceInvaders-v0")
#: The ALE ROM each Toybox game reimplements (its human score is the reference).
TOYBOX_ROMS: Final = {
    "rlwrappers/ToyboxAmidar-v0": "amidar",
    "rlwrappers/ToyboxBreakout-v0": "breakout",
    "rlwrappers/ToyboxSpaceInvaders-v0": "space_invaders",
}
#: The Atari games whose action 0 is not NOOP: SB3's Atari preprocessing, which starts each game with up to 30
#: no-ops, refuses them, so they get no ladder.
WITHOUT_NOOP: Final = {"backgammon": "ALE/Backgammon-v5", "video_checkers": "ALE/VideoCheckers-v5"}
#: Envs of a suite that get no card, with the reason.
REFUSED: Final = {
    **{
        env_id: (
            "its action 0 is FIRE, not NOOP, and the card's Atari preprocessing (SB3's AtariWrapper) starts each"
            " game with up to 30 no-ops"
        )
        for env_id in WITHOUT_NOOP.values()
    },
    "CarRacing-v3": (
        "a card plays about 60 arms x 5 seeds x 10 episodes of up to 1,000 steps, 3 million steps at about 6.7 ms"
        " each (CarRacing draws every frame with pygame): over five hours on two cores"
    ),
}
#: The raw-game settings of the Atari games without a NoFrameskip-v4 ID: the v5 ID's frame skip and sticky
#: actions off, so that the card's preprocessing plays it as it plays the NoFrameskip-v4 games.
V5_RAW: Final = {"frameskip": 1, "repeat_action_probability": 0.0}


def _atari_ids() -> tuple[str, ...]:
    """Each single-player game's NoFrameskip-v4 ID, else its ALE v5 ID (the multiplayer-only ROMs have neither).

    The games :data:`WITHOUT_NOOP` are left out.
    """
    from rlwrappers.ladders import atari

    ids = (atari.no_frameskip_id(rom) or atari.v5_id(rom) for rom in atari.roms() if rom not in WITHOUT_NOOP)
    return tuple(sorted(env_id for env_id in ids if env_id is not None))


def _minigrid_ids() -> tuple[str, ...]:
    """MiniGrid's ``MiniGrid-*`` envs but the WFC mazes, whose pattern images MiniGrid's wheel does not ship."""
    _optional.require("minigrid", purpose="the minigrid suite's envs")
    return tuple(sorted(i for i in gym.registry if i.startswith("MiniGrid-") and not i.startswith("MiniGrid-WFC-")))


#: The suites, in order, and how each lists its envs (the Atari and MiniGrid lists come from their packages).
SUITES: Final[dict[str, Callable[[], tuple[str, ...]]]] = {
    "classic-control": lambda: CLASSIC_CONTROL,
    "mujoco": lambda: MUJOCO,
    "box2d": lambda: BOX2D,
    "atari": _atari_ids,
    "minigrid": _minigrid_ids,
    "toybox": lambda: TOYBOX,
    "rlwrappers": lambda: ("rlwrappers/Catch-v0",),
}


@functools.cache
def suite_envs(suite: str) -> tuple[str, ...]:
    """The envs of ``suite`` that ship a ladder, sorted.

    Raises:
        UnknownName: no such suite (with a suggestion).
        MissingExtra: the suite's package (ale-py, minigrid) is not installed.
    """
    if suite not in SUITES:
        raise UnknownName(f"`suite` {suite!r} is not a suite; suites: {list(SUITES)}.{did_you_mean(suite, SUITES)}")
    return SUITES[suite]()


def suite_of(env_id: str) -> str | None:
    """The suite whose ladders hold ``env_id``, by the form of its ID (None for an env of none)."""
    if env_id in CLASSIC_CONTROL:
        return "classic-control"
    if env_id in MUJOCO:
        return "mujoco"
    if env_id in BOX2D:
        return "box2d"
    if env_id in TOYBOX:
        return "toybox"
    if env_id == "rlwrappers/Catch-v0":
        return "rlwrappers"
    if env_id.endswith("NoFrameskip-v4") or env_id.startswith("ALE/"):
        return "atari"
    if env_id.startswith("MiniGrid-"):
        return "minigrid"
    return None


def recipe(env_id: str) -> Recipe:
    """How the shipped ladder of ``env_id`` (an env without reference agents) is made.

    Raises:
        UnknownName: ``env_id`` is in no suite.
    """
    suite = suite_of(env_id)
    if suite in ("classic-control", "mujoco", "box2d"):
        return Recipe(env_id, origin=SHIPPED)
    if suite == "minigrid":
        return Recipe(env_id, preprocessing="minigrid-rgb", reference=card.MINIGRID_REFERENCE, origin=SHIPPED)
    if suite in ("atari", "toybox"):
        from rlwrappers.ladders import atari

        rom = TOYBOX_ROMS[env_id] if suite == "toybox" else atari.rom_of(env_id)
        if rom is None:
            raise UnknownName(f"`env_id` {env_id!r} is not an ALE game")
        scores = atari.reference(rom)
        kwargs: dict[str, Any] = {"max_episode_steps": card.ATARI_MAX_FRAMES}
        if env_id.startswith("ALE/"):
            kwargs = {**V5_RAW, **kwargs}
        reference = random = None
        if scores is not None:
            remade = "; Toybox reimplements the game and publishes no score of its own" if suite == "toybox" else ""
            reference = card.Reference(
                scores[1], f"{atari.SOURCE}: the human tester's score of {rom}{remade}", atari.PROTOCOL
            )
            if suite == "atari":  # Toybox's random play is its own: measured
                random = card.Reference(scores[0], f"{atari.SOURCE}: the random agent's score of {rom}", atari.PROTOCOL)
        recovery = card.RECOVERY["BreakoutNoFrameskip-v4"]
        return Recipe(env_id, kwargs, "atari-games", reference, random, recovery, SHIPPED)
    raise UnknownName(f"`env_id` {env_id!r} is in no suite; suites: {list(SUITES)}")


def calibrate(env_id: str, effects: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The shipped ladder of ``env_id`` measured now: what its file holds (see the module docstring).

    ``effects`` is :func:`rlwrappers.ladders.calibration.calibrate`'s, for the envs with reference agents.

    Raises:
        UnknownName: ``env_id`` is in no suite.
        CannotCalibrate: ``env_id`` is refused (:data:`REFUSED`).
    """
    if env_id in REFUSED:
        raise CannotCalibrate(f"{env_id} gets no card: {REFUSED[env_id]}")
    if env_id in card.ENVS:
        return calibration.calibrate(env_id, effects)
    return calibrate_provisional(recipe(env_id))


def write(
    directory: str | os.PathLike[str] | None = None,
    env_ids: Iterable[str] | None = None,
    *,
    progress: Callable[[str, float], None] | None = None,
) -> list[Path]:
    """Calibrates and writes the ladder of each of ``env_ids`` (default: every env of every suite).

    Args:
        directory: the folder to write to (default: the shipped folder of the current version).
        env_ids: the envs to calibrate.
        progress: called with each env's ID and its seconds, once its file is written.

    Returns:
        The files written, in order.
    """
    folder = calibration.DIRECTORY / card.LADDER if directory is None else Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    if env_ids is None:
        env_ids = [env_id for suite in SUITES for env_id in suite_envs(suite)]
    written = []
    for env_id in env_ids:
        start = time.perf_counter()
        path = folder / calibration.file_name(env_id)
        own = directory is not None and calibration.effects_path(env_id, directory).exists()  # measured into it
        path.write_text(calibration.to_json(calibrate(env_id, directory if own else None)), encoding="utf-8")
        written.append(path)
        if progress is not None:
            progress(env_id, time.perf_counter() - start)
    return written
