"""Severity ladders: the files are what the calibration makes, every entry parses and wraps its env, levels grow."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest
import rlwrappers.envs  # registers rlwrappers/Catch-v0

import rlwrappers as rw
from rlwrappers import error, ladders, zoo
from rlwrappers.core import Entry
from rlwrappers.ladders import calibration, definition
from rlwrappers.schedule import Window
from rlwrappers.uncertainty import SETS, uncertainty_set

ENVS = list(definition.ENVS)
VECTOR = ["CartPole-v1", "Pendulum-v1", "Hopper-v5"]
#: The zoo's clean agent of each env: the agent the agent-bound entries attach to.
AGENTS = {
    "CartPole-v1": "ppo-CartPole-v1",
    "Pendulum-v1": "td3-Pendulum-v1",
    "Hopper-v5": "ppo-Hopper-v5",
    "rlwrappers/Catch-v0": "ppo-Catch-v0",
}
#: Entry parameters that configure a perturbation rather than measure its severity.
SETTINGS = {"steps", "seed", "duration"}


def json_form(value: Any) -> Any:
    return json.loads(json.dumps(value))


def entries_of(ladder: ladders.Ladder) -> Iterator[dict[str, Any]]:
    for arm in ladder.arms():
        yield from arm.entries
    yield from ladder.recovery.entries


# -- the files --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENVS)
def test_the_shipped_file_is_what_the_calibration_makes_byte_for_byte(env_id):
    shipped = (calibration.DIRECTORY / ladders.LADDER / calibration.file_name(env_id)).read_bytes()
    assert shipped == calibration.to_json(calibration.calibrate(env_id)).encode()


def test_the_version_ships_one_file_per_env_and_nothing_else():
    assert ladders.versions() == ["card-v1"]
    assert ladders.ladders() == sorted(ENVS)
    files = sorted(p.name for p in (calibration.DIRECTORY / ladders.LADDER).glob("*"))
    assert files == sorted(calibration.file_name(e) for e in ENVS)
    for env_id in ENVS:
        ladder = ladders.ladder(env_id)
        assert (ladder.version, ladder.env_id, ladder.interventions) == ("card-v1", env_id, ())
        assert ladder.calibration["policy"] == "uniform-random" and ladder.calibration["steps"] == 10_000


def test_vector_and_image_ladders_hold_their_families_in_order():
    for env_id in VECTOR:
        ladder = ladders.ladder(env_id)
        assert ladder.kind == "vector" and len(ladder.calibration["obs_std"]) > 0
        assert list(ladder.families) == [f for f in ladders.FAMILIES if f != "corruptions"]
    catch = ladders.ladder("rlwrappers/Catch-v0")
    assert catch.kind == "image" and catch.calibration["obs_std"] is None and catch.calibration["state_std"] is None
    assert list(catch.families) == [f for f in ladders.FAMILIES if f not in ("init_noise", "dynamics")]
    assert list(catch.families["corruptions"]["sub_families"]) == list(ladders.CORRUPTIONS)


def test_arms_come_in_a_fixed_order_one_per_family_sub_family_and_level():
    catch = ladders.ladder("rlwrappers/Catch-v0")
    arms = catch.arms()
    assert len(arms) == 5 * 5 + 6 * 5
    assert [a.level for a in arms] == [1, 2, 3, 4, 5] * 11
    assert arms[0].name == "obs_noise@1" and arms[-1].name == "corruptions.jpeg@5"
    assert [a.name for a in catch.arms(["attack", "obs_noise"])] == [f"obs_noise@{n}" for n in range(1, 6)] + [
        f"attack@{n}" for n in range(1, 6)
    ]
    assert catch.arms("dynamics") == []  # a family that image envs do not have
    assert {a.sub_family for a in catch.arms("corruptions")} == set(ladders.CORRUPTIONS)
    assert len(ladders.ladder("Hopper-v5").arms()) == 7 * 5
    arm = catch.arms("sticky_action")[0]
    arm.entries[0]["p"] = 0.9  # arms hold copies
    assert catch.arms("sticky_action")[0].entries[0]["p"] == 0.05


# -- every entry parses and wraps its env ------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENVS)
def test_every_entry_parses_back_to_itself(env_id):
    for entry in entries_of(ladders.ladder(env_id)):
        assert json_form(Entry.parse(entry).to_dict()) == entry


def run(env_id: str, entries: list[dict[str, Any]], agent: rw.agents.Agent, steps: int = 3) -> None:
    env = rw.wrap(gym.make(env_id), *entries)
    needs_agent = any(Entry.parse(e).perturbation.needs_agent for e in entries)
    assert rw.attach(env, agent) == int(needs_agent)
    obs, _ = env.reset(seed=0)
    for _ in range(steps):
        assert env.observation_space.contains(obs)
        obs, _, terminated, truncated, _ = env.step(agent.act_one(obs))
        if terminated or truncated:
            break
    env.close()


@pytest.mark.parametrize("env_id", ENVS)
def test_every_arm_wraps_the_real_env_with_the_zoo_agent_attached(env_id):
    agent = rw.load_agent(AGENTS[env_id], seed=0)
    ladder = ladders.ladder(env_id)
    for arm in ladder.arms():
        run(env_id, arm.entries, agent)
    run(env_id, ladder.recovery.entries, agent)


# -- levels ------------------------------------------------------------------------------------------------------
def severities(entries: list[dict[str, Any]]) -> dict[str, float]:
    """Every number of the entries that measures severity, signed so that it grows with the severity."""
    out: dict[str, float] = {}

    def walk(value: Any, path: str) -> None:
        key = path.rsplit(".", 1)[-1]
        if isinstance(value, dict) and value.get("distribution") == "uniform":
            out[f"{path}.low"], out[f"{path}.high"] = -value["low"], value["high"]  # the box widens
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}")
        elif isinstance(value, list):
            for n, v in enumerate(value):
                walk(v, f"{path}[{n}]")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and key not in SETTINGS:
            out[path] = -value if key == "quality" else value  # JPEG: a lower quality is a stronger corruption

    for n, entry in enumerate(entries):
        walk({k: v for k, v in entry.items() if k != "when"}, str(n))
        schedule = Entry.parse(entry).when
        if schedule.name == "prob":
            out[f"{n}.when.p"] = schedule.params()["p"]
        else:
            assert schedule.name == "always"
    return out


def ladders_of_levels(ladder: ladders.Ladder) -> Iterator[tuple[str, list[dict[str, float]]]]:
    families: dict[str, list[dict[str, float]]] = {}
    for arm in ladder.arms():
        families.setdefault(arm.sub_family or arm.family, []).append(severities(arm.entries))
    yield from families.items()


@pytest.mark.parametrize("env_id", ENVS)
def test_every_severity_parameter_grows_with_the_level(env_id):
    for family, levels in ladders_of_levels(ladders.ladder(env_id)):
        assert len(levels) == 5 and all(s.keys() == levels[0].keys() for s in levels), family
        varying = [k for k in levels[0] if len({s[k] for s in levels}) > 1]
        assert varying, f"{family}: nothing changes with the level"
        for key in varying:
            values = [s[key] for s in levels]
            if family in definition.REPEATED_LEVELS:  # whole pixels: fewer than five values in Table 1's range
                assert values == sorted(values) and values[0] < values[-1], (family, key, values)
            else:
                assert all(a < b for a, b in itertools.pairwise(values)), (family, key, values)


@pytest.mark.parametrize("env_id", VECTOR)
def test_vector_levels_are_the_constants_times_the_measured_scales(env_id):
    ladder = ladders.ladder(env_id)
    sigma, state_sigma = ladder.calibration["obs_std"], ladder.calibration["state_std"]

    def levels(family: str, key: str) -> list[Any]:
        return [arm.entries[0][key] for arm in ladder.arms(family)]

    def times(ks: tuple[float, ...], scales: list[float]) -> list[list[float]]:
        return [[pytest.approx(k * s, rel=1e-9) for s in scales] for k in ks]

    assert levels("obs_noise", "std") == times(definition.OBS_NOISE_K, sigma)
    assert levels("init_noise", "std") == times(definition.INIT_NOISE_K, state_sigma)
    assert levels("attack", "eps") == times(definition.ATTACK_K, sigma)
    assert levels("sticky_action", "p") == list(definition.STICKY_P)
    assert levels("param_noise", "std") == list(definition.PARAM_NOISE_STD)
    space = gym.make(env_id).action_space
    if isinstance(space, gym.spaces.Discrete):
        assert levels("action_noise", "p") == list(definition.ACTION_NOISE_P)
        assert {arm.entries[0]["name"] for arm in ladder.arms("attack")} == {"fgsm"}
    else:
        ranges = (space.high - space.low).astype(float).tolist()
        assert levels("action_noise", "std") == times(definition.ACTION_NOISE_RANGE_K, ranges)
        assert {(arm.entries[0]["name"], arm.entries[0]["steps"]) for arm in ladder.arms("attack")} == {("pgd", 10)}


@pytest.mark.parametrize("env_id", VECTOR)
def test_dynamics_grow_geometrically_from_nominal_to_the_hull_at_level_5(env_id):
    box = uncertainty_set(env_id)
    assert len(box.dims) == max(len(s.dims) for s in SETS.values() if s.env_id == env_id)
    nominal = box.nominal()
    arms = ladders.ladder(env_id).arms("dynamics")
    for arm in arms:
        (entry,) = arm.entries
        assert entry["resample"] == "episode" and entry["scales"] == {}
        assert list(entry["values"]) == [d.key for d in box.dims]
        for d in box.dims:
            n = nominal[d.name]
            low, high = min(d.low, n), max(d.high, n)
            drawn = entry["values"][d.key]
            assert drawn["distribution"] == "uniform"
            if arm.level == 5:
                assert (drawn["low"], drawn["high"]) == (low, high)  # the hull, exactly
            else:
                f = arm.level / 5
                assert drawn["low"] == pytest.approx(n * (low / n) ** f, rel=1e-12)
                assert drawn["high"] == pytest.approx(n * (high / n) ** f, rel=1e-12)
                assert drawn["low"] <= n <= drawn["high"]


def test_the_image_ladder_follows_its_constants():
    catch = ladders.ladder("rlwrappers/Catch-v0")
    assert [a.entries[0]["std"] for a in catch.arms("obs_noise")] == list(definition.IMAGE_OBS_NOISE_STD)
    attacks = [a.entries[0] for a in catch.arms("attack")]
    assert {(e["name"], e["eps"]) for e in attacks} == {("fgsm", 1 / 255)}
    assert [e["when"] for e in attacks] == [f"prob(p={p})" for p in definition.IMAGE_ATTACK_P]
    rotations = [a.entries[0]["degrees"] for a in catch.arms("corruptions") if a.sub_family == "rotate"]
    assert rotations == list(definition.ROTATE_DEGREES)


@pytest.mark.parametrize("env_id", ENVS)
def test_the_recovery_shift_is_the_level_4_observation_noise_in_a_window(env_id):
    ladder = ladders.ladder(env_id)
    expected = definition.RECOVERY[env_id]
    recovery = ladder.recovery
    assert (recovery.start, recovery.stop, recovery.window, recovery.horizon) == (
        expected.start,
        expected.stop,
        expected.window,
        expected.horizon,
    )
    (shift,) = recovery.entries
    (level_4,) = ladder.arms("obs_noise")[3].entries
    assert {**shift, "when": "always"} == level_4
    assert Entry.parse(shift).when == Window(expected.start, expected.stop, unit="step")


@pytest.mark.parametrize("env_id", ENVS)
def test_the_random_return_is_below_the_zoo_agents_clean_return(env_id):
    ladder = ladders.ladder(env_id)
    assert ladder.calibration["random_episodes"] > 0
    for seed in zoo.card(AGENTS[env_id])["seeds"].values():
        assert ladder.random_return < seed["returns"]["clean"]["mean"]


# -- bad inputs --------------------------------------------------------------------------------------------------
def test_bad_inputs_raise_typed_errors_naming_the_argument():
    with pytest.raises(error.UnknownName, match=r"`env_id` 'CartPole-v0' has no card-v1 ladder.*`CartPole-v1`"):
        ladders.ladder("CartPole-v0")
    with pytest.raises(error.UnknownName, match=r"`version` 'card-v2' is not a ladder version.*`card-v1`"):
        ladders.ladder("CartPole-v1", version="card-v2")
    with pytest.raises(error.UnknownName, match="`version`"):
        ladders.ladders("card-v0")
    with pytest.raises(error.InvalidType, match="`env_id`"):
        ladders.ladder(None)  # type: ignore[arg-type]
    cartpole = ladders.ladder("CartPole-v1")
    with pytest.raises(error.UnknownName, match=r"`families` holds 'obs_nosie'.*Did you mean `obs_noise`"):
        cartpole.arms(["obs_nosie"])
    with pytest.raises(error.InvalidType, match="`families`"):
        cartpole.arms(3)  # type: ignore[arg-type]
    with pytest.raises(error.UnknownName, match=r"`env_id` 'Acrobot-v1' has no card-v1 ladder"):
        calibration.calibrate("Acrobot-v1")
    with pytest.raises(error.InvalidArgument, match="needs the keys"):
        ladders.Ladder.from_dict({"ladder": "card-v1"})
