"""Observation perturbations on Dict and Tuple observations: which entries act, what is recorded, what is refused.

The envs are real: ``Reach-v0`` and ``TupleReach-v0`` (``tests/packages/reach.py``, a goal-conditioned reacher
with a camera), nested spaces through :class:`rlwrappers.testing.SpaceEnv`, and a symbolic grid like MiniGrid's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import reach
import torch

import rlwrappers as rw
from rlwrappers import structure
from rlwrappers.agents import TorchAgent
from rlwrappers.core import Perturbation
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, PerturbationError, UnknownName
from rlwrappers.testing import SpaceEnv, check_wrapper
from rlwrappers.wrappers.observation import ObservationNoisePerturbation, ObservationPerturbation

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CORRUPTIONS = [
    "brightness_contrast(alpha=1.7)",
    "median_blur(k=3)",
    "rotate(degrees=3)",
    "translate(ti=2, tj=1)",
    "perspective(norm=2)",
    "jpeg(quality=20)",
]
ATTACKS = ["fgsm(eps=0.05)", "pgd(eps=0.05, steps=3)", "cw(steps=5)"]


class ReachNet(torch.nn.Module):
    """A CleanRL-style network over the reacher's Dict or Tuple observation: sensors and camera."""

    def __init__(self, sensors: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.sensors = torch.nn.Linear(sensors, 4)
        self.camera = torch.nn.Linear(reach.SIDE * reach.SIDE * 3, 4)

    def forward(self, x: Any) -> torch.Tensor:
        if isinstance(x, dict):
            sensors = torch.cat([x["observation"], x["achieved_goal"], x["desired_goal"]], dim=1)
            camera = x["camera"]
        else:
            sensors, camera = x
        return self.sensors(sensors) + self.camera(camera.flatten(1) / 255.0)


def agent_for(env_id: str) -> TorchAgent:
    env = gym.make(env_id)
    net = ReachNet(8 if env_id == reach.DICT_ID else 6)
    return TorchAgent(net, env.observation_space, env.action_space, head="logits")


def played(env: gym.Env, seed: int = 0, steps: int = 12) -> tuple[list[Any], list[dict[str, Any]]]:
    """The observations and the rlwrappers records of a run of ``steps`` steps (action k % 4 at step k)."""
    obs, info = env.reset(seed=seed)
    observations, records = [obs], [info.get("rlwrappers", {})]
    for k in range(steps):
        obs, _, terminated, truncated, info = env.step(k % 4)
        observations.append(obs)
        records.append(info.get("rlwrappers", {}))
        if terminated or truncated:
            obs, info = env.reset()
    return observations, records


def same(a: list[Any], b: list[Any]) -> bool:
    """Whether two runs' observations are the same, bit for bit."""
    return len(a) == len(b) and all(structure.equal(x, y) for x, y in zip(a, b, strict=True))


# -- which entries act -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "acted"),
    [
        ("obs_noise(std=0.05)", ("achieved_goal", "observation")),  # sensors: not the goal, not the camera
        ("obs_noise(std=0.05, keys=['desired_goal'])", ("desired_goal",)),  # a goal acts when named
        ("obs_noise(std=4.0, keys=['camera'])", ("camera",)),  # an image takes noise when named
        *[(spec, ("camera",)) for spec in CORRUPTIONS],  # corruptions: pixel images only
    ],
)
def test_the_default_entries_are_those_of_the_kind_and_the_others_pass_untouched(spec, acted):
    clean = gym.make(reach.DICT_ID)
    env = rw.wrap(gym.make(reach.DICT_ID), spec)
    before, _ = clean.reset(seed=3)
    after, info = env.reset(seed=3)
    label = next(iter(info["rlwrappers"]))
    assert info["rlwrappers"][label]["keys"] == acted
    for key in before:
        changed = not np.array_equal(before[key], after[key])
        assert changed == (key in acted), key
        assert after[key].dtype == before[key].dtype and after[key].shape == before[key].shape
    assert env.observation_space.contains(after)


def test_nested_keys_and_tuple_indices_name_entries():
    space = gym.spaces.Dict(
        {
            "robot": gym.spaces.Dict({"arm": gym.spaces.Box(-1.0, 1.0, (3,)), "grip": gym.spaces.Box(0.0, 1.0, (1,))}),
            "views": gym.spaces.Tuple((gym.spaces.Box(0, 255, (32, 32, 3), np.uint8), gym.spaces.Discrete(3))),
        }
    )
    assert list(structure.entries(space)) == ["robot/arm", "robot/grip", "views/0", "views/1"]
    env = rw.wrap(SpaceEnv(space, gym.spaces.Discrete(2)), "obs_noise(std=0.5, keys=['robot/arm'])", "jpeg")
    obs, info = env.reset(seed=0)
    clean, _ = SpaceEnv(space, gym.spaces.Discrete(2)).reset(seed=0)
    assert info["rlwrappers"]["obs_noise"]["keys"] == ("robot/arm",)
    assert info["rlwrappers"]["jpeg"]["keys"] == ("views/0",)  # the default: the one pixel image
    assert not np.array_equal(obs["robot"]["arm"], clean["robot"]["arm"])
    assert np.array_equal(obs["robot"]["grip"], clean["robot"]["grip"])
    assert not np.array_equal(obs["views"][0], clean["views"][0])
    assert obs["views"][1] == clean["views"][1] and isinstance(obs["views"], tuple)
    tuple_env = rw.wrap(gym.make(reach.TUPLE_ID), "obs_noise(std=3.0, keys=[1])")  # a Tuple index as an int
    assert tuple_env.reset(seed=0)[1]["rlwrappers"]["obs_noise"]["keys"] == ("1",)


def test_a_symbolic_grid_is_never_taken_for_a_picture_unless_named():
    grid = gym.spaces.Dict(
        {
            "image": gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),  # MiniGrid: object, colour and state codes
            "direction": gym.spaces.Discrete(4),
        }
    )
    with pytest.raises(IncompatibleSpace, match=r"found no pixel image.*keys="):
        rw.wrap(SpaceEnv(grid, gym.spaces.Discrete(3)), "jpeg(quality=90)")
    with pytest.raises(IncompatibleSpace, match="found no sensor entry"):
        rw.wrap(SpaceEnv(grid, gym.spaces.Discrete(3)), "obs_noise(std=2)")
    named = rw.wrap(SpaceEnv(grid, gym.spaces.Discrete(3)), "jpeg(quality=90, keys=['image'])")  # declared
    assert named.reset(seed=0)[1]["rlwrappers"]["jpeg"]["keys"] == ("image",)


# -- typed errors at construction ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env_id", "spec", "error", "message"),
    [
        (reach.DICT_ID, "obs_noise(keys=['observaton'])", UnknownName, "'observaton'.*Did you mean `observation`"),
        (
            reach.DICT_ID,
            "rotate(keys=['observation'])",
            IncompatibleSpace,
            "rotate cannot act on the entry 'observation'",
        ),
        (reach.DICT_ID, "fgsm(keys=['camra'])", UnknownName, "not an entry"),
        (reach.TUPLE_ID, "obs_noise(keys=[2])", UnknownName, "entries: \\['0', '1'\\]"),
        ("CartPole-v1", "obs_noise(keys=['pole'])", IncompatibleSpace, "`keys` names entries of a Dict or Tuple"),
        (reach.DICT_ID, "obs_noise(keys=[])", InvalidType, "`keys` must be a key or a non-empty list"),
        (reach.DICT_ID, "obs_noise(keys=['camera', 'camera'])", InvalidArgument, "names \\['camera'\\] more than once"),
        (reach.DICT_ID, "obs_noise(keys=[1.5])", InvalidType, "each key must be a Dict key or a Tuple index"),
    ],
)
def test_bad_keys_raise_typed_errors_naming_them(env_id, spec, error, message):
    with pytest.raises(error, match=message):
        rw.wrap(gym.make(env_id), spec)


def test_noise_on_a_text_or_discrete_entry_is_refused():
    space = gym.spaces.Dict({"x": gym.spaces.Box(-1.0, 1.0, (2,)), "level": gym.spaces.Discrete(5)})
    with pytest.raises(IncompatibleSpace, match=r"obs_noise cannot act on the entry 'level'.*needs a Box"):
        rw.wrap(SpaceEnv(space, gym.spaces.Discrete(2)), "obs_noise(keys=['level'])")
    with pytest.raises(IncompatibleSpace, match=r"fgsm: the entry 'level'"):
        rw.wrap(SpaceEnv(space, gym.spaces.Discrete(2)), "fgsm(keys=['level'])")


# -- the values -----------------------------------------------------------------------------------------------
def test_noise_on_a_dict_of_floats_is_the_noise_on_their_concatenation():
    sizes = {"a": 5, "b": 1, "c": (2, 3)}
    entries = {k: gym.spaces.Box(-2.0, 2.0, n if isinstance(n, tuple) else (n,), np.float32) for k, n in sizes.items()}
    space = gym.spaces.Dict(entries)
    box = gym.spaces.Box(-2.0, 2.0, (12,), np.float32)
    obs = SpaceEnv(space, gym.spaces.Discrete(2)).reset(seed=1)[0]
    flat = np.concatenate([obs[k].ravel() for k in space])
    for dist in ("gaussian", "uniform"):
        on_dict, on_box, by_entry = (ObservationNoisePerturbation(std=0.7, dist=dist) for _ in range(3))
        on_dict.bind(None, space, gym.spaces.Discrete(2))
        on_box.bind(None, box, gym.spaces.Discrete(2))
        by_entry.bind(None, space, gym.spaces.Discrete(2))
        by_entry._fused = None  # the entry-by-entry path
        noisy, _ = on_dict.observation(obs, np.random.default_rng(5))
        expected, _ = on_box.observation(flat, np.random.default_rng(5))
        assert np.array_equal(np.concatenate([noisy[k].ravel() for k in space]), expected)
        assert structure.equal(noisy, by_entry.observation(obs, np.random.default_rng(5))[0])
        assert float(np.abs(expected).max()) == 2.0  # std 0.7 on [-2, 2]: some values were clipped


def test_the_input_is_never_edited_and_the_untouched_entries_are_passed_on():
    env = rw.wrap(gym.make(reach.DICT_ID), "obs_noise(std=0.1)", "jpeg(quality=20)")
    obs = env.unwrapped.reset(seed=0)[0]
    kept = {k: v.copy() for k, v in obs.items()}
    for p in next(rw.core.layers(env)).perturbations:
        out, _ = p.observation(obs, np.random.default_rng(0))
        assert structure.equal(obs, kept)
        assert out["desired_goal"] is obs["desired_goal"]
        changed = p.chosen
        assert changed and all(not np.shares_memory(out[k], obs[k]) for k in changed)


@pytest.mark.parametrize("env_id", [reach.DICT_ID, reach.TUPLE_ID])
def test_the_same_seed_gives_bit_identical_observations(env_id):
    specs = (
        "obs_noise(std=0.05)",
        "obs_noise(std=2.0, keys=[%s], label='grain')" % ("'camera'" if "Tuple" not in env_id else 1),
        "rotate(degrees=2)",
    )
    runs = [played(rw.wrap(gym.make(env_id), *specs), seed=4)[0] for _ in range(2)]
    other = played(rw.wrap(gym.make(env_id), *specs), seed=5)[0]
    assert same(*runs)
    assert not structure.equal(runs[0][0], other[0])


# -- attacks on structured observations ---------------------------------------------------------------------
@pytest.mark.parametrize("env_id", [reach.DICT_ID, reach.TUPLE_ID])
@pytest.mark.parametrize("spec", ATTACKS)
def test_attacks_differentiate_the_chosen_entries_and_record_each_ones_size(env_id, spec):
    agent = agent_for(env_id)
    keys = "['observation', 'camera']" if env_id == reach.DICT_ID else "[0, 1]"
    env = rw.wrap(gym.make(env_id), spec.replace(")", f", keys={keys})"))
    rw.attach(env, agent)
    clean = gym.make(env_id)
    obs, _ = env.reset(seed=2)
    before, _ = clean.reset(seed=2)
    _, _, _, _, info = env.step(agent.act_one(obs))
    record = next(iter(info["rlwrappers"].values()))
    names = ("observation", "camera") if env_id == reach.DICT_ID else ("0", "1")
    assert record["linf"] == pytest.approx(max(record[f"linf[{k}]"] for k in names))
    assert record["l2"] == pytest.approx(np.hypot(*[record[f"l2[{k}]"] for k in names]))
    for key, after in zip(structure.keys_of(obs), structure.leaves(obs), strict=True):
        untouched = np.array_equal(after, structure.get(before, structure.path(clean.observation_space, key)))
        if key in names and spec.startswith("fgsm"):
            assert not untouched, key  # FGSM moves every entry it attacks
        if key not in names:
            assert untouched, key
    assert env.observation_space.contains(obs)


def test_attaching_an_agent_leaves_the_envs_space_generator_alone():
    env = rw.wrap(gym.make(reach.DICT_ID), "fgsm")
    space = env.unwrapped.observation_space
    space.seed(3)
    state = space.np_random.bit_generator.state
    rw.attach(env, agent_for(reach.DICT_ID))  # the attack probes the agent's network with a sample of the space
    assert space.np_random.bit_generator.state == state


def test_an_attack_needs_an_agent_that_takes_the_structured_observation():
    env = rw.wrap(gym.make(reach.DICT_ID), "fgsm")
    flat = TorchAgent(torch.nn.Linear(4, 4), gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(4), head="logits")
    with pytest.raises(IncompatibleSpace, match="the agent takes observations of shape \\(4,\\)"):
        rw.attach(env, flat)


# -- non-finite values --------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class _NaNEntries(ObservationPerturbation):
    """Writes nan into every value of the entries it acts on (a broken perturbation, for the checks)."""

    def observe(self, obs: Any, rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
        return np.full_like(obs, np.nan), {}


_NaNEntries.name = "nan_entries"  # named after the class is made, so it stays out of the spec registry


def test_a_non_finite_entry_is_refused_and_named():
    env = rw.wrap(gym.make(reach.DICT_ID), _NaNEntries(keys=("observation",)))
    with pytest.raises(PerturbationError, match="in the entry 'observation', 4 of 4 values are nan"):
        env.reset(seed=0)
    allowed = rw.wrap(gym.make(reach.DICT_ID), _NaNEntries(), allow_nonfinite=True)
    assert np.isnan(allowed.reset(seed=0)[0]["achieved_goal"]).all()


# -- specs, registration and logs ---------------------------------------------------------------------------
def test_keys_survive_spec_strings_env_specs_and_registration():
    env = rw.ObservationNoise(gym.make(reach.DICT_ID), std=0.2, keys="observation")
    assert env.specs == ["obs_noise(keys=('observation',), std=0.2)"]
    rebuilt = gym.make(gym.envs.registration.EnvSpec.from_json(env.spec.to_json()))
    assert same(played(env)[0], played(rebuilt)[0])
    env_id = rw.register(reach.DICT_ID, "jpeg(quality=30, keys=['camera'])", name="ReachJPEG")
    made = gym.make(env_id)
    assert made.reset(seed=0)[1]["rlwrappers"]["jpeg"]["keys"] == ("camera",)
    again = rw.wrap(gym.make(reach.DICT_ID), str(next(rw.core.layers(made)).entries[0]))
    assert same(played(made)[0], played(again)[0])


def test_without_keys_specs_and_ids_are_what_they_were():
    entry = rw.core.Entry.parse("obs_noise(std=0.2)")
    assert "keys" not in entry.to_dict()  # stored specs, run folders and registered IDs stay the same
    assert rw.register("CartPole-v1", "obs_noise(std=0.2)") == "rlwrappers/CartPole-obs_noise_std_0.2-d1b5f43b-v1"


def test_the_log_holds_each_entrys_columns_and_reads_them_back_exactly(tmp_path):
    agent = agent_for(reach.DICT_ID)
    env = rw.wrap(gym.make(reach.DICT_ID), "obs_noise(std=0.02)", "fgsm(eps=0.03, keys=['observation', 'camera'])")
    rw.attach(env, agent)
    recorder = rw.Recorder(env, tmp_path / "log")
    obs, _ = recorder.reset(seed=0)
    records = []
    for _ in range(15):
        obs, _, terminated, truncated, info = recorder.step(agent.act_one(obs))
        records.append(info["rlwrappers"]["fgsm"])
        if terminated or truncated:
            break
    recorder.close()
    log = rw.read_log(tmp_path / "log")
    perturbations = {p["label"]: p for p in log.meta["perturbations"]}
    assert perturbations["obs_noise"]["keys"] == ["achieved_goal", "observation"]
    assert perturbations["fgsm"]["keys"] == ["camera", "observation"]  # in the space's order
    for key in ("observation", "camera"):
        for field in ("linf", "l2"):
            column = log.steps[f"fgsm.{field}[{key}]"].to_numpy()
            assert column.tolist() == [r[f"{field}[{key}]"] for r in records]  # bit for bit
    assert json.loads((tmp_path / "log" / "meta.json").read_text())["perturbations"][1]["keys"] == [
        "camera",
        "observation",
    ]


# -- the shared contract ------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", [reach.DICT_ID, reach.TUPLE_ID])
@pytest.mark.parametrize("spec", ["obs_noise(std=0.05)", "obs_noise(std=0.05, clip=False)", *CORRUPTIONS])
def test_every_observation_perturbation_keeps_the_contract(env_id, spec):
    ran = check_wrapper(lambda: gym.make(env_id), lambda env: rw.wrap(env, spec), steps=15, async_vector=False)
    assert "check_spec_roundtrip" in ran and "check_vector_equivalence" in ran


@pytest.mark.parametrize("env_id", [reach.DICT_ID, reach.TUPLE_ID])
@pytest.mark.parametrize("spec", ATTACKS)
def test_every_attack_keeps_the_contract(env_id, spec):
    agent = agent_for(env_id)

    def wrap(env: gym.Env) -> gym.Env:
        env = rw.wrap(env, spec)
        rw.attach(env, agent)
        return env

    ran = check_wrapper(lambda: gym.make(env_id), wrap, steps=8, async_vector=False, spec=False)
    assert "check_determinism" in ran and "check_no_mutation" in ran


def test_structure_helpers_batch_and_compare():
    obs = [{"a": np.array([i, i + 1.0]), "b": (np.array([i]), np.zeros((2, 2)))} for i in range(3)]
    batch = structure.stack(obs)
    assert batch["a"].shape == (3, 2) and batch["b"][1].shape == (3, 2, 2)
    assert structure.equal(structure.take(batch, 1), obs[1])
    assert not structure.equal(structure.take(batch, 1), obs[2])
    assert structure.keys_of(obs[0]) == ["a", "b/0", "b/1"]
    assert isinstance(Perturbation.chosen, type(None))


@pytest.mark.parametrize("when", ["always", "prob(p=0.5)"])
def test_a_vector_attack_on_a_dict_batch_gives_each_sub_env_what_the_single_env_attack_gives(when):
    from rlwrappers.wrappers.vector import Attack

    agent = agent_for(reach.DICT_ID)
    spec = f"fgsm(eps=0.05, keys=['observation', 'camera'], when={when})"
    envs = Attack(gym.make_vec(reach.DICT_ID, num_envs=3, vectorization_mode="sync"), spec, agent)
    singles = [rw.wrap(gym.make(reach.DICT_ID), spec) for _ in range(3)]
    for single in singles:
        rw.attach(single, agent)
    batch, _ = envs.reset(seed=7)
    firsts = [single.reset(seed=7 + i)[0] for i, single in enumerate(singles)]
    compared = 0
    for _ in range(6):  # while every sub-env is in its first episode
        for i, first in enumerate(firsts):
            assert structure.equal(structure.take(batch, i), first)
            compared += 1
        actions = agent.act(batch)
        batch, _, terminated, truncated, _ = envs.step(actions)
        firsts = [single.step(a)[0] for single, a in zip(singles, actions, strict=True)]
        if (terminated | truncated).any():
            break
    assert compared >= 6 and len(envs.log()) > 0


def test_an_sb3_vec_env_attack_takes_dict_batches():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from rlwrappers.wrappers.sb3 import AttackVecEnv

    agent = agent_for(reach.DICT_ID)
    venv = AttackVecEnv(DummyVecEnv([lambda: gym.make(reach.DICT_ID)] * 2), "fgsm(eps=0.05)", agent, seed=0)
    obs = venv.reset()
    for _ in range(3):
        obs, *_ = venv.step(agent.act(obs))
    log = venv.log()
    assert len(log) == 6 and venv.observation_space.contains(structure.take(obs, 0))
    assert (log["linf[observation]"] > 0).all() and (log["linf[achieved_goal]"] > 0).all()
    assert (log["linf"] == log[["linf[observation]", "linf[achieved_goal]"]].max(axis=1)).all()


def test_parameters_drawn_every_step_act_on_the_same_entries():
    env = rw.wrap(
        gym.make(reach.DICT_ID), "obs_noise(std=uniform(0, 0.2), resample='step')", "rotate(degrees=uniform(-5, 5))"
    )
    _, records = played(env, steps=4)
    stds = [r["obs_noise"]["std"] for r in records]
    assert len(set(stds)) == len(stds)  # a new draw each step
    assert all(r["obs_noise"]["keys"] == ("achieved_goal", "observation") for r in records)
    assert all(r["rotate"]["keys"] == ("camera",) for r in records)
    again = played(rw.wrap(gym.make(reach.DICT_ID), *next(rw.core.layers(env)).specs), steps=4)[1]
    assert [r["obs_noise"]["std"] for r in again] == stds


@pytest.mark.parametrize(
    ("entries", "shown"),
    [
        ({"arm/pos": gym.spaces.Box(-1.0, 1.0, (3,), np.float32)}, "'arm/pos'"),
        ({0: gym.spaces.Box(-1.0, 1.0, (3,), np.float32)}, "0"),
        ({"x": gym.spaces.Dict({"a/b": gym.spaces.Box(-1.0, 1.0, (3,), np.float32)})}, "'a/b' in 'x'"),
    ],
)
@pytest.mark.parametrize("spec", ["obs_noise(std=0.1)", "jpeg(quality=50)"])
def test_a_dict_key_that_cannot_be_named_is_refused_when_built(entries, shown, spec):
    class Keyed(gym.Env):
        observation_space, action_space = gym.spaces.Dict(entries), gym.spaces.Discrete(2)

    with pytest.raises(IncompatibleSpace, match=rf"the Dict key {shown} cannot be named"):
        rw.wrap(Keyed(), spec)
