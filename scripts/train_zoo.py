"""Trains the agent zoo shipped in ``rlwrappers/zoo/agents/``: small SB3 agents, fixed seeds, two CPU cores.

Every task is trained clean and under each of seed 002's six kinds of uncertainty (Flageat et al. 2023,
Section 2.2), with the same perturbation during training and in the card's "trained_under" returns:

    python scripts/train_zoo.py                      # everything (about 20 minutes on two cores)
    python scripts/train_zoo.py --only ppo-CartPole-v1 --seeds 0

Each agent gets ``<name>.json`` (its card) and ``<name>-seed<k>.pt`` per seed: the state dict of the modules
that act, saved with ``torch.save`` and read back with ``torch.load(weights_only=True)``.
Parameter noise during training: the acting weights carry fresh noise for every episode and are clean
during each gradient update (noise is removed at the end of each rollout and put back at the next).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import platform
import time
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import stable_baselines3 as sb3
import torch
from stable_baselines3.common.callbacks import BaseCallback

import rlwrappers as rw
from rlwrappers.agents import SB3Agent
from rlwrappers.wrappers.policy import Saved, add_noise, draw_noise, restore
from rlwrappers.zoo import DIRECTORY, UNCERTAINTIES

SEEDS = (0, 1, 2)
EVAL_EPISODES = 20
#: Episode seeds of the card's returns: far from any seed used in training.
EVAL_SEED = 10_000


@dataclass(frozen=True)
class Task:
    """One algorithm on one env: its settings and the perturbation spec of each kind of uncertainty."""

    algo: str
    env_id: str
    timesteps: int
    hyperparameters: dict[str, Any]
    policy_kwargs: dict[str, Any]
    #: The state dict saved: the whole policy, or only the module that acts.
    module: str
    kinds: dict[str, str] = field(default_factory=dict)


TASKS = (
    Task(
        algo="PPO",
        env_id="CartPole-v1",
        timesteps=50_000,
        hyperparameters=dict(
            n_steps=256, batch_size=64, n_epochs=10, gae_lambda=0.8, gamma=0.98, learning_rate=1e-3, ent_coef=0.0
        ),
        policy_kwargs=dict(net_arch=[64, 64]),
        module="policy",
        kinds=dict(UNCERTAINTIES["CartPole-v1"]),
    ),
    Task(
        algo="TD3",
        env_id="Pendulum-v1",
        timesteps=15_000,
        hyperparameters=dict(learning_starts=1_000, learning_rate=1e-3, gamma=0.98),
        policy_kwargs=dict(net_arch=[64, 64]),
        module="actor",
        kinds=dict(UNCERTAINTIES["Pendulum-v1"]),
    ),
)


class ParameterNoiseCallback(BaseCallback):
    """Gives the acting policy fresh weight noise for every episode; updates see the clean weights."""

    def __init__(self, std: float, seed: int):
        super().__init__()
        self.std = std
        self.rng = np.random.default_rng(seed)
        self._saved: Saved | None = None

    def _draw(self) -> None:
        self._params = SB3Agent(self.model.policy).parameters()
        self._noise = draw_noise(self._params, self.std, self.rng)

    def _on_training_start(self) -> None:
        self._draw()

    def _on_rollout_start(self) -> None:
        self._saved = add_noise(self._params, self._noise)

    def _on_step(self) -> bool:
        if np.any(self.locals["dones"]):
            assert self._saved is not None
            restore(self._saved)
            self._draw()
            self._saved = add_noise(self._params, self._noise)
        return True

    def _on_rollout_end(self) -> None:
        assert self._saved is not None
        restore(self._saved)
        self._saved = None


def name_of(task: Task, kind: str | None) -> str:
    """The zoo name of ``task`` trained under ``kind`` (None: clean)."""
    base = f"{task.algo.lower()}-{task.env_id}"
    return base if kind is None else f"{base}-{kind}"


def make_env(task: Task, spec: str | None) -> gym.Env[Any, Any]:
    """The training env: perturbed by ``spec`` (parameter noise acts on the agent, not the env)."""
    env = gym.make(task.env_id)
    return env if spec is None or spec.startswith("param_noise") else rw.wrap(env, spec)


def returns(agent: SB3Agent, task: Task, spec: str | None) -> dict[str, Any]:
    """Deterministic returns over EVAL_EPISODES episodes seeded EVAL_SEED, EVAL_SEED + 1, ..."""
    env = gym.make(task.env_id)
    if spec is not None:
        env = rw.wrap(env, spec)
        rw.attach(env, agent)
    out = []
    for episode in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=EVAL_SEED + episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(agent.act_one(obs))
            total += float(reward)
            done = terminated or truncated
        out.append(total)
    env.close()
    return {"mean": float(np.mean(out)), "std": float(np.std(out)), "returns": out}


def train_one(task: Task, kind: str | None, seed: int) -> dict[str, Any]:
    """Trains one agent, saves its weights, measures its returns; returns its card's seed entry."""
    torch.set_num_threads(1)
    spec = None if kind is None else task.kinds[kind]
    start = time.time()
    algo = getattr(sb3, task.algo)
    model = algo(
        "MlpPolicy",
        make_env(task, spec),
        seed=seed,
        device="cpu",
        policy_kwargs=task.policy_kwargs,
        **task.hyperparameters,
    )
    callback = None
    if spec is not None and spec.startswith("param_noise"):
        callback = ParameterNoiseCallback(float(rw.core.Entry.parse(spec).perturbation.params()["std"]), seed)
    model.learn(task.timesteps, callback=callback)
    module = model.policy if task.module == "policy" else getattr(model.policy, task.module)
    path = DIRECTORY / f"{name_of(task, kind)}-seed{seed}.pt"
    torch.save(module.state_dict(), path)
    agent = SB3Agent(model)
    result = {
        "file": path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "train_seconds": round(time.time() - start, 1),
        "returns": {"clean": returns(agent, task, None)},
    }
    if spec is not None:
        result["returns"]["trained_under"] = returns(agent, task, spec)
    return result


def _job(args: tuple[int, str | None, int]) -> tuple[int, str | None, int, dict[str, Any]]:
    index, kind, seed = args
    return index, kind, seed, train_one(TASKS[index], kind, seed)


def main() -> None:
    """Trains the jobs asked for in parallel, then writes or updates each agent's card."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="agent names to train (default: all)")
    parser.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    jobs = [
        (index, kind, seed)
        for index, task in enumerate(TASKS)
        for kind in (None, *task.kinds)
        if not args.only or name_of(task, kind) in args.only
        for seed in args.seeds
    ]
    DIRECTORY.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        for index, kind, seed, result in pool.imap_unordered(_job, jobs):
            name = name_of(TASKS[index], kind)
            results.setdefault(name, {})[str(seed)] = result
            print(f"{name} seed {seed}: clean {result['returns']['clean']['mean']:.1f}", flush=True)
    for name, seeds in results.items():
        task, kind = next((t, k) for t in TASKS for k in (None, *t.kinds) if name_of(t, k) == name)
        path = DIRECTORY / f"{name}.json"
        previous = json.loads(path.read_text())["seeds"] if path.exists() else {}
        card = {
            "name": name,
            "algo": task.algo,
            "env_id": task.env_id,
            "policy": "MlpPolicy",
            "module": task.module,
            "trained_under": None if kind is None else task.kinds[kind],
            "timesteps": task.timesteps,
            "hyperparameters": task.hyperparameters,
            "policy_kwargs": task.policy_kwargs,
            "evaluation": {"episodes": EVAL_EPISODES, "first_seed": EVAL_SEED, "deterministic": True},
            "versions": {
                "rlwrappers": rw.__version__,
                "stable_baselines3": sb3.__version__,
                "torch": torch.__version__.split("+")[0],
                "gymnasium": gym.__version__,
                "python": platform.python_version(),
            },
            "seeds": dict(sorted({**previous, **seeds}.items())),
        }
        path.write_text(json.dumps(card, indent=1) + "\n")


if __name__ == "__main__":
    main()
