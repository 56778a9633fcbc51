"""Parameters drawn from distributions: draws, resampling, records and logs, replay with constants, bad input."""

from __future__ import annotations

import math
import multiprocessing
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import rlwrappers as rw
from rlwrappers import distributions
from rlwrappers.core import Entry
from rlwrappers.error import InvalidArgument, InvalidType, UnknownName
from rlwrappers.spec import parse
from rlwrappers.studies import Execution

GRAVITY = "dynamics_shift(values={'gravity': uniform(8, 12)})"
VOLATILE = ["start_time", "wall_time"]  # when an episode ran, not what happened in it
STD = "obs_noise(std=uniform(0.0, 0.2))"


def drawn(info: dict[str, Any], label: str, column: str) -> Any:
    return info["rlwrappers"][label].get(column)


def test_each_distribution_draws_within_its_support_with_its_law() -> None:
    rng = np.random.default_rng(0)
    u = np.array([distributions.uniform(8, 12).draw(rng) for _ in range(4000)])
    assert u.min() >= 8 and u.max() <= 12 and abs(u.mean() - 10) < 0.1
    lu = np.log10([distributions.loguniform(0.01, 100).draw(rng) for _ in range(4000)])
    assert lu.min() >= -2 and lu.max() <= 2 and abs(lu.mean()) < 0.1  # uniform in log: mean of log10 is 0
    t = np.array([distributions.normal(1.0, 1.0, low=1.0).draw(rng) for _ in range(4000)])
    # A half-normal above the mean: its mean is mean + std * sqrt(2 / pi).
    assert t.min() >= 1.0 and abs(t.mean() - (1 + math.sqrt(2 / math.pi))) < 0.05
    c = [distributions.choice([1, 2, 3], p=[0.5, 0.25, 0.25]).draw(rng) for _ in range(4000)]
    assert set(c) == {1, 2, 3} and abs(c.count(1) / 4000 - 0.5) < 0.03


def test_distributions_read_and_write_as_spec_text_and_json() -> None:
    for text in (
        "uniform(8.0, 12.0)",
        "loguniform(0.01, 1.0)",
        "normal(1.0, 0.1, low=0.5)",
        "choice([1, 2], p=[0.5, 0.5])",
    ):
        made = distributions.from_value(parse(f"f(x={text})").kwargs["x"])
        assert str(made) == text
        assert distributions.from_value(made.to_dict()) == made  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("obs_noise(std=uniform(0.2, 0.1))", InvalidArgument, r"`uniform` needs low < high, received \[0.2, 0.1\]"),
        ("obs_noise(std=uniform(0.1, 0.1))", InvalidArgument, "for one value give the constant itself"),
        ("obs_noise(std=loguniform(0, 1))", InvalidArgument, "`loguniform` needs 0 < low, received low=0"),
        ("obs_noise(std=normal(0.1, -1))", InvalidArgument, "`normal` needs std > 0, received std=-1"),
        ("obs_noise(std=normal(0.1, 0.05))", InvalidArgument, r"`std` = normal\(0.1, 0.05\) can draw -0.2"),
        (
            "obs_noise(std=uniform(-1, 1))",
            InvalidArgument,
            "`std` = uniform.* can draw -1.0, which `obs_noise` refuses",
        ),
        ("obs_noise(dist=uniform(0, 1))", InvalidType, "`dist` = uniform.* which `obs_noise` refuses: `dist` must be"),
        ("sticky_action(p=0.5, duration=(uniform(1, 3), 4))", InvalidType, r"`duration\[0\]` .* must be an integer"),
        ("obs_noise(std=choice([0.1, 0.2], p=[0.5]))", InvalidArgument, "one probability per value"),
        ("obs_noise(std=choice([0.1, 0.2], p=[0.5, 0.6]))", InvalidArgument, "must sum to 1"),
        ("obs_noise(std=unifrm(0, 1))", UnknownName, "`unifrm` is not a distribution.*Did you mean `uniform`"),
        ("obs_noise(std=0.1, resample='episode')", InvalidArgument, "`resample` applies to parameters drawn"),
        ("obs_noise(std=uniform(0, 1), resample='often')", UnknownName, "`resample` must be one of"),
        ("init_noise(std=uniform(0, 0.1), resample='step')", InvalidArgument, "not to the state perturbation"),
    ],
)
def test_bad_distributions_are_typed_errors_naming_the_parameter(spec: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        Entry.parse(spec)


def test_the_env_refuses_a_draw_when_the_wrapper_is_built() -> None:
    with pytest.raises(InvalidArgument, match=r"`values.masspole` = uniform\(0.0, 1.0\) can draw 0.0"):
        rw.wrap(gym.make("CartPole-v1"), "dynamics_shift(values={'masspole': uniform(0, 1)})")


def test_same_seed_same_draws_and_each_episode_draws_anew() -> None:
    def draws(seed: int) -> list[float]:
        env = rw.wrap(gym.make("CartPole-v1"), GRAVITY)
        out = [drawn(env.reset(seed=seed)[1], "dynamics_shift", "values.gravity")]
        out += [drawn(env.reset()[1], "dynamics_shift", "values.gravity") for _ in range(4)]
        return out

    first = draws(7)
    assert first == draws(7) and first != draws(8)
    assert len(set(first)) == 5 and all(8 <= g <= 12 for g in first)
    env = rw.wrap(gym.make("CartPole-v1"), GRAVITY)
    env.reset(seed=7)
    assert env.unwrapped.gravity == first[0]  # type: ignore[attr-defined]
    env.close()
    assert env.unwrapped.gravity == 9.8  # type: ignore[attr-defined]


def test_draws_follow_activation_episode_or_step() -> None:
    when = "when=window(start=2, stop=4) | window(start=6, stop=8)"

    def values(resample: str) -> list[Any]:
        env = rw.wrap(gym.make("CartPole-v1"), f"obs_noise(std=uniform(0, 0.2), resample='{resample}', {when})")
        infos = [env.reset(seed=0)[1]] + [env.step(0)[4] for _ in range(8)]
        return [info.get("rlwrappers", {}).get("obs_noise", {}).get("std") for info in infos]

    activation, episode, step = values("activation"), values("episode"), values("step")
    assert [v is not None for v in activation] == [False, False, True, False, False, False, True, False, False]
    assert episode[0] is not None and episode[1:] == [None] * 8  # once, at reset, though inactive then
    assert [v is not None for v in step] == [False, False, True, True, False, False, True, True, False]


def test_a_stepwise_dynamics_draw_changes_the_env_every_step_and_is_undone() -> None:
    env = rw.wrap(gym.make("CartPole-v1"), "dynamics_shift(values={'gravity': uniform(8, 12)}, resample='step')")
    seen = [env.reset(seed=0)[1]["rlwrappers"]["dynamics_shift"]["values.gravity"]]
    for _ in range(3):
        seen.append(env.step(0)[4]["rlwrappers"]["dynamics_shift"]["values.gravity"])
        assert env.unwrapped.gravity == seen[-1]  # type: ignore[attr-defined]
    assert len(set(seen)) == 4
    env.close()
    assert env.unwrapped.gravity == 9.8  # type: ignore[attr-defined]


def test_array_parameters_draw_once_or_per_element() -> None:
    env = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=[uniform(0, 0.1), 0.0, uniform(0, 0.1), 0.0])")
    record = env.reset(seed=0)[1]["rlwrappers"]["obs_noise"]
    assert set(record) == {"active", "std[0]", "std[2]"} and record["std[0]"] != record["std[2]"]
    assert env.perturbations[0].std == (record["std[0]"], 0.0, record["std[2]"], 0.0)  # type: ignore[attr-defined]


def test_a_scalar_distribution_scales_a_whole_mujoco_array_and_a_list_scales_each_body() -> None:
    pytest.importorskip("mujoco")
    base = gym.make("InvertedPendulum-v5").unwrapped.model.body_mass.copy()  # type: ignore[attr-defined]
    whole = rw.wrap(gym.make("InvertedPendulum-v5"), "dynamics_shift(scales={'body_mass': uniform(0.5, 1.5)})")
    scale = whole.reset(seed=0)[1]["rlwrappers"]["dynamics_shift"]["scales.body_mass"]
    np.testing.assert_array_equal(whole.unwrapped.model.body_mass, base * scale)  # type: ignore[attr-defined]
    each = [f"uniform(0.5, {1.5 + n})" for n in range(len(base))]
    per_body = rw.wrap(gym.make("InvertedPendulum-v5"), f"dynamics_shift(scales={{'body_mass': [{', '.join(each)}]}})")
    record = per_body.reset(seed=0)[1]["rlwrappers"]["dynamics_shift"]
    scales = [record[f"scales.body_mass[{n}]"] for n in range(len(base))]
    np.testing.assert_array_equal(per_body.unwrapped.model.body_mass, base * scales)  # type: ignore[attr-defined]


def _play(env: gym.Env[Any, Any], seed: int) -> np.ndarray:
    """One episode with a policy that looks at the pole; returns every observation the agent saw."""
    observations = [env.reset(seed=seed)[0]]
    done = False
    while not done:
        obs, _, terminated, truncated, _ = env.step(int(observations[-1][2] > 0))
        observations.append(obs)
        done = terminated or truncated
    return np.stack(observations)


def test_a_log_holds_every_draw_and_replaying_them_as_constants_gives_the_same_episodes(tmp_path: Path) -> None:
    env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), GRAVITY, STD), tmp_path / "log")
    played = [_play(env, seed) for seed in range(4)]
    env.close()
    episodes = rw.read_log(tmp_path / "log").episodes
    assert episodes["dynamics_shift.values.gravity"].between(8, 12).all()
    assert episodes["obs_noise.std"].nunique() == 4
    for (_, row), observations in zip(episodes.iterrows(), played, strict=True):
        gravity, std = row["dynamics_shift.values.gravity"], row["obs_noise.std"]
        replay = rw.wrap(
            gym.make("CartPole-v1"), f"dynamics_shift(values={{'gravity': {gravity!r}}})", f"obs_noise(std={std!r})"
        )
        np.testing.assert_array_equal(_play(replay, int(row["seed"])), observations)


DRAWN = "std=uniform(0.05, 0.3)"


@pytest.mark.parametrize(
    ("spec", "tables"),
    [
        (f"obs_noise({DRAWN})", {"episodes"}),  # drawn once per episode, as it acts from reset
        (f"obs_noise({DRAWN}, resample='step')", {"episodes", "steps"}),  # at reset, then at every step
        (f"obs_noise({DRAWN}, when=starting(step=5))", {"steps"}),
        (f"obs_noise({DRAWN}, when=bursts(p=0.3, duration=(2, 4)))", {"episodes", "steps"}),  # on at reset or later
        (f"obs_noise({DRAWN}, resample='episode', when=starting(step=5))", {"episodes"}),  # drawn at each reset
        (f"obs_noise({DRAWN}, when=never)", set()),
        ("param_noise(std=0.1)", {"episodes"}),  # what parameter noise records, its norm, follows the same rule
        ("param_noise(std=0.1, when=starting(step=5))", {"steps"}),
    ],
)
def test_each_drawn_value_has_one_table_and_no_column_stays_empty(spec: str, tables: set[str], tmp_path: Path) -> None:
    env = rw.wrap(gym.make("CartPole-v1"), spec)
    agent = rw.agents.TorchAgent(torch_linear(), env.observation_space, env.action_space, head="logits")
    rw.attach(env, agent)
    env = rw.Recorder(env, tmp_path / "log")
    for seed in range(8):
        env.reset(seed=seed)
        for t in range(12):
            if env.step(t % 2)[2]:
                break
    env.close()
    log = rw.read_log(tmp_path / "log")
    label, field = spec.split("(")[0], "norm" if spec.startswith("param_noise") else "std"
    column = f"{label}.{field}"
    holding = {name for name in ("episodes", "steps") if column in getattr(log, name)}
    assert holding == tables
    for name in holding:
        assert getattr(log, name)[column].notna().any()
    if tables == {"steps"}:  # drawn as it switches on: at the first active step of each episode
        steps = log.steps
        active = steps[f"{label}.active"].astype(bool)
        switched = active & ~active.groupby(steps["episode"]).shift(fill_value=False).astype(bool)
        assert steps[column].notna().tolist() == switched.tolist()
    assert [p["step_fields"] for p in log.meta["perturbations"]] == [{field: "float64"} if "steps" in tables else {}]


def test_a_value_drawn_at_each_reset_is_logged_while_inactive(tmp_path: Path) -> None:
    env = rw.Recorder(
        rw.wrap(gym.make("CartPole-v1"), f"obs_noise({DRAWN}, resample='episode', when=starting(episode=2))"),
        tmp_path / "log",
    )
    for seed in range(4):
        env.reset(seed=seed)
        env.step(0)
    env.close()
    episodes = rw.read_log(tmp_path / "log").episodes
    assert episodes["obs_noise.active"].tolist() == [False, False, True, True]
    assert episodes["obs_noise.std"].between(0.05, 0.3).all() and episodes["obs_noise.std"].nunique() == 4


def torch_linear() -> Any:
    import torch

    return torch.nn.Linear(4, 2)


def test_registered_ids_take_distribution_specs_unchanged() -> None:
    env_id = rw.register("CartPole-v1", GRAVITY, name="RandomGravity")
    env = gym.make(env_id)
    first = env.reset(seed=3)[1]["rlwrappers"]["dynamics_shift"]["values.gravity"]
    again = gym.make(env_id).reset(seed=3)[1]["rlwrappers"]["dynamics_shift"]["values.gravity"]
    assert first == again and 8 <= first <= 12
    assert "uniform(8.0, 12.0)" in str(env)


def _gravities(seed: int) -> list[float]:
    env = rw.wrap(gym.make("CartPole-v1"), GRAVITY, "action_noise(p=uniform(0, 0.5), resample='step')")
    out = [env.reset(seed=seed)[1]["rlwrappers"]["dynamics_shift"]["values.gravity"]]
    out += [env.step(0)[4]["rlwrappers"]["action_noise"]["p"] for _ in range(5)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_the_same_seed_draws_the_same_in_other_processes(method: str) -> None:
    with multiprocessing.get_context(method).Pool(1) as pool:
        assert pool.map(_gravities, [11])[0] == _gravities(11)


@pytest.mark.slow
def test_an_evaluation_draws_the_same_on_local_workers_spawned_workers_and_ray(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    shifts = ["dynamics_shift(values={'length': uniform(0.5, 1.5)})", "obs_noise(std=uniform(0, 0.3), resample='step')"]

    def logged(name: str, execution: Execution) -> pd.DataFrame:
        """Every episode of every run's log, the drawn values among its columns."""
        out = tmp_path / name
        result = rw.evaluate(
            "ppo-CartPole-v1", "CartPole-v1", shifts, episodes=3, seeds=2, out=out, execution=execution
        )
        runs = [rw.read_log(out / path).episodes.assign(run=path) for path in sorted(result.index["path"])]
        return pd.concat(runs, ignore_index=True).drop(columns=VOLATILE)

    local = logged("local", Execution(workers=1, progress=False))
    assert local["return"].nunique() > 3 and local["dynamics_shift.values.length"].nunique() == 6
    for name, execution in [
        ("spawn", Execution(workers=2, start_method="spawn", progress=False)),
        ("ray", Execution(backend="ray", workers=2, progress=False)),
    ]:
        pd.testing.assert_frame_equal(logged(name, execution), local)


def test_named_wrappers_take_distributions_and_their_spec_rebuilds_them() -> None:
    env = rw.DynamicsShift(gym.make("CartPole-v1"), values={"gravity": distributions.uniform(8, 12)})
    first = env.reset(seed=5)[1]["rlwrappers"]["dynamics_shift"]["values.gravity"]
    assert env.spec is not None
    rebuilt = gym.make(env.spec)
    assert rebuilt.reset(seed=5)[1]["rlwrappers"]["dynamics_shift"]["values.gravity"] == first
    with pytest.raises(InvalidArgument, match=r"`std` = uniform\(-1.0, 1.0\) can draw -1.0"):
        rw.ObservationNoise(gym.make("CartPole-v1"), std=distributions.uniform(-1, 1))


def test_widen_draws_from_a_range_that_grows_with_the_wrappers_steps() -> None:
    curriculum = distributions.widen((9.8, 9.8), (8.0, 12.0), over=1000)
    assert curriculum.bounds(0) == (9.8, 9.8) and curriculum.bounds(5000) == (8.0, 12.0)
    assert curriculum.bounds(250) == pytest.approx((9.8 - 0.25 * 1.8, 9.8 + 0.25 * 2.2))
    env = rw.wrap(gym.make("CartPole-v1"), "dynamics_shift(values={'gravity': widen((9.8, 9.8), (8, 12), over=1000)})")
    steps, late = 0, []
    for episode in range(80):
        gravity = env.reset(seed=episode)[1]["rlwrappers"]["dynamics_shift"]["values.gravity"]
        low, high = curriculum.bounds(steps)
        assert low <= gravity <= high
        if steps >= 1000:
            late.append(gravity)
        done = False
        while not done:
            done = any(env.step(steps % 2)[2:4])
            steps += 1
    assert len(late) > 10 and min(late) < 9.3 and max(late) > 10.5  # the whole range, once 1,000 steps passed
    with pytest.raises(InvalidArgument, match="`widen` needs `start` inside a wider `stop`"):
        Entry.parse("dynamics_shift(values={'gravity': widen((7, 9.8), (8, 12), over=100)})")
