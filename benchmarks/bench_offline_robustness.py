"""The whole R measurement against its irreducible parts (limit 1.3x): 10 agents x 30 states x 40 interventions.

Toybox Breakout under SB3's Atari preprocessing (84 x 84 grayscale, 4 stacked frames), 10 Nature-CNN PPO
policies (SB3's ``CnnPolicy``, seeds 0-9), 30 states sampled from one game of an 11th, and 40 interventions
(Breakout's catalogue of 39 and a wider paddle), plus the null one.

- **measurement**: ``states.observations`` (for every intervention and every distinct state of the sampled
  histories: make the intervention on the JSON state, write it into the game, render the frame, warp it to
  84 x 84; then stack each history's frames) and ``robustness_matrix`` (one forward pass per agent over all
  1,230 observations, then R);
- **baseline**: the restores alone (writing the same intervened JSON states, made beforehand: each distinct
  state of the histories under each intervention, as the measurement writes them) plus one batched forward
  pass per agent over the same observations.

Run: python benchmarks/bench_offline_robustness.py
"""

from __future__ import annotations

import sys

import gymnasium as gym
import rlwrappers.envs  # noqa: F401  (registers the Toybox IDs)
import torch
from _timing import report
from rlwrappers.envs.toybox import interventions as catalogues

from rlwrappers.agents import SB3Agent
from rlwrappers.state.interventions import apply
from rlwrappers.studies import states
from rlwrappers.studies.offline import robustness_matrix
from rlwrappers.wrappers import state as state_wrappers
from rlwrappers.wrappers.atari import atari_wrapper

AGENTS = 10
STATES = 30
ENV_ID = "rlwrappers/ToyboxBreakout-v0"


def cnn_agent(env: gym.Env, seed: int) -> SB3Agent:
    from stable_baselines3.common.policies import ActorCriticCnnPolicy

    torch.manual_seed(seed)
    space = env.observation_space
    policy = ActorCriticCnnPolicy(space, env.action_space, lambda _: 0.0)
    return SB3Agent(policy.eval(), deterministic=True, observation_space=space)


def main() -> bool:
    torch.set_num_threads(2)
    env = atari_wrapper(gym.make(ENV_ID))
    agents = [cnn_agent(env, seed) for seed in range(AGENTS)]
    sample = states.sample_states(env, cnn_agent(env, AGENTS), p=STATES, seed=0)
    names = [iv.name for iv in catalogues.catalogue("breakout", defined=False)] + ["paddle_width=40"]
    resolved = state_wrappers.resolve(env, names)[1]
    fresh = atari_wrapper(gym.make(ENV_ID))
    game = fresh.unwrapped
    distinct = list({id(state): state for sampled in sample.states for state in sampled.history}.values())
    written = [state if iv is None else apply(state, iv) for iv in (None, *resolved) for state in distinct]
    seen = states.observations(fresh, sample, names)
    flat = seen.reshape(-1, *seen.shape[2:])
    print(
        f"{len(agents)} agents, {len(sample)} states, {len(names)} interventions: {len(flat)} observations; "
        f"{len(written)} intervened states written ({len(distinct)} distinct states in the histories)"
    )

    def measurement() -> int:
        robustness_matrix(agents, states.observations(fresh, sample, names))
        return 1

    def baseline() -> int:
        for state in written:
            game.write_state_json(state)  # type: ignore[attr-defined]
        for agent in agents:
            agent.act(flat)
        return 1

    return report(
        "R for 10 agents x 30 states x 40 interventions on Toybox Breakout (Nature CNN, 84x84x4)",
        {"restores + one forward pass per agent": baseline, "whole R measurement": measurement},
        {"whole R measurement": 1.3},
        rounds=5,
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
