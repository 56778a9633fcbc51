"""Severity ladders: the files are what the calibration makes, every entry parses and wraps its env, levels grow."""

from __future__ import annotations

import hashlib
import itertools
import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import rlwrappers.envs  # registers rlwrappers/Catch-v0

import rlwrappers as rw
from rlwrappers import error, ladders, zoo
from rlwrappers.core import Entry
from rlwrappers.functional import corruptions
from rlwrappers.ladders import calibration, definition
from rlwrappers.schedule import Window
from rlwrappers.uncertainty import SETS, uncertainty_set

ENVS = list(definition.ENVS)
#: The envs card-v1 had ladders for: the first six of card-v2's.
CARD_V1_ENVS = ENVS[:6]
VECTOR = ["CartPole-v1", "Pendulum-v1", "Hopper-v5"]
BREAKOUT = "BreakoutNoFrameskip-v4"
TOYBOX = "rlwrappers/ToyboxBreakout-v0"
ATARI = [BREAKOUT, TOYBOX]
IMAGE = ["rlwrappers/Catch-v0", *ATARI]
#: The zoo's clean agent of each env: the agent the agent-bound entries attach to.
AGENTS = {
    "CartPole-v1": "ppo-CartPole-v1",
    "Pendulum-v1": "td3-Pendulum-v1",
    "Hopper-v5": "ppo-Hopper-v5",
    "rlwrappers/Catch-v0": "ppo-Catch-v0",
    "Acrobot-v1": "ppo-Acrobot-v1",
    "MountainCar-v0": "dqn-MountainCar-v0",
    "MountainCarContinuous-v0": "td3-MountainCarContinuous-v0",
    "LunarLander-v3": "ppo-LunarLander-v3",
    "MiniGrid-Empty-5x5-v0": "ppo-MiniGrid-Empty-5x5-v0",
    "InvertedPendulum-v5": "ppo-InvertedPendulum-v5",
    "InvertedDoublePendulum-v5": "ppo-InvertedDoublePendulum-v5",
}
#: Breakout's agent: SB3's PPO of shared/agents beside the repository (the zoo has none).
BREAKOUT_AGENT = Path(__file__).resolve().parents[2] / "shared" / "agents" / "ppo-BreakoutNoFrameskip-v4-seed0.zip"
#: Every env, the Atari games' tests marked slow.
ENVS_SLOW_BREAKOUT = [pytest.param(e, marks=pytest.mark.slow) if e in ATARI else e for e in ENVS]
#: The SHA-256 of card-v1's files, read in name order.
CARD_V1_DIGEST = "c73f4ee6a7ab815e05f4ee74adf3fb534bb7005630d9d8d78e3cdaadbd9215b5"
#: Entry parameters that configure a perturbation rather than measure its severity.
SETTINGS = {"steps", "seed", "duration"}


def json_form(value: Any) -> Any:
    return json.loads(json.dumps(value))


def entries_of(ladder: ladders.Ladder) -> Iterator[dict[str, Any]]:
    for arm in ladder.arms():
        yield from arm.entries
    yield from ladder.recovery.entries


def needs_env(env_id: str) -> None:
    """Skips the test where the env's package is missing (ale_py for Breakout, ctoybox for Toybox, ...)."""
    package = definition.ENV_PACKAGES.get(env_id)
    if package is not None:
        pytest.importorskip(package)


def make(ladder: ladders.Ladder) -> gym.Env[Any, Any]:
    """The ladder's env as the card runner builds it: gym.make with its kwargs, then its preprocessing."""
    wrappers = ladders.preprocessing_wrappers(ladder.preprocessing)  # first: registers ALE's IDs
    env = gym.make(ladder.env_id, **ladder.env_kwargs)
    for wrapper in wrappers:
        env = wrapper(env)
    return env


def breakout_agent() -> rw.agents.Agent | None:
    """Breakout's PPO agent, or None where its file is not here."""
    return rw.load_agent(BREAKOUT_AGENT, trusted=True) if BREAKOUT_AGENT.exists() else None


def missing_agent_message(what: str) -> str:
    return (
        f"{BREAKOUT_AGENT} is not here (the trained Atari agents live in shared/agents beside the repository): {what}"
    )


# -- the files --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENVS_SLOW_BREAKOUT)
def test_the_shipped_file_is_what_the_calibration_makes_byte_for_byte(env_id):
    needs_env(env_id)
    shipped = (calibration.DIRECTORY / ladders.LADDER / calibration.file_name(env_id)).read_bytes()
    assert shipped == calibration.to_json(calibration.calibrate(env_id)).encode()


def test_the_version_ships_one_file_per_env_and_nothing_else():
    assert ladders.versions() == ["card-v1", "card-v2"]
    shipped = sorted(e for suite in ladders.SUITES for e in ladders.suite_envs(suite))  # every suite's envs
    assert ladders.ladders() == shipped and set(ENVS) <= set(shipped)
    files = sorted(p.name for p in (calibration.DIRECTORY / ladders.LADDER).glob("*") if p.is_file())
    assert files == sorted(calibration.file_name(e) for e in shipped)
    effects = sorted(p.name for p in (calibration.DIRECTORY / ladders.LADDER / "effects").glob("*"))
    assert set(effects) <= set(files) and "CartPole-v1.json" in effects  # the measured envs' effects
    for env_id in ENVS:
        ladder = ladders.ladder(env_id)
        assert (ladder.version, ladder.env_id) == ("card-v2", env_id)
        shown = definition.INTERVENTIONS.get(env_id, {})
        assert [(i.name, i.doc, i.arm) for i in ladder.interventions] == [
            (name, s.doc, f"intervention.{name}") for name, s in shown.items()
        ]
        assert [i.entries for i in ladder.interventions] == [
            [{"name": "intervene", "interventions": [s.assignments], "when": s.when}] for s in shown.values()
        ]
        assert ladder.calibration["policy"] == "uniform-random" and ladder.calibration["steps"] == 10_000
        assert ladder.env_kwargs == definition.ENV_KWARGS.get(env_id, {})
        assert ladder.preprocessing == definition.ENV_PREPROCESSING.get(env_id)
    breakout = ladders.ladder(BREAKOUT)
    assert (breakout.env_kwargs, breakout.preprocessing) == ({"max_episode_steps": 18_000}, "atari-games")
    assert all(ladders.ladder(e).env_kwargs == {} and ladders.ladder(e).preprocessing is None for e in ENVS[:4])
    assert breakout.calibration["random_episodes"] >= 5  # complete games within the 10,000 agent steps


def test_vector_and_image_ladders_hold_their_families_in_order():
    for env_id in VECTOR:
        ladder = ladders.ladder(env_id)
        assert ladder.kind == "vector" and len(ladder.calibration["obs_std"]) > 0
        assert list(ladder.families) == [f for f in ladders.FAMILIES if f != "corruptions"]
    for env_id in IMAGE:
        image = ladders.ladder(env_id)
        assert image.kind == "image" and image.calibration["obs_std"] is None
        assert image.calibration["state_std"] is None
        assert list(image.families) == [f for f in ladders.FAMILIES if f not in ("init_noise", "dynamics")]
        assert list(image.families["corruptions"]["sub_families"]) == list(ladders.CORRUPTIONS)


def test_arms_come_in_a_fixed_order_one_per_family_sub_family_and_level():
    catch = ladders.ladder("rlwrappers/Catch-v0")
    arms = catch.arms()
    assert len(arms) == 4 * 5 + 2 * 5 + 6 * 5  # four families, the attack's two sub-families, six corruptions
    assert [a.level for a in arms] == [1, 2, 3, 4, 5] * 12
    assert arms[0].name == "obs_noise@1" and arms[-1].name == "corruptions.jpeg@5"
    assert [a.name for a in catch.arms(["attack", "obs_noise"])] == [f"obs_noise@{n}" for n in range(1, 6)] + [
        f"attack.{sub}@{n}" for sub in ("share", "budget") for n in range(1, 6)
    ]
    assert catch.arms("dynamics") == []  # a family that image envs do not have
    assert {a.sub_family for a in catch.arms("corruptions")} == set(ladders.CORRUPTIONS)
    assert len(ladders.ladder("Hopper-v5").arms()) == 7 * 5
    arm = catch.arms("sticky_action")[0]
    first = arm.entries[0]["p"]
    arm.entries[0]["p"] = 0.9  # arms hold copies
    assert catch.arms("sticky_action")[0].entries[0]["p"] == first != 0.9


# -- every entry parses and wraps its env ------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENVS)
def test_every_entry_parses_back_to_itself(env_id):
    for entry in entries_of(ladders.ladder(env_id)):
        assert json_form(Entry.parse(entry).to_dict()) == entry


def needs_agent(entries: list[dict[str, Any]]) -> bool:
    return any(Entry.parse(e).perturbation.needs_agent for e in entries)


def run(ladder: ladders.Ladder, entries: list[dict[str, Any]], agent: rw.agents.Agent | None, steps: int = 3) -> None:
    """Plays a few steps of the ladder's env (preprocessed) under ``entries``: the agent's, or random actions."""
    env = rw.wrap(make(ladder), *entries)
    if agent is not None:
        assert rw.attach(env, agent) == int(needs_agent(entries))
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    for _ in range(steps):
        assert env.observation_space.contains(obs)
        action = env.action_space.sample() if agent is None else agent.act_one(obs)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    env.close()


def run_intervention(ladder: ladders.Ladder, entries: list[dict[str, Any]], steps: int = 3) -> None:
    """Plays a few random steps with an intervention on the bare env, under the preprocessing, as evaluations do."""
    wrappers = ladders.preprocessing_wrappers(ladder.preprocessing)
    env = rw.wrap(gym.make(ladder.env_id, **ladder.env_kwargs), *entries)  # checks its paths against the state
    for wrapper in wrappers:
        env = wrapper(env)
    env.action_space.seed(0)
    env.reset(seed=0)
    for _ in range(steps):
        env.step(env.action_space.sample())
    env.close()


@pytest.mark.parametrize("env_id", ENVS_SLOW_BREAKOUT)
def test_every_arm_wraps_the_preprocessed_env_with_the_agent_attached(env_id):
    needs_env(env_id)
    ladder = ladders.ladder(env_id)
    agent = breakout_agent() if env_id in ATARI else rw.load_agent(AGENTS[env_id], seed=0)
    if env_id in ATARI:
        assert make(ladder).observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    skipped = []
    for arm in ladder.arms():
        if agent is None and needs_agent(arm.entries):
            skipped.append(arm.name)  # without an agent, random actions play the arms that need none
            continue
        run(ladder, arm.entries, agent)
    run(ladder, ladder.recovery.entries, agent)
    for shown in ladder.interventions:
        run_intervention(ladder, shown.entries)
    if skipped:
        pytest.skip(missing_agent_message(f"the arms that need an agent were not run: {skipped}"))


@pytest.mark.slow
def test_breakouts_corruptions_act_on_each_stacked_frame_alone():
    """The corruptions infer the layout of (4, 84, 84) as four frames (chw), not one image with 4 channels."""
    pytest.importorskip("ale_py")
    ladder = ladders.ladder(BREAKOUT)
    per_frame = {
        "brightness_contrast": lambda f, e: corruptions.brightness_contrast(f, e["alpha"], e["beta"], layout="hw"),
        "median_blur": lambda f, e: corruptions.median_blur(f, e["k"], layout="hw"),
        "rotate": lambda f, e: corruptions.rotate(f, e["degrees"], layout="hw"),
        "translate": lambda f, e: corruptions.translate(f, e["ti"], e["tj"], layout="hw"),
        "jpeg": lambda f, e: corruptions.jpeg(f, e["quality"], layout="hw"),
    }
    acts = [1, 2, 2, 3, 0]

    def rollout(env: gym.Env[Any, Any]) -> list[np.ndarray]:
        return [env.reset(seed=1)[0]] + [env.step(a)[0] for a in acts]

    clean = rollout(make(ladder))
    assert all(x.any() for x in clean)
    for arm in ladder.arms("corruptions"):
        (entry,) = arm.entries
        assert entry["layout"] is None  # inferred
        corrupted = rw.wrap(make(ladder), entry)
        for x, y in zip(clean, rollout(corrupted), strict=True):
            assert y.shape == (4, 84, 84) and y.dtype == np.uint8 and corrupted.observation_space.contains(y)
            if arm.sub_family in per_frame:
                expected = np.stack([per_frame[arm.sub_family](frame, entry) for frame in x])
                np.testing.assert_array_equal(y, expected, err_msg=arm.name)
            else:
                assert not np.array_equal(x, y), arm.name


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
    ladder = ladders.ladder(env_id)
    for family, levels in ladders_of_levels(ladder):
        assert len(levels) == 5 and all(s.keys() == levels[0].keys() for s in levels), family
        varying = [k for k in levels[0] if len({s[k] for s in levels}) > 1]
        assert varying, f"{family}: nothing changes with the level"
        for key in varying:
            values = [s[key] for s in levels]
            repeats = family in definition.REPEATED_LEVELS or calibrated(ladder, family) is not None
            if repeats:  # whole pixels, or levels on a measured grid: a narrow range repeats a point
                assert values == sorted(values) and values[0] < values[-1], (family, key, values)
            else:
                assert all(a < b for a, b in itertools.pairwise(values)), (family, key, values)


def family_entry(ladder: ladders.Ladder, family: str) -> dict[str, Any]:
    """A family's (or a sub-family's, by its own name) entry in the ladder file; a sub-family without its own
    calibration record takes its family's (card-v1's corruptions)."""
    for name, entry in ladder.families.items():
        if name == family:
            return dict(entry)
        if family in entry.get("sub_families", {}):
            return {"calibration": entry.get("calibration"), **entry["sub_families"][family]}
    raise KeyError(family)


def calibrated(ladder: ladders.Ladder, family: str) -> list[float] | None:
    """The values a family's levels were chosen at from its measured effect, or None (card-v1's constants)."""
    calibration = family_entry(ladder, family)["calibration"]
    return list(calibration["values"]) if calibration["by"] == "effect" else None


def values_of(ladder: ladders.Ladder, family: str, constants: tuple[float, ...]) -> list[float]:
    """A family's severity per level: chosen by effect, or ``constants``."""
    return calibrated(ladder, family) or list(constants)


@pytest.mark.parametrize("env_id", VECTOR)
def test_vector_levels_are_the_constants_times_the_measured_scales(env_id):
    ladder = ladders.ladder(env_id)
    sigma, state_sigma = ladder.calibration["obs_std"], ladder.calibration["state_std"]

    def levels(family: str, key: str) -> list[Any]:
        return [arm.entries[0][key] for arm in ladder.arms(family)]

    def times(ks: tuple[float, ...], scales: list[float]) -> list[list[float]]:
        return [[pytest.approx(k * s, rel=1e-9) for s in scales] for k in ks]

    def values(family: str, constants: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(values_of(ladder, family, constants))

    assert levels("obs_noise", "std") == times(values("obs_noise", definition.OBS_NOISE_K), sigma)
    assert levels("init_noise", "std") == times(values("init_noise", definition.INIT_NOISE_K), state_sigma)
    assert levels("attack", "eps") == times(values("attack", definition.ATTACK_K), sigma)
    assert levels("sticky_action", "p") == list(values("sticky_action", definition.STICKY_P))
    assert levels("param_noise", "std") == list(values("param_noise", definition.PARAM_NOISE_STD))
    space = gym.make(env_id).action_space
    if isinstance(space, gym.spaces.Discrete):
        assert levels("action_noise", "p") == list(values("action_noise", definition.ACTION_NOISE_P))
        assert {arm.entries[0]["name"] for arm in ladder.arms("attack")} == {"fgsm"}
    else:
        ranges = (space.high - space.low).astype(float).tolist()
        assert levels("action_noise", "std") == times(values("action_noise", definition.ACTION_NOISE_RANGE_K), ranges)
        assert {(arm.entries[0]["name"], arm.entries[0]["steps"]) for arm in ladder.arms("attack")} == {("pgd", 10)}


@pytest.mark.parametrize("env_id", VECTOR)
def test_dynamics_grow_geometrically_from_nominal_to_the_hull_at_level_5(env_id):
    box = uncertainty_set(env_id)
    assert len(box.dims) == max(len(s.dims) for s in SETS.values() if s.env_id == env_id)
    nominal = box.nominal()
    ladder = ladders.ladder(env_id)
    arms = ladder.arms("dynamics")
    exponents = values_of(ladder, "dynamics", (0.2, 0.4, 0.6, 0.8, 1.0))
    assert exponents[-1] == 1.0  # the uncertainty set's hull is level 5, whatever the agents make of it
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
                f = exponents[arm.level - 1]
                assert drawn["low"] == pytest.approx(n * (low / n) ** f, rel=1e-12)
                assert drawn["high"] == pytest.approx(n * (high / n) ** f, rel=1e-12)
                assert drawn["low"] <= n <= drawn["high"]


@pytest.mark.parametrize("env_id", IMAGE)
def test_the_image_ladder_follows_its_chosen_values_or_its_constants(env_id):
    image = ladders.ladder(env_id)

    def levels(family: str, key: str) -> list[Any]:
        return [a.entries[0][key] for a in image.arms(family)]

    assert levels("obs_noise", "std") == values_of(image, "obs_noise", definition.IMAGE_OBS_NOISE_STD)
    assert levels("action_noise", "p") == values_of(image, "action_noise", definition.ACTION_NOISE_P)
    assert levels("sticky_action", "p") == values_of(image, "sticky_action", definition.STICKY_P)
    assert levels("param_noise", "std") == values_of(image, "param_noise", definition.PARAM_NOISE_STD)
    attacks = image.arms("attack")
    if "sub_families" in image.families["attack"]:  # measured: budgets graded beside the share of steps
        assert [a.sub_family for a in attacks] == ["share"] * 5 + ["budget"] * 5
        share, budget = (calibrated(image, sub) for sub in ("share", "budget"))
        assert [a.entries[0]["when"] for a in attacks[:5]] == [f"prob(p={p})" for p in share or ()]
        assert [a.entries[0]["eps"] for a in attacks[5:]] == [pytest.approx(b / 255, rel=1e-9) for b in budget or ()]
    else:
        entries = [a.entries[0] for a in attacks]
        assert {(e["name"], e["eps"]) for e in entries} == {("fgsm", 1 / 255)}
        assert [e["when"] for e in entries] == [f"prob(p={p})" for p in definition.IMAGE_ATTACK_P]
    rotations = [a.entries[0]["degrees"] for a in image.arms("corruptions") if a.sub_family == "rotate"]
    assert rotations == (calibrated(image, "rotate") or list(definition.ROTATE_DEGREES))
    assert image.arms("init_noise") == [] and image.arms("dynamics") == []


def test_breakouts_families_are_catchs():
    """Both image ladders hold the same families; their levels, random return and recovery window are their own."""
    breakout, catch = ladders.ladder(BREAKOUT), ladders.ladder("rlwrappers/Catch-v0")
    assert list(breakout.families) == list(catch.families)
    assert list(breakout.families["corruptions"]["sub_families"]) == list(catch.families["corruptions"]["sub_families"])
    assert (breakout.recovery.start, breakout.recovery.stop, breakout.recovery.window) == (200, 300, 100)
    assert breakout.recovery.horizon == 1000


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


@pytest.mark.parametrize("env_id", list(AGENTS))
def test_the_random_return_is_below_the_zoo_agents_clean_return(env_id):
    ladder = ladders.ladder(env_id)
    assert ladder.calibration["random_episodes"] > 0
    for seed in zoo.card(AGENTS[env_id])["seeds"].values():
        assert ladder.random_return < seed["returns"]["clean"]["mean"]


@pytest.mark.slow
def test_breakouts_random_return_is_below_the_ppo_agents_game_score():
    pytest.importorskip("ale_py")
    ladder = ladders.ladder(BREAKOUT)
    assert ladder.calibration["random_episodes"] >= 5
    agent = breakout_agent()
    if agent is None:
        pytest.skip(missing_agent_message("no agent to compare the random return with"))
    env = make(ladder)
    obs, _ = env.reset(seed=0)
    score, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(agent.act_one(obs))
        score += float(reward)
    assert info["lives"] == 0 or truncated  # one whole game
    assert ladder.random_return < score


# -- the env: how the ladder builds it ---------------------------------------------------------------------------
def test_every_preprocessing_name_has_its_picklable_wrappers():
    assert ladders.preprocessing_wrappers(None) == []
    for name in ladders.PREPROCESSING:
        if name == "atari-games":
            pytest.importorskip("ale_py")
        wrappers = ladders.preprocessing_wrappers(name)
        assert wrappers and all(map(callable, wrappers))
        assert pickle.loads(pickle.dumps(wrappers)) == wrappers  # workers started without fork receive them
    assert {ladders.ladder(e).preprocessing for e in ENVS} - {None} <= set(ladders.PREPROCESSING)


def test_breakouts_time_limit_counts_raw_frames():
    """gym.make's TimeLimit wraps the frame-skip-1 env: 18,000 of its steps are 18,000 frames, 4 per agent step."""
    pytest.importorskip("ale_py")
    ladder = ladders.ladder(BREAKOUT)
    ladders.preprocessing_wrappers(ladder.preprocessing)  # registers ALE's IDs
    raw = gym.make(BREAKOUT, **ladder.env_kwargs)
    assert isinstance(raw, gym.wrappers.TimeLimit) and raw.spec is not None
    assert raw.spec.max_episode_steps == 18_000 and raw.spec.kwargs["frameskip"] == 1
    env = make(ladder)
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    _, _, _, _, later = env.step(0)
    assert later["episode_frame_number"] - info["episode_frame_number"] == 4  # frame skip 4


def test_card_v1s_files_still_ship_unchanged_and_read_with_the_same_levels():
    assert ladders.ladders("card-v1") == sorted(CARD_V1_ENVS)
    for env_id in CARD_V1_ENVS:
        old, new = ladders.ladder(env_id, "card-v1"), ladders.ladder(env_id)
        assert old.version == "card-v1" and old.reference is None and old.reference_return is None
        for family in new.families:  # a family not measured by effect keeps card-v1's levels, exactly
            if new.families[family].get("calibration", {}).get("by") == "constants":
                assert [(a.name, a.entries) for a in old.arms(family)] == [
                    (a.name, a.entries) for a in new.arms(family)
                ]
        assert new.reference is not None and new.reference_return == definition.REFERENCES[env_id].value
        assert new.reference_return > new.random_return
        assert [a["name"] for a in new.reference_agents] == [a.name for a in definition.REFERENCE_AGENTS[env_id]]
    digest = hashlib.sha256()
    for path in sorted((calibration.DIRECTORY / "card-v1").glob("*.json")):
        digest.update(path.read_bytes())
    assert digest.hexdigest() == CARD_V1_DIGEST  # the files card-v1's cards were made with, byte for byte


def test_skill_runs_from_the_stated_random_return_to_the_reference():
    breakout = ladders.ladder(BREAKOUT)
    assert (breakout.random_return, breakout.reference_return) == (1.7, 30.5)  # the Atari-57 literature's
    assert breakout.calibration["random_return"] == pytest.approx(1.6, abs=0.05)  # measured, kept beside
    assert "Mnih et al. (2015)" in breakout.reference["source"] and "18,000 frames" in breakout.random["protocol"]
    cartpole = ladders.ladder("CartPole-v1")
    assert cartpole.reference_return == 500.0 and "475" in cartpole.reference["source"]
    assert cartpole.random_return == cartpole.calibration["random_return"] and "measured" in cartpole.random["source"]
    for agent in cartpole.reference_agents:  # the zoo's vanilla agents, their weights' hashes from its cards
        name, _, seed = agent["name"].partition("@")
        assert zoo.card(name)["trained_under"] is None and zoo.card(name)["seeds"][seed]["sha256"] == agent["sha256"]


# -- bad inputs --------------------------------------------------------------------------------------------------
def test_bad_inputs_raise_typed_errors_naming_the_argument():
    with pytest.raises(error.UnknownName, match=r"`env_id` 'CartPole-v0' has no card-v2 ladder.*`CartPole-v1`"):
        ladders.ladder("CartPole-v0")
    with pytest.raises(error.UnknownName, match=r"`version` 'card-v3' is not a ladder version.*`card-v2`"):
        ladders.ladder("CartPole-v1", version="card-v3")
    with pytest.raises(error.UnknownName, match="`version`"):
        ladders.ladders("card-v0")
    with pytest.raises(error.InvalidType, match="`env_id`"):
        ladders.ladder(None)  # type: ignore[arg-type]
    cartpole = ladders.ladder("CartPole-v1")
    with pytest.raises(error.UnknownName, match=r"`families` holds 'obs_nosie'.*Did you mean `obs_noise`"):
        cartpole.arms(["obs_nosie"])
    with pytest.raises(error.InvalidType, match="`families`"):
        cartpole.arms(3)  # type: ignore[arg-type]
    with pytest.raises(error.UnknownName, match=r"'Swimmer-v5' has no card-v2 reference agents.*suites.calibrate"):
        calibration.calibrate("Swimmer-v5")  # a suite's env without reference agents: a provisional recipe
    with pytest.raises(error.InvalidArgument, match=r"needs the keys \[.*'env_kwargs', 'preprocessing'"):
        ladders.Ladder.from_dict({"ladder": "card-v1"})
    v2 = json.loads((calibration.DIRECTORY / "card-v2" / "CartPole-v1.json").read_text(encoding="utf-8"))
    with pytest.raises(error.InvalidArgument, match=r"needs the keys \['reference'\]"):
        ladders.Ladder.from_dict({k: v for k, v in v2.items() if k != "reference"})
    data = json.loads((calibration.DIRECTORY / "card-v1" / "CartPole-v1.json").read_text(encoding="utf-8"))
    with pytest.raises(error.InvalidArgument, match=r"`env_kwargs` must be a dict, received \['x'\]"):
        ladders.Ladder.from_dict({**data, "env_kwargs": ["x"]})
    with pytest.raises(error.InvalidArgument, match="`preprocessing` must be a name or null, received 3"):
        ladders.Ladder.from_dict({**data, "preprocessing": 3})
    with pytest.raises(error.UnknownName, match=r"`name` 'atari-game' is not a preprocessing.*`atari-games`"):
        ladders.preprocessing_wrappers("atari-game")
    with pytest.raises(error.InvalidType, match="`name` must be a preprocessing name or None, received 3"):
        ladders.preprocessing_wrappers(3)  # type: ignore[arg-type]
