"""The standard suites' shipped ladders: every file valid, a sample of each suite made again byte for byte."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rlwrappers import ladders
from rlwrappers.core import Entry
from rlwrappers.error import CannotCalibrate, InvalidArgument, UnknownName
from rlwrappers.ladders import calibration, definition, suites
from rlwrappers.ladders.preprocessing import build_env
from rlwrappers.ladders.provisional import SHIPPED

SHIPPED_IDS = ladders.ladders()
#: One env of each suite (or each form of one), made again and compared with its file, byte for byte.
SAMPLE = [
    *suites.CLASSIC_CONTROL,
    *suites.MUJOCO,
    *suites.BOX2D,
    "MiniGrid-DoorKey-5x5-v0",  # MiniGrid-Empty-5x5's levels come from its reference agents
    pytest.param("PongNoFrameskip-v4", marks=pytest.mark.slow),
    pytest.param("ALE/Tetris-v5", marks=pytest.mark.slow),
    pytest.param("rlwrappers/ToyboxAmidar-v0", marks=pytest.mark.slow),
]
PACKAGES = {"mujoco": "mujoco", "box2d": "Box2D", "atari": "ale_py", "minigrid": "minigrid", "toybox": "ctoybox"}


def needs(env_id: str) -> None:
    package = PACKAGES.get(str(suites.suite_of(env_id)))
    if package is not None and importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed")


@pytest.mark.parametrize("env_id", SAMPLE)
def test_the_shipped_file_is_what_its_suites_recipe_makes_byte_for_byte(env_id: str) -> None:
    needs(env_id)
    shipped = (calibration.DIRECTORY / ladders.LADDER / calibration.file_name(env_id)).read_bytes()
    assert shipped == calibration.to_json(ladders.calibrate(env_id)).encode()


def test_every_suite_env_ships_a_valid_ladder_that_says_how_it_was_made() -> None:
    for env_id in SHIPPED_IDS:
        ladder = ladders.ladder(env_id)
        assert suites.suite_of(env_id) is not None, env_id
        assert ladder.arms() and ladder.recovery.start < ladder.recovery.stop
        for arm in ladder.arms():
            for entry in arm.entries:
                Entry.parse(dict(entry))  # every level is a valid entry
        if env_id in definition.ENVS:  # levels chosen by their reference agents
            assert ladder.provisional is None and ladder.reference_agents
            continue
        assert ladder.provisional is not None and ladder.provisional["origin"] == SHIPPED, env_id
        assert not ladder.reference_agents
        assert all(f["calibration"]["by"] == "constants" for f in ladder.families.values() if "calibration" in f)
        if ladder.reference_return is not None:
            assert ladder.reference_return > ladder.random_return, env_id
        if ladder.kind == "image":
            assert "corruptions" in ladder.families and "init_noise" not in ladder.families


def test_mujoco_tasks_carry_their_uncertainty_sets_and_state_noise() -> None:
    for env_id in suites.MUJOCO:
        ladder = ladders.ladder(env_id)
        assert {"init_noise", "dynamics"} <= set(ladder.families), env_id
    assert {ladders.ladder(e).reference_return for e in ("Humanoid-v5", "HumanoidStandup-v5", "Walker2d-v5")} == {None}
    assert ladders.ladder("Swimmer-v5").reference_return == 360.0  # its reward_threshold


def test_a_ladder_that_states_no_reference_takes_one_given_for_the_card() -> None:
    with pytest.raises(CannotCalibrate, match=r"states no reference return .*--reference-return R"):
        ladders.card_ladder("Walker2d-v5")
    given = ladders.card_ladder("Walker2d-v5", reference_return=3000.0)
    assert given.reference_return == 3000.0 and given.reference["source"].startswith("given for this card")
    assert given.sha256 != ladders.ladder("Walker2d-v5").sha256  # another reference is another ladder
    assert ladders.card_ladder("Walker2d-v5", reference_return=3000.0).sha256 == given.sha256
    assert given.families == ladders.ladder("Walker2d-v5").families
    with pytest.raises(InvalidArgument, match="fixes its env and reference return"):
        ladders.card_ladder("Swimmer-v5", reference_return=100.0)  # it states its own


def test_carracing_is_refused_with_the_reason() -> None:
    with pytest.raises(CannotCalibrate, match=r"CarRacing-v3 gets no card: .*over five hours"):
        ladders.card_ladder("CarRacing-v3")
    with pytest.raises(CannotCalibrate, match="over five hours"):
        ladders.calibrate("CarRacing-v3")


def test_minigrid_plays_pictures_of_the_agents_view() -> None:
    pytest.importorskip("minigrid")
    ladder = ladders.ladder("MiniGrid-Empty-5x5-v0")
    assert (ladder.preprocessing, ladder.kind, ladder.reference_return) == ("minigrid-rgb", "image", 1.0)
    env = build_env(ladder.env_id, ladder.env_kwargs, ladder.preprocessing)
    assert env.observation_space.shape == (56, 56, 3)
    assert all(not e.startswith("MiniGrid-WFC-") for e in ladders.suite_envs("minigrid"))


def test_the_suites_and_their_errors() -> None:
    assert list(ladders.SUITES) == ["classic-control", "mujoco", "box2d", "atari", "minigrid", "toybox", "rlwrappers"]
    assert suites.suite_of("ALE/Pong-v5") == "atari" and suites.suite_of("MyEnv-v0") is None
    with pytest.raises(UnknownName, match="Did you mean `mujoco`"):
        ladders.suite_envs("mujoko")
    with pytest.raises(UnknownName, match="is in no suite"):
        suites.recipe("MyEnv-v0")


def test_calibrate_ladders_writes_a_suite_and_reports_each_envs_seconds(tmp_path, capsys) -> None:
    import runpy
    import sys

    argv = sys.argv
    sys.argv = ["calibrate_ladders.py", "--suite", "classic-control", "--out", str(tmp_path)]
    try:
        with pytest.raises(SystemExit) as done:
            runpy.run_path(str(Path(__file__).parents[1] / "scripts" / "calibrate_ladders.py"), run_name="__main__")
    finally:
        sys.argv = argv
    assert done.value.code == 0
    printed = capsys.readouterr().out
    for env_id in suites.CLASSIC_CONTROL:
        assert f"{calibration.file_name(env_id)} in " in printed
        written = json.loads((tmp_path / calibration.file_name(env_id)).read_text())
        assert written == json.loads((calibration.DIRECTORY / "card-v2" / calibration.file_name(env_id)).read_text())
    assert "5 ladders in " in printed


#: One env of each suite and form for the contract, run on every push; the rest of the shipped envs are marked slow.
CONTRACT_SAMPLE = {
    *suites.CLASSIC_CONTROL,
    *suites.BOX2D,
    "MiniGrid-Empty-5x5-v0",
    "Hopper-v5",
    "PongNoFrameskip-v4",
    "ALE/Tetris-v5",
    "rlwrappers/ToyboxAmidar-v0",
}
#: Every shipped env.
CONTRACT = [e if e in CONTRACT_SAMPLE else pytest.param(e, marks=pytest.mark.slow) for e in SHIPPED_IDS]
#: The families that need no agent, each at level 3, in one layer.
UNATTENDED = ("obs_noise", "action_noise", "sticky_action", "init_noise", "dynamics", "corruptions")


@pytest.mark.parametrize("env_id", CONTRACT)
def test_the_contract_holds_on_each_suites_envs_under_their_ladders_families(env_id: str) -> None:
    import gymnasium as gym

    from rlwrappers import wrap
    from rlwrappers.testing import check_wrapper

    needs(env_id)
    ladder = ladders.ladder(env_id)
    entries = [entry for arm in ladder.arms(UNATTENDED) if arm.level == 3 for entry in arm.entries]

    def env_fn():
        env = build_env(env_id, ladder.env_kwargs, ladder.preprocessing)
        return gym.wrappers.TransformReward(env, float) if walker else env

    # BipedalWalker's own rewards are numpy float32s, which SB3's check refuses before any wrapper: its base env
    # gives them as floats, through a wrapper whose spec cannot be written (so no spec round trip).
    walker = env_id == "BipedalWalker-v3"

    ran = check_wrapper(
        env_fn,
        lambda env: wrap(env, *entries),
        steps=30,
        async_vector=False,
        spec=ladder.preprocessing is None and not walker,
    )
    assert "check_determinism" in ran and "check_no_mutation" in ran


def test_minigrids_pictures_are_those_of_minigrids_own_rgb_wrappers() -> None:
    pytest.importorskip("minigrid")
    import gymnasium as gym
    import numpy as np
    from minigrid.wrappers import ImgObsWrapper, RGBImgPartialObsWrapper

    ours = build_env("MiniGrid-DoorKey-5x5-v0", {}, "minigrid-rgb")
    theirs = ImgObsWrapper(RGBImgPartialObsWrapper(gym.make("MiniGrid-DoorKey-5x5-v0")))
    assert ours.observation_space == theirs.observation_space
    mine, other = ours.reset(seed=3)[0], theirs.reset(seed=3)[0]
    rng = np.random.default_rng(0)
    for _ in range(40):
        assert np.array_equal(mine, other)
        action = int(rng.integers(3))
        mine, other = ours.step(action)[0], theirs.step(action)[0]
    assert gym.make(ours.spec).observation_space.shape == (56, 56, 3)  # its spec rebuilds it


@pytest.mark.slow
def test_the_games_left_out_are_those_without_a_noop() -> None:
    pytest.importorskip("ale_py")
    import gymnasium as gym

    from rlwrappers.ladders import atari

    without = []
    for rom in atari.roms():
        env_id = atari.v5_id(rom)
        if env_id is not None:
            env = gym.make(env_id)
            if env.unwrapped.get_action_meanings()[0] != "NOOP":
                without.append(rom)
            env.close()
    assert without == sorted(suites.WITHOUT_NOOP)
    for env_id in suites.WITHOUT_NOOP.values():
        with pytest.raises(CannotCalibrate, match="not NOOP"):
            ladders.card_ladder(env_id)


def test_a_card_refuses_a_ladder_without_reference_before_any_run(tmp_path) -> None:
    import rlwrappers as rw

    with pytest.raises(InvalidArgument, match="states no reference return"):
        rw.robustness_card("x", "Walker2d-v5", out=tmp_path, ladder=ladders.ladder("Walker2d-v5"))
    assert not list(tmp_path.iterdir())


def test_the_ladder_command_shows_a_shipped_ladder_without_reference(capsys) -> None:
    from rlwrappers.cli import main

    assert main(["ladder", "--env", "Walker2d-v5"]) == 0
    shown = capsys.readouterr().out
    assert "shipped with the package" in shown and "skill 1: none stated" in shown
    assert main(["ladder", "--env", "Walker2d-v5", "--reference-return", "3000"]) == 0
    given = capsys.readouterr().out
    assert "skill 1: 3000" in given and ladders.card_ladder("Walker2d-v5", reference_return=3000.0).sha256 in given
    assert main(["card", "--env", "Walker2d-v5", "--agent", "x", "--out", "o"]) == 2
    assert "states no reference return" in capsys.readouterr().err


def test_the_ladder_command_names_the_families_an_agent_calibrated_ladder_lacks(capsys) -> None:
    pytest.importorskip("Box2D")
    from rlwrappers.cli import main

    assert main(["ladder", "--env", "LunarLander-v3"]) == 0
    shown = capsys.readouterr().out
    assert "no init_noise: its state cannot be read and set" in shown
    assert "dynamics (by effect) dynamics_shift" in shown and "provisional" not in shown.lower()
