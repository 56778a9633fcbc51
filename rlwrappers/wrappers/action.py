"""Action perturbations: noisy actuators and sticky actions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.core import Perturbation, Record, SingleLayer, register_wrapper
from rlwrappers.error import IncompatibleSpace, InvalidType
from rlwrappers.functional import noise
from rlwrappers.schedule import Schedule
from rlwrappers.wrappers.observation import check_scale_shape

__all__ = ["ActionNoise", "ActionNoisePerturbation", "StickyAction", "StickyActionPerturbation"]

_ACTION_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete)


def _action_space(space: gym.Space[Any], who: str) -> gym.Space[Any]:
    if not isinstance(space, _ACTION_SPACES):
        raise IncompatibleSpace(f"{who} needs a Box, Discrete or MultiDiscrete action space, received {space}")
    return space


def _bounds(space: gym.Space[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive bounds of an action space, as arrays of the action's shape."""
    if isinstance(space, gym.spaces.Discrete):
        return np.asarray(space.start), np.asarray(space.start + space.n - 1)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return np.asarray(space.start), np.asarray(space.start + space.nvec - 1)
    assert isinstance(space, gym.spaces.Box)
    return space.low, space.high


def _as_action(action: Any, space: gym.Space[Any]) -> Any:
    """The action as an array of the space's dtype (a new array whenever it is changed later)."""
    return np.asarray(action, dtype=space.dtype)


def _native(action: np.ndarray, space: gym.Space[Any]) -> Any:
    """Discrete actions go back to the env as numpy integers of the space's dtype, like ``space.sample()``."""
    if isinstance(space, gym.spaces.Discrete):
        return space.dtype.type(action)
    return action


@dataclass(kw_only=True)
class ActionNoisePerturbation(Perturbation):
    """Noise on the executed action (action noise, an imperfect actuator; Flageat et al. 2023).

    With probability ``p`` the action is replaced by one drawn uniformly from the action space (Discrete,
    MultiDiscrete, or a bounded Box); then, on Box spaces, Gaussian noise of std ``std`` is added and the
    result clipped to the bounds. The log records the executed action and whether it was replaced.

    Args:
        std: standard deviation of Gaussian noise on Box actions, a number or one per action dimension.
        p: probability of replacing the action with a uniformly random one.
        per_element: on MultiDiscrete and Box spaces, replace each element on its own (with probability p)
            instead of the whole action.
    """

    name = "action_noise"
    channel = "action"
    step_fields = {"executed": "action", "replaced": "bool"}

    std: float | tuple[float, ...] = 0.0
    p: float = 0.0
    per_element: bool = False

    def __post_init__(self) -> None:
        self.std = _check.scale("std", self.std)
        self.p = _check.probability("p", self.p)
        if not isinstance(self.per_element, bool):
            raise InvalidType(f"`per_element` must be a bool, received {self.per_element!r}")

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        space = self._space = _action_space(action_space, "action_noise")
        if self.std != 0.0:
            if not isinstance(space, gym.spaces.Box):
                raise IncompatibleSpace(f"`std` needs a Box action space, received {space}; use `p` for {space}")
            check_scale_shape("std", self.std, space.shape)
            unclipped = ~(np.isfinite(space.low) & np.isfinite(space.high))
            _check.noise_scale("std", self.std, space.dtype, "actions", unclipped)
        self._low, self._high = _bounds(space)
        if self.p > 0.0 and not (np.all(np.isfinite(self._low)) and np.all(np.isfinite(self._high))):
            raise IncompatibleSpace(f"`p` needs bounded actions to draw from, received {space}")
        self._std = np.asarray(self.std, dtype=np.float64)
        self._prepare_float()

    def _prepare_float(self) -> None:
        """The prepared noise of float32 and float64 Box actions (others take ``add_noise`` on every call)."""
        space = self._space
        covered = isinstance(space, gym.spaces.Box) and noise.FloatNoise.covers(space.dtype)
        self._float = noise.FloatNoise(self._std, "gaussian", space.dtype, self._low, self._high) if covered else None

    @override
    def set_params(
        self,
        params: Mapping[str, Any],
        env: gym.Env[Any, Any],
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
    ) -> None:
        if params["per_element"] != self.per_element:
            super().set_params(params, env, observation_space, action_space)
            return
        std = params["std"]  # the noise follows from std and p alone
        self.std = std if isinstance(std, float) else _check.scale("std", std)
        self.p = float(params["p"])
        self._std = np.asarray(self.std, dtype=np.float64)
        self._prepare_float()

    @override
    def action(self, action: Any, previous: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        space = self._space
        executed = _as_action(action, space)
        replaced = False
        if self.p > 0.0:
            batch, mask = noise.replace_random(
                executed[np.newaxis], self.p, self._low, self._high, rng, per_element=self.per_element
            )
            executed, replaced = batch[0, ...], bool(mask.any())  # [0, ...] keeps a 0-d action an array
        if isinstance(space, gym.spaces.Box) and self.std != 0.0:
            prepared = self._float  # executed has the space's dtype
            if prepared is not None:
                executed = prepared.add(executed, rng)
            else:
                executed = noise.add_noise(executed, self._std, "gaussian", rng, self._low, self._high)
        return _native(executed, space), {"executed": executed.copy(), "replaced": replaced}


@register_wrapper("action_noise")
class ActionNoise(SingleLayer):
    """Noise on the executed action: random replacement with probability ``p``, Gaussian ``std`` on Box.

    See :class:`ActionNoisePerturbation`. No vector version: wrap each sub-env.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.ActionNoise(gym.make("CartPole-v1"), p=1.0)
        >>> _ = env.reset(seed=0)
        >>> _, _, _, _, info = env.step(0)
        >>> info["rlwrappers"]["action_noise"]["replaced"]
        True
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        std: float | tuple[float, ...] = 0.0,
        p: float = 0.0,
        per_element: bool = False,
        *,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns."""
        self._setup(env, ActionNoisePerturbation, dict(std=std, p=p, per_element=per_element), when, label)


@dataclass(kw_only=True)
class StickyActionPerturbation(Perturbation):
    """Sticky actions (Machado et al. 2018): the env repeats its previous action instead of the agent's.

    At each step without a repetition under way, one starts with probability ``p`` and lasts ``duration``
    steps (a number, or a range ``(a, b)`` drawn uniformly, both ends included). Unlike Gymnasium's
    ``StickyAction``, the draws come from the wrapper's own generator, so the env's randomness is untouched.

    Args:
        p: probability that a repetition starts at a step.
        duration: steps a repetition lasts: an int, or a range (a, b).
    """

    name = "sticky_action"
    channel = "action"
    uses_previous_action = True
    step_fields = {"executed": "action", "stuck": "bool"}

    p: float = 0.25
    duration: int | tuple[int, int] = 1

    def __post_init__(self) -> None:
        self.p = _check.probability("p", self.p)
        low, high = _check.int_range("duration", self.duration, minimum=1)
        self.duration = low if low == high else (low, high)
        self._range = (low, high)
        self._remaining = np.zeros((), dtype=np.int64)

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self._space = action_space

    @override
    def start_episode(self) -> None:
        self._remaining = np.zeros((), dtype=np.int64)

    @override
    def deactivate(self, env: gym.Env[Any, Any]) -> None:
        self._remaining = np.zeros((), dtype=np.int64)  # a repetition under way ends with the schedule

    @override
    def action(self, action: Any, previous: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        if previous is None:
            return action, {"executed": action, "stuck": False}
        _, self._remaining, stuck = noise.sticky(
            np.asarray(action), np.asarray(previous), self._remaining, self.p, self._range, rng
        )
        chosen = previous if bool(stuck) else action
        return chosen, {
            "executed": np.asarray(chosen).copy() if isinstance(chosen, np.ndarray) else chosen,
            "stuck": bool(stuck),
        }


@register_wrapper("sticky_action")
class StickyAction(SingleLayer):
    """Sticky actions with probability ``p`` and a repetition ``duration``; see :class:`StickyActionPerturbation`.

    No vector version: wrap each sub-env, or use :func:`rlwrappers.functional.noise.sticky` on batches.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.StickyAction(gym.make("CartPole-v1"), p=1.0)
        >>> _ = env.reset(seed=0)
        >>> _ = env.step(0)
        >>> _, _, _, _, info = env.step(1)
        >>> info["rlwrappers"]["sticky_action"]
        {'active': True, 'executed': 0, 'stuck': True}
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        p: float = 0.25,
        duration: int | tuple[int, int] = 1,
        *,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns."""
        self._setup(env, StickyActionPerturbation, dict(p=p, duration=duration), when, label)
