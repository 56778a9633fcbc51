"""Observation noise on a Dict of k Box entries, against the same noise on one Box of their total size (limit 1.2).

Goal-conditioned robotics hands agents ``{"observation", "achieved_goal", ...}``; the noise on such a Dict should
cost what the noise on the concatenated vector costs. Both are timed as the wrapper's hook (what a step adds) and
as whole steps of a wrapped env whose own step only returns its observation, for k = 3 (sizes of FetchPush: 25, 3,
3), k = 6 entries, and k = 3 larger entries (a 256-ray scan, two 64-vectors). The Dict pays a fixed cost per call
(about 1.3-1.7 us on two cores: gathering the entries into one array and handing out views of the result), which
is half of the noise on a short vector and under a third of it on 384 floats. Also prints the Box through
``add_noise`` (what a Box took before its noise was prepared at bind), the entry-by-entry path (integer entries
take it) for comparison, and whole steps of gymnasium-robotics' PointMaze with noise on its Dict against the same
noise after FlattenObservation (how a user gets one Box of the entries).

Run: python benchmarks/bench_structured_noise.py
"""

from __future__ import annotations

import sys
from typing import Any

import gymnasium as gym
import numpy as np
from _timing import report

import rlwrappers as rw
from rlwrappers.wrappers.observation import ObservationNoisePerturbation

CALLS = 2000
SPEC = "obs_noise(std=0.1)"


class Still(gym.Env[Any, int]):
    """An env whose step returns the same observation: what is timed is the wrapper."""

    def __init__(self, space: gym.Space[Any]) -> None:
        self.observation_space, self.action_space = space, gym.spaces.Discrete(2)
        self._obs = space.sample()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self._obs, {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self._obs, 0.0, False, False, {}


def spaces(sizes: list[int]) -> tuple[gym.spaces.Dict, gym.spaces.Box]:
    box = gym.spaces.Box(-10.0, 10.0, (sum(sizes),), np.float32)
    entries = {f"e{i}": gym.spaces.Box(-10.0, 10.0, (n,), np.float32) for i, n in enumerate(sizes)}
    return gym.spaces.Dict(entries), box


def hook(space: gym.Space[Any], fused: bool = True, prepared: bool = True) -> Any:
    """Times the bound perturbation's hook on one observation of ``space``."""
    p = ObservationNoisePerturbation(std=0.1)
    env = Still(space)
    p.bind(env, space, env.action_space)
    if not fused:
        p._fused = None  # the entry-by-entry path, for comparison
    if not prepared:
        p._float = None  # a Box through add_noise, which reads its arguments on every call
    obs, rng = env._obs, np.random.default_rng(0)

    def run() -> int:
        for _ in range(CALLS):
            p.observation(obs, rng)
        return CALLS

    return run


def steps(space: gym.Space[Any]) -> Any:
    env = rw.wrap(Still(space), SPEC)
    env.reset(seed=0)

    def run() -> int:
        for _ in range(CALLS):
            env.step(0)
        return CALLS

    return run


def main() -> bool:
    ok = True
    for sizes in ([25, 3, 3], [10, 10, 10, 10, 10, 10], [256, 64, 64]):
        dict_space, box_space = spaces(sizes)
        ok &= report(
            f"{SPEC} on a Dict of {len(sizes)} float32 entries {sizes} against one Box of {sum(sizes)}, per call",
            {
                "Box hook": hook(box_space),
                "Box hook through add_noise": hook(box_space, prepared=False),
                "Dict hook": hook(dict_space),
                "Dict hook, entry by entry": hook(dict_space, fused=False),
            },
            {"Dict hook": 1.2},
        )
        ok &= report(
            "  the same as whole steps of a wrapped env",
            {"Box step": steps(box_space), "Dict step": steps(dict_space)},
            {"Dict step": 1.2},
        )
    ok &= real_env()
    return ok


def real_env() -> bool:
    """gymnasium-robotics' PointMaze: noise on its Dict, against flattening it first (how one gets one Box)."""
    try:
        import gymnasium_robotics
    except ImportError:
        print("PointMaze: gymnasium-robotics is not installed (the robotics extra); skipped")
        return True
    gym.register_envs(gymnasium_robotics)
    every = "obs_noise(std=0.1, keys=['achieved_goal', 'desired_goal', 'observation'])"

    def maze(kind: str) -> Any:
        env = gym.make("PointMaze_UMaze-v3", max_episode_steps=10**9)
        if kind == "flattened":
            env = rw.wrap(gym.wrappers.FlattenObservation(env), SPEC)
        elif kind == "dict":
            env = rw.wrap(env, every)
        env.reset(seed=0)
        action = np.zeros(2)

        def run() -> int:
            for _ in range(CALLS // 4):
                env.step(action)
            return CALLS // 4

        return run

    return report(
        f"PointMaze steps: {every} on its Dict, against FlattenObservation and {SPEC} on the Box",
        {
            "FlattenObservation + noise on the Box": maze("flattened"),
            "noise on the Dict": maze("dict"),
            "no noise": maze("bare"),
        },
        {"noise on the Dict": 1.2},
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
