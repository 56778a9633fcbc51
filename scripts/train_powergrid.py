"""Trains the two teams shipped in ``rlwrappers/zoo/teams/``: decentralized PPO on the coordinated buildings env.

Seed 001 (Appendix C.2 and E) trains two groups of PPO agents on PowerGridworld's coordinated multi-building
env, a "main" group with random seed 0 and an "outside" group with seed 1. This script does the same on
:mod:`rlwrappers.envs.powergrid` (5 buildings of 5 zones, one day of 15-minute steps):

    python scripts/train_powergrid.py                    # both groups
    python scripts/train_powergrid.py --groups main --timesteps 20000 --out /tmp/teams

**Agents.** Each building is one independent PPO agent with its own actor and critic: no parameters, buffers
or optimizer state are shared, and each agent learns from its own observations and rewards only. For speed
the five actors (and the five critics) are stored as one stack of weights and run with batched matrix
products; every agent's loss depends only on its own slice, and Adam works coordinate by coordinate, so this
is exactly five separate learners. Actor: :func:`rlwrappers.zoo.teams.network` (two ``tanh`` layers of 128
units, ``tanh`` output in [-1, 1]); critic: the same body with a linear output. Inputs are scaled by
:func:`rlwrappers.zoo.teams.input_scaling`. Each group starts from ``teams.untrained(env, seed)``, its
critics from torch's generator seeded with ``seed + 1000``.

**PPO.** In the manner of the minimal PPO implementation the paper used (Barhate 2021): a Gaussian policy
around the actor's output with a fixed standard deviation (in the actor's [-1, 1] units) that starts at 1.0
and drops by 0.05 every ``std_decay_every`` timesteps to at least 0.1; a sample is clipped to [-1, 1] and
mapped onto the action box. Monte Carlo returns (gamma 0.99) of whole episodes, normalized per agent and
update; advantages are the normalized returns minus the critic's values; the clipped surrogate (0.2) plus
half the squared error of the critic; Adam with lr 3e-4 for the actor and 1e-3 for the critic; 5 epochs per
update. An episode ends in truncation after one day, and its returns stop there.

**Budget, scaled down from Appendix E.** The paper trains for 2,000,000 episodes of up to 1000 steps, decays
the standard deviation every 250,000 timesteps and updates every 2000 timesteps. One CPU core cannot do that,
so each group gets ``timesteps`` = 240,000 env steps (2500 days; each step is one transition for each of the
five agents). Updates come at the first episode end after every ``update_every`` = 2000 timesteps, so every
update holds whole episodes (21 days, 2016 timesteps). ``std_decay_every`` (10,000 here) is scaled so that the
standard deviation reaches its minimum at three quarters of the budget. Two settings are not in Appendix E:
each epoch runs over minibatches of ``minibatch`` = 252 transitions (8 per epoch; full-batch epochs would give
a few hundred gradient steps in all), and each agent's gradient is clipped to norm ``max_grad_norm`` = 0.5
(without it, a trial run collapsed late in training, from a team return of -38 to -140). The settings, the
budget and the wall time are written to each team's card; each group trains in about 95 seconds on one core
(both, with their evaluations, in under 4 minutes).

**Outputs.** ``powergrid-<group>.json`` (the card) and ``powergrid-<group>-<agent>.pt`` per agent: the state
dict of the actor-mean network in float16 (half the size; the card's returns are measured with the saved
weights, loaded back through :func:`rlwrappers.zoo.load_team`). The card's ``curve`` holds the mean team
return (the sum of the five agents' returns) of the first and of the last 10 training episodes and per
update; ``returns`` holds deterministic team returns on ``eval_episodes`` days (seeds 10000, 10001, ...)
for the trained group and for ``teams.untrained(env, seed)`` on the same days. The script fails if the
trained group does not beat the untrained one.

Everything is seeded (torch's generator for the networks and minibatches, numpy generators for the env and
the policy noise), and torch uses one thread: the same seed gives the same weights, bit for bit.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from rlwrappers.envs.powergrid import NAME, CoordinatedBuildings, parallel_env

import rlwrappers
from rlwrappers.agents import TorchAgent
from rlwrappers.zoo import teams

#: The groups of seed 001's Appendix E and their random seeds.
GROUPS = {"main": 0, "outside": 1}


@dataclass(frozen=True)
class Settings:
    """Every training setting; written to the card as is."""

    env_kwargs: dict[str, Any] = field(default_factory=lambda: {"n_buildings": 5, "zones": 5, "steps": 96})
    timesteps: int = 240_000
    update_every: int = 2000
    epochs: int = 5
    minibatch: int = 252
    clip: float = 0.2
    gamma: float = 0.99
    lr_actor: float = 3e-4
    lr_critic: float = 1e-3
    hidden: int = teams.HIDDEN
    std_init: float = 1.0
    std_decay: float = 0.05
    std_min: float = 0.1
    std_decay_every: int = 0  # 0: three quarters of the budget spread over the decays (see the module docstring)
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    eval_episodes: int = 10
    eval_first_seed: int = 10_000
    threads: int = 1
    require_improvement: bool = True

    def decay_every(self) -> int:
        """Timesteps between two decays of the standard deviation."""
        if self.std_decay_every > 0:
            return self.std_decay_every
        decays = math.ceil(round((self.std_init - self.std_min) / self.std_decay, 9))
        return max(1, int(0.75 * self.timesteps) // decays)


class Stack:
    """The MLPs of every agent of a team, stored as stacked weights: agent ``k`` uses slice ``k`` only.

    ``layers[j] = (weight, bias)`` with weight ``(agents, in, out)`` and bias ``(agents, 1, out)``; hidden
    layers use ``tanh``. ``forward`` maps ``(agents, batch, in)`` to ``(agents, batch, out)``.
    """

    def __init__(self, modules: list[torch.nn.Sequential]):
        linears = [[m for m in module if isinstance(m, torch.nn.Linear)] for module in modules]
        self.layers = [
            (
                torch.stack([layer[j].weight.detach().T for layer in linears]).contiguous().requires_grad_(),
                torch.stack([layer[j].bias.detach()[None] for layer in linears]).contiguous().requires_grad_(),
            )
            for j in range(len(linears[0]))
        ]

    def parameters(self) -> list[torch.Tensor]:
        """Every weight and bias."""
        return [tensor for layer in self.layers for tensor in layer]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The outputs before the last activation."""
        for j, (weight, bias) in enumerate(self.layers):
            x = torch.baddbmm(bias, x, weight)
            if j < len(self.layers) - 1:
                x = torch.tanh(x)
        return x

    def state_dict(self, k: int) -> dict[str, torch.Tensor]:
        """Agent ``k``'s network as the state dict of :func:`rlwrappers.zoo.teams.network` (Linear at 0, 2, 4)."""
        state = {}
        for j, (weight, bias) in enumerate(self.layers):
            state[f"{2 * j}.weight"] = weight[k].detach().T.contiguous().clone()
            state[f"{2 * j}.bias"] = bias[k, 0].detach().clone()
        return state


def critics(observation_size: int, agents: int, hidden: int, seed: int) -> list[torch.nn.Sequential]:
    """One critic per agent, initialized from torch's generator seeded with ``seed + 1000``."""
    nn = torch.nn
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed + 1000)
        return [
            nn.Sequential(
                nn.Linear(observation_size, hidden),
                nn.Tanh(),
                nn.Linear(hidden, hidden),
                nn.Tanh(),
                nn.Linear(hidden, 1),
            )
            for _ in range(agents)
        ]


def discounted(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """Monte Carlo returns of one episode, per agent: ``rewards`` and the result are (agents, steps)."""
    out = np.empty_like(rewards)
    running = np.zeros(rewards.shape[0])
    for t in range(rewards.shape[1] - 1, -1, -1):
        running = rewards[:, t] + gamma * running
        out[:, t] = running
    return out


def train(group: str, seed: int, settings: Settings) -> tuple[list[dict[str, torch.Tensor]], dict[str, Any]]:
    """Trains one group; returns each agent's actor state dict and the learning curve and budget."""
    torch.set_num_threads(settings.threads)
    env = parallel_env(**settings.env_kwargs)
    agents = env.possible_agents
    n = len(agents)
    start = teams.untrained(env, seed)
    actor = Stack([cast(TorchAgent, start[agent]).module for agent in agents])
    center_list, scale_list = teams.input_scaling(env)
    d = len(center_list)
    critic = Stack(critics(d, n, settings.hidden, seed))
    optimizer = torch.optim.Adam(
        [
            {"params": actor.parameters(), "lr": settings.lr_actor},
            {"params": critic.parameters(), "lr": settings.lr_critic},
        ]
    )
    center = np.array(center_list, np.float32)
    scale = np.array(scale_list, np.float32)
    space = env.action_space(agents[0])
    low, half = space.low.astype(np.float32), ((space.high - space.low) / 2).astype(np.float32)
    noise_rng = np.random.default_rng([seed, 1])
    generator = torch.Generator().manual_seed(seed)
    decay_every = settings.decay_every()

    buffer: dict[str, list[np.ndarray]] = {"x": [], "u": [], "mean": [], "rewards": []}
    curve: list[float] = []
    per_update: list[float] = []
    timesteps, since_update, episode, updates = 0, 0, 0, 0
    started = time.perf_counter()

    def scaled(observations: dict[str, np.ndarray]) -> np.ndarray:
        return (np.stack([observations[agent] for agent in agents]) - center) / scale

    while timesteps < settings.timesteps:
        std = max(settings.std_min, settings.std_init - settings.std_decay * (timesteps // decay_every))
        observations, _ = env.reset(seed=1_000_000 * (seed + 1) + episode)
        xs, us, means, rewards = [], [], [], []
        while env.agents:
            x = scaled(observations)
            with torch.no_grad():
                mean = torch.tanh(actor.forward(torch.from_numpy(x)[:, None, :]))[:, 0, :].numpy()
            u = (mean + std * noise_rng.standard_normal(mean.shape)).astype(np.float32)
            action = low + (np.clip(u, -1.0, 1.0) + 1.0) * half
            observations, reward, _, _, _ = env.step(dict(zip(agents, action, strict=True)))
            xs.append(x)
            us.append(u)
            means.append(mean)
            rewards.append([reward[agent] for agent in agents])
        episode += 1
        steps = len(rewards)
        timesteps += steps
        since_update += steps
        episode_rewards = np.array(rewards).T  # (agents, steps)
        curve.append(float(episode_rewards.sum()))
        buffer["x"].append(np.stack(xs, axis=1))
        buffer["u"].append(np.stack(us, axis=1))
        buffer["mean"].append(np.stack(means, axis=1))
        buffer["rewards"].append(episode_rewards)
        if since_update >= settings.update_every or timesteps >= settings.timesteps:
            update(actor, critic, optimizer, buffer, std, settings, generator)
            per_update.append(float(np.mean(curve[-len(buffer["x"]) :])))
            buffer = {key: [] for key in buffer}
            since_update = 0
            updates += 1
    seconds = time.perf_counter() - started
    summary = {
        "timesteps": timesteps,
        "episodes": episode,
        "updates": updates,
        "std_decay_every": decay_every,
        "final_std": std,
        "train_seconds": round(seconds, 1),
        "curve": {
            "first_10": float(np.mean(curve[:10])),
            "last_10": float(np.mean(curve[-10:])),
            "per_update": [round(value, 1) for value in per_update],
        },
    }
    return [actor.state_dict(k) for k in range(n)], summary


def update(
    actor: Stack,
    critic: Stack,
    optimizer: torch.optim.Optimizer,
    buffer: dict[str, list[np.ndarray]],
    std: float,
    settings: Settings,
    generator: torch.Generator,
) -> None:
    """PPO's clipped update of every agent on the buffer's whole episodes."""
    x = torch.from_numpy(np.concatenate(buffer["x"], axis=1))
    u = torch.from_numpy(np.concatenate(buffer["u"], axis=1))
    old_mean = torch.from_numpy(np.concatenate(buffer["mean"], axis=1))
    old_logp = -((u - old_mean) ** 2).sum(-1) / (2 * std**2)
    returns = torch.from_numpy(np.concatenate([discounted(r, settings.gamma) for r in buffer["rewards"]], axis=1))
    returns = returns.float()
    returns = (returns - returns.mean(1, keepdim=True)) / (returns.std(1, keepdim=True) + 1e-7)
    with torch.no_grad():
        advantages = returns - critic.forward(x)[..., 0]
    size = x.shape[1]
    params = actor.parameters() + critic.parameters()
    for _ in range(settings.epochs):
        order = torch.randperm(size, generator=generator)
        for first in range(0, size, settings.minibatch):
            idx = order[first : first + settings.minibatch]
            mean = torch.tanh(actor.forward(x[:, idx]))
            logp = -((u[:, idx] - mean) ** 2).sum(-1) / (2 * std**2)
            ratio = torch.exp(logp - old_logp[:, idx])
            adv = advantages[:, idx]
            surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - settings.clip, 1 + settings.clip) * adv)
            values = critic.forward(x[:, idx])[..., 0]
            # Sum over agents of each agent's own mean loss: agent k's gradient reaches slice k only.
            loss = (-surrogate.mean(1) + settings.value_coef * ((values - returns[:, idx]) ** 2).mean(1)).sum()
            optimizer.zero_grad()
            loss.backward()
            clip_per_agent(params, settings.max_grad_norm)
            optimizer.step()


def clip_per_agent(params: list[torch.Tensor], max_norm: float) -> None:
    """Scales each agent's gradient to norm at most ``max_norm``: the norm of agent k over its slices only."""
    if max_norm <= 0:
        return
    grads = [p.grad for p in params if p.grad is not None]
    squares = torch.stack([(g.reshape(g.shape[0], -1) ** 2).sum(1) for g in grads]).sum(0)
    factor = (max_norm / (squares.sqrt() + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(factor.reshape(-1, *[1] * (g.dim() - 1)))


def evaluate(env: CoordinatedBuildings, team: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """Deterministic team returns on the evaluation days."""
    seeds = [settings.eval_first_seed + i for i in range(settings.eval_episodes)]
    totals = [sum(teams.play(env, team, seed=seed).values()) for seed in seeds]
    return {"seeds": seeds, "team_returns": [round(t, 3) for t in totals], "mean": float(np.mean(totals))}


def save(
    group: str, seed: int, states: list[dict[str, torch.Tensor]], summary: dict[str, Any], settings: Settings, out: Path
) -> dict[str, Any]:
    """Writes the weights and the card, measures the saved team and the untrained one, and rewrites the card."""
    out.mkdir(parents=True, exist_ok=True)
    name = f"powergrid-{group}"
    env = parallel_env(**settings.env_kwargs)
    files = {}
    for agent, state in zip(env.possible_agents, states, strict=True):
        buffer = io.BytesIO()
        torch.save({key: value.half() for key, value in state.items()}, buffer)
        data = buffer.getvalue()
        path = out / f"{name}-{agent}.pt"
        path.write_bytes(data)
        files[agent] = {"file": path.name, "sha256": hashlib.sha256(data).hexdigest()}
    center, scale = teams.input_scaling(env)
    card: dict[str, Any] = {
        "name": name,
        "group": group,
        "seed": seed,
        "env": NAME,
        "env_kwargs": env.kwargs,
        "algo": "PPO, independent learners (one actor and one critic per agent, nothing shared)",
        "network": {
            "hidden": settings.hidden,
            "layers": "Linear, Tanh, Linear, Tanh, Linear, Tanh",
            "weights_dtype": "float16",
            "input_center": center,
            "input_scale": scale,
            "output": "tanh in [-1, 1], mapped linearly onto the action box",
        },
        "settings": {key: value for key, value in asdict(settings).items() if key != "env_kwargs"},
        **summary,
        "versions": {
            "rlwrappers": rlwrappers.__version__,
            "torch": torch.__version__.split("+")[0],
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "agents": files,
    }
    card["settings"]["std_decay_every"] = summary["std_decay_every"]
    (out / f"{name}.json").write_text(json.dumps(card, indent=1) + "\n")
    # Measure what ships: the saved files, loaded back through the public loader.
    trained = evaluate(env, teams.load_team(name, directory=out), settings)
    fresh = evaluate(env, teams.untrained(env, seed), settings)
    card["returns"] = {"trained": trained, "untrained": fresh, "deterministic": True}
    (out / f"{name}.json").write_text(json.dumps(card, indent=1) + "\n")
    if settings.require_improvement and not trained["mean"] > fresh["mean"]:
        raise RuntimeError(f"{name} did not beat the untrained team: {trained['mean']:.1f} <= {fresh['mean']:.1f}")
    return card


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Trains the groups named on the command line; returns their cards."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", nargs="+", default=list(GROUPS), choices=list(GROUPS))
    parser.add_argument("--timesteps", type=int, default=Settings.timesteps)
    parser.add_argument("--eval-episodes", type=int, default=Settings.eval_episodes)
    parser.add_argument("--out", type=Path, default=teams.DIRECTORY)
    parser.add_argument("--no-check", action="store_true", help="do not fail when a group does not beat untrained")
    args = parser.parse_args(argv)
    settings = replace(
        Settings(),
        timesteps=args.timesteps,
        eval_episodes=args.eval_episodes,
        require_improvement=not args.no_check,
    )
    out = {}
    for group in args.groups:
        seed = GROUPS[group]
        states, summary = train(group, seed, settings)
        card = save(group, seed, states, summary, settings, args.out)
        returns = card["returns"]
        print(
            f"{card['name']}: {summary['timesteps']} timesteps, {summary['episodes']} episodes in"
            f" {summary['train_seconds']} s; training team return {summary['curve']['first_10']:.1f} (first 10)"
            f" -> {summary['curve']['last_10']:.1f} (last 10); deterministic {returns['trained']['mean']:.1f},"
            f" untrained {returns['untrained']['mean']:.1f}"
        )
        out[group] = card
    return out


if __name__ == "__main__":
    main()
