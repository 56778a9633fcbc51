"""Float noise prepared at bind (FloatNoise) against add_noise, which reads its arguments on every call (limit 1.0).

Observation noise on float32 vectors of 4 (CartPole), 31 and 384 values and on an 84x84x4 float32 stack, and
action noise on a (1,) and a (6,) float32 action, each timed through its perturbation's hook: the prepared noise
against the same perturbation sent through ``add_noise`` (no limit on the stack, where the noise's own work
dominates and the two take the same time). Both give the same bits (tests/test_properties.py);
the prepared one skips reading the dtype, the scale and the bounds on every call, and hands numpy 0-d arrays
instead of numpy scalars, which a ufunc takes at about two thirds of the cost.

Run: python benchmarks/bench_float_noise.py
"""

from __future__ import annotations

import sys
from typing import Any

import gymnasium as gym
import numpy as np
from _timing import report

from rlwrappers.wrappers.action import ActionNoisePerturbation
from rlwrappers.wrappers.observation import ObservationNoisePerturbation

CALLS = 2000
ACTIONS = gym.spaces.Discrete(2)


def observation_hook(shape: tuple[int, ...], prepared: bool) -> Any:
    """Times obs_noise(std=0.1)'s hook on a float32 Box of ``shape`` in [-10, 10]."""
    space = gym.spaces.Box(-10.0, 10.0, shape, np.float32)
    p = ObservationNoisePerturbation(std=0.1)
    p.bind(None, space, ACTIONS)  # type: ignore[arg-type]
    if not prepared:
        p._float = None
    obs, rng = space.sample(), np.random.default_rng(0)
    calls = CALLS if np.prod(shape) < 10_000 else CALLS // 20

    def run() -> int:
        for _ in range(calls):
            p.observation(obs, rng)
        return calls

    return run


def action_hook(size: int, prepared: bool) -> Any:
    """Times action_noise(std=0.2)'s hook on a float32 Box action of ``size`` in [-1, 1]."""
    space = gym.spaces.Box(-1.0, 1.0, (size,), np.float32)
    p = ActionNoisePerturbation(std=0.2)
    p.bind(None, gym.spaces.Box(-1.0, 1.0, (3,), np.float32), space)  # type: ignore[arg-type]
    if not prepared:
        p._float = None
    action, rng = space.sample(), np.random.default_rng(0)

    def run() -> int:
        for _ in range(CALLS):
            p.action(action, action, rng)
        return CALLS

    return run


def main() -> bool:
    ok = True
    for shape in [(4,), (31,), (384,), (84, 84, 4)]:
        large = np.prod(shape) >= 10_000  # the noise's own work dominates: the two are equal, so no limit
        ok &= report(
            f"obs_noise(std=0.1) on a float32 Box of shape {shape}, per call",
            {"through add_noise": observation_hook(shape, False), "prepared": observation_hook(shape, True)},
            {} if large else {"prepared": 1.0},
        )
    for size in (1, 6):
        ok &= report(
            f"action_noise(std=0.2) on a float32 action of shape ({size},), per call",
            {"through add_noise": action_hook(size, False), "prepared": action_hook(size, True)},
            {"prepared": 1.0},
        )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
