"""PPO on a perturbed CartPole, in CleanRL's single-file style, then a same-seed clean vs perturbed evaluation.

The env thunk shows where perturbations go in a CleanRL stack: Gymnasium's episode statistics below them (the
task's true return), the perturbation layer, and an ``rw.Recorder`` outermost (what the agent experienced).
The trained network is saved as CleanRL saves it (``OUT/agent.cleanrl_model``, a state dict), and
:func:`make_agent` loads it for rlwrappers' command line:

    python examples/cleanrl_ppo_cartpole.py --total-timesteps 50000
    CLEANRL_MODEL=runs/cleanrl_ppo/agent.cleanrl_model rlwrappers evaluate --env CartPole-v1 \
        --agent examples/cleanrl_ppo_cartpole.py:make_agent --shift "obs_noise(std=0.1)" --out runs/cleanrl-eval
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import rlwrappers as rw
from rlwrappers.agents import TorchAgent
from rlwrappers.logs import Log

#: The file the trained network is saved to, in ``Args.out``.
MODEL_FILE = "agent.cleanrl_model"


@dataclass
class Args:
    env_id: str = "CartPole-v1"
    seed: int = 1
    total_timesteps: int = 50_000
    learning_rate: float = 2.5e-4
    num_envs: int = 4
    num_steps: int = 128
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    perturbations: tuple[str, ...] = (
        "obs_noise(std=0.05)",
        "sticky_action(p=0.5, when=bursts(p=0.01, duration=(10, 30)))",
    )
    """the perturbations of training and of the perturbed evaluation, as spec strings"""
    train_perturbed: bool = True
    """train under the perturbations (else on the clean env)"""
    eval_episodes: int = 5
    """evaluation episodes in each condition, reset with seeds seed + 1000 + i in both"""
    out: str = "runs/cleanrl_ppo"
    """evaluation logs go to OUT/eval-clean and OUT/eval-perturbed"""


def make_env(env_id: str, idx: int, perturbations: tuple[str, ...], log_dir: str | None = None) -> Any:
    def thunk() -> gym.Env[Any, Any]:
        env = gym.make(env_id)
        env = gym.wrappers.RecordEpisodeStatistics(env)  # the task's true return, below the perturbations
        if perturbations:
            env = rw.wrap(env, *perturbations)  # one layer; each spec carries its own schedule
        if log_dir is not None:
            env = rw.Recorder(env, Path(log_dir) / f"env{idx}", overwrite=True)  # outermost
        return env

    return thunk


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, n_actions), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def make_agent(observation_space: gym.spaces.Box, action_space: gym.spaces.Discrete) -> TorchAgent:
    """The saved network as an rlwrappers agent: ``--agent examples/cleanrl_ppo_cartpole.py:make_agent``.

    The checkpoint is ``$CLEANRL_MODEL`` (default: ``runs/cleanrl_ppo/agent.cleanrl_model``, where ``main`` saves it).
    """
    path = Path(os.environ.get("CLEANRL_MODEL", Path(Args.out) / MODEL_FILE))
    if not path.is_file():
        raise FileNotFoundError(
            f"no CleanRL checkpoint at {str(path)!r}: train one with this script, or set CLEANRL_MODEL"
        )
    network = Agent(int(np.prod(observation_space.shape)), int(action_space.n))
    network.load_state_dict(torch.load(path, weights_only=True))
    return TorchAgent(
        network,
        observation_space,
        action_space,
        head="logits",
        forward=lambda m, x: m.actor(x),
        value=lambda m, x: m.critic(x),
    )


def train(args: Args) -> Agent:
    torch.manual_seed(args.seed)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(1, args.total_timesteps // batch_size)
    perturbations = args.perturbations if args.train_perturbed else ()
    envs = gym.vector.SyncVectorEnv(
        [make_env(args.env_id, i, perturbations) for i in range(args.num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    obs_dim = int(np.prod(envs.single_observation_space.shape))
    agent = Agent(obs_dim, int(envs.single_action_space.n))
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs, obs_dim))
    actions = torch.zeros((args.num_steps, args.num_envs))
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    next_obs_np, _ = envs.reset(seed=args.seed)
    next_obs, next_done = torch.Tensor(next_obs_np), torch.zeros(args.num_envs)
    returns_seen: list[float] = []
    for iteration in range(1, num_iterations + 1):
        optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * args.learning_rate
        for step in range(args.num_steps):
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            next_obs_np, reward, terminations, truncations, infos = envs.step(action.numpy())
            rewards[step] = torch.tensor(reward, dtype=torch.float32)
            next_obs = torch.Tensor(next_obs_np)
            next_done = torch.Tensor(np.logical_or(terminations, truncations).astype(np.float32))
            final = infos.get("final_info", {})
            if "episode" in final:
                returns_seen += [float(r) for r in final["episode"]["r"][final["_episode"]]]

        with torch.no_grad():  # generalized advantage estimation
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                nextnonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                nextvalues = next_value if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values

        b_obs, b_logprobs, b_actions = obs.reshape(-1, obs_dim), logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        b_inds = np.arange(batch_size)
        for _ in range(args.update_epochs):
            np.random.default_rng(args.seed + iteration).shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                mb = b_inds[start : start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions.long()[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(
                    -mb_adv * ratio, -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        recent = returns_seen[-20:]
        mean = f"{np.mean(recent):.1f}" if recent else "-"
        print(f"iteration {iteration}/{num_iterations}: mean return of the last {len(recent)} episodes {mean}")
    envs.close()
    return agent


def evaluate(agent: Agent, args: Args, perturbations: tuple[str, ...], log_dir: Path) -> Log:
    env = make_env(args.env_id, 0, perturbations, str(log_dir))()
    for i in range(args.eval_episodes):
        obs, _ = env.reset(seed=args.seed + 1000 + i)
        done = False
        while not done:
            with torch.no_grad():
                action = int(agent.actor(torch.Tensor(obs)).argmax())
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    env.close()
    return rw.read_log(log_dir / "env0")


def main(args: Args) -> None:
    torch.set_num_threads(1)  # small networks run fastest on one thread
    start = time.perf_counter()
    agent = train(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(agent.state_dict(), out / MODEL_FILE)  # as CleanRL saves its models
    clean = evaluate(agent, args, (), out / "eval-clean")
    perturbed = evaluate(agent, args, args.perturbations, out / "eval-perturbed")
    print(f"\nEvaluation, greedy policy, same seeds; perturbations: {', '.join(args.perturbations)}")
    print(f"{'episode':>7} {'seed':>6} {'clean return':>13} {'perturbed return':>17}")
    for (_, c), (_, p) in zip(clean.episodes.iterrows(), perturbed.episodes.iterrows(), strict=True):
        print(f"{c['episode']:>7} {c['seed']:>6} {c['return']:>13.1f} {p['return']:>17.1f}")
    means = clean.episodes["return"].mean(), perturbed.episodes["return"].mean()
    print(f"mean return: clean {means[0]:.1f}, perturbed {means[1]:.1f}")
    print(f"logs: {out / 'eval-clean'}, {out / 'eval-perturbed'}; {time.perf_counter() - start:.1f} s")
    print(f"network: {out / MODEL_FILE} (rlwrappers: --agent {__file__}:make_agent, CLEANRL_MODEL={out / MODEL_FILE})")


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        flag = f"--{f.name.replace('_', '-')}"
        if f.name == "perturbations":
            parser.add_argument(flag, nargs="*", default=list(f.default), help="spec strings")
        elif f.type == "bool":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            parser.add_argument(flag, type={"int": int, "float": float, "str": str}[str(f.type)], default=f.default)
    namespace = vars(parser.parse_args())
    namespace["perturbations"] = tuple(namespace["perturbations"])
    return Args(**namespace)


if __name__ == "__main__":
    main(parse_args())
