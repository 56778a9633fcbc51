"""Trains the agent zoo shipped in ``rlwrappers/zoo/agents/``: small SB3 agents, fixed seeds, two CPU cores.

CartPole and Pendulum are trained clean and under each of seed 002's six kinds of uncertainty (Flageat et al.
2023, Section 2.2), with the same perturbation during training and in the card's "trained_under" returns.
CartPole is also trained with domain randomization over the uncertainty set ``CartPole:2``
(``ppo-CartPole-v1-randomized``: the pole's length and mass drawn anew each episode), and PPO on Hopper-v5 for
1,000,000 steps clean and over ``Hopper:3`` (``ppo-Hopper-v5-randomized``), 7 to 8 minutes a seed (seed 0 ships):

    python scripts/train_zoo.py                      # everything (about 70 minutes on two cores)
    python scripts/train_zoo.py --only ppo-CartPole-v1 --seeds 0

Each agent gets ``<name>.json`` (its card) and ``<name>-seed<k>.pt`` per seed: the state dict of the modules
that act, saved with ``torch.save`` and read back with ``torch.load(weights_only=True)``.
Parameter noise during training: the acting weights carry fresh noise for every episode and are clean
during each gradient update (noise is removed at the end of each rollout and put back at the next).

**Catch, an image task.** PPO with SB3's ``CnnPolicy`` (NatureCNN, 128 features) on ``rlwrappers/Catch-v0``
(10 balls, (84, 84, 1) frames; see ``rlwrappers.envs.catch``), 8 envs, 80,000 timesteps, no entropy bonus,
trained twice:

- ``ppo-Catch-v0``: on clean frames.
- ``ppo-Catch-v0-fgsm``: adversarial training. Every training env carries ``fgsm(eps=0.1)``, on every step,
  and the learning model's own policy is attached to it once the model is built, so each attack
  differentiates the current weights (the live policy, not a frozen copy). PPO stores what the agent saw,
  so its updates learn from attacked frames only. Each attack is one forward and one backward pass of the
  CNN, one frame at a time.

Both train in 4 to 8 minutes per seed with two workers on two shared cores (the cards' ``train_seconds``:
227 to 477 s for the clean agents, 384 to 452 s for the adversarial ones); ``--only ppo-Catch-v0
ppo-Catch-v0-fgsm`` trains the six in about 23 minutes. Every seed of both catches every ball (clean
return 10.0).

eps=0.1 in [0, 1] pixel scale is 26 grey levels after the default re-quantization. At that size FGSM flips
39% of the clean agents' decisions (mean of three seeds) and cuts their return from 10 to 6.0, against 13%
and 10.0 for the adversarial agents; at eps=0.05 it flips 20% and costs little. No entropy bonus, because
many Catch states have two actions that both still catch the ball: with ``ent_coef=0.01`` the policies
keep near ties there, and in a trial (one seed, FGSM on half the steps) the adversarial agent kept its
return under attack but flipped as often as the clean one, so flip rates said nothing about robustness.

Every Catch agent, clean or not, is also evaluated under FGSM at several sizes: the card's
``returns["attacked"]`` holds each spec's returns and its flip rate (the share of decisions whose action on
the attacked frame differs from the greedy action on the clean one).

**MiniGrid, an image task behind a ladder's preprocessing.** ``ppo-MiniGrid-Empty-5x5-v0``: PPO with
``CnnPolicy`` (NatureCNN, 64 features) on ``MiniGrid-Empty-5x5-v0`` behind the ``"minigrid-rgb"`` preprocessing
(``rlwrappers.ladders.preprocessing.MiniGridPixels``: the agent's 7x7 view as a 56x56x3 RGB picture), 8 envs,
50,000 timesteps, ``ent_coef=0.01``. A task's ``preprocessing`` builds its env as a card builds the ladder's,
``build_env(env_id, {}, preprocessing)``, for training and for the card's returns; the card records it, and
``load_agent`` builds the policy on that env's observation space. Each seed trains in 79 to 166 s with two
workers on two shared cores. Seeds 0, 1 and 2 all take the shortest path, 5 steps, in every evaluation episode:
clean return 0.955 (``1 - 0.9 * 5 / 100``, the most an episode pays). The env starts the agent on the same
cell, facing the same way, every episode, so the 20 evaluation episodes are one episode played 20 times.

**Clean agents on classic control, LunarLander and the inverted pendulums.** Six tasks have no ``kinds``: they
train clean agents only, seeds 0, 1 and 2, from RL Zoo's tuned settings (``rlwrappers.zoo.hyperparams``) but
the pendulums' (below). The seconds are the cards'
``train_seconds`` (one worker, on two cores shared with other jobs); the returns are each seed's mean clean
return over the 20 evaluation episodes, with gymnasium's reward threshold in brackets. Together they train in
about 25 minutes with two workers.

- ``ppo-Acrobot-v1`` (-100): PPO, [64, 64], 16 envs, 500,000 steps, ``n_steps=256``, ``gae_lambda=0.94``,
  ``gamma=0.99``, ``n_epochs=4``, no entropy bonus. RL Zoo trains 1,000,000 steps behind ``VecNormalize``; here
  the observations are raw, as a card holds no normalization statistics. 312 to 341 s a seed; returns -79.9, -76.3
  and -79.3. DQN with RL Zoo's settings on [64, 64] (100,000 steps) ended at -82, -87 and -82 too, but its greedy
  policy fell to -500 (it never swung up) at some of the evaluations along training.
- ``dqn-MountainCar-v0`` (-110): DQN, [256, 256], 120,000 steps, RL Zoo's settings (``learning_rate=4e-3``, batch
  128, a 10,000-step buffer, the target network copied every 600 steps, 8 gradient steps every 16 steps, epsilon
  from 1 to 0.07 over the first 20% of training) with ``gamma=0.99`` for its 0.98. The card saves ``q_net``, the
  network that acts. 103 to 106 s a seed; returns -111.8, -105.7 and -126.0. With 0.98 the seeds ended at -107.7,
  -119.2 and -131.7, and the greedy policy swung by up to 80 from one evaluation to the next (every 10,000 steps,
  10 episodes; -101 then -181 on seed 0 at 100,000 and 110,000 steps). 240,000 steps (-139 on seed 0), a
  50,000-step buffer over 150,000 steps (-193, -152 and -106) and a learning rate decaying linearly to zero (-116,
  -152 and -106) did worse. With 0.99 the evaluations at 100,000 and 120,000 steps stayed between -98 and -111 on
  every seed; the likely reason is that a step's delay weighs more against the return (0.99^100 = 0.37 where
  0.98^100 = 0.13, a hundred steps from the goal), so the actions' values stand further apart.
- ``td3-MountainCarContinuous-v0`` (90): TD3, [64, 64], 50,000 steps, ``learning_rate=1e-3``, batch 256, and
  Ornstein-Uhlenbeck action noise of standard deviation 0.5. The noise is written as RL Zoo writes it,
  ``noise_type`` and ``noise_std`` among the hyperparameters (the card keeps them so), and ``algo_kwargs``
  makes SB3's ``action_noise`` of them. RL Zoo trains 300,000 steps with [400, 300]; here every seed reached
  the goal in every evaluation episode by 40,000 steps. 189 to 238 s a seed; returns 95.1, 92.6 and 93.3.
- ``ppo-LunarLander-v3`` (200): PPO, [64, 64], 16 envs, 1,000,000 steps, RL Zoo's settings (``n_steps=1024``,
  batch 64, ``gae_lambda=0.98``, ``gamma=0.999``, ``n_epochs=4``, ``ent_coef=0.01``); Box2D comes with the
  ``box2d`` extra. 242 to 308 s a seed; returns 258.6, 247.4 and 255.9, every evaluation episode above 211.
  RL Zoo's DQN ([256, 256]) reached 186 after 100,000 steps and 205 after 200,000 on seed 0, with crashed
  landings among its episodes.
- ``ppo-InvertedPendulum-v5`` (950): PPO, [64, 64], 4 envs, 100,000 steps, SB3's defaults but ``n_steps=512``.
  RL Zoo's settings need ``VecNormalize``, which a card does not hold; these balance the pole for all 1,000 steps
  from 50,000 steps on (a trial evaluated every 25,000). 35 to 37 s a seed; returns 1000.0 on every seed.
- ``ppo-InvertedDoublePendulum-v5`` (9100): the same settings, 400,000 steps. At 200,000 steps seeds 0 and 2
  balanced (9337, 9320) and seed 1 did not (1801). 151 to 242 s a seed; returns 9326.4, 9359.2 and 9355.9, every
  evaluation episode above 9,300.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import stable_baselines3 as sb3
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import ActionNoise, NormalActionNoise, OrnsteinUhlenbeckActionNoise
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

import rlwrappers as rw
from rlwrappers import envs
from rlwrappers.agents import SB3Agent
from rlwrappers.core import INFO_KEY
from rlwrappers.ladders.preprocessing import build_env
from rlwrappers.uncertainty import uncertainty_set
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
    policy: str = "MlpPolicy"
    #: Training envs (one: the env is given to SB3 as is; more: a DummyVecEnv seeded seed, seed + 1, ...).
    n_envs: int = 1
    #: Attack specs every agent of the task is evaluated under, with its flip rate.
    attacks: tuple[str, ...] = ()
    #: The preprocessing the agent sees the env through, as a ladder names it (``build_env``): None for none.
    preprocessing: str | None = None


def _pendulum(env_id: str, timesteps: int) -> Task:
    """An inverted pendulum's clean PPO task: SB3's defaults but ``n_steps=512``, 4 envs (see the module docstring)."""
    return Task(
        algo="PPO",
        env_id=env_id,
        timesteps=timesteps,
        hyperparameters=dict(n_steps=512, batch_size=64, n_epochs=10, learning_rate=3e-4, gamma=0.99),
        policy_kwargs=dict(net_arch=[64, 64]),
        module="policy",
        n_envs=4,
    )


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
        # Seed 002's six kinds, and domain randomization over the pole's length and mass.
        kinds={**UNCERTAINTIES["CartPole-v1"], "randomized": uncertainty_set("CartPole", dims=2).spec()},
    ),
    Task(
        algo="PPO",
        env_id="Hopper-v5",
        timesteps=1_000_000,
        hyperparameters=dict(n_steps=2048, batch_size=64, n_epochs=10, learning_rate=3e-4, gamma=0.99),
        policy_kwargs=dict(net_arch=[64, 64]),
        module="policy",
        # Domain randomization over M2TD3's 3-D box (which leaves out Hopper's nominal torso and thigh masses).
        kinds={"randomized": uncertainty_set("Hopper", dims=3).spec()},
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
    Task(
        algo="PPO",
        env_id=envs.CATCH_ID,
        timesteps=80_000,
        hyperparameters=dict(
            n_steps=128, batch_size=256, n_epochs=4, learning_rate=5e-4, gamma=0.99, gae_lambda=0.95, ent_coef=0.0
        ),
        policy_kwargs=dict(features_extractor_kwargs=dict(features_dim=128)),
        module="policy",
        kinds={"fgsm": "fgsm(eps=0.1)"},
        policy="CnnPolicy",
        n_envs=8,
        attacks=("fgsm(eps=0.02)", "fgsm(eps=0.05)", "fgsm(eps=0.1)", "fgsm(eps=0.2)"),
    ),
    # Clean agents on more classic-control envs, from RL Zoo's tuned settings.
    Task(
        algo="PPO",
        env_id="Acrobot-v1",
        timesteps=500_000,
        hyperparameters=dict(n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4, ent_coef=0.0),
        policy_kwargs=dict(net_arch=[64, 64]),
        module="policy",
        n_envs=16,
    ),
    Task(
        algo="DQN",
        env_id="MountainCar-v0",
        timesteps=120_000,
        # RL Zoo's settings with gamma 0.99 for its 0.98 (see the module docstring).
        hyperparameters=dict(
            learning_rate=4e-3,
            batch_size=128,
            buffer_size=10_000,
            learning_starts=1_000,
            gamma=0.99,
            target_update_interval=600,
            train_freq=16,
            gradient_steps=8,
            exploration_fraction=0.2,
            exploration_final_eps=0.07,
        ),
        policy_kwargs=dict(net_arch=[256, 256]),
        module="q_net",
    ),
    Task(
        algo="TD3",
        env_id="MountainCarContinuous-v0",
        timesteps=50_000,
        hyperparameters=dict(noise_type="ornstein-uhlenbeck", noise_std=0.5, learning_rate=1e-3, batch_size=256),
        policy_kwargs=dict(net_arch=[64, 64]),
        module="actor",
    ),
    Task(
        algo="PPO",
        env_id="LunarLander-v3",
        timesteps=1_000_000,
        hyperparameters=dict(n_steps=1024, batch_size=64, gae_lambda=0.98, gamma=0.999, n_epochs=4, ent_coef=0.01),
        policy_kwargs=dict(net_arch=[64, 64]),
        module="policy",
        n_envs=16,
    ),
    _pendulum("InvertedPendulum-v5", 100_000),
    _pendulum("InvertedDoublePendulum-v5", 400_000),
    # An image task: MiniGrid's 7x7 partial view as a 56x56x3 RGB picture, as the MiniGrid ladders build it.
    Task(
        algo="PPO",
        env_id="MiniGrid-Empty-5x5-v0",
        timesteps=50_000,
        hyperparameters=dict(
            n_steps=128, batch_size=256, n_epochs=4, learning_rate=5e-4, gamma=0.99, gae_lambda=0.95, ent_coef=0.01
        ),
        policy_kwargs=dict(features_extractor_kwargs=dict(features_dim=64)),
        module="policy",
        policy="CnnPolicy",
        n_envs=8,
        preprocessing="minigrid-rgb",
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
    """The zoo name of ``task`` trained under ``kind`` (None: clean); an env ID's namespace is left out."""
    base = f"{task.algo.lower()}-{task.env_id.rsplit('/', 1)[-1]}"
    return base if kind is None else f"{base}-{kind}"


def make_env(task: Task, spec: str | None) -> gym.Env[Any, Any]:
    """The training env: preprocessed, then perturbed by ``spec`` (parameter noise acts on the agent, not the env)."""
    env = build_env(task.env_id, {}, task.preprocessing)
    return env if spec is None or spec.startswith("param_noise") else rw.wrap(env, spec)


def returns(agent: SB3Agent, task: Task, spec: str | None) -> dict[str, Any]:
    """Deterministic returns over EVAL_EPISODES episodes seeded EVAL_SEED, EVAL_SEED + 1, ...

    Under an attack, also the flip rate: the share of attacked decisions whose action differs from the
    greedy action on the clean observation.
    """
    env = build_env(task.env_id, {}, task.preprocessing)
    if spec is not None:
        env = rw.wrap(env, spec)
        rw.attach(env, agent)
    out, flips = [], []
    for episode in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=EVAL_SEED + episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act_one(obs))
            total += float(reward)
            done = terminated or truncated
            flips += [r["flipped"] for r in info.get(INFO_KEY, {}).values() if r.get("flipped") is not None]
        out.append(total)
    env.close()
    result = {"mean": float(np.mean(out)), "std": float(np.std(out)), "returns": out}
    if flips:
        result["flip_rate"] = float(np.mean(flips))
    return result


def training_env(task: Task, spec: str | None, seed: int) -> gym.Env[Any, Any] | VecEnv:
    """The env the model trains on: the env itself for one env, a DummyVecEnv of ``n_envs`` otherwise."""
    if task.n_envs == 1:
        return make_env(task, spec)
    return make_vec_env(lambda: make_env(task, spec), n_envs=task.n_envs, seed=seed)


def algo_kwargs(task: Task) -> dict[str, Any]:
    """The task's hyperparameters as SB3 takes them: RL Zoo's ``noise_type`` and ``noise_std`` make ``action_noise``.

    ``noise_type`` is ``"normal"`` or ``"ornstein-uhlenbeck"`` and ``noise_std`` the noise's standard deviation on
    every action dimension, as in RL Zoo's hyperparameter files (the card keeps them as written).
    """
    kwargs = dict(task.hyperparameters)
    noise_type, noise_std = kwargs.pop("noise_type", None), kwargs.pop("noise_std", None)
    if noise_type is None:
        return kwargs
    kinds: dict[str, Callable[..., ActionNoise]] = {
        "normal": NormalActionNoise,
        "ornstein-uhlenbeck": OrnsteinUhlenbeckActionNoise,
    }
    shape = gym.make(task.env_id).action_space.shape
    assert shape is not None and noise_std is not None
    kwargs["action_noise"] = kinds[noise_type](mean=np.zeros(shape), sigma=float(noise_std) * np.ones(shape))
    return kwargs


def attach_live_policy(model: Any) -> int:
    """Attaches the learning model's policy to every training env's attacks; returns how many there are.

    The attacks hold the policy module itself, so every attack differentiates the current weights.
    """
    venv = model.get_env()
    sub_envs = venv.unwrapped.envs if venv is not None and isinstance(venv.unwrapped, DummyVecEnv) else []
    return sum(rw.attach(env, model.policy) for env in sub_envs)


def train_one(task: Task, kind: str | None, seed: int) -> dict[str, Any]:
    """Trains one agent, saves its weights, measures its returns; returns its card's seed entry."""
    torch.set_num_threads(1)
    spec = None if kind is None else task.kinds[kind]
    start = time.time()
    algo = getattr(sb3, task.algo)
    model = algo(
        task.policy,
        training_env(task, spec, seed),
        seed=seed,
        device="cpu",
        policy_kwargs=task.policy_kwargs,
        **algo_kwargs(task),
    )
    callback = None
    if spec is not None and spec.startswith("param_noise"):
        callback = ParameterNoiseCallback(float(rw.core.Entry.parse(spec).perturbation.params()["std"]), seed)
    elif spec is not None and rw.core.Entry.parse(spec).perturbation.needs_agent:
        if attach_live_policy(model) != task.n_envs:
            raise RuntimeError(f"{spec!r} is not in every training env of {name_of(task, kind)}")
    model.learn(task.timesteps, callback=callback)
    train_seconds = round(time.time() - start, 1)
    module = model.policy if task.module == "policy" else getattr(model.policy, task.module)
    path = DIRECTORY / f"{name_of(task, kind)}-seed{seed}.pt"
    torch.save(module.state_dict(), path)
    # The env's own observation space: channel-last images are transposed for a CnnPolicy.
    agent = SB3Agent(model, observation_space=make_env(task, None).observation_space)
    result: dict[str, Any] = {
        "file": path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "train_seconds": train_seconds,
        "returns": {"clean": returns(agent, task, None)},
    }
    if spec is not None:
        result["returns"]["trained_under"] = returns(agent, task, spec)
    if task.attacks:
        result["returns"]["attacked"] = {attack: returns(agent, task, attack) for attack in task.attacks}
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
            "policy": task.policy,
            "preprocessing": task.preprocessing,
            "module": task.module,
            "trained_under": None if kind is None else task.kinds[kind],
            "timesteps": task.timesteps,
            "n_envs": task.n_envs,
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
