"""Training libraries with perturbed envs: Stable-Baselines3, Gymnasium vector envs, CleanRL-style thunks, RL Zoo.

Budgets are tiny: each test checks that the library builds, steps and trains through the wrappers, and that the
perturbations really act inside it.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers.core import INFO_KEY, layers

sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv  # noqa: E402

OBS_NOISE_ID = "rlwrappers/CartPole-ObsNoise-v1"


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def perturbed_cartpole() -> gym.Env:
    """A module-level thunk, so that process-based vector envs can pickle it by name."""
    return rw.wrap(
        gym.make("CartPole-v1"),
        "obs_noise(std=0.05)",
        "action_noise(p=0.2)",
        "reward_noise(std=0.1, when=prob(p=0.5))",
    )


def _vec_rollout(venv, steps: int, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray], list[list[dict]]]:
    """Steps an SB3 VecEnv with fixed actions; returns observations, rewards and infos."""
    venv.seed(seed)
    observations, rewards, infos = [venv.reset()], [], []
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, reward, _, info = venv.step(rng.integers(2, size=venv.num_envs))
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
    return observations, rewards, infos


# -- Stable-Baselines3 ---------------------------------------------------------------------------------------


def test_sb3_make_vec_env_with_a_wrapper_class_trains_ppo():
    venv = make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=rw.ObservationNoise, wrapper_kwargs={"std": 0.1})
    assert all(isinstance(env, rw.ObservationNoise) for env in venv.envs)
    assert all(layer.perturbations[0].std == 0.1 for env in venv.envs for layer in layers(env))

    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256

    # what the agent was trained on is noisy: compare with the same vec env without the wrapper
    clean = make_vec_env("CartPole-v1", n_envs=2, seed=1)
    venv.seed(1)
    noisy_obs, clean_obs = venv.reset(), clean.reset()
    difference = np.abs(noisy_obs - clean_obs)
    assert difference.min() > 0 and difference.max() < 1.0
    _, _, _, infos = venv.step(np.array([0, 1]))
    assert all(info[INFO_KEY] == {"obs_noise": {"active": True}} for info in infos)
    venv.close()
    clean.close()


def test_sb3_dummy_vec_env_of_wrapped_envs():
    venv = DummyVecEnv([perturbed_cartpole, perturbed_cartpole])
    observations, rewards, infos = _vec_rollout(venv, 60)
    assert all(obs.shape == (2, 4) for obs in observations)
    labels = {label for step in infos for info in step for label in info.get(INFO_KEY, {})}
    assert labels == {"obs_noise", "action_noise", "reward_noise"}
    # reward noise shows in what SB3 hands the agent
    assert any(abs(r - 1.0) > 1e-9 for step in rewards for r in step)
    # terminal observations from SB3's auto-reset are perturbed observations too
    terminal = [info["terminal_observation"] for step in infos for info in step if "terminal_observation" in info]
    assert terminal
    # the two envs, seeded 0 and 1 by SB3, draw different noise
    assert not np.array_equal(observations[0][0], observations[0][1])
    venv.close()


@pytest.mark.slow
def test_sb3_subproc_vec_env_matches_the_dummy_one():
    thunks = [perturbed_cartpole, perturbed_cartpole]
    dummy = DummyVecEnv(thunks)
    subproc = SubprocVecEnv(thunks)
    try:
        a_obs, a_rewards, a_infos = _vec_rollout(dummy, 80, seed=3)
        b_obs, b_rewards, b_infos = _vec_rollout(subproc, 80, seed=3)
    finally:
        dummy.close()
        subproc.close()
    for x, y in zip(a_obs, b_obs, strict=True):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(a_rewards, b_rewards, strict=True):
        # DummyVecEnv keeps rewards in a float32 buffer, SubprocVecEnv stacks the Python floats
        np.testing.assert_array_equal(x.astype(np.float32), y.astype(np.float32))
    replaced = [[info.get(INFO_KEY, {}).get("action_noise", {}).get("replaced") for info in step] for step in a_infos]
    assert replaced == [
        [info.get(INFO_KEY, {}).get("action_noise", {}).get("replaced") for info in step] for step in b_infos
    ]


@pytest.mark.parametrize(
    "make",
    [
        lambda: rw.ObservationNoise(gym.make("CartPole-v1"), std=0.1),
        lambda: rw.ObservationNoise(gym.make("CartPole-v1"), std=0.1, clip=False),
        lambda: rw.ActionNoise(gym.make("Pendulum-v1"), std=0.2, p=0.1),
        lambda: rw.StickyAction(gym.make("MountainCar-v0"), p=0.5, duration=(1, 3)),
        lambda: rw.RewardNoise(gym.make("Acrobot-v1"), std=0.1, when="prob(p=0.5)"),
        lambda: rw.InitialStateNoise(gym.make("Pendulum-v1"), std=0.1),
        lambda: rw.DynamicsShift(gym.make("CartPole-v1"), scales={"length": 2.0}, when="starting(step=3)"),
        lambda: gym.make("rlwrappers/InvertedPendulum-Shifted-v5"),
        lambda: rw.wrap(
            gym.make("MountainCarContinuous-v0"),
            "obs_noise(std=0.01)",
            "action_noise(std=0.1)",
            "sticky_action(p=0.2)",
            "init_noise(std=0.05)",
        ),
    ],
    ids=["obs", "obs-unclipped", "action", "sticky", "reward", "init", "dynamics", "mujoco-id", "stack"],
)
def test_sb3_check_env_accepts_wrapped_envs(make):
    env = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, warn=True)
    unexpected = [str(w.message) for w in caught if "symmetric and normalized Box action space" not in str(w.message)]
    assert unexpected == []
    env.close()


# -- Gymnasium vector envs -----------------------------------------------------------------------------------


def _gym_vec_rollout(envs: gym.vector.VectorEnv, steps: int, seed: int = 0) -> tuple[list, list, list]:
    observations, rewards, infos = [], [], []
    obs, info = envs.reset(seed=seed)
    observations.append(obs)
    infos.append(info)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, reward, _, _, info = envs.step(rng.integers(2, size=envs.num_envs))
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
    return observations, rewards, infos


def test_make_vec_sync_builds_the_perturbation_in_every_sub_env():
    envs = gym.make_vec(OBS_NOISE_ID, num_envs=2, vectorization_mode="sync")
    assert isinstance(envs, gym.vector.SyncVectorEnv)
    for sub in envs.envs:
        (layer,) = layers(sub)
        assert layer.specs == ["obs_noise(std=0.05)"]
    observations, _, infos = _gym_vec_rollout(envs, 30)
    for info in infos:
        np.testing.assert_array_equal(info[INFO_KEY]["obs_noise"]["active"], [True, True])
        np.testing.assert_array_equal(info[f"_{INFO_KEY}"], [True, True])
    clean, _ = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync").reset(seed=0)
    difference = np.abs(observations[0] - clean)
    assert difference.min() > 0 and difference.max() < 0.5
    envs.close()


def test_make_vec_async_equals_sync_and_wrapped_thunks():
    sync = gym.make_vec(OBS_NOISE_ID, num_envs=2, vectorization_mode="sync")
    async_ = gym.make_vec(OBS_NOISE_ID, num_envs=2, vectorization_mode="async")
    thunks_sync = gym.vector.SyncVectorEnv([lambda: rw.ObservationNoise(gym.make("CartPole-v1"), std=0.05)] * 2)
    thunks_async = gym.vector.AsyncVectorEnv([lambda: rw.ObservationNoise(gym.make("CartPole-v1"), std=0.05)] * 2)
    try:
        runs = [_gym_vec_rollout(envs, 60, seed=4) for envs in (sync, async_, thunks_sync, thunks_async)]
    finally:
        for envs in (sync, async_, thunks_sync, thunks_async):
            envs.close()
    reference = runs[0]
    for other in runs[1:]:
        for x, y in zip(reference[0], other[0], strict=True):
            np.testing.assert_array_equal(x, y)
        for x, y in zip(reference[1], other[1], strict=True):
            np.testing.assert_array_equal(x, y)
    assert all(INFO_KEY in info for info in runs[1][2])


def test_sync_vector_env_of_wrapped_thunks_with_schedules():
    def make() -> gym.Env:
        return rw.wrap(gym.make("CartPole-v1"), "reward_noise(std=0.5, when=window(start=2, stop=4))")

    envs = gym.vector.SyncVectorEnv([make, make])
    _, rewards, infos = _gym_vec_rollout(envs, 6)
    # the first steps of each sub-env's first episode: noise exactly at times 2 and 3
    noisy = [np.abs(r - 1.0) > 1e-12 for r in rewards]
    assert [n.tolist() for n in noisy[:5]] == [[False, False], [False, False], [True, True], [True, True], [False] * 2]
    np.testing.assert_array_equal(infos[3][INFO_KEY]["reward_noise"]["active"], [True, True])
    assert INFO_KEY not in infos[1]
    envs.close()


# -- CleanRL-style thunks ------------------------------------------------------------------------------------


def make_env(env_id: str, seed: int, idx: int, log_dir=None):
    """CleanRL's thunk, with the perturbations written out after the episode statistics."""

    def thunk():
        env = gym.make(env_id)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env = rw.ObservationNoise(env, std=0.05)
        env = rw.StickyAction(env, p=0.25)
        env = rw.RewardNoise(env, std=0.2)
        if log_dir is not None:
            env = rw.Recorder(env, log_dir / f"env{idx}")
        env.action_space.seed(seed)
        return env

    return thunk


def test_cleanrl_style_sync_vector_env(tmp_path):
    seed, n = 1, 2
    envs = gym.vector.SyncVectorEnv([make_env("CartPole-v1", seed + i, i, tmp_path) for i in range(n)])
    assert isinstance(envs.single_action_space, gym.spaces.Discrete)
    obs, _ = envs.reset(seed=seed)
    assert obs.shape == (n, 4)
    finished: list[list[tuple[float, int]]] = [[] for _ in range(n)]
    received = np.zeros(n)
    sums: list[list[float]] = [[] for _ in range(n)]
    flags = set()
    for _ in range(300):
        obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
        received += rewards
        flags |= set(infos.get(INFO_KEY, {}))
        if "episode" in infos:
            for i in np.flatnonzero(infos["_episode"]):
                finished[i].append((float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i])))
        for i in np.flatnonzero(terminations | truncations):
            sums[i].append(received[i])
            received[i] = 0.0
    envs.close()

    assert {"obs_noise", "sticky_action", "reward_noise"} <= flags
    for i in range(n):
        assert len(finished[i]) >= 3
        # the statistics sit below the reward noise: they see CartPole's clean reward, 1 per step
        assert all(r == float(length) for r, length in finished[i])
        # the agent got noisy rewards, and the Recorder logged exactly those
        log = rw.read_log(tmp_path / f"env{i}")
        done = log.episodes[log.episodes["complete"]]
        assert done["length"].tolist() == [length for _, length in finished[i]]
        np.testing.assert_allclose(done["return"].to_numpy(), sums[i], rtol=0, atol=1e-9)
        assert not np.allclose(done["return"].to_numpy(), done["length"].to_numpy())
        assert log.episodes["seed"].iloc[0] == seed + i
        assert [p["label"] for p in log.meta["perturbations"]] == ["reward_noise", "sticky_action", "obs_noise"]


# -- RL Zoo --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_rl_zoo_trains_on_a_registered_id(tmp_path):
    pytest.importorskip("rl_zoo3")
    record = tmp_path / "recorded"
    conf = tmp_path / "hyperparams.yml"
    conf.write_text(
        f"""
{OBS_NOISE_ID}:
  n_envs: 1
  policy: 'MlpPolicy'
  n_timesteps: 256
  n_steps: 64
  batch_size: 32
  n_epochs: 1
  env_wrapper:
    - rlwrappers.RewardNoise:
        std: 0.5
    - rlwrappers.Recorder:
        path: {str(record)!r}
"""
    )
    command = [
        sys.executable, "-m", "rl_zoo3.train",
        "--algo", "ppo",
        "--env", OBS_NOISE_ID,
        "--gym-packages", "rlwrappers",
        "-n", "256",
        "-f", str(tmp_path / "logs"),
        "--conf-file", str(conf),
        "--seed", "0",
        "--eval-freq", "-1",
        "--save-freq", "-1",
        "--device", "cpu",
        "--num-threads", "1",
        "--log-interval", "-1",
        "--verbose", "0",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    (model_path,) = (tmp_path / "logs" / "ppo").glob("rlwrappers-CartPole-ObsNoise-v1_*/*.zip")
    model = PPO.load(model_path, device="cpu")
    env = gym.make(OBS_NOISE_ID)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(int(action))

    # the log written inside RL Zoo's training envs shows both the registered and the added perturbation
    log = rw.read_log(record)
    assert log.meta["env_id"] == OBS_NOISE_ID
    assert [p["label"] for p in log.meta["perturbations"]] == ["reward_noise", "obs_noise"]
    assert log.steps["obs_noise.active"].all() and log.steps["reward_noise.active"].all()
    assert len(log.steps) >= 256
    assert log.episodes["seed"].iloc[0] == 0
    complete = log.episodes[log.episodes["complete"]]
    assert len(complete) >= 1
    assert not np.allclose(complete["return"].to_numpy(), complete["length"].to_numpy())


@pytest.mark.slow
@pytest.mark.parametrize("env_id", [OBS_NOISE_ID, "rlwrappers/CartPole-Randomized-v1"])
def test_rl_zoo_uses_the_base_env_hyperparameters_through_the_shipped_config(tmp_path, env_id):
    command = [
        sys.executable, "-m", "rl_zoo3.train",
        "--algo", "ppo",
        "--env", env_id,
        "--gym-packages", "rlwrappers",
        "--conf-file", "rlwrappers.zoo.hyperparams.ppo",
        "--hyperparams", "n_envs:2",
        "-n", "256",
        "-f", str(tmp_path / "logs"),
        "--seed", "0",
        "--eval-freq", "-1",
        "--device", "cpu",
        "--verbose", "0",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = (tmp_path / "logs" / "ppo").glob(f"{env_id.replace('/', '-')}_*")
    import yaml

    saved = dict(yaml.unsafe_load((run / env_id.replace("/", "-") / "config.yml").read_text()))
    from rlwrappers.zoo.hyperparams import ppo

    base = ppo.hyperparams["CartPole-v1"]
    assert saved["n_steps"] == base["n_steps"] and saved["gae_lambda"] == base["gae_lambda"]


def test_rl_zoo_config_covers_every_catalogue_id_whose_base_it_knows():
    from rlwrappers.zoo.hyperparams import hyperparameters

    table = hyperparameters("sac")
    assert table["rlwrappers/Pendulum-ObsNoise-v1"] == table["Pendulum-v1"]
    assert "rlwrappers/CartPole-ObsNoise-v1" not in table  # SAC has no CartPole entry to copy
