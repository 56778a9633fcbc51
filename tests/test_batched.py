"""Batched runs: many runs stepped together give the per-run runner's logs, bit for bit in exact mode.

In fast mode one network pass serves a batch, so actions may differ in the last float bits; every env-side draw
must still be the run's own, which replaying the recorded actions through the per-run runner proves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from helpers_logs import assert_same_run_logs
from numpy.typing import NDArray

import rlwrappers as rw
from rlwrappers.agents import Agent
from rlwrappers.error import InvalidArgument
from rlwrappers.studies import EnvSetup, Execution, arms, batched
from rlwrappers.studies.design import RunSpec, Settings, parse_shifts
from rlwrappers.studies.results import Evaluation

SHARED_AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents"
TIMES = ["start_time", "wall_time"]
SHIFTS = {
    "CartPole-v1": ["obs_noise(std=0.2)", "param_noise(std=0.05)", "fgsm(eps=0.05)", "action_noise(p=0.1)"],
    "Pendulum-v1": ["obs_noise(std=0.2)", "param_noise(std=0.02)", "pgd(eps=0.05, steps=3)", "action_noise(std=0.3)"],
}
AGENTS = {"CartPole-v1": "ppo-CartPole-v1", "Pendulum-v1": "td3-Pendulum-v1"}


def evaluate(env_id: str, out: Path, execution: Execution, **kwargs: Any) -> Evaluation:
    return rw.evaluate(
        kwargs.pop("agent", AGENTS.get(env_id)),
        env_id,
        kwargs.pop("shifts", SHIFTS.get(env_id, [])),
        episodes=kwargs.pop("episodes", 3),
        seeds=kwargs.pop("seeds", 3),
        out=out,
        execution=execution,
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_exact_batches_give_the_per_run_logs_bit_for_bit(env_id: str, tmp_path: Path) -> None:
    one_by_one = evaluate(env_id, tmp_path / "runs", Execution(workers=1, progress=False))
    together = evaluate(env_id, tmp_path / "batched", Execution(workers=1, progress=False, batch=8))
    assert_same_run_logs(one_by_one, together)
    split = evaluate(env_id, tmp_path / "workers", Execution(workers=2, progress=False, batch=3))
    assert_same_run_logs(one_by_one, split)
    if env_id == "CartPole-v1":
        pytest.importorskip("ray")
        on_ray = evaluate(env_id, tmp_path / "ray", Execution(backend="ray", workers=2, progress=False, batch=4))
        assert_same_run_logs(one_by_one, on_ray)


@pytest.mark.slow
def test_exact_batches_give_the_per_run_logs_on_breakout(tmp_path: Path) -> None:
    agent = SHARED_AGENTS / "ppo-BreakoutNoFrameskip-v4-seed0.zip"
    if not agent.exists():
        pytest.skip(f"{agent} is not here (the trained Atari agents live in shared/agents beside the repository)")
    ale_py = pytest.importorskip("ale_py")
    from rlwrappers.wrappers.atari import atari_wrapper

    gym.register_envs(ale_py)
    kwargs: dict[str, Any] = dict(
        agent={"ppo": str(agent)},
        shifts=["fgsm(eps=0.004, when=prob(p=0.1))", "param_noise(std=0.01)"],
        episodes=1,
        seeds=2,
        env=EnvSetup(wrappers=[atari_wrapper]),
    )
    one_by_one = evaluate("BreakoutNoFrameskip-v4", tmp_path / "runs", Execution(workers=1, progress=False), **kwargs)
    together = evaluate(
        "BreakoutNoFrameskip-v4", tmp_path / "batched", Execution(workers=1, progress=False, batch=6), **kwargs
    )
    assert_same_run_logs(one_by_one, together)


class Replay(Agent):
    """Acts out one run's recorded actions in order, whatever it sees."""

    def __init__(self, env: gym.Env[Any, Any], actions: NDArray[Any]):
        self.observation_space, self.action_space = env.observation_space, env.action_space
        self.deterministic = True
        self._actions = iter(actions)

    def _act(self, obs: NDArray[Any], rng: np.random.Generator | None) -> NDArray[Any]:
        return np.asarray([next(self._actions)], dtype=self.action_space.dtype)


@pytest.mark.slow
def test_fast_batches_keep_every_env_side_draw(tmp_path: Path) -> None:
    fast = evaluate("Pendulum-v1", tmp_path / "fast", Execution(workers=1, progress=False, batch=8, exact=False))
    settings = Settings(
        env_id="Pendulum-v1",
        env_kwargs={},
        shifts=parse_shifts(SHIFTS["Pendulum-v1"], None),
        episodes=3,
        deterministic=True,
        lives_as_episodes=False,
    )
    replayed = 0
    for row in fast.index.itertuples():
        if row.shift.startswith(("pgd", "param_noise")):
            continue  # their effect depends on the agent, which a replay does not have
        log = rw.read_log(fast.path / row.path)
        env = gym.make("Pendulum-v1")
        spec = RunSpec(row.agent, row.shift, row.seed, row.path)
        actions = np.stack(log.steps["action"].to_numpy())
        arms.run(spec, Replay(env, actions), settings, str(tmp_path / "replay"))
        again = rw.read_log(tmp_path / "replay" / row.path)
        pd.testing.assert_frame_equal(again.steps, log.steps, obj=row.path)
        replayed += 1
    assert replayed == 9  # the baseline, obs_noise and action_noise runs of 3 seeds


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_fast_batches_stay_within_each_arms_interval_of_exact(env_id: str, tmp_path: Path) -> None:
    kwargs: dict[str, Any] = dict(shifts=SHIFTS[env_id][:2], episodes=5, seeds=3)
    exact = evaluate(env_id, tmp_path / "exact", Execution(workers=1, progress=False, batch=8), **kwargs)
    fast = evaluate(env_id, tmp_path / "fast", Execution(workers=1, progress=False, batch=8, exact=False), **kwargs)
    table = batched.compare_modes(fast, exact)
    assert list(table["shift"]) == ["baseline", *SHIFTS[env_id][:2]]
    assert table["within"].all(), table
    assert ((0.0 <= table["differ_share"]) & (table["differ_share"] <= 1.0)).all()
    if env_id == "Pendulum-v1":  # TD3's batched passes differ from single ones in the last bits of a torque
        assert (table["differ_share"] > 0.0).any()
    assert batched.compare_modes(exact, exact)["differ_share"].eq(0.0).all()  # an evaluation against itself
    other = evaluate(env_id, tmp_path / "other", Execution(workers=1, progress=False), **{**kwargs, "seeds": 2})
    with pytest.raises(InvalidArgument, match="the same"):
        batched.compare_modes(other, exact)


def test_closing_a_batch_early_keeps_every_finished_episode(tmp_path: Path) -> None:
    settings = Settings(
        env_id="CartPole-v1",
        env_kwargs={},
        shifts=parse_shifts(["obs_noise(std=0.1)"], None),
        episodes=4,
        deterministic=True,
        lives_as_episodes=False,
    )
    specs = [RunSpec("ppo", "obs_noise(std=0.1)", seed, f"logs/seed{seed}") for seed in range(3)]
    agents = {"ppo": "ppo-CartPole-v1"}
    rows = batched.run_batched(specs, agents, settings, str(tmp_path / "cut"), arms.Stack(), slots=3)
    first = next(rows)  # one run finished; the other two are mid-episode
    rows.close()
    cut_short = 0
    for spec in specs:
        arms.run(spec, agents["ppo"], settings, str(tmp_path / "whole"))
        cut = rw.read_log(tmp_path / "cut" / spec.path)
        complete = cut.episodes[cut.episodes["complete"].astype(bool)]
        cut_short += len(cut.episodes) - len(complete)
        assert len(complete) == (4 if spec.path == first["path"] else len(cut.episodes) - 1)
        expected = rw.read_log(tmp_path / "whole" / spec.path).episodes.iloc[: len(complete)]
        pd.testing.assert_frame_equal(complete.drop(columns=TIMES), expected.drop(columns=TIMES))
    assert cut_short == 2


def test_bad_batch_settings_are_refused() -> None:
    with pytest.raises(InvalidArgument, match=r"`batch` must be an int >= 1, received 0"):
        Execution(batch=0)
    with pytest.raises(InvalidArgument, match=r"`exact=False` batches network passes, so it needs `batch` > 1"):
        Execution(exact=False)
    with pytest.raises(InvalidArgument, match="PettingZoo parallel env"):
        rw.evaluate(
            "powergrid-shared",
            "coordinated_buildings_v0",
            [],
            out="unused",
            execution=Execution(batch=4, progress=False),
        )


def fire(obs: NDArray[Any]) -> int:
    """Breakout's FIRE, whatever the frame."""
    return 1


@pytest.mark.slow
def test_spawned_workers_find_envs_that_an_import_registers(tmp_path: Path) -> None:
    """ALE registers its games when imported: a spawned worker, which has none of the parent's, imports it too."""
    ale_py = pytest.importorskip("ale_py")
    from rlwrappers.ladders import preprocessing_wrappers

    gym.register_envs(ale_py)
    result = rw.evaluate(
        fire,  # a plain callable, which the runner adapts; module-level, so a spawned worker can unpickle it
        "BreakoutNoFrameskip-v4",
        ["sticky_action(p=0.5)"],
        episodes=1,
        seeds=2,
        out=tmp_path / "run",
        env=EnvSetup(kwargs={"max_episode_steps": 2000}, wrappers=preprocessing_wrappers("atari-games")),
        execution=Execution(workers=2, start_method="spawn", progress=False, batch=2),
    )
    assert result.complete and len(result.index) == 4


def test_every_worker_gets_runs_to_batch() -> None:
    from rlwrappers.studies.run import _jobs

    todo = [RunSpec("a", "baseline", seed, f"logs/{seed}") for seed in range(16)]
    two = _jobs(todo, 2, Execution(batch=16, workers=2))
    assert [len(job.specs) for job in two] == [8, 8]  # not one job of 16 and an idle worker
    many = _jobs(todo * 20, 2, Execution(batch=16, workers=2))
    assert len(many) >= 8 and all(len(job.specs) >= 16 for job in many[:-1])
    assert [len(job.specs) for job in _jobs(todo, 1, Execution(batch=4, workers=1))] == [16]
