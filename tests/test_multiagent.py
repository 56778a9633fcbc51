"""Ad hoc agent switching and multi-agent logs on MPE's cooperative simple_spread with five agents."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import rlwrappers as rw
from rlwrappers import logs, seeding
from rlwrappers import schedule as schedules
from rlwrappers.agents import CallableAgent
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidProbability, InvalidType, LogError, UnknownName
from rlwrappers.logs import Log, schema

pytest.importorskip("pettingzoo")
simple_spread_v3 = pytest.importorskip("mpe2.simple_spread_v3")

from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402
from pettingzoo.utils.conversions import parallel_to_aec  # noqa: E402

from rlwrappers.logs import team_returns, who_acted  # noqa: E402
from rlwrappers.logs.parallel import ParallelRecorder  # noqa: E402
from rlwrappers.wrappers.multiagent import TEAM, AgentSwitch, switches  # noqa: E402

AGENTS = [f"agent_{i}" for i in range(5)]
TIME_COLUMNS = ["start_time", "wall_time"]


def spread(max_cycles: int = 25, continuous: bool = False) -> Any:
    return simple_spread_v3.parallel_env(N=5, max_cycles=max_cycles, continuous_actions=continuous)


def chase(obs: np.ndarray) -> int:
    """Moves along the larger axis of the first landmark's relative position."""
    dx, dy = float(obs[4]), float(obs[5])
    if abs(dx) > abs(dy):
        return 2 if dx > 0 else 1
    return 4 if dy > 0 else 3


def wander(obs: np.ndarray, rng: np.random.Generator) -> int:
    """A stochastic outside policy: a random move."""
    return int(rng.integers(5))


def team_action(t: int) -> Callable[[str], int]:
    return lambda agent: (t + int(agent[-1])) % 5


def play(env: Any, seeds: list[int | None]) -> list[dict[str, Any]]:
    """Runs one episode per seed with the team's fixed actions; returns what each step reported."""
    out = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        t = 0
        while env.agents:
            actions = {a: team_action(t)(a) for a in env.agents}
            obs, rewards, _, _, infos = env.step(actions)
            out.append({"obs": obs, "rewards": rewards, "infos": infos, "sent": dict(env.last_actions)})
            t += 1
    return out


def recorded(path: Path, make: Callable[[], Any], seeds: list[int | None]) -> Log:
    env = ParallelRecorder(make(), path)
    play(env, seeds)
    env.close()
    return rw.read_log(path)


# -- the PettingZoo contract ---------------------------------------------------------------------------------
def test_parallel_api_test_passes_on_the_switch_and_the_recorder(tmp_path: Path) -> None:
    policies = {"agent_0": chase, "agent_1": wander, "agent_2": chase}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the test's warnings (a live agent without a reward, ...) fail it
        parallel_api_test(AgentSwitch(spread(), policies, k=2), num_cycles=60)
        wrapped = ParallelRecorder(AgentSwitch(spread(), policies, agents=["agent_1", "agent_2"]), tmp_path)
        parallel_api_test(wrapped, num_cycles=60)
    wrapped.close()
    assert len(rw.read_log(tmp_path).episodes) == 3  # the test's seeded reset and its two episodes


def test_parallel_seed_test_passes_with_a_stochastic_outside_policy() -> None:
    parallel_seed_test(lambda: AgentSwitch(spread(), {"agent_0": chase, "agent_1": wander}, k=2))
    parallel_seed_test(lambda: AgentSwitch(spread(), wander, k=3, when="bursts(p=0.3, duration=(1, 3))"))


def test_parallel_seed_test_passes_with_torch_policies() -> None:
    torch = pytest.importorskip("torch")
    from rlwrappers.agents import TorchAgent

    env = spread()
    torch.manual_seed(0)  # only builds the networks; acting draws from the switch's generators
    nets = {a: torch.nn.Sequential(torch.nn.Linear(30, 16), torch.nn.Tanh(), torch.nn.Linear(16, 5)) for a in AGENTS}

    def make() -> AgentSwitch:
        policies = {
            a: TorchAgent(net, env.observation_space(a), env.action_space(a), head="logits", deterministic=False)
            for a, net in nets.items()
        }
        return AgentSwitch(spread(), policies, k=2)

    parallel_seed_test(make)


# -- who acts --------------------------------------------------------------------------------------------------
def test_switched_agents_act_on_their_latest_observation_and_the_callers_dict_is_kept() -> None:
    env = AgentSwitch(spread(max_cycles=8), chase, agents=["agent_3", "agent_1"])
    assert env.switched == ("agent_1", "agent_3")  # in the team's order
    obs, _ = env.reset(seed=4)
    for t in range(8):
        actions = {a: team_action(t)(a) for a in env.agents}
        given = dict(actions)
        expected = {a: chase(obs[a]) if a in env.switched else given[a] for a in env.agents}
        obs, _, _, _, infos = env.step(actions)
        assert actions == given
        assert env.last_actions == expected
        for agent in AGENTS:
            switched = agent in env.switched
            assert infos[agent]["rlwrappers"] == {"policy": "chase" if switched else TEAM, "switched": switched}
    assert not env.agents


def test_the_caller_may_leave_out_the_switched_agents() -> None:
    env = AgentSwitch(spread(max_cycles=3), chase, k=2)
    env.reset(seed=0)
    _, rewards, _, _, _ = env.step({a: 0 for a in AGENTS[2:]})
    assert set(env.last_actions) == set(AGENTS) and set(rewards) == set(AGENTS)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_switching_from_episode_t_records_who_acted(tmp_path: Path, k: int) -> None:
    def make() -> AgentSwitch:
        return AgentSwitch(spread(max_cycles=4), {a: chase for a in AGENTS}, k=k, when="starting(episode=2)")

    log = recorded(tmp_path, make, [10, 11, 12, 13])
    steps = log.steps
    assert len(steps) == 4 * 4 * 5  # episodes x steps x agents
    switched_now = (steps["episode"] >= 2) & steps["agent"].isin(AGENTS[:k])
    assert (steps["switched"] == switched_now).all()
    assert (steps["policy"] == np.where(switched_now, "chase", TEAM)).all()
    assert switched_now.sum() == 2 * 4 * k
    # Team agents' actions are the team's own; the log holds what the env executed.
    team_rows = steps[~switched_now]
    assert (team_rows["action"] == (team_rows["step"] + team_rows["agent"].str[-1].astype(int)) % 5).all()
    assert list(who_acted(log, episode=3).loc[0]) == ["chase"] * k + [TEAM] * (5 - k)
    assert list(who_acted(tmp_path, episode=1).loc[0]) == [TEAM] * 5
    assert log.meta["switches"] == [
        {
            "agents": AGENTS[:k],
            "policies": dict.fromkeys(AGENTS[:k], "chase"),
            "when": "starting(episode=2)",
            "label": "switch",
            "layer": 0,
        }
    ]


def test_bursts_switch_every_switched_agent_for_spans_of_the_drawn_lengths(tmp_path: Path) -> None:
    when = "bursts(p=0.08, duration=(3, 6))"
    log = recorded(tmp_path, lambda: AgentSwitch(spread(max_cycles=60), wander, k=3, when=when), [0, 1, 2])
    steps = log.steps
    flags = steps.pivot(index=["episode", "step"], columns="agent", values="switched").astype(bool)
    # One schedule: the three switched agents switch together, the others never.
    assert (flags[AGENTS[:3]].nunique(axis=1) == 1).all()
    assert not flags[AGENTS[3:]].any().any()
    lengths = []
    for episode in range(3):
        on = flags.loc[episode, "agent_0"].to_numpy()
        # The switch replays the schedule's own plan, drawn from the generator derived from the seed.
        plan = schedules.parse(when).plan(
            episode, 60 * episode, seeding.generator(episode, 0, "switch", seeding.SCHEDULE)
        )
        assert list(on) == [plan.active(t) for t in range(60)]
        edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(int), [0]])))
        for start, stop in zip(edges[::2], edges[1::2], strict=True):
            if stop < 60:  # a span cut by the episode's end may be shorter
                lengths.append(stop - start)
            assert stop - start <= 6
    assert len(lengths) >= 5
    assert all(3 <= n <= 6 for n in lengths), lengths
    outside = steps[steps["switched"]]
    assert (outside["policy"] == "wander").all() and outside["action"].between(0, 4).all()


# -- determinism ------------------------------------------------------------------------------------------------
def test_same_seeds_give_identical_logs(tmp_path: Path) -> None:
    def make() -> AgentSwitch:
        policies = {"agent_0": wander, "agent_1": chase, "agent_2": wander}
        return AgentSwitch(spread(max_cycles=20), policies, k=3, when="bursts(p=0.2, duration=(2, 5))")

    a = recorded(tmp_path / "a", make, [7, None, 8])
    b = recorded(tmp_path / "b", make, [7, None, 8])
    c = recorded(tmp_path / "c", make, [9, None, 10])
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.episodes.drop(columns=TIME_COLUMNS), b.episodes.drop(columns=TIME_COLUMNS))
    assert a.steps["switched"].any()
    assert not a.steps[["switched", "action"]].equals(c.steps[["switched", "action"]])
    # The unseeded second episode counts on from seed 7: its draws are the same in both runs.
    assert list(a.episodes["entropy"].map(list)) == [[7], [7], [8]]


def test_an_unseeded_run_reports_its_entropy_and_replays_from_it(tmp_path: Path) -> None:
    def make() -> AgentSwitch:
        return AgentSwitch(spread(max_cycles=15), wander, k=2, when="prob(p=0.5)")

    first = recorded(tmp_path / "first", make, [None, None])
    (entropy,) = first.episodes["entropy"][0]
    assert entropy == first.episodes["entropy"][1][0] and first.episodes["seed"].isna().all()
    switch = make()
    switch.reset(seed=int(entropy))  # the same generators; the env itself is seeded differently
    replay = []
    for _ in range(15):
        active = switch.active
        switch.step({a: 0 for a in switch.agents})
        replay.append((active, switch.last_actions["agent_1"]))
    steps = first.steps[(first.steps["episode"] == 0) & (first.steps["agent"] == "agent_1")]
    assert list(steps["switched"]) == [active for active, _ in replay]
    assert steps["switched"].any() and not steps["switched"].all()
    switched = steps["switched"].to_numpy()
    assert list(steps["action"][switched]) == [action for active, action in replay if active]


# -- the log ----------------------------------------------------------------------------------------------------
def test_the_log_reads_back_with_per_agent_and_team_returns(tmp_path: Path) -> None:
    env = ParallelRecorder(
        AgentSwitch(spread(max_cycles=10), {"agent_4": wander}, agents="agent_4", when="starting(episode=1)"),
        tmp_path,
        metadata={"team": "fixed moves"},
    )
    rewards: list[dict[str, float]] = []
    for seed in (3, 4):
        env.reset(seed=seed)
        total = dict.fromkeys(AGENTS, 0.0)
        t = 0
        while env.agents:
            _, reward, _, _, _ = env.step({a: team_action(t)(a) for a in env.agents})
            for agent, r in reward.items():
                total[agent] += r
            t += 1
        rewards.append(total)
    env.close()

    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.parquet", "meta.json", "steps.parquet"]
    episodes = logs.read_episodes(tmp_path)
    assert list(episodes.columns) == [
        "episode",
        "seed",
        "entropy",
        "return",
        "length",
        "terminated",
        "truncated",
        "complete",
        "start_time",
        "wall_time",
        *(f"return.{a}" for a in AGENTS),
    ]
    assert list(episodes["seed"]) == [3, 4] and list(episodes["length"]) == [10, 10]
    assert episodes["truncated"].all() and not episodes["terminated"].any() and episodes["complete"].all()
    returns = team_returns(tmp_path)
    assert list(returns.columns) == [*AGENTS, "team"] and list(returns.index) == [0, 1]
    np.testing.assert_allclose(returns["team"], returns[AGENTS].sum(axis=1), rtol=1e-12)
    for episode, total in enumerate(rewards):
        assert returns.loc[episode, AGENTS].tolist() == pytest.approx([total[a] for a in AGENTS], rel=1e-12)
    steps = rw.read_log(tmp_path).steps
    assert list(steps.columns) == [
        "episode",
        "step",
        "agent",
        "policy",
        "switched",
        "action",
        "reward",
        "terminated",
        "truncated",
    ]
    by_agent = steps.groupby(["episode", "agent"])["reward"].sum().unstack()[AGENTS]
    np.testing.assert_allclose(by_agent.to_numpy(), returns[AGENTS].to_numpy(), rtol=1e-12)
    assert list(steps.groupby("episode")["switched"].sum()) == [0, 10]


def test_the_header_has_the_single_agent_keys_and_the_agents(tmp_path: Path) -> None:
    single = rw.Recorder(gym.make("CartPole-v1"), tmp_path / "single")
    single.close()
    log = recorded(tmp_path / "multi", lambda: AgentSwitch(spread(max_cycles=3), chase, k=1), [0])
    single_meta = json.loads((tmp_path / "single" / "meta.json").read_text())
    assert set(single_meta) <= set(log.meta)
    assert log.meta["agents"] == AGENTS and log.meta["env_id"] == "simple_spread_v3"
    assert log.meta["format"] == schema.FORMAT and log.meta["seeds"] == [0] and log.meta["episodes"] == 1
    assert log.meta["action_kind"] == "int" and log.meta["action_space"]["agent_0"] == "Discrete(5)"
    assert log.meta["switches"][0]["policies"] == {"agent_0": "chase"}


def test_continuous_actions_are_logged_as_executed(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from rlwrappers.agents import TorchAgent

    base = spread(max_cycles=5, continuous=True)
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(30, 5), torch.nn.Sigmoid())
    policy = TorchAgent(net, base.observation_space("agent_0"), base.action_space("agent_0"), head="action")
    policy.name = "mlp"  # type: ignore[attr-defined]
    env = ParallelRecorder(AgentSwitch(base, {"agent_0": policy}, k=1), tmp_path)
    obs, _ = env.reset(seed=2)
    expected = []
    while env.agents:
        expected.append(policy.act_one(obs["agent_0"]))
        obs, *_ = env.step({a: np.full(5, 0.5, dtype=np.float32) for a in env.agents})
    env.close()
    steps = rw.read_log(tmp_path).steps
    mine = steps[steps["agent"] == "agent_0"]
    assert (mine["policy"] == "mlp").all()
    np.testing.assert_array_equal(np.stack(mine["action"].to_numpy()), np.stack(expected).astype(np.float64))
    assert (np.stack(steps[steps["agent"] == "agent_1"]["action"].to_numpy()) == 0.5).all()


def test_an_unfinished_log_keeps_its_finished_episodes(tmp_path: Path) -> None:
    env = ParallelRecorder(AgentSwitch(spread(max_cycles=4), chase, k=2), tmp_path)
    play(env, [0, 1])
    env.reset(seed=2)
    env.step({a: 0 for a in AGENTS})  # an open episode: not in the stream yet
    assert (tmp_path / schema.STREAM).exists() and not (tmp_path / "steps.parquet").exists()
    returns = team_returns(tmp_path)
    assert list(returns.index) == [0, 1]
    np.testing.assert_allclose(returns["team"], returns[AGENTS].sum(axis=1), rtol=1e-12)
    with pytest.raises(LogError, match="being written by another writer"):
        logs.compact(tmp_path)  # only a killed writer's log needs it: this one is still being written
    env.close()
    episodes = logs.read_episodes(tmp_path)
    assert list(episodes["episode"]) == [0, 1, 2] and "return.agent_4" in episodes
    assert list(episodes["complete"]) == [True, True, False]


def test_record_load_reads_an_unfinished_multi_agent_log(tmp_path: Path) -> None:
    env = ParallelRecorder(AgentSwitch(spread(max_cycles=4), chase, k=2), tmp_path)
    play(env, [0, 1])
    log = rw.read_log(tmp_path)
    assert list(log.steps.columns)[:5] == ["episode", "step", "agent", "policy", "switched"]
    assert "return.agent_0" in logs.read_episodes(tmp_path)


def test_the_recorder_keeps_an_existing_log_unless_told(tmp_path: Path) -> None:
    recorded(tmp_path, lambda: AgentSwitch(spread(max_cycles=2), chase, k=1), [0])
    with pytest.raises(LogError, match="already holds a log"):
        ParallelRecorder(spread(), tmp_path)
    ParallelRecorder(spread(), tmp_path, overwrite=True).close()
    assert not (tmp_path / "steps.parquet").exists()
    with pytest.raises(InvalidType, match="`metadata` must be a dict"):
        ParallelRecorder(spread(), tmp_path / "x", metadata=["a"])  # type: ignore[arg-type]
    rw.Recorder(gym.make("CartPole-v1"), tmp_path / "single").close()
    with pytest.raises(LogError, match="single-agent log"):
        team_returns(tmp_path / "single")


# -- stacks, names ------------------------------------------------------------------------------------------------
def test_stacked_switches_report_the_innermost_that_holds() -> None:
    def late(obs: np.ndarray) -> int:
        return 0

    inner = AgentSwitch(spread(max_cycles=6), chase, agents=["agent_0", "agent_1"], when="starting(step=3)")
    outer = AgentSwitch(inner, late, agents=["agent_1", "agent_2"])
    assert outer.label == "switch-2" and list(switches(outer)) == [outer, inner]
    obs, _ = outer.reset(seed=0)
    for t in range(6):
        previous = obs
        obs, _, _, _, infos = outer.step({a: 3 for a in outer.agents})
        policies = {a: infos[a]["rlwrappers"]["policy"] for a in AGENTS[:3]}
        if t < 3:
            assert policies == {"agent_0": TEAM, "agent_1": "late", "agent_2": "late"}
        else:
            assert policies == {"agent_0": "chase", "agent_1": "chase", "agent_2": "late"}
            assert inner.last_actions["agent_1"] == chase(previous["agent_1"])


def test_policy_names_come_from_a_name_attribute_a_function_or_the_label() -> None:
    env = spread()
    named = CallableAgent(lambda obs: 0, env.observation_space("agent_0"), env.action_space("agent_0"))
    named.name = "keeper"  # type: ignore[attr-defined]
    switch = AgentSwitch(env, {"agent_0": named, "agent_1": chase, "agent_2": lambda obs: 1}, k=3, label="guest")
    assert switch.policy_names == {"agent_0": "keeper", "agent_1": "chase", "agent_2": "guest"}


# -- bad input ----------------------------------------------------------------------------------------------------
BAD: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"k": 6}, InvalidArgument, r"`k` must be <= 5 \(the team's size\), received 6"),
    ({"k": 0}, InvalidArgument, "`k` must be >= 1, received 0"),
    ({"k": 1.5}, InvalidType, "`k` must be an integer"),
    ({"k": 2, "agents": ["agent_0"]}, InvalidArgument, "not both"),
    ({}, InvalidArgument, "received neither"),
    ({"agents": ["agent_0", "agnet_1"]}, UnknownName, "unknown agent `agnet_1`.*Did you mean `agent_1`"),
    ({"agents": []}, InvalidArgument, "at least one agent"),
    ({"agents": ["agent_1", "agent_1"]}, InvalidArgument, "must not repeat"),
    ({"agents": [0, 1]}, InvalidType, "list of agent names"),
    ({"k": 1, "when": "sometimes"}, UnknownName, "unknown schedule `sometimes`"),
    ({"k": 1, "when": "strating(episode=2)"}, UnknownName, "Did you mean `starting`"),
    ({"k": 1, "when": "bursts(p=2, duration=(1, 2))"}, InvalidProbability, "`p` must be a probability"),
    ({"k": 1, "when": "bursts(p=0.1, duration=(5, 2))"}, InvalidArgument, "low <= high"),
    ({"k": 1, "label": ""}, InvalidArgument, "`label` must not be empty"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD, ids=[m for _, _, m in BAD])
def test_bad_arguments_fail_at_construction(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        AgentSwitch(spread(), chase, **kwargs)


def test_bad_outside_policies_fail_at_construction() -> None:
    env = spread()
    obs_space, act_space = env.observation_space("agent_1"), env.action_space("agent_1")
    narrow = CallableAgent(chase, gym.spaces.Box(-np.inf, np.inf, (10,), np.float32), act_space)
    with pytest.raises(IncompatibleSpace, match=r"`agent_1` has observation_space Box.*\(10,\).*is Box.*\(30,\)"):
        AgentSwitch(env, {"agent_0": chase, "agent_1": narrow}, k=2)
    three = CallableAgent(chase, obs_space, gym.spaces.Discrete(3))
    with pytest.raises(IncompatibleSpace, match=r"`agent_1` has action_space Discrete\(3\).*is Discrete\(5\)"):
        AgentSwitch(env, {"agent_1": three}, agents=["agent_1"])
    with pytest.raises(InvalidArgument, match="no policy for switched agent `agent_1`"):
        AgentSwitch(env, {"agent_0": chase}, k=2)
    with pytest.raises(UnknownName, match="unknown agent `agent_7`"):
        AgentSwitch(env, {"agent_0": chase, "agent_7": chase}, k=1)
    with pytest.raises(InvalidType, match="`outside` policy for `agent_0`"):
        AgentSwitch(env, {"agent_0": 3}, k=1)
    team = CallableAgent(chase, obs_space, act_space)
    team.name = TEAM  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgument, match="must not be named 'team'"):
        AgentSwitch(env, team, k=1)
    with pytest.raises(InvalidType, match="PettingZoo ParallelEnv"):
        AgentSwitch(parallel_to_aec(env), chase, k=1)
