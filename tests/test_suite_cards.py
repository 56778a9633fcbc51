"""Cards on envs of the suites, with the zoo's agents trained for them: the whole card, end to end."""

from __future__ import annotations

import pytest

from rlwrappers import ladders


def test_a_card_on_minigrid_grades_the_zoos_agent_on_its_pictures(tmp_path) -> None:
    pytest.importorskip("minigrid")
    import rlwrappers as rw
    from rlwrappers.report.card import validate_robustness_card

    record = rw.robustness_card(
        "ppo-MiniGrid-Empty-5x5-v0",
        "MiniGrid-Empty-5x5-v0",
        out=tmp_path,
        seeds=1,
        episodes=2,
        reps=50,
        workers=1,
        progress=False,
    )
    validate_robustness_card(record)
    assert "provisional" not in record and record["reference_return"] == 1.0  # levels by the agents' effect
    assert record["clean"]["mean_return"] == pytest.approx(0.955)  # the shortest path: 5 steps of 100
    assert [f["name"] for f in record["families"]] == [
        "obs_noise",
        "action_noise",
        "sticky_action",
        "param_noise",
        "attack",
        "corruptions",
    ]
    assert record["overall"]["stars"] is not None and record["ladder_sha256"] == ladders.ladder(record["env_id"]).sha256


@pytest.mark.parametrize(
    ("agent", "env_id"),
    [("ppo-Acrobot-v1", "Acrobot-v1"), pytest.param("ppo-LunarLander-v3", "LunarLander-v3", marks=pytest.mark.slow)],
)
def test_a_card_on_a_vector_suite_env_grades_the_zoos_agent(tmp_path, agent: str, env_id: str) -> None:
    if env_id.startswith("LunarLander"):
        pytest.importorskip("Box2D")
    import rlwrappers as rw

    record = rw.robustness_card(agent, env_id, out=tmp_path, seeds=1, episodes=2, reps=50, workers=1, progress=False)
    ladder = ladders.ladder(env_id)
    assert "provisional" not in record and record["ladder_sha256"] == ladder.sha256
    assert [a["name"] for a in ladder.reference_agents] == [f"{agent}@{seed}" for seed in range(3)]
    assert record["reference_return"] == ladder.reference_return  # the env's reward_threshold
    assert record["clean"]["skill"] > 0.9  # the zoo's agent solves it
    assert [f["name"] for f in record["families"]] == [name for name in ladder.families]
    assert record["overall"]["stars"] is not None and record["recovery"] is not None
    if env_id.startswith("LunarLander"):  # its gravity, wind and turbulence shift; its state cannot be set
        assert "dynamics" in ladder.families and set(ladder.absent) == {"init_noise"}
