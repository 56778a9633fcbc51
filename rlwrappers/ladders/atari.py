"""The Atari games ale-py ships: each one's Gymnasium IDs, and the human and random scores of the Atari-57.

A robustness card of an Atari agent grades skill between a random policy's score and a human's. This module
holds the scores the Atari literature normalizes by, for the 57 games of the Atari-57 benchmark
(:data:`ATARI_57`): :data:`RANDOM_SCORES` and :data:`HUMAN_SCORES`, keyed by ale-py's ROM name (``"breakout"``,
``"montezuma_revenge"``), and :func:`reference`, which gives both, or None for the games ale-py ships outside the
Atari-57 (no score of theirs is published). :func:`games` lists every ROM ale-py ships as a :class:`Game`, with the
IDs Gymnasium knows it by (:func:`v5_id`, :func:`no_frameskip_id`); :func:`rom_of` goes back from an env ID to its
ROM. The IDs are read from Gymnasium's registry once ale-py has registered its envs, so they follow the installed
ale-py (version 0.12 ships 108 ROMs: 104 have an ``ALE/<Name>-v5`` ID, 62 a ``<Name>NoFrameskip-v4`` ID; the four
multiplayer-only ROMs, combat, joust, maze_craze and warlords, have neither). The tables need no ale-py; the IDs
and the list of ROMs need the ``atari`` extra.

**Protocol** (:data:`PROTOCOL`). The scores are whole games' scores, unclipped (the game's own score; DQN clips
rewards only while training), of games of at most 5 minutes of emulator time, 18,000 frames at 60 Hz, each
starting after up to 30 no-op actions. Mnih et al. (2015), Methods, "Evaluation procedure", describe it: the
professional human games tester played about 20 games of at most 5 minutes each, after about 2 hours of
practice, without pausing, saving or reloading, and the random agent chose a random action at 10 Hz
(every sixth frame), repeating it on the frames between; Extended Data Table 1 sets the no-op starts ("no-op max",
30). The tables are those papers' no-op-start columns ("No-op start" in seungjaeryanlee/rldb).
google-deepmind/dqn_zoo's ``dqn_zoo/atari_data.py`` documents the same data as undiscounted returns, averaged
over at least 3 games each, each starting after 1 to 30 no-op actions drawn uniformly, but states a cap of
108,000 frames (30 minutes), which is its own agents' evaluation cap. Preprocessing that takes the no-ops as raw
frames (SB3's ``NoopResetEnv`` under its frame skip; the ``"atari-games"`` preprocessing) starts games slightly
differently from the papers, whose no-ops were agent actions.

**Where the numbers come from.** The random column is Mnih et al. (2015), "Human-level control through deep
reinforcement learning", Nature 518:529-533, Extended Data Table 2, for its 49 games, and Wang et al. (2016),
"Dueling network architectures for deep reinforcement learning", ICML, for the 8 games the Atari-57 adds
(berzerk, defender, phoenix, pitfall, skiing, solaris, surround, yars_revenge). The human column is the one
Wang et al. (2016) and Badia et al. (2020), "Agent57: outperforming the Atari human benchmark", ICML, tabulate for
all 57 games; for 34 of Mnih et al.'s 49 games it differs from the human column printed in their Extended Data
Table 2 (Breakout 30.5 here, 31.8 there; Alien 7127.7 here, 6875.4 there); the later literature and the
codebases below use it. Every value was checked against each of these, and agrees with all that list it except
where noted:

- google-deepmind/dqn_zoo, ``dqn_zoo/atari_data.py`` (commit 45061f4): both columns, 57 games.
- google-research/rliable, ``deep_rl_precipice_colab.ipynb`` (commit 3ccd9f4): both columns, 57 games, from the
  table that lists Agent57, R2D2 (bandit) and MuZero beside them, as Badia et al. (2020) do (the notebook says
  it is taken from the MuZero paper); and both columns for the 26 games of Atari 100k.
- seungjaeryanlee/rldb (commit 8c471c4), transcriptions of the papers: ``rldb/db/paper__dqn/algo__random`` (Mnih
  et al.'s random column, 49 games), ``rldb/db/paper__dudqn/algo__random`` (Wang et al.'s random scores of the 8
  added games), ``rldb/db/paper__dudqn/algo__human`` (Wang et al.'s human column, 57 games) and
  ``rldb/db/paper__dqn/algo__human`` (Mnih et al.'s own human column, 49 games, which differs as said above).
- google-research/reincarnating_rl, ``reincarnating_rl/atari_scores.py`` (commit e9df46e): the random column, 57
  games.

One value disagrees: **Video Pinball's random score**, 16256.9 in Mnih et al.'s Extended Data Table 2 (per rldb),
in dqn_zoo and in the codebases derived from it, and 0.0 in the Agent57 table (per rliable) and in
reincarnating_rl. This module keeps 16256.9: it is the score measured under the protocol above, in the paper the
random column comes from, and DeepMind's dqn_zoo keeps it. For an agent far above both, a human-normalized Video
Pinball score made with it is about 12.5 times one made with 0.0 ((17667.9 - 0) / (17667.9 - 16256.9)). Either
way, the human's score is above the random policy's in every game of the Atari-57.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import gymnasium as gym

from rlwrappers import _optional
from rlwrappers.error import InvalidType, UnknownName, did_you_mean

__all__ = [
    "ATARI_57",
    "HUMAN_SCORES",
    "PROTOCOL",
    "RANDOM_SCORES",
    "SOURCE",
    "Game",
    "game",
    "games",
    "no_frameskip_id",
    "reference",
    "rom_of",
    "roms",
    "v5_id",
]

#: The human games tester's score in each Atari-57 game, by ale-py ROM name (see the module's docstring).
HUMAN_SCORES: Final[Mapping[str, float]] = MappingProxyType(
    {
        "alien": 7127.7,
        "amidar": 1719.5,
        "assault": 742.0,
        "asterix": 8503.3,
        "asteroids": 47388.7,
        "atlantis": 29028.1,
        "bank_heist": 753.1,
        "battle_zone": 37187.5,
        "beam_rider": 16926.5,
        "berzerk": 2630.4,
        "bowling": 160.7,
        "boxing": 12.1,
        "breakout": 30.5,
        "centipede": 12017.0,
        "chopper_command": 7387.8,
        "crazy_climber": 35829.4,
        "defender": 18688.9,
        "demon_attack": 1971.0,
        "double_dunk": -16.4,
        "enduro": 860.5,
        "fishing_derby": -38.7,
        "freeway": 29.6,
        "frostbite": 4334.7,
        "gopher": 2412.5,
        "gravitar": 3351.4,
        "hero": 30826.4,
        "ice_hockey": 0.9,
        "jamesbond": 302.8,
        "kangaroo": 3035.0,
        "krull": 2665.5,
        "kung_fu_master": 22736.3,
        "montezuma_revenge": 4753.3,
        "ms_pacman": 6951.6,
        "name_this_game": 8049.0,
        "phoenix": 7242.6,
        "pitfall": 6463.7,
        "pong": 14.6,
        "private_eye": 69571.3,
        "qbert": 13455.0,
        "riverraid": 17118.0,
        "road_runner": 7845.0,
        "robotank": 11.9,
        "seaquest": 42054.7,
        "skiing": -4336.9,
        "solaris": 12326.7,
        "space_invaders": 1668.7,
        "star_gunner": 10250.0,
        "surround": 6.5,
        "tennis": -8.3,
        "time_pilot": 5229.2,
        "tutankham": 167.6,
        "up_n_down": 11693.2,
        "venture": 1187.5,
        "video_pinball": 17667.9,
        "wizard_of_wor": 4756.5,
        "yars_revenge": 54576.9,
        "zaxxon": 9173.3,
    }
)

#: The uniformly random policy's score in each Atari-57 game, by ale-py ROM name (see the module's docstring;
#: Video Pinball's is the one value the sources disagree on).
RANDOM_SCORES: Final[Mapping[str, float]] = MappingProxyType(
    {
        "alien": 227.8,
        "amidar": 5.8,
        "assault": 222.4,
        "asterix": 210.0,
        "asteroids": 719.1,
        "atlantis": 12850.0,
        "bank_heist": 14.2,
        "battle_zone": 2360.0,
        "beam_rider": 363.9,
        "berzerk": 123.7,
        "bowling": 23.1,
        "boxing": 0.1,
        "breakout": 1.7,
        "centipede": 2090.9,
        "chopper_command": 811.0,
        "crazy_climber": 10780.5,
        "defender": 2874.5,
        "demon_attack": 152.1,
        "double_dunk": -18.6,
        "enduro": 0.0,
        "fishing_derby": -91.7,
        "freeway": 0.0,
        "frostbite": 65.2,
        "gopher": 257.6,
        "gravitar": 173.0,
        "hero": 1027.0,
        "ice_hockey": -11.2,
        "jamesbond": 29.0,
        "kangaroo": 52.0,
        "krull": 1598.0,
        "kung_fu_master": 258.5,
        "montezuma_revenge": 0.0,
        "ms_pacman": 307.3,
        "name_this_game": 2292.3,
        "phoenix": 761.4,
        "pitfall": -229.4,
        "pong": -20.7,
        "private_eye": 24.9,
        "qbert": 163.9,
        "riverraid": 1338.5,
        "road_runner": 11.5,
        "robotank": 2.2,
        "seaquest": 68.4,
        "skiing": -17098.1,
        "solaris": 1236.3,
        "space_invaders": 148.0,
        "star_gunner": 664.0,
        "surround": -10.0,
        "tennis": -23.8,
        "time_pilot": 3568.0,
        "tutankham": 11.4,
        "up_n_down": 533.4,
        "venture": 0.0,
        "video_pinball": 16256.9,
        "wizard_of_wor": 563.5,
        "yars_revenge": 3092.9,
        "zaxxon": 32.5,
    }
)

#: The 57 games of the Atari-57 benchmark, by ale-py ROM name, sorted: the games with published scores.
ATARI_57: Final[tuple[str, ...]] = tuple(sorted(HUMAN_SCORES))

#: Where :data:`HUMAN_SCORES` and :data:`RANDOM_SCORES` come from, in one line (for a card's reference).
SOURCE: Final = (
    "Mnih et al. (2015), Human-level control through deep reinforcement learning, Nature 518:529-533, Extended"
    " Data Table 2 (random scores), extended to the Atari-57 by Wang et al. (2016), Dueling network architectures"
    " for deep reinforcement learning; human scores as Wang et al. (2016) and Badia et al. (2020), Agent57,"
    " tabulate them"
)
#: How the games behind :data:`HUMAN_SCORES` and :data:`RANDOM_SCORES` were played, in one line.
PROTOCOL: Final = (
    "whole games of at most 18,000 frames (5 minutes at 60 Hz), each starting after up to 30 no-op actions,"
    " unclipped score"
)

#: The entry point through which ale-py registers its envs with Gymnasium.
_ENTRY_POINT: Final = "ale_py.env:AtariEnv"


@dataclass(frozen=True)
class Game:
    """An Atari game ale-py ships: its ROM name, its Gymnasium IDs, and its published scores.

    ``rom`` is ale-py's name of the ROM (``"breakout"``). ``v5_id`` is its ``ALE/<Name>-v5`` ID and
    ``no_frameskip_id`` its ``<Name>NoFrameskip-v4`` ID, each None where Gymnasium has none registered. ``random``
    and ``human`` are its :data:`RANDOM_SCORES` and :data:`HUMAN_SCORES` entries, None outside the Atari-57.
    """

    rom: str
    v5_id: str | None
    no_frameskip_id: str | None
    random: float | None
    human: float | None


def _ale_py_rom_ids() -> list[str]:
    """ale-py's names of the ROMs it ships, with its envs registered with Gymnasium."""
    ale_py = _optional.require("ale_py", purpose="the Atari games' list and Gymnasium IDs")
    gym.register_envs(ale_py)
    from ale_py.roms import get_all_rom_ids

    return list(get_all_rom_ids())


def _registered(rom: str, *, namespace: str | None, suffix: str, version: int) -> str | None:
    """The ID of ``rom``'s env registered with this namespace, name suffix and version, RGB frames, or None."""
    found = sorted(
        spec.id
        for spec in gym.registry.values()
        if spec.entry_point == _ENTRY_POINT
        and spec.kwargs.get("game") == rom
        and spec.kwargs.get("obs_type", "rgb") == "rgb"
        and spec.namespace == namespace
        and spec.name.endswith(suffix)
        and spec.version == version
    )
    return found[0] if found else None


@functools.cache
def _games() -> dict[str, Game]:
    """Every ROM ale-py ships, sorted, as a :class:`Game` (read once: ale-py registers its envs on import)."""
    return {
        rom: Game(
            rom=rom,
            v5_id=_registered(rom, namespace="ALE", suffix="", version=5),
            no_frameskip_id=_registered(rom, namespace=None, suffix="NoFrameskip", version=4),
            random=RANDOM_SCORES.get(rom),
            human=HUMAN_SCORES.get(rom),
        )
        for rom in sorted(_ale_py_rom_ids())
    }


def _check_name(rom: object) -> str:
    """``rom`` as a string, or :class:`InvalidType`."""
    if not isinstance(rom, str):
        raise InvalidType(f"`rom` must be a ROM name such as 'breakout', received {rom!r} ({type(rom).__name__})")
    return rom


def roms() -> tuple[str, ...]:
    """The names of the ROMs the installed ale-py ships, sorted (108 with ale-py 0.12).

    Example:
        >>> "breakout" in roms() and "montezuma_revenge" in roms()
        True
    """
    return tuple(_games())


def games() -> tuple[Game, ...]:
    """Every ROM the installed ale-py ships, as a :class:`Game`, sorted by ROM name.

    Example:
        >>> sum(g.human is not None for g in games())
        57
    """
    return tuple(_games().values())


def game(rom: str) -> Game:
    """The :class:`Game` of the ROM ``rom`` (ale-py's name, ``"breakout"``).

    Raises:
        UnknownName: the installed ale-py ships no ROM of that name.

    Example:
        >>> breakout = game("breakout")
        >>> breakout.v5_id, breakout.no_frameskip_id, breakout.random, breakout.human
        ('ALE/Breakout-v5', 'BreakoutNoFrameskip-v4', 1.7, 30.5)
    """
    name = _check_name(rom)
    known = _games()
    if name not in known:
        raise UnknownName(f"ale-py ships no ROM named `{name}`.{did_you_mean(name, known)}")
    return known[name]


def v5_id(rom: str) -> str | None:
    """The ``ALE/<Name>-v5`` Gymnasium ID of the ROM ``rom``, or None where none is registered.

    Raises:
        UnknownName: the installed ale-py ships no ROM of that name.

    Example:
        >>> v5_id("montezuma_revenge"), v5_id("warlords")
        ('ALE/MontezumaRevenge-v5', None)
    """
    return game(rom).v5_id


def no_frameskip_id(rom: str) -> str | None:
    """The ``<Name>NoFrameskip-v4`` Gymnasium ID of the ROM ``rom``, or None where none is registered.

    Raises:
        UnknownName: the installed ale-py ships no ROM of that name.

    Example:
        >>> no_frameskip_id("breakout"), no_frameskip_id("surround")
        ('BreakoutNoFrameskip-v4', None)
    """
    return game(rom).no_frameskip_id


def rom_of(env_id: str) -> str | None:
    """The ale-py ROM an env ID plays (``"ALE/Breakout-v5"``, ``"BreakoutNoFrameskip-v4"``), or None for other envs.

    An ID Gymnasium does not know yet has ale-py register its envs first; one it still does not know raises
    Gymnasium's error.

    Example:
        >>> rom_of("PongNoFrameskip-v4"), rom_of("CartPole-v1")
        ('pong', None)
    """
    if env_id not in gym.registry:
        _ale_py_rom_ids()
    spec = gym.spec(env_id)
    game_name = spec.kwargs.get("game")
    return game_name if spec.entry_point == _ENTRY_POINT and isinstance(game_name, str) else None


def reference(rom: str) -> tuple[float, float] | None:
    """The published ``(random, human)`` scores of the ROM ``rom``, or None outside the Atari-57.

    The scores are :data:`RANDOM_SCORES` and :data:`HUMAN_SCORES`, measured under :data:`PROTOCOL`. A game of
    the Atari-57 needs no ale-py; any other name is checked against the ROMs the installed ale-py ships.

    Raises:
        UnknownName: ``rom`` is outside the Atari-57 and the installed ale-py ships no ROM of that name.

    Example:
        >>> reference("breakout"), reference("adventure")
        ((1.7, 30.5), None)
    """
    name = _check_name(rom)
    if name in HUMAN_SCORES:
        return RANDOM_SCORES[name], HUMAN_SCORES[name]
    game(name)
    return None
