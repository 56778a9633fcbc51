"""Observation perturbations: noise on what the agent sees."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.core import Perturbation, Record, SingleLayer, register_wrapper
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType
from rlwrappers.functional import noise
from rlwrappers.schedule import Schedule

__all__ = ["ObservationNoise", "ObservationNoisePerturbation"]


def _box(space: gym.Space[Any], who: str, arg: str = "observation space") -> gym.spaces.Box:
    if not isinstance(space, gym.spaces.Box):
        raise IncompatibleSpace(f"{who} needs a Box {arg}, received {space}")
    return space


def check_scale_shape(name: str, scale: float | tuple[float, ...], shape: tuple[int, ...]) -> None:
    """Raises unless a per-dimension ``scale`` broadcasts to ``shape``."""
    if isinstance(scale, tuple):
        try:
            np.broadcast_shapes(np.shape(scale), shape)
        except ValueError:
            raise InvalidArgument(
                f"`{name}` has {len(scale)} entries, which does not broadcast to the shape {shape}"
            ) from None


@dataclass(kw_only=True)
class ObservationNoisePerturbation(Perturbation):
    """Adds zero-mean noise to every observation (observation noise; Flageat et al. 2023).

    The noise is in the observation's own units; on integer spaces such as uint8 images it is rounded to whole
    levels. A vector version is :func:`rlwrappers.functional.noise.add_noise`, which takes batches.

    Args:
        std: the noise's standard deviation: a number, or one per observation dimension.
        dist: "gaussian", or "uniform" (on [-a, a] with a = std * sqrt(3)).
        clip: keep observations inside the space's bounds; if False, the space's bounds widen to the dtype's
            range (infinite for floats) and observations are not clipped.

    On float observations that are not clipped to finite bounds, ``std`` must be at most the dtype's largest
    value over 32 (about 1.1e37 for float32), so the noise cannot overflow to inf; the wrapper checks it when
    it is built on an env.
    """

    name = "obs_noise"
    channel = "observation"

    std: float | tuple[float, ...] = 0.1
    dist: str = "gaussian"
    clip: bool = True

    def __post_init__(self) -> None:
        self.std = _check.scale("std", self.std)
        self.dist = _check.choice("dist", self.dist, noise.DISTRIBUTIONS)
        if not isinstance(self.clip, bool):
            raise InvalidType(f"`clip` must be a bool, received {self.clip!r}")

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        box = _box(observation_space, "obs_noise")
        check_scale_shape("std", self.std, box.shape)
        unclipped = ~(np.isfinite(box.low) & np.isfinite(box.high)) if self.clip else True
        _check.noise_scale("std", self.std, box.dtype, "observations", unclipped)
        self._low: Any
        self._high: Any
        self._low, self._high = noise.tight_bounds(box.low, box.high) if self.clip else (None, None)
        self._std = np.asarray(self.std, dtype=np.float64)
        self._integer = box.dtype.kind in "iub"
        table = self._integer and isinstance(self.std, float) and noise.TableNoise.covers(self.std)
        self._table = noise.TableNoise(self.std, self.dist) if table else None  # type: ignore[arg-type]

    @override
    def set_params(
        self,
        params: Mapping[str, Any],
        env: gym.Env[Any, Any],
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
    ) -> None:
        if self._integer or params["dist"] != self.dist or params["clip"] != self.clip:
            super().set_params(params, env, observation_space, action_space)
            return
        std = params["std"]  # on floats the noise follows from std alone
        self.std = std if isinstance(std, float) else _check.scale("std", std)
        self._std = np.asarray(self.std, dtype=np.float64)

    @override
    def observation_space(self, space: gym.Space[Any]) -> gym.Space[Any]:
        if self.clip:
            return space
        assert isinstance(space, gym.spaces.Box)
        if space.dtype.kind == "f":
            low, high = -np.inf, np.inf
        else:
            info = np.iinfo(space.dtype)
            low, high = info.min, info.max
        return gym.spaces.Box(low, high, shape=space.shape, dtype=space.dtype)

    @override
    def observation(self, obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        if self._table is not None:
            return self._table.add(np.asarray(obs), rng, self._low, self._high), {}
        return noise.add_noise(obs, self._std, self.dist, rng, self._low, self._high), {}


@register_wrapper("obs_noise")
class ObservationNoise(SingleLayer):
    """Adds zero-mean noise to every observation (observation noise; Flageat et al. 2023).

    Any Box space, including uint8 images; see :class:`ObservationNoisePerturbation` for the details. No
    vector version: wrap each sub-env, or use :func:`rlwrappers.functional.noise.add_noise` on batches.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.ObservationNoise(gym.make("CartPole-v1"), std=0.1)
        >>> obs, info = env.reset(seed=0)
        >>> info["rlwrappers"]
        {'obs_noise': {'active': True}}
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        std: float | tuple[float, ...] = 0.1,
        dist: str = "gaussian",
        clip: bool = True,
        *,
        when: str | Schedule | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``allow_nonfinite`` lets non-finite observations through instead of raising
        :class:`~rlwrappers.error.PerturbationError`.
        """
        params = dict(std=std, dist=dist, clip=clip)
        self._setup(env, ObservationNoisePerturbation, params, when, label, allow_nonfinite=allow_nonfinite)
