"""Offline robustness on real envs (seed 000): sampling states (Algorithm 3), restoring them, R per pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ctoybox")
pytest.importorskip("stable_baselines3")

import rlwrappers.envs  # noqa: F401  (registers the Toybox IDs)
from rlwrappers.envs.toybox import interventions as catalogues

from rlwrappers import cli, zoo
from rlwrappers.agents import CallableAgent
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile, StateNotSettable, UnknownName
from rlwrappers.report import robustness as robustness_report
from rlwrappers.report.robustness import write_robustness_report
from rlwrappers.state import interventions as iv
from rlwrappers.studies import offline, states
from rlwrappers.studies.offline import robustness_matrix
from rlwrappers.wrappers.atari import atari_wrapper

BREAKOUT = "rlwrappers/ToyboxBreakout-v0"
ROOT = Path(__file__).resolve().parent.parent


def random_player(env: gym.Env) -> CallableAgent:
    """A guide that presses random buttons from its generator (FIRE often enough to keep the ball in play)."""

    def act(obs: np.ndarray, rng: np.random.Generator) -> int:
        return int(rng.integers(env.action_space.n))

    return CallableAgent(act, env.observation_space, env.action_space)


def stacked_breakout() -> gym.Env:
    """Toybox Breakout as 84x84 grayscale frames, 4 stacked, with no frame skip: every frame is a decision's own."""
    from stable_baselines3.common.atari_wrappers import WarpFrame

    return gym.wrappers.FrameStackObservation(WarpFrame(gym.make(BREAKOUT)), 4)


def play(env: gym.Env, agent: CallableAgent, seed: int) -> list[np.ndarray]:
    """The observations at every decision of one game, as sample_states plays it."""
    act_rng = np.random.default_rng([seed, 0])
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    while len(seen) < states.MAX_STEPS:
        obs, _, terminated, truncated, _ = env.step(agent.act_one(obs, act_rng))
        if terminated or truncated:
            if truncated or env.unwrapped.ale.game_over():
                break
            obs, _ = env.reset()
        seen.append(obs)
    return seen


# -- Algorithm 3 -------------------------------------------------------------------------------------------
def test_states_are_drawn_uniformly_from_one_game_and_restore_to_what_was_seen() -> None:
    env = stacked_breakout()
    guide = random_player(env)
    sample = states.sample_states(env, guide, p=25, seed=3)
    seen = play(stacked_breakout(), guide, seed=3)
    assert sample.length == len(seen) and sample.frames == 4 and len(sample) == 25
    assert sample.indices == sorted(sample.indices) and 0 <= sample.indices[0] and sample.indices[-1] < len(seen)
    # Restored into a fresh env, each state (with its stacked history, padded at the reset) renders exactly
    # the observation the guide saw there.
    fresh = stacked_breakout()
    rendered = states.observations(fresh, sample)
    assert rendered.shape == (1, 25, *env.observation_space.shape)
    for k, index in enumerate(sample.indices):
        np.testing.assert_array_equal(rendered[0, k], seen[index])
    assert states.sample_states(env, guide, p=25, seed=3) == sample
    assert states.sample_states(env, guide, p=25, seed=4) != sample


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "InvertedPendulum-v5"])
def test_classic_control_and_mujoco_states_restore_exactly(env_id: str) -> None:
    if env_id.startswith("Inverted"):
        pytest.importorskip("mujoco")
    env = gym.make(env_id)

    def act(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray | int:
        return _random_action(env.action_space, rng)

    guide = CallableAgent(act, env.observation_space, env.action_space)
    sample = states.sample_states(env, guide, p=10, seed=2, max_steps=200)
    seen = play_plain(gym.make(env_id), guide, seed=2, steps=sample.length)
    rendered = states.observations(gym.make(env_id), sample)
    for k, index in enumerate(sample.indices):
        np.testing.assert_array_equal(rendered[0, k], seen[index])


def _random_action(space: gym.Space, rng: np.random.Generator) -> np.ndarray | int:
    if isinstance(space, gym.spaces.Discrete):
        return int(rng.integers(space.n))
    return rng.uniform(space.low, space.high).astype(space.dtype)


def play_plain(env: gym.Env, agent: CallableAgent, seed: int, steps: int) -> list[np.ndarray]:
    act_rng = np.random.default_rng([seed, 0])
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    while len(seen) < steps:
        obs, *_ = env.step(agent.act_one(obs, act_rng))
        seen.append(obs)
    return seen


def test_ale_states_are_sampled_from_ram() -> None:
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    env = atari_wrapper(gym.make("BreakoutNoFrameskip-v4"))
    sample = states.sample_states(env, random_player(env), p=3, seed=0, max_steps=300)
    assert set(sample.states[0].state) == {"ram"}
    seen = states.observations(atari_wrapper(gym.make("BreakoutNoFrameskip-v4")), sample, ["ram[57]=1"])
    assert seen.shape == (2, 3, 4, 84, 84)
    again = states.observations(atari_wrapper(gym.make("BreakoutNoFrameskip-v4")), sample, ["ram[57]=1"])
    np.testing.assert_array_equal(seen, again)


def test_the_guide_plays_through_every_life_under_the_atari_preprocessing() -> None:
    env = atari_wrapper(gym.make(BREAKOUT))
    guide = random_player(env)
    sample = states.sample_states(env, guide, p=30, seed=0)
    seen = play(atari_wrapper(gym.make(BREAKOUT)), guide, seed=0)
    assert sample.length == len(seen)
    first_life = next(i for i, obs in enumerate(seen) if i > 0 and np.array_equal(obs[0], obs[3]))
    assert sample.length > first_life  # more than one life was played
    assert states.sample_states(env, guide, p=5, seed=0, max_steps=40).length == 40


def test_a_sample_saves_and_loads_and_bad_files_fail(tmp_path: Path) -> None:
    env = gym.make("CartPole-v1")
    sample = states.sample_states(env, zoo.load_agent("ppo-CartPole-v1", seed=2), p=6, seed=1, guide="ppo@2")
    path = sample.save(tmp_path / "states" / "clean.json")
    assert states.StateSample.load(path) == sample
    assert sample.guide == "ppo@2" and sample.env_id == "CartPole-v1"
    with pytest.raises(MissingFile, match="no state sample"):
        states.StateSample.load(tmp_path / "nothing.json")
    (tmp_path / "bad.json").write_text('{"format": 99}')
    with pytest.raises(InvalidArgument, match="format 2"):
        states.StateSample.load(tmp_path / "bad.json")
    data = json.loads(path.read_text())
    data["frames"] = 2
    (tmp_path / "short.json").write_text(json.dumps(data))
    with pytest.raises(InvalidArgument, match="history of 2"):
        states.StateSample.load(tmp_path / "short.json")


# -- interventions on sampled states ---------------------------------------------------------------------
def test_each_intervention_is_made_on_every_frame_of_the_history() -> None:
    env = stacked_breakout()
    sample = states.sample_states(env, random_player(env), p=4, seed=0)
    names = ["drop_row_0", "paddle_width=48"]
    rendered = states.observations(stacked_breakout(), sample, names)
    assert rendered.shape == (3, 4, *env.observation_space.shape)
    assert not np.array_equal(rendered[1], rendered[0]) and not np.array_equal(rendered[2], rendered[0])
    by_hand = stacked_breakout()
    by_hand.reset(seed=0)
    drop = catalogues.get("breakout", "drop_row_0")
    for k, sampled in enumerate(sample.states):
        expected = states.render(
            by_hand,
            states.SampledState(sampled.index, tuple(iv.apply(state, drop) for state in sampled.history)),
        )
        np.testing.assert_array_equal(rendered[1, k], expected)
        np.testing.assert_array_equal(states.render(by_hand, sampled, drop), expected)


def test_bad_inputs_fail_before_any_state_is_written() -> None:
    env = stacked_breakout()
    sample = states.sample_states(env, random_player(env), p=3, seed=0)
    with pytest.raises(UnknownName, match=r"no intervention `drop_rows_0`.*Did you mean `drop_row_0`"):
        states.observations(env, sample, ["drop_rows_0"])
    with pytest.raises(InvalidArgument, match="paddle_wdth"):
        states.observations(env, sample, ["paddle_wdth=40"])
    with pytest.raises(InvalidType, match="list of interventions"):
        states.observations(env, sample, "drop_row_0")
    with pytest.raises(InvalidArgument, match="stacks 1"):
        states.observations(gym.make(BREAKOUT), sample)
    with pytest.raises(InvalidArgument, match="AtariPreprocessing"):
        states.sample_states(gym.wrappers.AtariPreprocessing(gym.make(BREAKOUT), frame_skip=4), random_player(env), p=3)
    with pytest.raises(StateNotSettable, match="state"):
        states.sample_states(gym.make("FrozenLake-v1"), random_player(gym.make("FrozenLake-v1")), p=3)
    with pytest.raises(InvalidArgument, match="`p` must be >= 1"):
        states.sample_states(env, random_player(env), p=0)
    with pytest.raises(InvalidType, match="Agent"):
        states.sample_states(env, "guide", p=3)  # type: ignore[arg-type]
    broken = states.SampledState(
        7, tuple({k: v for k, v in s.items() if k != "paddle"} for s in sample.states[0].history)
    )
    bad = states.StateSample((sample.states[0], broken), 4, sample.length, 0)
    with pytest.raises(
        InvalidArgument, match=r"sampled state 1 \(decision 7\) under no intervention cannot be restored"
    ):
        states.observations(env, bad)


# -- the whole measurement ---------------------------------------------------------------------------------
def cartpole_pipelines() -> list[offline.Pipeline]:
    return [offline.zoo_pipeline("ppo-CartPole-v1"), offline.zoo_pipeline("ppo-CartPole-v1-obs_noise")]


CARTPOLE_INTERVENTIONS = ["x+=1.0", "theta+=0.05", "theta-=0.05"]


def test_measure_matches_its_parts_and_is_deterministic(tmp_path: Path) -> None:
    def make() -> gym.Env:
        return gym.make("CartPole-v1")

    result = offline.measure(make, cartpole_pipelines(), CARTPOLE_INTERVENTIONS, p=8, seed=5)
    assert result.interventions == ("none", *CARTPOLE_INTERVENTIONS)
    sample = states.sample_states(make(), zoo.load_agent("ppo-CartPole-v1", seed=2), p=8, seed=5)
    assert result.samples["ppo-CartPole-v1"].states == sample.states
    agents = [zoo.load_agent("ppo-CartPole-v1", seed=s) for s in (0, 1)]
    expected = robustness_matrix(agents, states.observations(make(), sample, CARTPOLE_INTERVENTIONS))
    np.testing.assert_array_equal(result.matrices["ppo-CartPole-v1", "final"], expected)

    again = offline.measure(make, cartpole_pipelines(), CARTPOLE_INTERVENTIONS, p=8, seed=5)
    for key, matrix in result.matrices.items():
        np.testing.assert_array_equal(again.matrices[key], matrix)
    stochastic = offline.measure(make, cartpole_pipelines(), CARTPOLE_INTERVENTIONS, p=8, seed=5, stochastic=True, t=5)
    repeat = offline.measure(make, cartpole_pipelines(), CARTPOLE_INTERVENTIONS, p=8, seed=5, stochastic=True, t=5)
    for key, matrix in stochastic.matrices.items():
        np.testing.assert_array_equal(repeat.matrices[key], matrix)
    assert stochastic.request["t"] == 5 and result.request["t"] == 1

    table = result.table()
    assert len(table) == 2 * 8 * 4
    assert set(table.columns) == {"pipeline", "checkpoint", "state", "decision", "intervention", "R", "normalized"}
    loaded = offline.Measurement.load(result.save(tmp_path))
    assert loaded.interventions == result.interventions and loaded.request == result.request
    for key, matrix in result.matrices.items():
        np.testing.assert_array_equal(loaded.matrices[key], matrix)
    page = write_robustness_report(tmp_path)
    text = page.read_text()
    assert "ppo-CartPole-v1-obs_noise" in text and text.count("<img") == 6
    assert (tmp_path / "report" / "normalized-ppo-CartPole-v1-final.png").is_file()


def test_pipelines_are_checked() -> None:
    with pytest.raises(InvalidArgument, match="at least 2 measured agents"):
        offline.Pipeline("p", {"final": ["ppo-CartPole-v1@0"]}, "ppo-CartPole-v1@2")
    with pytest.raises(InvalidArgument, match="also measured"):
        offline.Pipeline("p", {"final": ["ppo-CartPole-v1@0", "ppo-CartPole-v1@2"]}, "ppo-CartPole-v1@2")
    with pytest.raises(InvalidArgument, match="unknown checkpoints"):
        offline.Pipeline("p", {"final": ["a@0", "a@1"]}, "a@2", returns={"10": 1.0})
    with pytest.raises(InvalidArgument, match="must differ"):
        offline.measure(lambda: gym.make("CartPole-v1"), cartpole_pipelines()[:1] * 2, ["x+=1.0"])
    with pytest.raises(MissingFile, match="train_toybox"):
        offline.read_runs("/nonexistent")


def test_the_plots_along_training() -> None:
    r = np.array([[1.0, 0.5], [0.5, 0.5]])
    assert robustness_report.robustness_training({("a", "final"): r}) is None
    fig = robustness_report.robustness_training(
        {("a", "10"): r, ("a", "20"): r * 0 + 1}, {("a", "10"): 1.0, ("a", "20"): 3.0}
    )
    assert fig is not None and len(fig.axes) == 3
    matrices = {("a", "10"): r, ("a", "20"): r, ("b", "10"): r}
    grid = robustness_report.robustness_grid(matrices, {("a", "10"): 1.0}, normalized=True, limit=0.25)
    assert len(grid.axes) == 2 * 3 + 1  # two pipelines x (two checkpoints + returns), and the colour bar
    assert "beyond ±0.25" in grid._suptitle.get_text()  # type: ignore[union-attr]
    with pytest.raises(InvalidArgument, match="`limit`"):
        robustness_report.robustness_grid(matrices, limit=2.0)


# -- the command line ------------------------------------------------------------------------------------------
def test_the_command_line_measures_zoo_pipelines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["robustness", "--env", "CartPole-v1", "--pipeline", "ppo-CartPole-v1", "--states", "5", "--quiet"]
    for intervention in CARTPOLE_INTERVENTIONS:
        args += ["--intervention", intervention]
    assert cli.main([*args, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ppo-CartPole-v1@final" in out and "Report:" in out
    assert (tmp_path / "report" / "report.html").is_file() and (tmp_path / "states" / "ppo-CartPole-v1.json").is_file()

    assert (
        cli.main(
            [
                "robustness",
                "--env",
                "CartPole-v1",
                "--pipeline",
                "p=ppo-CartPole-v1@0,ppo-CartPole-v1@1",
                "--intervention",
                "x+=1.0",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "needs a guide" in capsys.readouterr().err
    assert (
        cli.main(["robustness", "--env", "CartPole-v1", "--pipeline", "ppo-CartPole-v1", "--out", str(tmp_path / "y")])
        == 2
    )
    assert "no intervention catalogue" in capsys.readouterr().err


def train_toybox(out: Path) -> None:
    """Runs scripts/train_toybox.py on a tiny budget: A2C, three seeds, checkpoints at 128 and 256 steps."""
    script = str(ROOT / "scripts" / "train_toybox.py")
    budget = ["--seeds", "3", "--timesteps", "256", "--checkpoints", "128,256", "--algos", "a2c", "--workers", "1"]
    subprocess.run([sys.executable, script, *budget, "--out", str(out)], check=True, capture_output=True)


@pytest.mark.slow
def test_trained_toybox_pipelines_are_measured_at_every_checkpoint(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    train_toybox(runs)
    train_toybox(tmp_path / "again")  # the same seeds train the same weights
    import torch
    from stable_baselines3 import A2C

    for seed in range(3):
        first = A2C.load(runs / "a2c" / f"seed{seed}" / "step256.zip", device="cpu").policy.state_dict()
        second = A2C.load(tmp_path / "again" / "a2c" / f"seed{seed}" / "step256.zip", device="cpu").policy.state_dict()
        assert all(torch.equal(first[k], second[k]) for k in first)
    env_id, atari, pipelines = offline.read_runs(runs)
    assert env_id == BREAKOUT and atari and [p.name for p in pipelines] == ["a2c"]
    assert list(pipelines[0].checkpoints) == ["128", "256"] and pipelines[0].guide.endswith("seed2/step256.zip")
    out = tmp_path / "measured"
    assert (
        cli.main(
            [
                "robustness",
                "--runs",
                str(runs),
                "--states",
                "4",
                "--quiet",
                "--out",
                str(out),
                "--intervention",
                "drop_row_0",
                "--intervention",
                "paddle_width=48",
            ]
        )
        == 0
    )
    result = offline.Measurement.load(out)
    assert set(result.matrices) == {("a2c", "128"), ("a2c", "256")}
    assert result.matrices["a2c", "256"].shape == (4, 3)
    assert set(result.returns) == {("a2c", "128"), ("a2c", "256")}
    assert (out / "report" / "training.png").is_file()
