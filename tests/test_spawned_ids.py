"""IDs registered by a main script reach child processes through RLWRAPPERS_REGISTERED, or through make_fn."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec

import rlwrappers as rw
from rlwrappers import registration
from rlwrappers.core import layers
from rlwrappers.error import InvalidArgument, UnknownName
from rlwrappers.registration import REGISTERED_VAR, EnvFactory, make_fn

HELPER = Path(__file__).with_name("helpers_spawned_ids.py")
STEP = """
import sys, gymnasium as gym, rlwrappers
env = gym.make(sys.argv[1])
env.reset(seed=0)
print(sorted(env.step(env.action_space.sample())[4]["rlwrappers"]))
"""


def run_helper(method: str, case: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, str(HELPER), method, case], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Registrations made here are undone afterwards (conftest.py restores the variable they write)."""
    monkeypatch.setattr(registration, "_WARNED", False)
    env_ids, bases, inherited = set(gym.registry), dict(registration._BASES), set(registration._INHERITED)
    yield
    for env_id in set(gym.registry) - env_ids:
        del gym.registry[env_id]
    registration._BASES.clear()
    registration._BASES.update(bases)
    registration._INHERITED.clear()
    registration._INHERITED.update(inherited)


def recorded() -> dict[str, dict[str, object]]:
    return json.loads(os.environ[REGISTERED_VAR])


def register_as_main(code: str) -> list[str]:
    """Runs ``code`` as a fresh main script (``rw`` and ``np`` in scope) and returns the warnings it raised."""
    script = (
        "import json, warnings\nimport numpy as np\nimport rlwrappers as rw\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "print(json.dumps([str(w.message) for w in caught]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_main_script_id_steps_in_subproc_workers_by_id_and_through_make_fn(method: str) -> None:
    done = run_helper(method, "id")
    assert done.stdout.splitlines() == ["id stepped (2, 4)", "make_fn stepped (2, 4)"]  # and no warning


@pytest.mark.slow
def test_an_id_json_cannot_carry_fails_in_workers_with_an_error_naming_make_fn() -> None:
    done = run_helper("spawn", "not-json")
    warning, *rest = done.stdout.splitlines()
    assert "JSON cannot carry" in warning and "make_fn('rlwrappers/SpawnedWorkers-G9-v1')" in warning
    assert rest == ["id failed", "make_fn stepped (2, 3)"]  # one warning for the two IDs
    assert "UnknownName: `rlwrappers/SpawnedWorkers-G9-v1` was registered in a parent process" in done.stderr
    assert "give it rlwrappers.registration.make_fn('rlwrappers/SpawnedWorkers-G9-v1')" in done.stderr


@pytest.mark.slow
def test_an_id_registered_after_the_forkserver_started_warns_and_make_fn_still_works() -> None:
    done = run_helper("forkserver", "late")
    first, warning, *rest = done.stdout.splitlines()
    assert first == "first stepped (2, 4)"
    assert "forkserver process" in warning and "make_fn('rlwrappers/SpawnedWorkers-Late-v1')" in warning
    assert rest == ["id failed", "make_fn stepped (2, 4)"]
    assert "NameNotFound" in done.stderr  # the forkserver's children never heard of the ID


@pytest.mark.usefixtures("isolated")
def test_register_writes_the_spec_that_child_processes_register() -> None:
    env_id = rw.register("CartPole-v1", "reward_noise(std=0.5)", "sticky_action(duration=(2, 3))", name="Inherited")
    entry = recorded()[env_id]
    assert entry["base"] == "CartPole-v1"
    assert str(gym.make(EnvSpec.from_json(json.dumps(entry["spec"])))) == str(gym.make(env_id))
    assert not any(e.id in recorded() for e in rw.catalogue())  # every process registers those itself

    child = subprocess.run([sys.executable, "-c", STEP, env_id], capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "['reward_noise', 'sticky_action']"
    bare = {k: v for k, v in os.environ.items() if k != REGISTERED_VAR}
    child = subprocess.run([sys.executable, "-c", STEP, env_id], capture_output=True, text=True, timeout=60, env=bare)
    assert "NameNotFound" in child.stderr  # a process that does not inherit the variable does not know the ID


@pytest.mark.usefixtures("isolated")
def test_a_registration_inherited_from_a_parent_gives_way_to_the_processs_own() -> None:
    env_id = "rlwrappers/GiveWay-v1"
    spec = json.loads(gym.spec("rlwrappers/CartPole-ObsNoise-v1").to_json()) | {"id": env_id}
    os.environ[REGISTERED_VAR] = json.dumps({env_id: {"base": "CartPole-v1", "spec": spec}})
    registration._inherit()
    assert registration.base_ids()[env_id] == "CartPole-v1"
    assert next(layers(gym.make(env_id))).perturbations[0].params()["std"] == 0.05
    assert rw.register("CartPole-v1", "obs_noise(std=0.2)", name="GiveWay") == env_id  # no conflict
    assert next(layers(gym.make(env_id))).perturbations[0].params()["std"] == 0.2
    with pytest.raises(InvalidArgument, match="already registered with a different spec"):
        rw.register("CartPole-v1", "obs_noise(std=0.3)", name="GiveWay")  # the process's own: kept


@pytest.mark.usefixtures("isolated")
def test_entries_that_are_not_specs_of_the_namespace_are_left_out() -> None:
    for text in ["not json", "[1, 2]", json.dumps({"rlwrappers/Odd-v1": {"spec": [1]}, "rlwrappers/Odd-v2": 3})]:
        os.environ[REGISTERED_VAR] = text
        registration._inherit()
    spec = json.loads(gym.spec("CartPole-v1").to_json()) | {"id": "Pong-v9"}
    os.environ[REGISTERED_VAR] = json.dumps({"Pong-v9": {"base": "CartPole-v1", "spec": spec}})
    registration._inherit()
    assert not {"rlwrappers/Odd-v1", "rlwrappers/Odd-v2", "Pong-v9"} & set(gym.registry)


@pytest.mark.usefixtures("isolated")
def test_an_id_that_cannot_go_is_listed_with_the_reason_and_fails_clearly_where_inherited() -> None:
    env_id = rw.register("Pendulum-v1", "obs_noise(std=0.1)", name="NotJson", g=np.float32(9.0))
    tupled = rw.register("Hopper-v5", "obs_noise(std=0.1)", name="Tupled", healthy_angle_range=(-0.2, 0.2))
    assert "JSON cannot carry" in str(recorded()[env_id]["unavailable"])
    assert "come back equal" in str(recorded()[tupled]["unavailable"])
    del gym.registry[env_id]  # as in a child process
    registration._inherit()
    message = f"`{env_id}` was registered in a parent process, but its spec holds"
    with pytest.raises(UnknownName, match=message) as error:
        gym.make(env_id, render_mode="rgb_array")
    assert f"make_fn({env_id!r})" in str(error.value)
    with pytest.raises(UnknownName, match=message):
        make_fn(env_id)
    rw.register("Pendulum-v1", "obs_noise(std=0.1)", name="NotJson", g=np.float32(9.0))  # its own again
    make_fn(env_id)()


@pytest.mark.usefixtures("isolated")
def test_the_variable_stays_bounded_and_valid_json(monkeypatch: pytest.MonkeyPatch) -> None:
    os.environ[REGISTERED_VAR] = "{}"
    monkeypatch.setattr(registration, "_VAR_LIMIT", 700)
    ids = [rw.register("CartPole-v1", f"obs_noise(std=0.{i + 1})", name=f"Bounded{i}") for i in range(3)]
    assert len(os.environ[REGISTERED_VAR]) <= 700
    entries = recorded()
    assert "spec" in entries[ids[0]]
    assert "is full" in str(entries[ids[1]]["unavailable"])
    assert ids[-1] not in entries  # not even the reason fits


@pytest.mark.usefixtures("isolated")
def test_register_from_a_main_script_warns_once_and_only_where_workers_cannot_know_the_id() -> None:
    assert register_as_main("rw.register('CartPole-v1', 'obs_noise(std=0.3)', name='MainJson')") == []
    caught = register_as_main(
        "rw.register('Pendulum-v1', 'obs_noise(std=0.1)', name='MainA', g=np.float32(9.0))\n"
        "rw.register('Pendulum-v1', 'obs_noise(std=0.1)', name='MainB', g=np.float32(8.0))\n"
    )
    assert len(caught) == 1
    assert "registered by the main script" in caught[0]
    assert "rlwrappers.registration.make_fn('rlwrappers/MainA-v1')" in caught[0]


def test_make_fn_is_a_picklable_factory_of_the_registered_env() -> None:
    env_id = rw.register("CartPole-v1", "reward_noise(std=0.5)", name="FactoryTest")
    factory = pickle.loads(pickle.dumps(make_fn(env_id, max_episode_steps=7)))
    assert isinstance(factory, EnvFactory)
    env = factory()
    assert env.spec is not None and env.spec.max_episode_steps == 7
    env.reset(seed=0)
    assert "reward_noise" in env.step(0)[4]["rlwrappers"]
    assert str(env) == str(gym.make(env_id, max_episode_steps=7))
    with pytest.raises(UnknownName, match="is not registered"):
        make_fn("rlwrappers/NoSuchEnv-v0")
