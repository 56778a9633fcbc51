"""Coordinated buildings: PettingZoo's API and seed tests, determinism, the documented model, and bad arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import parallel_api_test, parallel_seed_test
from rlwrappers.envs import powergrid
from rlwrappers.envs.powergrid import CoordinatedBuildings, parallel_env

from rlwrappers import error

AGENTS = [f"building_{i}" for i in range(5)]


def rollout(env: CoordinatedBuildings, seed: int, policy) -> list[tuple]:
    """Every step's observations, rewards, truncations and infos, from reset(seed) to the end of the episode."""
    observations, infos = env.reset(seed=seed)
    steps = [(observations, infos)]
    while env.agents:
        actions = {agent: policy(agent, observations[agent]) for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        steps.append((observations, rewards, terminations, truncations, infos))
    return steps


def full(agent: str, obs: np.ndarray) -> np.ndarray:
    return np.ones(5, np.float32)


def thermostat(agent: str, obs: np.ndarray) -> np.ndarray:
    """Cool each zone in proportion to how far it lies above 26 degrees (the docs' thermostat)."""
    return np.clip((obs[:5] - 26.0) / 2.0, 0.0, 1.0)


def test_pettingzoo_parallel_api_test_passes() -> None:
    parallel_api_test(parallel_env(), num_cycles=200)
    parallel_api_test(parallel_env(n_buildings=1, zones=1, steps=3), num_cycles=10)


def test_pettingzoo_parallel_seed_test_passes() -> None:
    parallel_seed_test(parallel_env)
    parallel_seed_test(lambda: parallel_env(n_buildings=3, zones=2, steps=10))


def test_agents_spaces_and_truncation() -> None:
    env = parallel_env()
    assert env.metadata["name"] == "coordinated_buildings_v0" and env.possible_agents == AGENTS
    assert env.agents == []
    observations, infos = env.reset(seed=0)
    assert env.agents == AGENTS and set(observations) == set(infos) == set(AGENTS)
    for agent in AGENTS:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent) is env.action_space(agent)
        assert env.action_space(agent).shape == (5,) and env.observation_space(agent).shape == (10,)
        assert observations[agent].dtype == np.float32
    assert env.action_space("building_0") is not env.action_space("building_1")  # each agent seeds its own
    steps = rollout(env, 0, thermostat)
    assert len(steps) == 97  # reset + 96 steps of 15 minutes
    for _, _, terminations, truncations, _ in steps[1:-1]:
        assert not any(terminations.values()) and not any(truncations.values())
    assert all(steps[-1][3].values()) and not any(steps[-1][2].values()) and env.agents == []
    with pytest.raises(error.InvalidArgument, match="reset"):
        env.step({agent: np.zeros(5) for agent in AGENTS})


@pytest.mark.parametrize("policy", [full, thermostat])
def test_observations_stay_in_their_space(policy) -> None:
    env = parallel_env()
    for seed in range(3):
        for observations, *_ in rollout(env, seed, policy):
            for agent, obs in observations.items():
                assert obs in env.observation_space(agent), (agent, obs)


def test_same_seed_gives_identical_trajectories_and_other_seeds_differ() -> None:
    def noisy(agent: str, obs: np.ndarray) -> np.ndarray:  # depends on the observation only: a deterministic policy
        return np.clip(np.abs(np.sin(obs[:5] * 7.0)), 0.0, 1.0)

    first = rollout(parallel_env(), 7, noisy)
    again = rollout(parallel_env(), 7, noisy)
    for a, b in zip(first, again, strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(next(iter(x.values())), np.ndarray):
                assert all(np.array_equal(x[agent], y[agent]) for agent in x)
            else:
                assert x == y
    other = rollout(parallel_env(), 8, noisy)
    assert not np.array_equal(first[0][0]["building_0"], other[0][0]["building_0"])
    # reset without a seed continues the generator: a second day differs from the first
    env = parallel_env()
    day_one, _ = env.reset(seed=7)
    day_two, _ = env.reset()
    assert not np.array_equal(day_one["building_0"], day_two["building_0"])


def test_the_documented_dynamics_and_reward() -> None:
    env = parallel_env(n_buildings=2, zones=3, steps=4)
    observations, infos = env.reset(seed=3)
    temps = env.temperatures
    assert infos["building_0"]["power"] == powergrid.P_BASE
    assert observations["building_0"][6] == np.float32(powergrid.P_BASE)
    assert observations["building_0"][4:6].tolist() == [0.0, 1.0]  # midnight: sin 0, cos 1
    actions = {"building_0": np.array([1.0, 0.0, 0.5], np.float32), "building_1": np.array([2.0, -1.0, 0.0])}
    observations, rewards, _, _, infos = env.step(actions)
    # power: base load plus the chiller's electric power; out-of-range actions are clipped to [0, 1]
    assert infos["building_0"]["power"] == pytest.approx(powergrid.P_BASE + powergrid.Q_MAX / powergrid.COP * 1.5)
    assert infos["building_1"]["power"] == pytest.approx(powergrid.P_BASE + powergrid.Q_MAX / powergrid.COP * 1.0)
    # every zone relaxes toward its equilibrium temperature (private state: the day's weather and gain factors)
    decay = math.exp(-powergrid.DT / (powergrid.R_ZONE * powergrid.C_ZONE))
    clipped = np.clip(np.stack([actions["building_0"], actions["building_1"]]), 0.0, 1.0)
    gains = env._factors * powergrid.GAIN_BASE  # at midnight only the constant part of the heat gain
    equilibrium = env._outdoor[0] + powergrid.R_ZONE * (gains - clipped * powergrid.Q_MAX)
    cooled = env.temperatures
    np.testing.assert_allclose(cooled, equilibrium + (temps - equilibrium) * decay, rtol=0, atol=1e-12)
    assert float(observations["building_0"][3]) == pytest.approx(env._outdoor[1], abs=1e-5)
    # voltage: linear in the mean power, with the background load at midnight
    background = powergrid.LOAD_PEAK * (0.7 + 0.3 * max(0.0, math.cos(2 * math.pi * -17 / 24)))
    mean_power = (infos["building_0"]["power"] + infos["building_1"]["power"]) / 2
    assert infos["building_0"]["voltage"] == pytest.approx(powergrid.V0 - powergrid.KAPPA * (background + mean_power))
    assert observations["building_1"][7] == np.float32(infos["building_0"]["voltage"])
    # the reward is the sum of its three documented terms
    for agent in env.possible_agents:
        info = infos[agent]
        outside = np.maximum(0.0, np.maximum(cooled[int(agent[-1])] - 28.0, 22.0 - cooled[int(agent[-1])]))
        assert info["comfort_violation"] == pytest.approx(float((outside**2).sum()))
        assert info["comfort_reward"] == pytest.approx(-powergrid.W_COMFORT * info["comfort_violation"])
        assert info["energy_reward"] == pytest.approx(-powergrid.W_ENERGY * info["power"])
        assert rewards[agent] == pytest.approx(info["comfort_reward"] + info["energy_reward"] + info["voltage_reward"])


def test_voltage_penalty_is_zero_in_range_and_shared_equally_outside() -> None:
    env = parallel_env()
    inside = rollout(env, 0, thermostat)
    for *_, infos in inside[1:]:
        assert 0.95 <= infos["building_0"]["voltage"] <= 1.05
        assert all(info["voltage_reward"] == 0.0 and info["voltage_violation"] == 0.0 for info in infos.values())
    # Every building at full power: at the hottest hour (15:00, step 60) the bus drops below 0.95 p.u.
    steps = rollout(env, 0, full)
    hottest = steps[61][4]
    assert hottest["building_0"]["hour"] == 15.0
    voltage = hottest["building_0"]["voltage"]
    assert voltage < 0.95
    expected = -1e4 / 5 * (0.95 - voltage)
    shares = {info["voltage_reward"] for info in hottest.values()}
    assert len(shares) == 1 and shares.pop() == pytest.approx(expected)
    # the penalty weight is an argument; zero switches it off
    free = rollout(parallel_env(voltage_penalty=0.0), 0, full)
    assert all(info["voltage_reward"] == 0.0 for info in free[61][4].values())
    assert free[61][4]["building_0"]["voltage_violation"] == pytest.approx(0.95 - voltage)


def test_the_thermostat_beats_full_power_and_no_cooling() -> None:
    env = parallel_env()

    def team_return(policy) -> float:
        return sum(sum(step[1].values()) for step in rollout(env, 1, policy)[1:])

    off = team_return(lambda agent, obs: np.zeros(5, np.float32))
    assert team_return(thermostat) > max(off, team_return(full))


@pytest.mark.parametrize(
    ("kwargs", "exc"),
    [
        ({"n_buildings": 0}, error.InvalidArgument),
        ({"n_buildings": 2.5}, error.InvalidType),
        ({"zones": 0}, error.InvalidArgument),
        ({"steps": 0}, error.InvalidArgument),
        ({"steps": "96"}, error.InvalidType),
        ({"system_load": -1.0}, error.InvalidArgument),
        ({"voltage_penalty": -5}, error.InvalidArgument),
        ({"voltage_penalty": float("nan")}, error.InvalidArgument),
        ({"comfort_band": (28.0, 22.0)}, error.InvalidArgument),
        ({"comfort_band": 25.0}, error.InvalidType),
        ({"comfort_band": (22.0, "28")}, error.InvalidType),
        ({"render_mode": "human"}, error.InvalidArgument),
    ],
)
def test_bad_arguments_raise_at_construction(kwargs, exc) -> None:
    with pytest.raises(exc):
        parallel_env(**kwargs)


def test_bad_actions_and_agents_raise() -> None:
    env = parallel_env(n_buildings=2, zones=3)
    env.reset(seed=0)
    good = np.zeros(3, np.float32)
    with pytest.raises(error.InvalidArgument, match="missing"):
        env.step({"building_0": good})
    with pytest.raises(error.InvalidArgument, match="shape"):
        env.step({"building_0": good, "building_1": np.zeros(4)})
    with pytest.raises(error.InvalidArgument, match="finite"):
        env.step({"building_0": good, "building_1": np.array([0.0, np.nan, 0.0])})
    with pytest.raises(error.InvalidType):
        env.step([good, good])
    with pytest.raises(error.UnknownName, match="building_1"):
        env.action_space("building_7")
    with pytest.raises(error.UnknownName):
        env.observation_space("house_0")


def test_kwargs_rebuild_the_env() -> None:
    env = parallel_env(n_buildings=3, zones=2, steps=8, system_load=0.5, comfort_band=(21.0, 27.0))
    again = parallel_env(**env.kwargs)
    assert again.kwargs == env.kwargs

    def constant(agent: str, obs: np.ndarray) -> np.ndarray:
        return np.full(2, 0.3, np.float32)

    a, b = rollout(env, 4, constant), rollout(again, 4, constant)
    assert np.array_equal(a[-1][0]["building_2"], b[-1][0]["building_2"])


def test_without_pettingzoo_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "pettingzoo", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "rlwrappers.envs.powergrid")
    with pytest.raises(error.MissingExtra, match="multiagent"):
        importlib.import_module("rlwrappers.envs.powergrid")
