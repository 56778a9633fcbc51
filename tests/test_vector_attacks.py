"""Vector-level attacks: Gymnasium vector envs and SB3 VecEnvs, batched across sub-envs, on real agents."""

from __future__ import annotations

from pathlib import Path

import ale_py
import gymnasium as gym
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import rlwrappers as rw
from rlwrappers import error
from rlwrappers.core import Entry
from rlwrappers.wrappers.vector import LOG_COLUMNS, Attack

gym.register_envs(ale_py)

SHARED_AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents"


def sync(env_id: str, num_envs: int, **vector_kwargs) -> gym.vector.VectorEnv:
    """Sub-envs made by gym.make, as the single-env wrappers see them (CartPole's own vector env differs)."""
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync", vector_kwargs=vector_kwargs)


@pytest.fixture(scope="module")
def cartpole_agent() -> rw.agents.Agent:
    return rw.load_agent("ppo-CartPole-v1")


def test_a_vector_fgsm_gives_each_sub_env_what_the_single_env_wrapper_gives_it(cartpole_agent):
    n, seed = 3, 5
    envs = Attack(sync("CartPole-v1", num_envs=n), "fgsm(eps=0.3)", cartpole_agent)
    singles = [rw.FGSM(gym.make("CartPole-v1"), eps=0.3, agent=cartpole_agent) for _ in range(n)]
    obs, _ = envs.reset(seed=seed)
    single_obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
    done = np.zeros(n, dtype=bool)
    episodes_ended = 0
    for _ in range(150):
        assert np.array_equal(obs, np.stack(single_obs))
        actions = cartpole_agent.act(obs)
        obs, _, terminated, truncated, _ = envs.step(actions)
        for i, env in enumerate(singles):
            if done[i]:  # next-step autoreset: this step reset sub-env i
                single_obs[i] = env.reset()[0]
            else:
                single_obs[i] = env.step(actions[i])[0]
        done = terminated | truncated
        episodes_ended += int(done.sum())
    assert episodes_ended > 0  # the comparison went through autoresets


def test_a_vector_fgsm_with_a_per_dimension_eps_equals_the_single_env_one(cartpole_agent, tmp_path):
    eps = (0.01, 0.02, 0.1, 0.3)
    envs = Attack(sync("CartPole-v1", num_envs=2), "fgsm(eps=[0.01, 0.02, 0.1, 0.3])", cartpole_agent)
    singles = [rw.FGSM(gym.make("CartPole-v1"), eps=eps, agent=cartpole_agent) for _ in range(2)]
    obs, _ = envs.reset(seed=1)
    single_obs = [env.reset(seed=1 + i)[0] for i, env in enumerate(singles)]
    for _ in range(8):  # CartPole lasts longer than this: no autoreset
        assert np.array_equal(obs, np.stack(single_obs))
        actions = cartpole_agent.act(obs)
        obs, *_ = envs.step(actions)
        single_obs = [env.step(a)[0] for env, a in zip(singles, actions, strict=True)]
    assert np.allclose(envs.log()["linf"], 0.3, atol=1e-6)
    envs.save(tmp_path / "attack.parquet")
    meta = pq.read_schema(tmp_path / "attack.parquet").metadata
    assert Entry.parse(meta[b"rlwrappers.attack"].decode()) == envs.attacker.entry


def test_the_vector_log_holds_one_row_per_attacked_decision(cartpole_agent, tmp_path):
    envs = Attack(sync("CartPole-v1", num_envs=4), "fgsm(eps=0.3)", cartpole_agent, label="attack")
    obs, _ = envs.reset(seed=0)
    for _ in range(60):
        obs, *_ = envs.step(cartpole_agent.act(obs))
    log = envs.log()
    assert list(log.columns) == list(LOG_COLUMNS)
    assert (log["flipped"] == (log["action"] != log["clean_action"])).all()
    assert log["flipped"].any() and np.allclose(log["linf"], 0.3, atol=1e-6)
    assert sorted(log["env"].unique()) == [0, 1, 2, 3]
    first = log[(log["env"] == 0) & (log["episode"] == 0)]
    assert list(first["step"]) == list(range(len(first)))
    envs.save(tmp_path / "attack.parquet")
    back = pd.read_parquet(tmp_path / "attack.parquet")
    pd.testing.assert_frame_equal(back, log, check_dtype=False)


def test_schedules_run_per_sub_env(cartpole_agent):
    envs = Attack(sync("CartPole-v1", num_envs=3), "fgsm(eps=0.3)", cartpole_agent, when="starting(episode=1)")
    obs, _ = envs.reset(seed=0)
    ended = np.zeros(3, dtype=int)
    for _ in range(300):
        obs, _, terminated, truncated, _ = envs.step(cartpole_agent.act(obs))
        ended += terminated | truncated
    log = envs.log()
    assert (log["episode"] >= 1).all()
    assert set(log["env"]) == {i for i in range(3) if ended[i] > 0}


def test_the_same_seed_gives_the_same_pgd_log(cartpole_agent):
    def run() -> pd.DataFrame:
        envs = Attack(sync("CartPole-v1", num_envs=2), "pgd(eps=0.2, steps=3)", cartpole_agent, when="prob(p=0.5)")
        obs, _ = envs.reset(seed=11)
        for _ in range(40):
            obs, *_ = envs.step(cartpole_agent.act(obs))
        return envs.log()

    first, second = run(), run()
    pd.testing.assert_frame_equal(first, second)
    assert 0 < len(first) < 80


def test_sb3_vec_env_attack_matches_the_gymnasium_one(cartpole_agent):
    from stable_baselines3.common.env_util import make_vec_env

    from rlwrappers.wrappers.sb3 import AttackVecEnv

    venv = AttackVecEnv(make_vec_env("CartPole-v1", n_envs=2, seed=3), "fgsm(eps=0.3)", cartpole_agent, seed=0)
    obs = venv.reset()
    assert venv.observation_space == gym.make("CartPole-v1").observation_space
    for _ in range(30):
        obs, _, _, _ = venv.step(cartpole_agent.act(obs))
    log = venv.log()
    assert len(log) == 60 and (log["flipped"] == (log["action"] != log["clean_action"])).all()


@pytest.mark.slow
def test_sb3_atari_stack_is_attacked_where_the_policy_sees_it(tmp_path):
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    from rlwrappers.wrappers.sb3 import AttackVecEnv

    path = SHARED_AGENTS / "ppo-BreakoutNoFrameskip-v4-seed0.zip"
    if not path.exists():
        pytest.skip(f"{path} is not here (the trained Atari agents live in shared/agents beside the repository)")
    model = PPO.load(path, device="cpu")

    def play(attack: str | None) -> tuple[float, pd.DataFrame | None]:
        venv = VecFrameStack(make_atari_env("BreakoutNoFrameskip-v4", n_envs=2, seed=0), n_stack=4)
        if attack is not None:
            venv = AttackVecEnv(venv, attack, model, seed=0)
        obs = venv.reset()
        total = 0.0
        for _ in range(150):
            actions, _ = model.predict(obs, deterministic=True)
            obs, rewards, _, _ = venv.step(actions)
            total += float(rewards.sum())
        return total, venv.log() if attack is not None else None

    clean, _ = play(None)
    attacked, log = play("fgsm(eps=0.01)")
    assert log is not None and len(log) == 300
    assert np.allclose(log["linf"], 3 / 255)  # 0.01 is 2.55 grey levels: three after rounding
    assert log["flipped"].mean() > 0.9
    assert attacked < clean


def test_bad_input_raises_at_construction(cartpole_agent):
    with pytest.raises(error.InvalidArgument, match="gradient attack"):
        Attack(sync("CartPole-v1", num_envs=2), "obs_noise(std=0.1)", cartpole_agent)
    with pytest.raises(error.InvalidArgument, match="autoreset"):
        disabled = sync("CartPole-v1", num_envs=2, autoreset_mode=gym.vector.AutoresetMode.DISABLED)
        Attack(disabled, "fgsm(eps=0.1)", cartpole_agent)
    with pytest.raises(error.IncompatibleSpace, match="shape"):
        Attack(sync("MountainCar-v0", num_envs=2), "fgsm(eps=0.1)", cartpole_agent)
    with pytest.raises(
        error.InvalidArgument, match=r"`eps` has 3 entries, which does not broadcast to the shape \(4,\)"
    ):
        Attack(sync("CartPole-v1", num_envs=2), "pgd(eps=[0.1, 0.2, 0.3])", cartpole_agent)
    from rlwrappers.wrappers.sb3 import AttackVecEnv

    with pytest.raises(error.InvalidType, match="VecEnv"):
        AttackVecEnv(sync("CartPole-v1", num_envs=2), "fgsm", cartpole_agent)
