"""A small deterministic env over arbitrary spaces, for testing wrappers without a simulator."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import _check, structure
from rlwrappers.error import IncompatibleSpace

__all__ = ["SpaceEnv", "sample"]

_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def _sample_float_box(space: gym.spaces.Box, rng: np.random.Generator) -> NDArray[Any]:
    low = space.low.astype(np.float64)
    high = space.high.astype(np.float64)
    low_finite, high_finite = np.isfinite(low), np.isfinite(high)
    safe_low = np.where(low_finite, low, 0.0)
    safe_high = np.where(high_finite, high, 0.0)
    u = rng.random(space.shape)
    e = rng.exponential(size=space.shape)
    z = rng.standard_normal(space.shape)
    # (1 - u) * low + u * high never overflows, even for bounds near the dtype's limits.
    x = np.where(
        low_finite & high_finite,
        (1.0 - u) * safe_low + u * safe_high,
        np.where(low_finite, safe_low + e, np.where(high_finite, safe_high - e, z)),
    )
    with np.errstate(over="ignore"):
        out = x.astype(space.dtype)
    return np.asarray(np.clip(out, space.low, space.high), dtype=space.dtype)


def sample(space: gym.Space[Any], rng: np.random.Generator) -> Any:
    """Draws one element of ``space`` from ``rng`` (not from the space's own generator).

    Bounded Box dimensions are uniform, half-bounded ones are shifted exponentials, unbounded ones are standard
    normal; integer spaces are uniform over their values.

    Args:
        space: a Box, Discrete, MultiDiscrete or MultiBinary space, or a Dict or Tuple of them (nested too).
        rng: the generator to draw from.

    Returns:
        An element of ``space``: an array of the space's dtype, a numpy integer for Discrete spaces, a dict or a
        tuple of them for Dict and Tuple spaces (entries drawn in order).

    Raises:
        IncompatibleSpace: ``space`` is of another kind.

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> x = sample(gym.spaces.Box(0, 255, (2, 2), np.uint8), np.random.default_rng(0))
        >>> x.dtype, x.shape
        (dtype('uint8'), (2, 2))
    """
    if isinstance(space, gym.spaces.Dict):
        return {key: sample(entry, rng) for key, entry in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(sample(entry, rng) for entry in space.spaces)
    if isinstance(space, gym.spaces.Discrete):
        return space.dtype.type(space.start + rng.integers(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        return (space.start + rng.integers(space.nvec)).astype(space.dtype)
    if isinstance(space, gym.spaces.MultiBinary):
        return rng.integers(0, 2, size=space.shape, dtype=np.int8)
    if isinstance(space, gym.spaces.Box):
        if space.dtype.kind == "f":
            return _sample_float_box(space, rng)
        draws = rng.integers(space.low, space.high, size=space.shape, dtype=space.dtype, endpoint=True)
        return np.asarray(draws, dtype=space.dtype)
    raise IncompatibleSpace(
        "`space` must be a Box, Discrete, MultiDiscrete or MultiBinary space, or a Dict or Tuple of them,"
        f" received {space}"
    )


class SpaceEnv(gym.Env[Any, Any]):
    """A small deterministic env that emits random elements of any Box, Discrete or MultiDiscrete space.

    Observation spaces may also be Dict or Tuple spaces of those, nested too.

    Observations are drawn from ``observation_space`` with the env's own ``np_random`` (seeded by
    ``reset(seed=...)``), so two envs reset with the same seed emit the same observations bit for bit. The
    reward is the mean of ``tanh`` of the action's elements, so it shows which action was executed; an episode
    terminates after ``episode_length`` steps. Actions are not checked against the action space: that is what
    :func:`rlwrappers.testing.check_spaces` does. Its state cannot be read or set, so state perturbations
    reject it. No vector version: use Gymnasium's vector envs.

    Args:
        observation_space: a Box (any dtype, shape and bounds), Discrete, MultiDiscrete or MultiBinary space.
        action_space: a space of the same kinds.
        episode_length: the number of steps after which an episode terminates.

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> env = SpaceEnv(gym.spaces.Box(0, 255, (4, 4), np.uint8), gym.spaces.Discrete(3), episode_length=2)
        >>> obs, info = env.reset(seed=0)
        >>> obs.dtype, obs in env.observation_space
        (dtype('uint8'), True)
        >>> _, reward, terminated, truncated, info = env.step(1)
        >>> _, reward, terminated, truncated, info = env.step(1)
        >>> reward == float(np.tanh(1.0)), terminated, info
        (True, True, {'t': 2})
    """

    metadata = {"render_modes": []}

    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], *, episode_length: int = 20
    ) -> None:
        for name, space in (("observation_space", observation_space), ("action_space", action_space)):
            structured = name == "observation_space" and isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple))
            entries = structure.entries(space).values() if structured else [space]
            if not all(isinstance(entry, _SPACES) for entry in entries):
                also = " (or, for observations, a Dict or Tuple of them)" if name == "observation_space" else ""
                raise IncompatibleSpace(
                    f"`{name}` must be a Box, Discrete, MultiDiscrete or MultiBinary space{also}, received {space}"
                )
        self.episode_length = _check.integer("episode_length", episode_length, minimum=1)
        self.observation_space = observation_space
        self.action_space = action_space
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Starts an episode with a fresh random observation."""
        super().reset(seed=seed)
        self._t = 0
        return sample(self.observation_space, self.np_random), {}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Emits the next random observation; the reward is ``mean(tanh(action))``."""
        self._t += 1
        reward = float(np.mean(np.tanh(np.asarray(action, dtype=np.float64))))
        terminated = self._t >= self.episode_length
        return sample(self.observation_space, self.np_random), reward, terminated, False, {"t": self._t}
