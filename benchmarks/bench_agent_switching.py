"""AgentSwitch with two of five agents switched, per MPE simple_spread step, over the bare env.

Both loops do the same policy work: the two outside policies are cheap functions (given to the switch as
CallableAgents), and the bare loop calls the same functions on the same agents' observations itself. The team's
own actions are one fixed dict in both. Episodes last 25 steps (simple_spread's default), and the resets count.

Limit: 1.10.

Run: python benchmarks/bench_agent_switching.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import report
from mpe2 import simple_spread_v3

from rlwrappers.agents import CallableAgent
from rlwrappers.wrappers.multiagent import AgentSwitch

STEPS = 500
N = 5
K = 2


def chase(obs: np.ndarray) -> int:
    """Moves along the larger axis of the first landmark's relative position."""
    dx, dy = float(obs[4]), float(obs[5])
    if abs(dx) > abs(dy):
        return 2 if dx > 0 else 1
    return 4 if dy > 0 else 3


def keep_still(obs: np.ndarray) -> int:
    """Does not move."""
    return 0


def make() -> Any:
    return simple_spread_v3.parallel_env(N=N, continuous_actions=False)


def bare_run(env: Any, outside: list[tuple[str, Callable[[np.ndarray], int]]], team: dict[str, int]) -> int:
    obs, _ = env.reset(seed=0)
    for _ in range(STEPS):
        actions = dict(team)
        for agent, fn in outside:
            actions[agent] = fn(obs[agent])
        obs, _, _, _, _ = env.step(actions)
        if not env.agents:
            obs, _ = env.reset()
    return STEPS


def switched_run(env: AgentSwitch, team: dict[str, int]) -> int:
    env.reset(seed=0)
    for _ in range(STEPS):
        env.step(team)
        if not env.agents:
            env.reset()
    return STEPS


def main() -> bool:
    bare = make()
    agents = bare.possible_agents
    functions = [chase, keep_still]
    outside: list[tuple[str, Callable[[np.ndarray], int]]] = list(zip(agents[:K], functions, strict=True))
    policies = {a: CallableAgent(fn, bare.observation_space(a), bare.action_space(a)) for a, fn in outside}
    switched = AgentSwitch(make(), policies, k=K)
    team = dict.fromkeys(agents, 3)

    # Both loops send the env the same actions.
    switched.reset(seed=0)
    obs, _ = bare.reset(seed=0)
    switched.step(team)
    expected = {**team, **{a: fn(obs[a]) for a, fn in outside}}
    if switched.last_actions != expected:
        raise RuntimeError("the switch and the bare loop must send the same actions")

    return report(
        f"AgentSwitch, {K} of {N} agents switched (active), per simple_spread step",
        {
            f"simple_spread N={N}, outside policies called by the loop": lambda: bare_run(bare, outside, team),
            f"AgentSwitch(k={K}, when=always)": lambda: switched_run(switched, team),
        },
        {f"AgentSwitch(k={K}, when=always)": 1.10},
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
