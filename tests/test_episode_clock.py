"""One episode clock: the single-agent layer, the agent switch and the vector attacker tick alike.

Each layer keeps a :class:`~rlwrappers.seeding.EpisodeClock`. Driven through episodes of the same length with
the same seeds, the same schedule under the same label is active at the same (episode, time) in all three:
reset is time 0, each step moves time on, and a vector env's autoreset starts the sub-env's next episode.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers.seeding import EFFECT, EpisodeClock, generator
from rlwrappers.wrappers.multiagent import AgentSwitch
from rlwrappers.wrappers.vector import Attack

LENGTH = 6  # steps per episode in every env below
EPISODES = 4
LABEL = "x"
SCHEDULES = [
    "bursts(p=0.3, duration=(1, 3))",
    "prob(p=0.5)",
    "starting(episode=2)",
    "window(start=8, stop=15, unit='total_step')",
]

Timeline = set[tuple[int, int]]  # the (episode, time) pairs at which the schedule is active


def cartpole() -> gym.Env[np.ndarray, int]:
    return gym.make("CartPole-v1", max_episode_steps=LENGTH)


def alternate(t: int) -> int:
    """Pushes left and right in turn: the pole stays up for far more than LENGTH steps."""
    return t % 2


def single_agent(when: str, seed: int) -> Timeline:
    env = rw.wrap(cartpole(), {"name": "obs_noise", "std": 0.1, "when": when, "label": LABEL})
    active = set()
    for episode in range(EPISODES):
        _, info = env.reset(seed=seed if episode == 0 else None)
        for t in range(LENGTH):
            if LABEL in info.get("rlwrappers", {}):  # the observation at time t was perturbed
                active.add((episode, t))
            _, _, terminated, truncated, info = env.step(alternate(t))
        assert truncated and not terminated
    return active


def multi_agent(when: str, seed: int) -> Timeline:
    from mpe2 import simple_spread_v3

    team = simple_spread_v3.parallel_env(N=2, max_cycles=LENGTH)
    env = AgentSwitch(team, lambda obs: 0, k=1, when=when, label=LABEL)
    active = set()
    for episode in range(EPISODES):
        env.reset(seed=seed if episode == 0 else None)
        for t in range(LENGTH):
            _, _, _, truncations, infos = env.step({agent: 1 for agent in env.agents})
            if infos["agent_0"]["rlwrappers"]["switched"]:  # the actions chosen at time t were switched
                active.add((episode, t))
        assert all(truncations.values()) and not env.agents
    return active


def vector(when: str, seed: int, mode: gym.vector.AutoresetMode) -> list[Timeline]:
    """The timelines of both sub-envs of a vector env, reset once and autoresetting from then on."""
    envs = gym.vector.SyncVectorEnv([cartpole, cartpole], autoreset_mode=mode)
    env = Attack(envs, "fgsm(eps=0.01)", rw.load_agent("ppo-CartPole-v1"), when=when, label=LABEL)
    env.reset(seed=seed)
    steps = EPISODES * LENGTH + (EPISODES - 1 if mode == gym.vector.AutoresetMode.NEXT_STEP else 0)
    for step in range(steps):
        env.step(np.full(2, alternate(step)))
    log = env.log()  # one row per attacked decision that the env carried out
    return [
        {(int(e), int(t)) for e, t in zip(log["episode"][log["env"] == i], log["step"][log["env"] == i], strict=True)}
        for i in range(2)
    ]


@pytest.mark.parametrize("when", SCHEDULES)
@pytest.mark.parametrize("mode", [gym.vector.AutoresetMode.NEXT_STEP, gym.vector.AutoresetMode.SAME_STEP])
def test_the_three_layers_tick_alike(when: str, mode: gym.vector.AutoresetMode) -> None:
    seed = 3
    expected = single_agent(when, seed)
    assert 0 < len(expected) < EPISODES * LENGTH  # the schedule switches within the run
    assert multi_agent(when, seed) == expected
    # Sub-env i of a vector env reset with seed s ticks as a single env seeded s + i.
    assert vector(when, seed, mode) == [expected, single_agent(when, seed + 1)]


def test_the_clock_counts_episodes_steps_and_seeds() -> None:
    clock = EpisodeClock()
    assert (clock.episode, clock.t, clock.entropy) == (-1, 0, None)
    clock.reset(seed=5)
    assert [clock.tick() for _ in range(3)] == [1, 2, 3]
    clock.reset(seed=None)
    assert (clock.episode, clock.t, clock.total_step, clock.since_seed, clock.entropy) == (1, 0, 3, 1, 5)
    clock.tick()
    clock.reset(seed=9)  # a new seed restarts the derivation, not the episode count
    assert (clock.episode, clock.total_step, clock.since_seed, clock.entropy) == (2, 4, 0, 9)
    draws = clock.generator(LABEL, EFFECT).random(3)
    assert np.array_equal(draws, generator(9, 0, LABEL, EFFECT).random(3))


def test_an_unseeded_clock_draws_entropy_once() -> None:
    clock = EpisodeClock()
    clock.reset(seed=None)
    drawn = clock.entropy
    assert isinstance(drawn, int) and drawn >= 0
    clock.reset(seed=None)
    assert (clock.entropy, clock.since_seed) == (drawn, 1)
