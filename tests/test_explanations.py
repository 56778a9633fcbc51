"""Saliency studies (seed 003): states from an agent's game, maps, insertion metric, sanity checks, report, CLI."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("skimage")

from rlwrappers import cli, zoo
from rlwrappers.error import InvalidArgument, UnknownName
from rlwrappers.explain import insertion, sanity
from rlwrappers.metrics import saliency as measures
from rlwrappers.report.saliency import write_saliency_report
from rlwrappers.studies import saliency as saliency_study

AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents"
DQN = AGENTS / "dqn-BreakoutNoFrameskip-v4-seed0.zip"
PPO = AGENTS / "ppo-BreakoutNoFrameskip-v4-seed0.zip"
#: Fast settings of every method for tests (the defaults take about a second per Atari map).
FAST = {
    "occlusion": {"patch": 12},
    "noise_sensitivity": {"radius": 12},
    "rise": {"masks": 64},
    "lime": {"segmentation": "slic", "samples": 64},
    "sarfa": {"radius": 12},
}


def cartpole() -> tuple[gym.Env, object]:
    return gym.make("CartPole-v1"), zoo.load_agent("ppo-CartPole-v1")


def test_states_are_picked_from_one_game() -> None:
    env, agent = cartpole()
    states = saliency_study.collect_states(env, agent, 6, seed=1)
    assert states.shape == (6, 4)
    np.testing.assert_array_equal(states, saliency_study.collect_states(env, agent, 6, seed=1))
    assert not np.array_equal(states, saliency_study.collect_states(env, agent, 6, seed=2))
    highlights = saliency_study.collect_states(env, agent, 6, seed=1, select="highlights", threshold=10.0)
    assert 1 <= len(highlights) <= 6
    with pytest.raises(InvalidArgument, match="decisions of the agent's game"):
        saliency_study.collect_states(env, agent, 10, seed=0, max_steps=5)
    with pytest.raises(UnknownName, match="`select`"):
        saliency_study.collect_states(env, agent, 3, select="best")


def test_a_study_matches_its_parts_and_round_trips(tmp_path: Path) -> None:
    env, agent = cartpole()
    states = saliency_study.collect_states(env, agent, 3, seed=0)
    result = saliency_study.study(agent, states, {"occlusion": {}, "rise": {"masks": 50}}, sanity=0, seed=4)
    assert result.maps["rise"].shape == (3, 4) and len(result.insertion) == 6 and result.sanity.empty
    from rlwrappers.explain import maps

    expected = maps.rise(agent, states[1], masks=50, seed=4)
    np.testing.assert_array_equal(result.maps["rise"][1], expected.values)
    auc = insertion.insertion(agent, states[1], expected.values, action=expected.action, step=1, seed=4 + 1)
    row = result.insertion[(result.insertion["method"] == "rise") & (result.insertion["state"] == 1)].iloc[0]
    assert row["q_black"] == auc["q_black"] and row["advantage_random"] == auc["advantage_random"]
    assert list(result.summary().index) == ["occlusion", "rise"]

    loaded = saliency_study.Study.load(result.save(tmp_path))
    np.testing.assert_array_equal(loaded.maps["occlusion"], result.maps["occlusion"])
    assert loaded.params["rise"]["masks"] == 50
    page = write_saliency_report(tmp_path).read_text()
    assert "rise" in page and "maps.png" in page
    with pytest.raises(UnknownName, match="Did you mean `rise`"):
        saliency_study.study(agent, states, ["rice"])


def breakout(path: Path) -> tuple[gym.Env, object]:
    if not path.exists():
        pytest.skip(f"{path} is missing")
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    from rlwrappers.wrappers.atari import atari_wrapper
    from rlwrappers.zoo import load_agent

    env = atari_wrapper(gym.make("BreakoutNoFrameskip-v4"))
    return env, load_agent(path, observation_space=env.observation_space)


@pytest.mark.slow
@pytest.mark.parametrize("path", [DQN, PPO], ids=["dqn", "ppo"])
def test_all_five_methods_and_the_sanity_check_on_the_breakout_agents(path: Path, tmp_path: Path) -> None:
    env, agent = breakout(path)
    states = saliency_study.collect_states(env, agent, 2, seed=0, max_steps=300)
    result = saliency_study.study(agent, states, FAST, sanity=1, seed=0)
    assert set(result.maps) == set(FAST) and all(m.shape == (2, 84, 84) for m in result.maps.values())
    assert np.isfinite(result.insertion[list(measures.INSERTION_COLUMNS)].to_numpy()).all()
    assert len(result.sanity) == len(FAST) * len(sanity.randomization_layers(agent))
    assert "lime" in result.segments
    page = write_saliency_report(result, tmp_path)
    assert (tmp_path / "sanity.png").is_file() and "sanity" in page.read_text()


def test_the_command_line_explains_an_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explain", "--agent", "ppo-CartPole-v1", "--env", "CartPole-v1", "--states", "3", "--method", "rise"]
    options = ["--method", "occlusion", "--param", "rise.masks=40", "--flatten-ssim", "--out", str(tmp_path)]
    assert cli.main([*args, *options]) == 0
    out = capsys.readouterr().out
    assert "rise" in out and "Report:" in out
    study = saliency_study.Study.load(tmp_path)
    assert study.params["rise"]["masks"] == 40 and study.flatten_ssim
    assert cli.main([*args, "--param", "masks=40", "--out", str(tmp_path / "x")]) == 2
    assert "METHOD.NAME=VALUE" in capsys.readouterr().err
    assert cli.main([*args, "--param", "lime.samples=40", "--out", str(tmp_path / "y")]) == 2
    assert "not among --method" in capsys.readouterr().err


def test_the_parameter_search_picks_the_best_set_within_the_budget() -> None:
    env, agent = cartpole()
    states = saliency_study.collect_states(env, agent, 4, seed=0)
    grid = {"masks": [20, 200], "p": [0.3, 0.7]}
    search = saliency_study.parameter_search(agent, states, "rise", grid, budget=10.0, seed=1)
    assert len(search.table) == 4 * 4 and len(search.scores) == 4
    assert search.chosen.name == search.scores.index[0] and search.best in [
        {"masks": m, "p": p} for m in (20, 200) for p in (0.3, 0.7)
    ]
    expected = measures.standardized_scores(search.table, by="params")
    assert search.scores["score"].tolist() == expected["score"].tolist()
    with pytest.raises(InvalidArgument, match="no parameter set takes"):
        saliency_study.parameter_search(agent, states, "rise", {"masks": [20]}, budget=0.0)
    with pytest.raises(InvalidArgument, match="non-empty list"):
        saliency_study.parameter_search(agent, states, "rise", {"masks": 20})
    assert saliency_study.scaled_budget(agent, states) > 0


@pytest.mark.slow
def test_occlusion_maps_of_the_trained_dqn_lose_similarity_as_its_layers_are_randomized() -> None:
    env, agent = breakout(DQN)
    states = saliency_study.collect_states(env, agent, 3, seed=0, max_steps=300)
    table = saliency_study.study(agent, states, ["occlusion"], sanity=3, seed=0).sanity
    means = table.groupby("level")[list(measures.SIMILARITIES)].mean()
    assert len(means) == len(sanity.randomization_layers(agent))
    for similarity in measures.SIMILARITIES:
        assert means[similarity].iloc[-1] < means[similarity].iloc[0], similarity  # all layers vs the output layer
        assert means[similarity].iloc[-1] < 0.8, similarity
