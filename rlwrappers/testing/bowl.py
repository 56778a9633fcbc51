"""A one-step env whose return is a known function of its two parameters, for testing worst-case searches.

``rlwrappers/Bowl-v0`` pays ``(x - x0)^2 + (y - y0)^2`` plus Gaussian noise of std ``noise`` for its one step,
whatever the action: the worst case over any box that holds ``(x0, y0)`` is there, with return 0 in expectation.
``x`` and ``y`` are dynamics parameters (``dynamics_shift(values={'x': 0.3})``). The noise comes from the
env's own generator, so paired episodes (the same reset seed) draw the same noise at every ``(x, y)``; with
``independent=True`` they draw other noise at each ``(x, y)``, as the diverging trajectories of a chaotic env
would, and the lowest of many noisy means falls below the truth.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, SupportsFloat

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

__all__ = ["BOWL_ID", "BowlEnv"]

#: The registered ID of :class:`BowlEnv`.
BOWL_ID: Final = "rlwrappers/Bowl-v0"


class BowlEnv(gym.Env[NDArray[np.float32], np.int64]):
    """One step, paying ``(x - x0)^2 + (y - y0)^2 + noise * N(0, 1)``; the bottom is at ``(x0, y0)``."""

    dynamics_parameters: ClassVar[tuple[str, ...]] = ("x", "y")
    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, x0: float = 0.3, y0: float = 0.7, noise: float = 0.0, independent: bool = False):
        self.x0, self.y0, self.noise, self.independent = float(x0), float(y0), float(noise), bool(independent)
        self.x, self.y = 0.5, 0.5

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Seeds the noise; the observation is always 0."""
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Pays the bowl's height at (x, y), plus noise, and ends the episode."""
        rng = self.np_random
        if self.independent:  # the same seed draws other noise at another (x, y), as a chaotic env's would
            rng = np.random.default_rng((int(rng.integers(2**63)), round(self.x * 1e9), round(self.y * 1e9)))
        reward = (self.x - self.x0) ** 2 + (self.y - self.y0) ** 2 + self.noise * float(rng.normal())
        return np.zeros(1, np.float32), reward, True, False, {}


if BOWL_ID not in gym.registry:
    gym.register(BOWL_ID, entry_point=f"{__name__}:BowlEnv")
