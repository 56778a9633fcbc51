"""Ladders calibrated by their effect: the choice of levels from measured drops, the shipped effects behind each
ladder file, and their measurement on the reference agents, the same every time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers_scripts import script

from rlwrappers import ladders
from rlwrappers.error import InvalidArgument, MissingFile, UnknownName
from rlwrappers.ladders import calibration, definition
from rlwrappers.ladders.effect import NOTICEABLE, SEVERE, Effect, choose, ends, level_values

ROOT = Path(__file__).resolve().parents[1]
GRID = [0.1 * 2**i for i in range(9)]


def effect(drop: list[float], half: float = 0.02) -> Effect:
    return Effect(list(GRID), drop, [d - half for d in drop], [d + half for d in drop])


def test_level_1_is_the_last_barely_noticeable_point_and_level_5_the_first_severe_one() -> None:
    measured = effect([0.0, 0.0, 0.02, 0.1, 0.3, 0.55, 0.8, 0.95, 1.0])
    assert ends(measured) == (2, 5)
    c = choose(measured, continuous=False)  # levels 2 to 4 on the grid, evenly between (halves up)
    assert c.values == [GRID[i] for i in (2, 3, 4, 4, 5)]
    assert (c.noticeable, c.severe, c.rising) == (True, True, True)
    assert c.drops == [0.02, 0.1, 0.3, 0.3, 0.55]
    # Upper bounds up to level 1 stay at most NOTICEABLE; the first severe point's lower bound reaches SEVERE.
    assert c.drops[0] + 0.02 <= NOTICEABLE and c.drops[-1] - 0.02 >= SEVERE


def test_continuous_levels_lie_on_the_geometric_series_and_must_be_measured() -> None:
    measured = effect([0.0, 0.0, 0.02, 0.1, 0.3, 0.55, 0.8, 0.95, 1.0])
    values = level_values(measured)
    assert values[0] == GRID[2] and values[-1] == GRID[5]
    assert values[1:4] == [pytest.approx(GRID[2] * 8 ** (k / 4), rel=1e-3) for k in (1, 2, 3)]
    with pytest.raises(MissingFile, match=r"no effect was measured at 0\.6727.*--measure"):
        choose(measured)
    extra = {"values": values[1:4], "drop": [0.05, 0.2, 0.4], "low": [0.03, 0.18, 0.38], "high": [0.07, 0.22, 0.42]}
    c = choose(Effect(measured.grid, measured.drop, measured.low, measured.high, extra))
    assert c.values == values and c.drops == [0.02, 0.05, 0.2, 0.4, 0.55] and c.rising


def test_criteria_that_no_point_meets_are_said() -> None:
    broken = choose(effect([0.4, 0.6, 0.8, 0.9, 0.95, 1.0, 1.0, 1.0, 1.0]), continuous=False)
    assert broken.values[0] == GRID[0] and not broken.noticeable  # the smallest step already breaks the agents
    assert broken.severe
    harmless = choose(effect([0.0] * 8 + [0.01]), continuous=False)
    assert harmless.noticeable and not harmless.severe and not harmless.rising  # nothing sane breaks them
    assert harmless.values[-1] == GRID[-1]
    bumpy = choose(effect([0.0, 0.0, 0.3, 0.1, 0.6, 0.9, 1.0, 1.0, 1.0]), continuous=False)
    assert not bumpy.rising


def test_a_fixed_top_is_level_5_severe_or_not() -> None:
    c = choose(effect([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.2]), top=8, continuous=False)
    assert c.values[-1] == GRID[8] and not c.severe and c.noticeable
    with pytest.raises(InvalidArgument, match=r"`top` must be a grid index in \[0, 9\), received 9"):
        choose(effect([0.0] * 9), top=9)
    with pytest.raises(InvalidArgument, match="one drop, low and high per grid point"):
        Effect([1.0, 2.0], [0.0], [0.0], [0.0])


@pytest.mark.parametrize("env_id", list(definition.ENVS))
def test_each_family_says_how_its_levels_were_chosen_and_effects_match_their_choice(env_id: str) -> None:
    ladder = ladders.ladder(env_id)
    source = definition.EFFECTS_FROM.get(env_id, env_id)  # Toybox's Breakout takes ALE Breakout's
    effects = calibration.read_effects(source)
    for name, family in ladder.families.items():
        entries = family.get("sub_families", {name: family})
        for sub, entry in entries.items():
            record = entry.get("calibration") or family["calibration"]
            if record["by"] == "constants":
                continue
            key = record["grid"]
            measured = effects[key]
            chosen = choose(
                measured, top=calibration.top_of(key, measured), continuous=key not in definition.DISCRETE_GRIDS
            )
            assert record["values"] == chosen.values and record["drops"] == chosen.drops, (name, sub)
            assert record["criteria"] == {
                "level_1_barely_noticeable": chosen.noticeable,
                "level_5_severe": chosen.severe,
            }
            assert measured.grid == list(definition.GRIDS[key])
    if effects:
        protocol = json.loads(calibration.effects_path(source).read_text())
        assert [a["name"] for a in protocol["agents"]] == [a.name for a in definition.REFERENCE_AGENTS[source]]
        assert ladder.families and "effect" in json.loads(
            (calibration.DIRECTORY / ladders.LADDER / calibration.file_name(env_id)).read_text()
        )


def test_measuring_refuses_unknown_grids_and_missing_agent_files(tmp_path: Path) -> None:
    from rlwrappers.studies.ladder_effects import measure_effects

    with pytest.raises(UnknownName, match=r"`keys` holds 'corruptions.rotate', not a grid of CartPole-v1"):
        measure_effects("CartPole-v1", out=tmp_path / "a", keys=["corruptions.rotate"])
    pytest.importorskip("ale_py")
    with pytest.raises(MissingFile, match=r"ppo-BreakoutNoFrameskip-v4-seed0\.zip is not in `agents_dir`"):
        measure_effects("BreakoutNoFrameskip-v4", out=tmp_path / "b", keys=["sticky_action"], agents_dir=tmp_path)


def test_the_validity_page_holds_the_shipped_ladders_table() -> None:
    calibrate_ladders = script("calibrate_ladders")
    page = (ROOT / "docs" / "card-validity.md").read_text()
    assert f"{calibrate_ladders.BEGIN}\n{calibrate_ladders.table()}\n{calibrate_ladders.END}" in page


def test_the_coverage_script_counts_the_groups_intervals_against_the_pools_truth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    validate_card = script("validate_card")
    coverage = validate_card.Coverage()
    for low, high in ((0.0, 2.0), (0.5, 0.9), (1.5, 3.0), (0.9, 1.1)):
        coverage.add(1.0, validate_card.grade.Estimate(1.0, low, high))
    assert (coverage.held, coverage.pairs) == (2, 4)
    low, high = coverage.interval()
    assert low == pytest.approx(0.0676, abs=1e-4) and high == pytest.approx(0.9324, abs=1e-4)  # Clopper-Pearson
    assert (
        validate_card.main(
            ["--env", "CartPole-v1", "--seeds", "10", "--episodes", "2", "--reps", "100", "--workers", "1"]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "truth from 10 seeds x 2 episodes, 2 groups of 5 seeds" in printed
    assert "| level skill | 20 |" in printed and "| score | 2 |" in printed


@pytest.mark.slow
def test_measuring_a_grid_again_gives_the_shipped_drops(tmp_path: Path) -> None:
    from rlwrappers.studies.ladder_effects import measure_effects

    again = measure_effects("CartPole-v1", out=tmp_path / "CartPole-v1", keys=["obs_noise@vector"], progress=False)
    shipped = calibration.read_effects("CartPole-v1")["obs_noise@vector"]
    measured = again["obs_noise@vector"]
    assert (measured.grid, measured.drop, measured.low, measured.high) == (
        shipped.grid,
        shipped.drop,
        shipped.low,
        shipped.high,
    )
    assert measured.extra["values"] == shipped.extra["values"]  # the levels between grid points
    assert measured.extra["drop"] == shipped.extra["drop"]
