"""Trains pipelines of agents on Toybox Breakout, with checkpoints, for offline robustness (seed 000).

Seed 000 trains eleven agents per pipeline (one algorithm with its settings, training seeds 0..10), samples
states from one of them and measures R on the other ten at several checkpoints of training. This script does
the same on ``rlwrappers/ToyboxBreakout-v0``, with budgets two CPU cores allow:

    python scripts/train_toybox.py                                   # ppo and a2c, seeds 0-5, 100k steps
    python scripts/train_toybox.py --algos ppo --seeds 3 --timesteps 2048 --checkpoints 1024,2048 --out /tmp/tb

**Env.** Toybox's own frames (they differ from ALE's) through SB3's Atari preprocessing: ``make_vec_env``
with ``AtariWrapper`` (noop reset, frame skip 4 with max-pooling, a life ends an episode, FIRE at the start of
each life, 84 x 84 grayscale, rewards clipped to their sign) and ``VecFrameStack(4)``, as ``make_atari_env``
builds it for ALE. Agents trained here act on :func:`rlwrappers.sb3.atari_wrapper` observations.

**Pipelines.** ``ppo`` and ``a2c`` with SB3's ``CnnPolicy`` (the Nature CNN) and the Atari settings of the
RL Baselines3 Zoo: PPO with 8 envs, 128 steps per env per update, 4 epochs of minibatches of 256,
learning rate 2.5e-4, clip 0.1, entropy 0.01; A2C with 16 envs, 5 steps, entropy 0.01, value 0.25 and
RMSprop (TF-like, eps 1e-5). Each training seed seeds the policy, the envs and SB3's sampling.

**Budget.** ``timesteps`` agent steps per agent (100,000 by default: 400,000 frames, 2.5% of the zoo's 10M),
with checkpoints at 10,000, 30,000 and 100,000 steps. One torch thread per agent, ``workers`` agents at a
time; the same seed trains the same weights (tested). The wall time per agent is written to the manifest: on
two shared CPU cores, 716-828 s per PPO agent and 278-446 s per A2C agent, 56 minutes for the default run.

**Outputs.** ``OUT/<algo>/seed<k>/step<N>.zip`` per checkpoint (SB3 zips) and ``OUT/manifest.json``: the env,
each pipeline's settings, the budget, the versions and, per agent and checkpoint, the file, its SHA-256 and its
return in one full game (every life, greedy, env seed 10000 + k). ``rlwrappers robustness --runs OUT`` reads
the manifest: per pipeline, the last seed samples the states and the others are measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

ENV_ID = "rlwrappers/ToyboxBreakout-v0"
FRAME_STACK = 4
EVAL_SEED = 10_000
MAX_EVAL_STEPS = 27_000  # the 108,000-frame truncation, in agent steps of four frames

PIPELINES: dict[str, dict[str, Any]] = {
    "ppo": {
        "algo": "PPO",
        "n_envs": 8,
        "hyperparameters": {
            "n_steps": 128,
            "n_epochs": 4,
            "batch_size": 256,
            "learning_rate": 2.5e-4,
            "clip_range": 0.1,
            "ent_coef": 0.01,
            "vf_coef": 0.5,
        },
        "policy_kwargs": {},
    },
    "a2c": {
        "algo": "A2C",
        "n_envs": 16,
        "hyperparameters": {"n_steps": 5, "ent_coef": 0.01, "vf_coef": 0.25},
        "policy_kwargs": {"optimizer_class": "RMSpropTFLike", "optimizer_kwargs": {"eps": 1e-5}},
    },
}


def _policy_kwargs(settings: dict[str, Any]) -> dict[str, Any]:
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    kwargs = dict(settings["policy_kwargs"])
    if kwargs.get("optimizer_class") == "RMSpropTFLike":
        kwargs["optimizer_class"] = RMSpropTFLike
    return kwargs


def full_game_return(path: Path, seed: int) -> float:
    """The greedy return of the agent in ``path`` over one full game (every life) of Toybox Breakout."""
    import rlwrappers.envs  # noqa: F401  (registers the Toybox envs)

    from rlwrappers.wrappers.atari import atari_wrapper
    from rlwrappers.zoo import load_agent

    env = atari_wrapper(gym.make(ENV_ID))
    agent = load_agent(path, observation_space=env.observation_space)
    obs, _ = env.reset(seed=seed)
    total = 0.0
    for _ in range(MAX_EVAL_STEPS):
        obs, reward, terminated, truncated, _ = env.step(agent.act_one(obs))
        total += float(reward)
        if terminated or truncated:
            if env.unwrapped.game_over or truncated:  # type: ignore[attr-defined]
                break
            obs, _ = env.reset()
    env.close()
    return total


def train(algo: str, seed: int, timesteps: int, checkpoints: list[int], out: Path) -> dict[str, Any]:
    """Trains one agent of pipeline ``algo`` with ``seed`` and returns its manifest entry."""
    import rlwrappers.envs  # noqa: F401  (registers the Toybox envs)
    import stable_baselines3 as sb3
    import torch
    from stable_baselines3.common.atari_wrappers import AtariWrapper
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack

    torch.set_num_threads(1)
    settings = PIPELINES[algo]
    directory = out / algo / f"seed{seed}"
    directory.mkdir(parents=True, exist_ok=True)
    env = VecFrameStack(
        make_vec_env(ENV_ID, n_envs=settings["n_envs"], seed=seed, wrapper_class=AtariWrapper), FRAME_STACK
    )
    model = getattr(sb3, settings["algo"])(
        "CnnPolicy",
        env,
        seed=seed,
        device="cpu",
        policy_kwargs=_policy_kwargs(settings),
        **settings["hyperparameters"],
    )
    pending = sorted(checkpoints)
    saved: dict[int, Path] = {}

    class Checkpoints(BaseCallback):
        def _on_step(self) -> bool:
            while pending and self.num_timesteps >= pending[0]:
                step = pending.pop(0)
                saved[step] = directory / f"step{step}.zip"
                self.model.save(saved[step])
            return True

    start = time.perf_counter()
    model.learn(timesteps, callback=Checkpoints())
    seconds = time.perf_counter() - start
    env.close()
    entry: dict[str, Any] = {"train_seconds": round(seconds, 1), "checkpoints": {}}
    for step, path in sorted(saved.items()):
        entry["checkpoints"][str(step)] = {
            "file": str(path.relative_to(out)),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "return": full_game_return(path, EVAL_SEED + seed),
        }
    print(f"{algo} seed {seed}: {seconds:.0f} s; returns {[c['return'] for c in entry['checkpoints'].values()]}")
    return entry


def _versions() -> dict[str, str]:
    import ctoybox
    import stable_baselines3
    import torch

    from rlwrappers import __version__

    return {
        "rlwrappers": __version__,
        "stable_baselines3": stable_baselines3.__version__,
        "torch": torch.__version__,
        "gymnasium": gym.__version__,
        "ctoybox": getattr(ctoybox, "__version__", "unknown"),
        "python": platform.python_version(),
    }


def main() -> None:
    """Trains every (pipeline, seed) and writes the manifest."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", default="runs/toybox-breakout", help="output directory")
    parser.add_argument("--algos", default="ppo,a2c", help=f"pipelines, from {sorted(PIPELINES)}")
    parser.add_argument("--seeds", type=int, default=6, help="agents per pipeline, seeds 0..N-1 (n measured + 1)")
    parser.add_argument("--timesteps", type=int, default=100_000, help="agent steps per agent")
    parser.add_argument("--checkpoints", default="10000,30000,100000", help="steps to save at, comma-separated")
    parser.add_argument("--workers", type=int, default=2, help="agents trained at a time")
    args = parser.parse_args()
    algos = args.algos.split(",")
    unknown = sorted(set(algos) - set(PIPELINES))
    if unknown:
        parser.error(f"--algos: unknown pipelines {unknown}; choose from {sorted(PIPELINES)}")
    checkpoints = sorted(int(step) for step in args.checkpoints.split(","))
    if args.seeds < 3 or checkpoints[-1] > args.timesteps or checkpoints[0] < 1:
        parser.error("need --seeds >= 3 (two measured agents and one that samples states) and checkpoints in budget")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(algo, seed) for algo in algos for seed in range(args.seeds)]
    with ProcessPoolExecutor(args.workers) as pool:
        futures = {job: pool.submit(train, *job, args.timesteps, checkpoints, out) for job in jobs}
        agents = {algo: {str(seed): futures[algo, seed].result() for seed in range(args.seeds)} for algo in algos}
    manifest = {
        "env_id": ENV_ID,
        "preprocessing": "atari",
        "frame_stack": FRAME_STACK,
        "timesteps": args.timesteps,
        "checkpoints": checkpoints,
        "seeds": args.seeds,
        "eval": {"games": 1, "first_seed": EVAL_SEED, "deterministic": True},
        "pipelines": {algo: PIPELINES[algo] for algo in algos},
        "agents": agents,
        "versions": _versions(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for algo in algos:
        for step in checkpoints:
            returns = [agents[algo][str(seed)]["checkpoints"][str(step)]["return"] for seed in range(args.seeds)]
            print(f"{algo} at {step}: mean full-game return {np.mean(returns):.1f} ({returns})")


if __name__ == "__main__":
    main()
