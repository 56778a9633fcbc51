"""Trained teams: cards, loading with SHA-256 checks, the trained groups beating untrained agents, and training."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("torch")

import torch
from rlwrappers.envs.powergrid import parallel_env

from rlwrappers import error
from rlwrappers.agents import TorchAgent
from rlwrappers.zoo import teams

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["powergrid-main", "powergrid-outside"]


def team_return(env, team, seed: int) -> float:
    return sum(teams.play(env, team, seed=seed).values())


def test_both_groups_are_shipped_with_complete_cards() -> None:
    assert teams.names() == NAMES
    for name, seed in zip(NAMES, (0, 1), strict=True):
        info = teams.card(name)
        assert info["seed"] == seed and info["env"] == "coordinated_buildings_v0"
        assert set(info["agents"]) == {f"building_{i}" for i in range(5)}
        settings = info["settings"]
        assert settings["hidden"] == 128 and settings["clip"] == 0.2 and settings["gamma"] == 0.99
        assert (settings["lr_actor"], settings["lr_critic"]) == (3e-4, 1e-3)
        assert (settings["std_init"], settings["std_decay"], settings["std_min"]) == (1.0, 0.05, 0.1)
        assert settings["update_every"] == 2000 and settings["epochs"] == 5
        assert info["timesteps"] >= settings["timesteps"] and info["train_seconds"] > 0
        assert info["curve"]["last_10"] > info["curve"]["first_10"]
        assert info["returns"]["trained"]["mean"] > info["returns"]["untrained"]["mean"]
        for entry in info["agents"].values():
            data = (teams.DIRECTORY / entry["file"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == entry["sha256"]


def test_loaded_teams_are_torch_agents_on_the_env_spaces() -> None:
    env = parallel_env(**teams.card("powergrid-main")["env_kwargs"])
    observations, _ = env.reset(seed=0)
    for name in NAMES:
        team = teams.load_team(name)
        assert list(team) == env.possible_agents
        for agent, member in team.items():
            assert isinstance(member, TorchAgent) and member.deterministic
            action = member.act_one(observations[agent])
            assert action in env.action_space(agent)


def test_each_group_plays_an_episode_and_main_beats_untrained_on_the_same_day() -> None:
    env = parallel_env(**teams.card("powergrid-main")["env_kwargs"])
    main = team_return(env, teams.load_team("powergrid-main"), seed=123)
    outside = team_return(env, teams.load_team("powergrid-outside"), seed=123)
    fresh = team_return(env, teams.untrained(env, seed=0), seed=123)
    assert np.isfinite([main, outside, fresh]).all()
    assert main > fresh and outside > fresh
    assert main > 0.1 * fresh  # clearly: a tenth of the untrained team's cost at most (returns are negative)
    # the card's returns are reproduced by the shipped files
    info = teams.card("powergrid-main")["returns"]["trained"]
    assert team_return(env, teams.load_team("powergrid-main"), seed=info["seeds"][0]) == pytest.approx(
        info["team_returns"][0], abs=1e-3
    )


def test_untrained_is_seeded_and_leaves_torch_global_generator_alone() -> None:
    env = parallel_env()
    torch.manual_seed(99)
    before = torch.rand(3)
    torch.manual_seed(99)
    a = teams.untrained(env, seed=5)
    b = teams.untrained(env, seed=5)
    c = teams.untrained(env, seed=6)
    assert torch.equal(torch.rand(3), before)
    for agent in env.possible_agents:
        pa, pb, pc = a[agent].parameters(), b[agent].parameters(), c[agent].parameters()
        assert all(torch.equal(pa[key], pb[key]) for key in pa)
        assert not torch.equal(pa["0.weight"], pc["0.weight"])
    assert not torch.equal(a["building_0"].parameters()["0.weight"], a["building_1"].parameters()["0.weight"])


def test_unknown_names_suggest_the_closest() -> None:
    with pytest.raises(error.UnknownName, match="powergrid-main"):
        teams.card("powergrid-mian")
    with pytest.raises(error.UnknownName, match="Did you mean"):
        teams.load_team("powergrid-outsid")


def copy_team(tmp_path: Path, name: str) -> Path:
    for path in teams.DIRECTORY.glob(f"{name}*"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def test_a_corrupted_weights_file_fails_the_sha_check(tmp_path: Path) -> None:
    folder = copy_team(tmp_path, "powergrid-main")
    assert teams.load_team("powergrid-main", directory=folder)  # the intact copy loads
    target = folder / teams.card("powergrid-main")["agents"]["building_3"]["file"]
    data = bytearray(target.read_bytes())
    data[-20] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(error.InvalidArgument, match="SHA-256"):
        teams.load_team("powergrid-main", directory=folder)


def test_a_missing_weights_file_is_named(tmp_path: Path) -> None:
    folder = copy_team(tmp_path, "powergrid-outside")
    missing = folder / "powergrid-outside-building_2.pt"
    missing.unlink()
    with pytest.raises(error.MissingFile, match=r"powergrid-outside-building_2\.pt"):
        teams.load_team("powergrid-outside", directory=folder)
    with pytest.raises(error.MissingFile, match=r"powergrid-nothing\.json"):
        teams.load_team("powergrid-nothing", directory=folder)


def test_untrained_needs_the_coordinated_buildings_env_and_a_seed() -> None:
    with pytest.raises(error.InvalidType, match="CoordinatedBuildings"):
        teams.untrained(object(), seed=0)
    with pytest.raises(error.InvalidArgument):
        teams.untrained(parallel_env(), seed=-1)


def load_script(monkeypatch: pytest.MonkeyPatch):
    spec = importlib.util.spec_from_file_location("train_powergrid", ROOT / "scripts" / "train_powergrid.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_training_script_is_deterministic_on_a_tiny_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = load_script(monkeypatch)
    threads = torch.get_num_threads()  # the script trains on one thread; give the others back afterwards
    argv = ["--groups", "outside", "--timesteps", "2000", "--eval-episodes", "1", "--no-check"]
    first = script.main([*argv, "--out", str(tmp_path / "a")])["outside"]
    second = script.main([*argv, "--out", str(tmp_path / "b")])["outside"]
    assert first["updates"] == 1 and first["timesteps"] == 2016
    assert first["agents"] == second["agents"]  # bit-identical weights: equal SHA-256
    assert first["returns"] == second["returns"]
    assert set(first["settings"]) >= {"timesteps", "update_every", "epochs", "minibatch", "std_decay_every"}
    assert teams.load_team("powergrid-outside", directory=tmp_path / "a")
    torch.set_num_threads(threads)
