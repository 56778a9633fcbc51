"""Evaluations of teams in PettingZoo parallel envs: agents switched out from episode T or at random."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlwrappers.agents import CallableAgent
from rlwrappers.error import IncompatibleSpace, InvalidArgument, UnknownName
from rlwrappers.logs import read_log
from rlwrappers.report.evaluation import write_report
from rlwrappers.studies import EnvSetup, Execution, Timing, shift_impact
from rlwrappers.studies.design import BASELINE
from rlwrappers.studies.run import evaluate

pytest.importorskip("mpe2")
pytest.importorskip("statsmodels")

from rlwrappers.logs import who_acted
from rlwrappers.studies.teams import Team

ENV = "simple_spread_v3"
N = 5


def _to_landmark(i: int) -> Any:
    """Agent i heads for landmark i: the team's own policy."""

    def policy(obs: np.ndarray) -> int:
        rel = obs[4 + 2 * i : 6 + 2 * i]
        if abs(rel[0]) > abs(rel[1]):
            return 2 if rel[0] > 0 else 1
        return 4 if rel[1] > 0 else 3

    return policy


def stay(obs: np.ndarray) -> int:
    return 0


TEAM = Team({f"agent_{i}": _to_landmark(i) for i in range(N)}, "landmarks")
LAZY = {f"agent_{i}": stay for i in range(N)}
SWITCHES = {f"{k} switched": f"switch(k={k}, to=lazy)" for k in (1, 2, 3)}


def _options(out: Path, **more: Any) -> dict[str, Any]:
    base = {"env": EnvSetup(kwargs={"N": N, "max_cycles": 10}), "outside": {"lazy": LAZY}, "out": out}
    return base | {"execution": Execution(workers=1, progress=False)} | more


@pytest.mark.slow
def test_switching_one_two_and_three_of_five_from_episode_t(tmp_path: Path) -> None:
    run = shift_impact.causal(TEAM, ENV, SWITCHES, episodes=6, seeds=2, **_options(tmp_path, share_pre_shift=False))
    assert len(run.index) == 4 * 2 and run.complete  # baseline + three switches, two seeds: separate logs
    assert run.fixed_seed_check()["identical"].all()
    for k in (1, 2, 3):
        path = run.path / run.index.query(f"shift == '{k} switched' and seed == 0")["path"].item()
        before, after = who_acted(path, episode=2), who_acted(path, episode=3)  # steps x agents
        assert (before == "team").all().all()
        switched = [a for a in after.columns if (after[a] == "stay").all()]
        assert switched == [f"agent_{i}" for i in range(k)]  # the first k agents, from episode T = 3
        assert (after.drop(columns=switched) == "team").all().all()
    table = shift_impact.did_table(run)
    assert list(table.index.get_level_values("shift")) == list(SWITCHES)
    assert table["estimate"].nunique() == 3  # three switches, three impacts
    for _, row in table.iterrows():  # identical before T: the cumulative impact is 3 episodes x eq. 5
        assert row["cumulative"] == pytest.approx(3 * row["estimate"], rel=1e-12)
    report = write_report(run)
    assert (report.parent / "impact-0.png").exists() and not (report.parent / "impact-1.png").exists()
    assert "Fixed-seed check passed" in report.read_text()


def test_random_switches_follow_the_bursts_and_repeat_with_the_seeds(tmp_path: Path) -> None:
    spec = {"bursts": "switch(k=2, to=lazy, when=bursts(p=0.2, duration=(2, 4)))"}
    first = evaluate(
        TEAM, ENV, spec, episodes=3, seeds=1, **_options(tmp_path / "a", timing=Timing(observational=True))
    )
    again = evaluate(
        TEAM, ENV, spec, episodes=3, seeds=1, **_options(tmp_path / "b", timing=Timing(observational=True))
    )
    np.testing.assert_array_equal(first.episodes()["return"], again.episodes()["return"])
    path = first.path / first.index.query("shift == 'bursts'")["path"].item()
    steps = read_log(path).steps
    switched_steps = steps[steps["policy"] == "stay"]
    assert set(switched_steps["agent"]) == {"agent_0", "agent_1"}
    per_episode = switched_steps.groupby("episode")["step"].nunique()
    assert 0 < per_episode.sum() < 3 * 10  # some steps switched, not all
    assert first.observational and first.request["multiagent"]


def test_a_team_with_an_untrained_outside_group(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    run = evaluate(TEAM, ENV, ["switch(agents=['agent_4'], to=untrained)"], episodes=2, seeds=1, **_options(tmp_path))
    path = run.path / run.index.query(f"shift != '{BASELINE}'")["path"].item()
    steps = read_log(path).steps
    assert set(steps[steps["switched"]]["agent"]) == {"agent_4"}
    assert set(steps[steps["switched"]]["policy"]) == {"untrained"}


def test_bad_team_settings_are_refused(tmp_path: Path) -> None:
    base = {"episodes": 2, "seeds": 1, **_options(tmp_path)}
    with pytest.raises(InvalidArgument, match=r"`k` must be <= 5 \(the team's size\), received 6"):
        evaluate(TEAM, ENV, ["switch(k=6, to=lazy)"], **base)
    with pytest.raises(UnknownName, match="unknown agent `agent_9`"):
        evaluate(TEAM, ENV, ["switch(agents=['agent_9'], to=lazy)"], **base)
    with pytest.raises(UnknownName, match=r"unknown group `lazzy`.*Did you mean `lazy`"):
        evaluate(TEAM, ENV, ["switch(k=1, to=lazzy)"], **base)
    with pytest.raises(InvalidArgument, match="`switch` needs `to`"):
        evaluate(TEAM, ENV, ["switch(k=1)"], **base)
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    observations = gym.spaces.Box(-np.inf, np.inf, (30,), np.float32)
    continuous = CallableAgent(lambda o: np.zeros(2, np.float32), observations, box)
    with pytest.raises(IncompatibleSpace, match="agent_0"):
        evaluate(TEAM, ENV, ["switch(k=1, to=lazy)"], **(base | {"outside": {"lazy": {"agent_0": continuous}}}))
    with pytest.raises(InvalidArgument, match="has no policy for agent `agent_4`"):
        partial = Team({f"agent_{i}": _to_landmark(i) for i in range(4)}, "four")
        evaluate(partial, ENV, ["switch(k=1, to=lazy)"], **base)
    with pytest.raises(InvalidArgument, match="`probe` applies to Gymnasium envs only"):
        evaluate(TEAM, ENV, ["switch(k=1, to=lazy)"], probe=8, **base)
    with pytest.raises(InvalidArgument, match="`outside` applies to PettingZoo parallel envs only"):
        evaluate(
            "ppo-CartPole-v1",
            "CartPole-v1",
            [],
            outside={"lazy": LAZY},
            out=tmp_path / "x",
            execution=Execution(workers=1),
        )
    assert not (tmp_path / "index.json").exists()
