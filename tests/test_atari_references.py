"""rlwrappers.ladders.atari: the Atari-57's human and random scores, and each ale-py ROM's Gymnasium IDs."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

from rlwrappers.error import InvalidType, UnknownName
from rlwrappers.ladders import atari
from rlwrappers.ladders.atari import ATARI_57, HUMAN_SCORES, RANDOM_SCORES, reference
from rlwrappers.ladders.definition import PUBLISHED_RANDOM, REFERENCES

#: (random, human) of a spread of games, each as dqn_zoo's atari_data.py, the Agent57 table in rliable's colab and
#: rldb's transcriptions of Mnih et al. (2015) and Wang et al. (2016) give it: negative scores, zeros, the largest,
#: the 8 games the Atari-57 adds to Mnih et al.'s 49, and Video Pinball (see the next constant).
PUBLISHED = {
    "alien": (227.8, 7127.7),
    "amidar": (5.8, 1719.5),
    "breakout": (1.7, 30.5),
    "double_dunk": (-18.6, -16.4),
    "fishing_derby": (-91.7, -38.7),
    "freeway": (0.0, 29.6),
    "ice_hockey": (-11.2, 0.9),
    "montezuma_revenge": (0.0, 4753.3),
    "ms_pacman": (307.3, 6951.6),
    "pitfall": (-229.4, 6463.7),
    "pong": (-20.7, 14.6),
    "private_eye": (24.9, 69571.3),
    "seaquest": (68.4, 42054.7),
    "skiing": (-17098.1, -4336.9),
    "surround": (-10.0, 6.5),
    "tennis": (-23.8, -8.3),
    "up_n_down": (533.4, 11693.2),
    "video_pinball": (16256.9, 17667.9),
    "yars_revenge": (3092.9, 54576.9),
}
#: The sums of each column over the 57 games, from dqn_zoo's table (the human sum also from the Agent57 table):
#: any changed value changes them. The Agent57 table's random sum is 34608.0, its Video Pinball random score being 0.0.
HUMAN_SUM = 606494.2
RANDOM_SUM = 50864.9


def test_the_tables_hold_the_57_games_of_the_atari_57_sorted() -> None:
    assert len(ATARI_57) == 57
    assert list(ATARI_57) == sorted(ATARI_57)
    assert set(HUMAN_SCORES) == set(RANDOM_SCORES) == set(ATARI_57)
    assert all(isinstance(v, float) for v in (*HUMAN_SCORES.values(), *RANDOM_SCORES.values()))


def test_the_human_beats_the_random_policy_in_every_game() -> None:
    # True of every game in the literature's table, Video Pinball included (16256.9 < 17667.9).
    assert [rom for rom in ATARI_57 if not HUMAN_SCORES[rom] > RANDOM_SCORES[rom]] == []


@pytest.mark.parametrize(("rom", "scores"), PUBLISHED.items())
def test_scores_equal_the_published_ones(rom: str, scores: tuple[float, float]) -> None:
    assert reference(rom) == scores
    assert (RANDOM_SCORES[rom], HUMAN_SCORES[rom]) == scores


def test_the_sums_of_the_columns_equal_the_sources() -> None:
    assert math.fsum(HUMAN_SCORES.values()) == pytest.approx(HUMAN_SUM, abs=1e-6)
    assert math.fsum(RANDOM_SCORES.values()) == pytest.approx(RANDOM_SUM, abs=1e-6)


def test_breakout_agrees_with_the_ladders_reference_and_published_random() -> None:
    assert reference("breakout") == (
        PUBLISHED_RANDOM["BreakoutNoFrameskip-v4"].value,
        REFERENCES["BreakoutNoFrameskip-v4"].value,
    )


def test_the_tables_are_read_only() -> None:
    with pytest.raises(TypeError):
        HUMAN_SCORES["breakout"] = 0.0  # type: ignore[index]


def test_a_game_outside_the_atari_57_has_no_reference() -> None:
    pytest.importorskip("ale_py")
    for rom in ("adventure", "pacman", "tetris", "donkey_kong", "warlords"):
        assert reference(rom) is None


def test_unknown_names_raise_with_a_suggestion() -> None:
    pytest.importorskip("ale_py")
    with pytest.raises(UnknownName, match="Did you mean `breakout`"):
        reference("breakuot")
    with pytest.raises(UnknownName, match="Did you mean `montezuma_revenge`"):
        atari.v5_id("montezumas_revenge")
    with pytest.raises(InvalidType, match="`rom` must be a ROM name"):
        reference(3)  # type: ignore[arg-type]


def test_every_game_of_the_table_is_shipped_by_ale_py() -> None:
    pytest.importorskip("ale_py")
    from ale_py.roms import get_all_rom_ids

    shipped = set(get_all_rom_ids())
    assert set(ATARI_57) <= shipped
    assert set(atari.roms()) == shipped


def test_breakout_maps_to_its_gymnasium_ids() -> None:
    pytest.importorskip("ale_py")
    assert atari.no_frameskip_id("breakout") == "BreakoutNoFrameskip-v4"
    assert atari.v5_id("breakout") == "ALE/Breakout-v5"
    assert atari.game("breakout") == atari.Game(
        rom="breakout",
        v5_id="ALE/Breakout-v5",
        no_frameskip_id="BreakoutNoFrameskip-v4",
        random=1.7,
        human=30.5,
    )
    assert atari.rom_of("BreakoutNoFrameskip-v4") == atari.rom_of("ALE/Breakout-v5") == "breakout"
    assert atari.rom_of("CartPole-v1") is None


def test_each_id_is_registered_for_its_own_rom_and_each_registered_id_is_found() -> None:
    ale_py = pytest.importorskip("ale_py")
    games = atari.games()
    v5 = {g.v5_id: g.rom for g in games if g.v5_id is not None}
    no_frameskip = {g.no_frameskip_id: g.rom for g in games if g.no_frameskip_id is not None}
    for env_id, rom in (*v5.items(), *no_frameskip.items()):
        spec = gym.spec(env_id)
        assert spec.entry_point == "ale_py.env:AtariEnv"
        assert spec.kwargs["game"] == rom
    # Read the other way: the ale-py IDs of the registry, by their names, with RGB frames.
    ale = [s for s in gym.registry.values() if s.entry_point == "ale_py.env:AtariEnv"]
    rgb = [s for s in ale if s.kwargs.get("obs_type", "rgb") == "rgb"]
    assert set(v5) == {s.id for s in rgb if s.id.startswith("ALE/") and s.id.endswith("-v5")}
    assert set(no_frameskip) == {s.id for s in rgb if s.id.endswith("NoFrameskip-v4")}
    if ale_py.__version__.startswith("0.12."):
        assert (len(games), len(v5), len(no_frameskip)) == (108, 104, 62)


def test_the_atari_57_games_have_ids_and_scores() -> None:
    pytest.importorskip("ale_py")
    for rom in ATARI_57:
        g = atari.game(rom)
        assert g.v5_id is not None
        assert (g.random, g.human) == reference(rom)
    # Surround is the one game of the Atari-57 without a NoFrameskip-v4 ID; the multiplayer-only ROMs have no ID.
    assert [rom for rom in ATARI_57 if atari.no_frameskip_id(rom) is None] == ["surround"]
    assert atari.v5_id("warlords") is None and atari.no_frameskip_id("warlords") is None
    assert sum(g.human is not None for g in atari.games()) == 57


def test_the_atari_57_references_need_no_ale_py(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> list[str]:
        raise AssertionError("ale-py was asked for")

    monkeypatch.setattr(atari, "_ale_py_rom_ids", missing)
    atari._games.cache_clear()  # so that a lookup of the ROMs would ask ale-py again
    assert reference("pong") == (-20.7, 14.6)
