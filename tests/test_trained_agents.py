"""Agents as their owners trained them: RL Zoo runs trained here by RL Zoo itself, played by rlwrappers and by RL Zoo.

Each run is trained by ``python -m rl_zoo3.train`` at a small budget: normalized observations, a frame stack,
env wrappers with keyword arguments, a Dict-observation env from a gym package (normalized per key). rlwrappers
plays each from its folder, and RL Zoo plays it its own way (``create_test_env`` and ``predict``), each episode
reset with the seed rlwrappers gives it: the returns must be the same, episode by episode.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers import zoo
from rlwrappers.agents.rl_zoo import AgentFiles, read_training
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, MissingFile, UntrustedFileWarning
from rlwrappers.studies import EnvSetup, Execution
from rlwrappers.studies.design import episode_seed

pytest.importorskip("rl_zoo3")

PACKAGES = Path(__file__).parent / "packages"
EPISODES = 4
STEPS = "5000"


def _train(root: Path, name: str, env: str, *args: str, algo: str = "ppo") -> Path:
    """Trains one RL Zoo run under ``root / name`` and returns its run folder."""
    folder = root / name
    command = [sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env, "-n", STEPS, "--seed", "0"]
    command += ["--log-folder", str(folder), "--verbose", "0", *args]
    path = os.pathsep.join([str(PACKAGES), os.environ.get("PYTHONPATH", "")])
    subprocess.run(command, check=True, capture_output=True, cwd=root, env={**os.environ, "PYTHONPATH": path})
    return folder / algo / f"{env.replace('/', '-')}_1"


def _conf(root: Path, name: str, env: str, hyperparams: dict[str, Any]) -> str:
    path = root / f"{name}.yml"
    import yaml

    path.write_text(yaml.safe_dump({env: {"n_timesteps": int(STEPS), "policy": "MlpPolicy", **hyperparams}}))
    return str(path)


#: Small PPO settings for the runs trained from a config file (RL Zoo's own hyperparameters file the others).
SMALL = {"n_steps": 256, "batch_size": 64, "n_epochs": 2}


def _train_all(root: Path) -> dict[str, Path]:
    wrappers = [{"rl_zoo3.wrappers.FrameSkip": {"skip": 2}}, "rl_zoo3.wrappers.MaskVelocityWrapper"]
    vec_stack = [{"stable_baselines3.common.vec_env.VecFrameStack": {"n_stack": 2}}]
    return {
        "normalize": _train(
            root,
            "normalize",
            "CartPole-v1",
            "--hyperparams",
            "normalize:True",
            "--eval-freq",
            "2000",
            "--eval-episodes",
            "2",
            "--n-eval-envs",
            "1",
        ),
        "frame_stack": _train(root, "frame_stack", "CartPole-v1", "--hyperparams", "frame_stack:4"),
        "stack_normalize": _train(
            root,
            "stack_normalize",
            "Pendulum-v1",
            "--conf-file",
            _conf(root, "stack_normalize", "Pendulum-v1", {**SMALL, "frame_stack": 3, "normalize": True}),
        ),
        "vec_frame_stack": _train(
            root,
            "vec_frame_stack",
            "CartPole-v1",
            "--conf-file",
            _conf(root, "vec_frame_stack", "CartPole-v1", {**SMALL, "vec_env_wrapper": vec_stack, "normalize": True}),
        ),
        "wrappers": _train(
            root,
            "wrappers",
            "CartPole-v1",
            "--conf-file",
            _conf(root, "wrappers", "CartPole-v1", {**SMALL, "env_wrapper": wrappers}),
        ),
        "dict": _train(
            root,
            "dict",
            "DictCartPole-v0",
            "--gym-packages",
            "dict_cartpole",
            "--conf-file",
            _conf(root, "dict", "DictCartPole-v0", {**SMALL, "policy": "MultiInputPolicy", "normalize": True}),
        ),
    }


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The runs, trained once for all test workers (the first to come trains them, the others wait)."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()  # this session's, shared by its xdist workers one level up
    root = (shared.parent if "PYTEST_XDIST_WORKER" in os.environ else shared) / "rl_zoo_runs"
    root.mkdir(exist_ok=True)
    with FileLock(str(root) + ".lock"):
        done = root / "done.json"
        if not done.exists():
            done.write_text(json.dumps({k: str(v) for k, v in _train_all(root).items()}))
    return {k: Path(v) for k, v in json.loads(done.read_text()).items()}


@pytest.fixture(autouse=True)
def _packages_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PACKAGES))
    warnings.simplefilter("ignore", UntrustedFileWarning)


def rl_zoo_play(run: Path, env_id: str, seeds: list[int], *, best: bool = False) -> list[tuple[Any, Any]]:
    """Plays the run as RL Zoo's ``enjoy`` does, one seeded episode per seed, deterministically.

    Returns each episode's actions and rewards (float32: SB3's vector envs hold rewards in float32).
    """
    from rl_zoo3 import ALGOS
    from rl_zoo3.utils import create_test_env, get_saved_hyperparams

    name = env_id.replace("/", "-")
    hyperparams, stats = get_saved_hyperparams(str(run / name), test_mode=True)
    env_kwargs = dict(hyperparams.pop("env_kwargs", None) or {})
    env = create_test_env(
        env_id,
        n_envs=1,
        stats_path=stats,
        seed=0,
        should_render=False,
        hyperparams=hyperparams,
        env_kwargs=env_kwargs,
    )
    model = ALGOS["ppo"].load(run / ("best_model.zip" if best else f"{name}.zip"), device="cpu")
    episodes = []
    for seed in seeds:
        env.seed(seed)
        obs, actions, rewards, done = env.reset(), [], [], False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, dones, _ = env.step(action)
            actions.append(action[0])
            rewards.append(reward[0])
            done = bool(dones[0])
        episodes.append((np.array(actions), np.array(rewards, dtype=np.float32)))
    env.close()
    return episodes


def rlwrappers_play(
    source: Any, env_id: str | None, out: Path, *, seed: int = 0, episodes: int = EPISODES
) -> tuple[list[tuple[Any, Any]], dict[str, Any]]:
    """Plays ``source`` through rlwrappers' evaluation (run seed ``seed``): each episode's actions and rewards."""
    result = rw.evaluate(
        source, env_id, episodes=episodes, seeds=[seed], out=out, execution=Execution(workers=1, progress=False)
    )
    steps = rw.read_log(result.path / result.index["path"].iloc[0]).steps
    episodes = [
        (np.stack(rows["action"].to_numpy()), rows["reward"].to_numpy(dtype=np.float64))
        for _, rows in steps.groupby("episode", sort=True)
    ]
    return episodes, result.request


def assert_same_play(mine: list[tuple[Any, Any]], theirs: list[tuple[Any, Any]]) -> None:
    """The same actions, bit for bit, and the same rewards (in float32, as SB3's vector envs hold them)."""
    assert len(mine) == len(theirs)
    for (actions, rewards), (their_actions, their_rewards) in zip(mine, theirs, strict=True):
        assert np.array_equal(actions.reshape(their_actions.shape), their_actions)
        assert np.array_equal(rewards.astype(np.float32), their_rewards)


SEEDS = [episode_seed(0, i) for i in range(EPISODES)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("run", "env_id"),
    [
        ("normalize", "CartPole-v1"),
        ("frame_stack", "CartPole-v1"),
        ("stack_normalize", "Pendulum-v1"),
        ("vec_frame_stack", "CartPole-v1"),
        ("wrappers", "CartPole-v1"),
        ("dict", "DictCartPole-v0"),
    ],
)
def test_rlwrappers_plays_an_rl_zoo_run_as_rl_zoo_does(
    runs: dict[str, Path], run: str, env_id: str, tmp_path: Path
) -> None:
    mine, request = rlwrappers_play(str(runs[run]), None, tmp_path / "eval")
    assert request["env_id"] == env_id
    assert_same_play(mine, rl_zoo_play(runs[run], env_id, SEEDS))
    record = request["agent_preprocessing"][str(runs[run])]
    assert record["source"] == "rl-zoo-run"
    assert record["env_id"] == env_id
    if run in ("normalize", "stack_normalize", "vec_frame_stack", "dict"):
        stats = runs[run] / env_id / "vecnormalize.pkl"
        assert record["normalization"]["sha256"] == __import__("hashlib").sha256(stats.read_bytes()).hexdigest()
    else:
        assert record["observations"] == "raw" and "normalization" not in record
    assert record.get("frame_stack", 0) == {"frame_stack": 4, "stack_normalize": 3}.get(run, 0)
    if run == "wrappers":
        assert [w["wrapper"] for w in record["env_wrappers"]] == [
            "rl_zoo3.wrappers.FrameSkip",
            "rl_zoo3.wrappers.MaskVelocityWrapper",
        ]
        assert record["env_wrappers"][0]["kwargs"] == {"skip": 2}
    if run == "vec_frame_stack":  # stacked before the statistics, as RL Zoo does: env-side, under the shifts
        assert record["vec_env_wrappers"] == [
            {"wrapper": "rlwrappers.wrappers.frames.StackFrames", "kwargs": {"frames": 2, "channels_order": None}}
        ]


@pytest.mark.slow
def test_raw_observations_play_the_agent_without_its_statistics(runs: dict[str, Path], tmp_path: Path) -> None:
    normalized, _ = rlwrappers_play(str(runs["normalize"]), None, tmp_path / "normalized")
    raw, request = rlwrappers_play(AgentFiles(runs["normalize"], raw_observations=True), None, tmp_path / "raw")
    record = request["agent_preprocessing"][str(runs["normalize"])]
    assert record["raw_observations"] is True and record["observations"] == "raw"
    assert record["raw_because"] == "asked for"
    assert [len(a) for a, _ in raw] != [len(a) for a, _ in normalized]  # the statistics matter to this agent


@pytest.mark.slow
def test_the_best_model_plays_with_the_final_statistics(runs: dict[str, Path], tmp_path: Path) -> None:
    run = runs["normalize"]
    assert (run / "best_model.zip").is_file()
    mine, request = rlwrappers_play(AgentFiles(run, best=True), None, tmp_path / "best")
    assert_same_play(mine, rl_zoo_play(run, "CartPole-v1", SEEDS, best=True))
    record = request["agent_preprocessing"][str(run)]
    assert record["best_model"] is True and record["model"].endswith("best_model.zip")
    assert record["normalization"]["file"] == str(run / "CartPole-v1" / "vecnormalize.pkl")


@pytest.mark.slow
def test_a_zip_in_a_run_folder_and_the_published_layout_read_the_same(runs: dict[str, Path], tmp_path: Path) -> None:
    run = runs["normalize"]
    published = tmp_path / "ppo-CartPole-v1"  # the files RL Zoo publishes, side by side
    published.mkdir()
    shutil.copy(run / "CartPole-v1.zip", published / "ppo-CartPole-v1.zip")
    shutil.copy(run / "CartPole-v1" / "config.yml", published / "config.yml")
    shutil.copy(run / "CartPole-v1" / "args.yml", published / "args.yml")
    shutil.copy(run / "CartPole-v1" / "vecnormalize.pkl", published / "vec_normalize.pkl")
    (published / "env_kwargs.yml").write_text("{}\n")
    expected = rl_zoo_play(run, "CartPole-v1", SEEDS)
    for i, source in enumerate([run / "CartPole-v1.zip", published, published / "ppo-CartPole-v1.zip"]):
        mine, request = rlwrappers_play(str(source), None, tmp_path / f"eval{i}")
        assert_same_play(mine, expected)
        (record,) = request["agent_preprocessing"].values()
        assert record["source"] == ("rl-zoo-run" if i == 0 else "rl-zoo-published")
        assert "normalization" in record
    alone = tmp_path / "alone.zip"
    shutil.copy(run / "CartPole-v1.zip", alone)
    training = read_training(alone)
    assert training.source == "sb3-zip" and training.normalization is None
    assert "a zip alone cannot say" in (training.raw_why or "")


@pytest.mark.slow
def test_the_command_line_plays_a_run_folder_and_says_how(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cli"
    command = ["evaluate", "--agent", str(runs["normalize"]), "--episodes", "2", "--seeds", "1", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "rlwrappers.cli", *command, "--quiet", "--no-report", "--probe", "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"Agent {runs['normalize']}:" in done.stdout and "VecNormalize statistics" in done.stdout
    quiet = ["--quiet", "--no-report", "--probe", "0"]
    raw = subprocess.run(
        [sys.executable, "-m", "rlwrappers.cli", *command[:-1], f"{out}-raw", "--raw-observations", *quiet],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "raw observations (asked for)" in raw.stdout
    request = json.loads((out / "evaluation.json").read_text())
    assert request["env_id"] == "CartPole-v1"


@pytest.mark.slow
def test_another_base_env_is_refused_unless_asked(runs: dict[str, Path], tmp_path: Path) -> None:
    def play(env_id: str, out: str, other_env: bool = False) -> None:
        rw.evaluate(
            str(runs["normalize"]),
            env_id,
            episodes=1,
            seeds=1,
            out=tmp_path / out,
            env=EnvSetup(other_env=other_env),
            execution=Execution(workers=1, progress=False),
        )

    with pytest.raises(InvalidArgument, match=r"was trained on 'CartPole-v1'.*other_env=True"):
        play("CartPole-v0", "v0")
    play("CartPole-v0", "v0-ok", other_env=True)
    play(rw.register("CartPole-v1", "obs_noise(std=0.01)"), "perturbed")  # the same base env
    with pytest.raises(IncompatibleSpace):  # spaces must fit even when the env may differ
        play("Pendulum-v1", "pendulum", other_env=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("run", "env_id", "families"),
    [
        ("normalize", "CartPole-v1", ["obs_noise", "attack"]),
        ("wrappers", "CartPole-v1", ["obs_noise", "attack"]),
        # Stacked agents: per-entry levels repeat over the frames the shift sees (the attack acts on the stack).
        ("frame_stack", "CartPole-v1", ["obs_noise", "attack", "init_noise"]),
        ("stack_normalize", "Pendulum-v1", ["obs_noise", "attack", "dynamics"]),
        ("vec_frame_stack", "CartPole-v1", ["obs_noise", "attack", "param_noise"]),  # stacked env-side
    ],
)
def test_a_card_grades_each_rl_zoo_run_whose_env_has_a_ladder(
    runs: dict[str, Path], run: str, env_id: str, families: list[str], tmp_path: Path
) -> None:
    from rlwrappers.report.card import validate_robustness_card
    from rlwrappers.studies.robustness_card import robustness_card

    def card(families: list[str]) -> dict[str, Any]:
        return robustness_card(
            str(runs[run]),
            env_id,
            out=tmp_path / "card",
            families=families,
            seeds=1,
            episodes=1,
            reps=50,
            workers=1,
            progress=False,
        )

    record = card(families)
    assert sorted(f["name"] for f in record["families"]) == sorted(families)
    assert record["agent_preprocessing"]["source"] == "rl-zoo-run"
    assert record["agent"]["detail"] == "an RL Zoo run"
    validate_robustness_card(json.loads((tmp_path / "card" / "card.json").read_text()))
    page = (tmp_path / "card" / "card.html").read_text()
    assert "played behind" in page
    for family in record["families"]:  # the shifts and the flips both see the agent's stacked input
        assert all(level["mean_return"] is not None for level in family["levels"])
    if "normalize" in run or run == "vec_frame_stack":
        assert record["agent_preprocessing"]["normalization"]["file"].endswith("vecnormalize.pkl")
        assert "VecNormalize statistics" in page


@pytest.mark.slow
def test_dict_agents_act_one_at_a_time_and_batched_and_take_parameter_noise(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    import dict_cartpole  # noqa: F401  (registers the env)

    agent = zoo.load_agent(runs["dict"])
    env = gym.make("DictCartPole-v0")
    obs = [env.reset(seed=s)[0] for s in range(5)]
    batch = {key: np.stack([o[key] for o in obs]) for key in ("cart", "pole")}
    assert [int(agent.act_one(o)) for o in obs] == agent.act(batch).tolist()
    with pytest.raises(InvalidArgument, match="keys"):
        agent.act({"cart": batch["cart"]})
    shifts, source = ["param_noise(std=0.05)", "action_noise(p=0.2)"], str(runs["dict"])
    by_mode = {}
    for mode, execution in {
        "exact": Execution(workers=1, progress=False, batch=4),
        "per-run": Execution(workers=1, progress=False),
        "fast": Execution(workers=1, progress=False, batch=4, exact=False),
    }.items():
        result = rw.evaluate(source, None, shifts, episodes=2, seeds=2, out=tmp_path / mode, execution=execution)
        by_mode[mode] = result.episodes().sort_values(["shift", "run_seed", "episode"])["return"].tolist()
    assert by_mode["exact"] == by_mode["per-run"]
    assert len(by_mode["fast"]) == len(by_mode["exact"])
    # workers started by spawn know nothing of the parent: they import the run's gym package and read its files
    spawned = Execution(workers=2, progress=False, start_method="spawn")
    result = rw.evaluate(source, None, shifts, episodes=2, seeds=2, out=tmp_path / "spawn", execution=spawned)
    assert result.episodes().sort_values(["shift", "run_seed", "episode"])["return"].tolist() == by_mode["exact"]


def test_missing_statistics_and_unknown_folders_are_named(tmp_path: Path) -> None:
    run = tmp_path / "ppo" / "CartPole-v1_1"
    (run / "CartPole-v1").mkdir(parents=True)
    (run / "CartPole-v1.zip").write_bytes(b"")
    (run / "CartPole-v1" / "config.yml").write_text("normalize: true\n")
    (run / "CartPole-v1" / "args.yml").write_text("env: CartPole-v1\n")
    with pytest.raises(MissingFile, match=r"asks for normalize.*vecnormalize\.pkl"):
        read_training(run)
    with pytest.raises(MissingFile, match=r"best_model\.zip"):
        read_training(run, best=True)
    (run / "CartPole-v1" / "config.yml").write_text("vec_env_wrapper: stable_baselines3.common.vec_env.VecCheckNan\n")
    with pytest.raises(InvalidArgument, match=r"vec_env_wrapper.*VecCheckNan"):
        read_training(run)
    (run / "CartPole-v1" / "config.yml").write_text("normalize: false\n")
    (run / "CartPole-v1" / "args.yml").write_text("env: CartPole-v1\ngym_packages: [no_such_package_here]\n")
    with pytest.raises(InvalidArgument, match="no_such_package_here"):
        read_training(run)
    with pytest.raises(InvalidArgument, match="several runs"):
        shutil.copytree(run / "CartPole-v1", run / "Other-v1")
        (run / "Other-v1.zip").write_bytes(b"")
        read_training(run)
    with pytest.raises(MissingFile, match="does not exist"):
        read_training(tmp_path / "nowhere")


# -- input steps, bit for bit --------------------------------------------------------------------------------
def test_normalization_equals_vec_normalize_bit_for_bit(tmp_path: Path) -> None:
    import pickle

    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from rlwrappers.agents.training import read_normalization

    venv = VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")]), clip_obs=2.5)
    venv.seed(0)
    venv.reset()
    for _ in range(300):  # running statistics, as training leaves them
        venv.step(np.array([[venv.action_space.sample()[0]]]))
    path = tmp_path / "vecnormalize.pkl"
    venv.save(str(path))
    normalization = read_normalization(path)
    assert normalization is not None and normalization.clip_obs == 2.5
    loaded = pickle.loads(path.read_bytes())
    obs = np.random.default_rng(0).normal(0, 5, size=(1000, 3)).astype(np.float32)  # some beyond the clip
    torch = pytest.importorskip("torch")
    mine = normalization.apply(torch.as_tensor(obs)).numpy()
    assert mine.dtype == np.float32
    assert np.array_equal(mine, loaded.normalize_obs(obs))
    assert (np.abs(mine) == 2.5).any()
    x = torch.as_tensor(obs[:4], dtype=torch.float32).requires_grad_(True)
    normalization.apply(x).sum().backward()  # attacks differentiate through it, in the env's units
    assert x.grad is not None and x.grad.abs().sum() > 0


def test_the_frame_stack_equals_vec_frame_stack() -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    from rlwrappers.wrappers.frames import StackFrames

    def image_env(order: str) -> gym.Env[Any, Any]:
        env = gym.make("CartPole-v1")
        shape = (3, 8, 10) if order == "first" else (8, 10, 3)
        space = gym.spaces.Box(0, 255, shape, np.uint8)
        return gym.wrappers.TransformObservation(env, lambda o: np.full(shape, int(abs(o[0]) * 100), np.uint8), space)

    for make in (lambda: gym.make("CartPole-v1"), lambda: image_env("first"), lambda: image_env("last")):
        stacked, mine = VecFrameStack(DummyVecEnv([make]), 4), StackFrames(make(), 4)
        theirs_space, space = stacked.observation_space, mine.observation_space
        assert (space.shape, space.dtype) == (theirs_space.shape, theirs_space.dtype)  # type: ignore[union-attr]
        # SB3's bounds repeat each bound in place, which its own stacks do not follow for unequal bounds.
        assert np.array_equal(np.sort(space.low, axis=None), np.sort(theirs_space.low, axis=None))
        stacked.seed(3)
        theirs, (obs, _) = stacked.reset(), mine.reset(seed=3)
        assert np.array_equal(theirs[0], obs)
        for t in range(300):
            action = t % 2
            theirs, _, _, infos = stacked.step(np.array([action]))
            obs, _, terminated, truncated, _ = mine.step(action)
            if terminated or truncated:
                assert np.array_equal(infos[0]["terminal_observation"], obs)
                stacked.seed(t)
                theirs, (obs, _) = stacked.reset(), mine.reset(seed=t)
            assert np.array_equal(theirs[0], obs)
            assert mine.observation_space.contains(obs)


def test_frame_stack_arguments_are_checked() -> None:
    import rlwrappers.envs  # noqa: F401  (registers Catch)

    from rlwrappers.wrappers.frames import StackFrames

    with pytest.raises(InvalidArgument, match="`frames` must be an int >= 1, received 0"):
        StackFrames(gym.make("CartPole-v1"), 0)
    with pytest.raises(InvalidArgument, match="`channels_order`"):
        StackFrames(gym.make("CartPole-v1"), 2, channels_order="middle")
    with pytest.raises(InvalidArgument, match="`pad`"):
        StackFrames(gym.make("CartPole-v1"), 2, pad=np.zeros(3))
    for pad in ("abc", None):
        with pytest.raises(InvalidType, match="`pad` must be a number or an array of numbers"):
            StackFrames(gym.make("CartPole-v1"), 2, pad=pad)
    for pad, reason in ((np.nan, "finite"), (1e40, r"finite in float32 \(at most 3.40282e\+38\)")):
        with pytest.raises(InvalidArgument, match=f"`pad` must be {reason}"):
            StackFrames(gym.make("CartPole-v1"), 2, pad=pad)
    assert StackFrames(gym.make("CartPole-v1"), 2, pad=1e40, dtype=np.float64).reset(seed=0)[0][0] == 1e40
    frames = gym.make("rlwrappers/Catch-v0")  # uint8 frames
    for pad in (300, -1, 0.5):
        with pytest.raises(InvalidArgument, match="`pad` must be whole numbers from 0 to 255 for uint8"):
            StackFrames(frames, 2, pad=pad)
    with pytest.raises(InvalidType, match="`dtype` must be a numpy dtype, received 'foo'"):
        StackFrames(gym.make("CartPole-v1"), 2, dtype="foo")
    with pytest.raises(IncompatibleSpace, match="Box observation"):
        StackFrames(gym.make("FrozenLake-v1"), 2)


# -- Python files that make agents (CleanRL networks) ----------------------------------------------------------
SCRIPT = """
import torch
from rlwrappers.agents import TorchAgent


def make_agent(observation_space, action_space):
    torch.manual_seed(0)
    net = torch.nn.Linear(observation_space.shape[0], {n})
    return TorchAgent(net, observation_space, action_space, head="logits")


def not_an_agent(observation_space, action_space):
    return "an agent"
"""


def test_a_python_file_makes_the_agent_and_bad_ones_are_named(tmp_path: Path) -> None:
    env = gym.make("CartPole-v1")
    good, wrong = tmp_path / "good.py", tmp_path / "wrong.py"
    good.write_text(SCRIPT.format(n=2))
    wrong.write_text(SCRIPT.format(n=3))
    spaces = {"observation_space": env.observation_space, "action_space": env.action_space}
    with pytest.warns(UntrustedFileWarning, match="runs the Python code in it"):
        agent = zoo.load_agent(f"{good}:make_agent", **spaces)
    assert agent.act_one(env.reset(seed=0)[0]) in (0, 1)
    with pytest.raises(MissingFile, match="does not exist"):
        zoo.load_agent(f"{tmp_path / 'missing.py'}:make_agent", **spaces)
    with pytest.raises(
        InvalidArgument, match=r"has no function 'make'; its functions are \['make_agent', 'not_an_agent'\]"
    ):
        zoo.load_agent(f"{good}:make", **spaces)
    with pytest.raises(rw.error.InvalidType, match=r"must return a rlwrappers Agent.*received str"):
        zoo.load_agent(f"{good}:not_an_agent", **spaces)
    with pytest.raises(IncompatibleSpace, match="scores 3 actions, and the env has 2"):
        zoo.load_agent(f"{wrong}:make_agent", **spaces)
    with pytest.raises(InvalidArgument, match="pass the env's spaces"):
        zoo.load_agent(f"{good}:make_agent")
    result = rw.evaluate(
        f"{good}:make_agent",
        "CartPole-v1",
        ["obs_noise(std=0.1)"],
        episodes=2,
        seeds=2,
        out=tmp_path / "eval",
        execution=Execution(workers=2, progress=False),
    )
    assert result.complete and "agent_preprocessing" not in result.request
    assert result.request["agent_sources"] == {f"{good}:make_agent": f"{good}:make_agent"}


def test_agents_without_training_files_leave_the_request_as_before(tmp_path: Path) -> None:
    result = rw.evaluate(
        "ppo-CartPole-v1",
        "CartPole-v1",
        episodes=1,
        seeds=1,
        out=tmp_path / "zoo",
        execution=Execution(workers=1, progress=False),
    )
    assert "agent_preprocessing" not in result.request
    assert "agent_preprocessing" not in json.loads((tmp_path / "zoo" / "evaluation.json").read_text())


@pytest.mark.slow
def test_attacks_on_a_normalized_agent_keep_their_budget_in_the_envs_units(runs: dict[str, Path]) -> None:
    agent = zoo.load_agent(runs["normalize"])
    assert agent.normalization is not None and "normalization" not in " ".join(agent.parameters())
    attacked = rw.wrap(gym.make("CartPole-v1"), "fgsm(eps=0.01)")
    rw.attach(attacked, agent)
    clean = gym.make("CartPole-v1")
    for seed in range(3):
        seen, _ = attacked.reset(seed=seed)
        true, _ = clean.reset(seed=seed)
        step = np.abs(seen.astype(np.float64) - true)
        assert step.max() == pytest.approx(0.01, rel=1e-5)  # the budget is in CartPole's own units


@pytest.mark.slow
def test_an_rl_zoo_atari_agent_plays_behind_its_atari_wrapper_and_frame_stack(tmp_path: Path) -> None:
    """RL Zoo's Atari layout: AtariWrapper env-side, 4 channel-last frames stacked, transposed for the network."""
    ale_py = pytest.importorskip("ale_py")
    import yaml
    from stable_baselines3 import PPO
    from stable_baselines3.common.atari_wrappers import AtariWrapper
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    gym.register_envs(ale_py)
    env_id = "BreakoutNoFrameskip-v4"
    run = tmp_path / "ppo" / f"{env_id}_1"
    (run / env_id).mkdir(parents=True)
    venv = VecFrameStack(DummyVecEnv([lambda: AtariWrapper(gym.make(env_id))]), 4)
    PPO("CnnPolicy", venv, seed=0, device="cpu").save(run / f"{env_id}.zip")  # as RL Zoo saves its model
    config = {"env_wrapper": ["stable_baselines3.common.atari_wrappers.AtariWrapper"], "frame_stack": 4}
    (run / env_id / "config.yml").write_text(yaml.safe_dump({**config, "policy": "CnnPolicy", "normalize": False}))
    (run / env_id / "args.yml").write_text(yaml.safe_dump({"env": env_id, "algo": "ppo", "env_kwargs": None}))
    for seed in (0, 1):  # the first life of a game, one fresh env each, as both sides play it
        mine, request = rlwrappers_play(str(run), None, tmp_path / f"eval{seed}", seed=seed, episodes=1)
        theirs = rl_zoo_play(run, env_id, [episode_seed(seed, 0)])
        assert_same_play(mine, theirs)
    record = request["agent_preprocessing"][str(run)]
    assert record["frame_stack"] == 4 and record["transposed"] is True
    assert record["env_wrappers"] == [{"wrapper": "stable_baselines3.common.atari_wrappers.AtariWrapper", "kwargs": {}}]


def test_bad_agent_files_and_wrappers_are_named_at_construction() -> None:
    from rlwrappers.agents.training import WrapperSpec

    with pytest.raises(rw.error.InvalidType, match="`path` must be a path, received 3"):
        AgentFiles(3)  # type: ignore[arg-type]
    with pytest.raises(rw.error.InvalidType, match="`best` must be a bool, received 'yes'"):
        AgentFiles("logs/ppo/CartPole-v1_1", best="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"import path 'module\.Class', received 'AtariWrapper'"):
        WrapperSpec("AtariWrapper")
    with pytest.raises(InvalidArgument, match=r"'no_such_module\.Wrapper' cannot be imported"):
        WrapperSpec("no_such_module.Wrapper")(gym.make("CartPole-v1"))
    with pytest.raises(InvalidArgument, match="each `env_wrapper` entry names one wrapper"):
        WrapperSpec.parse([{"a.B": {}, "c.D": {}}], "env_wrapper")
    parsed = WrapperSpec.parse(["a.B", {"c.D": {"k": 1}}], "env_wrapper")
    assert parsed == (WrapperSpec("a.B"), WrapperSpec("c.D", {"k": 1}))


@pytest.mark.slow
def test_explain_plays_an_rl_zoo_agent_behind_its_frame_stack(runs: dict[str, Path], tmp_path: Path) -> None:
    command = ["explain", "--agent", str(runs["frame_stack"]), "--env", "CartPole-v1", "--method", "rise"]
    command += ["--param", "rise.masks=20", "--states", "2", "--sanity", "0", "--out", str(tmp_path / "x")]
    done = subprocess.run(
        [sys.executable, "-m", "rlwrappers.cli", *command, "--no-report", "--quiet"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr  # 16 stacked inputs: the env got its frame stack
