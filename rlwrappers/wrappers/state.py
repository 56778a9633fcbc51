"""State perturbations: noisy initial states and shifted dynamics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rlwrappers import _check, simstate, transforms
from rlwrappers.core import Perturbation, PerturbationLayer, Record, SingleLayer, register_wrapper
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.schedule import Schedule
from rlwrappers.wrappers.observation import check_scale_shape

__all__ = [
    "DynamicsShift",
    "DynamicsShiftPerturbation",
    "InitialStateNoise",
    "InitialStateNoisePerturbation",
]


def _check_nothing_changes_observations(env: gym.Env[Any, Any]) -> None:
    """Raises if a wrapper between ``env`` and the base env changes observations.

    ``init_noise`` returns the observation of the new state, computed by the base env; a wrapper below it that
    changes observations (noise, frame stacking, normalization) would be silently bypassed.
    """
    current: Any = env
    while isinstance(current, gym.Wrapper):
        inner = current.env
        changes = (
            isinstance(current, gym.ObservationWrapper)
            or (
                isinstance(current, PerturbationLayer)
                and any(p.channel == "observation" for p in current.perturbations)
            )
            or current.observation_space != inner.observation_space
        )
        if changes:
            raise InvalidArgument(
                f"init_noise recomputes the observation from the env's state, so it must sit below every wrapper "
                f"that changes observations; received an env with {type(current).__name__} below it: wrap with "
                f"init_noise first"
            )
        current = inner


@dataclass(kw_only=True)
class InitialStateNoisePerturbation(Perturbation):
    """Adds noise to the env's state right after reset (random initialisation, s0 + eps; Flageat et al. 2023).

    Works on classic-control envs (their ``state``) and MuJoCo envs (``qpos`` then ``qvel``, set through
    ``set_state``); states are kept inside the env's own limits. It acts when the schedule is active at time 0
    of an episode. The log's episode row records the noise added (``delta``).

    Args:
        std: the noise's standard deviation: a number, or one per state dimension.
        dist: "gaussian", or "uniform" (on [-a, a] with a = std * sqrt(3)).
    """

    name = "init_noise"
    channel = "state"
    reset_fields = {"delta": "float64[]"}

    std: float | tuple[float, ...] = 0.1
    dist: str = "gaussian"

    def __post_init__(self) -> None:
        self.std = _check.scale("std", self.std)
        self.dist = _check.choice("dist", self.dist, transforms.DISTRIBUTIONS)

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self._sim = simstate.simulator(env, purpose="init_noise")
        check_scale_shape("std", self.std, (self._sim.state_size(),))
        _check_nothing_changes_observations(env)
        self._std = np.asarray(self.std, dtype=np.float64)

    @override
    def reset(self, env: gym.Env[Any, Any], obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        state = self._sim.get_state()
        delta = transforms.noise(state.shape, self._std, self.dist, rng)
        self._sim.set_state(state + delta)
        applied = self._sim.get_state() - state
        return self._sim.observe(), {"delta": applied.tolist()}


@register_wrapper("init_noise")
class InitialStateNoise(SingleLayer):
    """Adds noise to the initial state of each episode; see :class:`InitialStateNoisePerturbation`.

    No vector version: wrap each sub-env.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.InitialStateNoise(gym.make("Pendulum-v1"), std=0.5)
        >>> obs, info = env.reset(seed=0)
        >>> len(info["rlwrappers"]["init_noise"]["delta"])
        2
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        std: float | tuple[float, ...] = 0.1,
        dist: str = "gaussian",
        *,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns."""
        self._setup(env, InitialStateNoisePerturbation(std=std, dist=dist), when, label)


def _parameter_map(name: str, value: Any) -> dict[str, float | list[Any]]:
    if not isinstance(value, Mapping):
        raise InvalidType(f"`{name}` must be a dict of parameter names to values, received {value!r}")
    out: dict[str, float | list[Any]] = {}
    for key, v in value.items():
        if not isinstance(key, str):
            raise InvalidType(f"`{name}` keys must be parameter names, received {key!r}")
        array = np.asarray(v.tolist() if isinstance(v, np.ndarray) else v, dtype=object)
        for i, x in enumerate(array.reshape(-1)):
            _check.number(f"{name}[{key!r}][{i}]" if array.ndim else f"{name}[{key!r}]", x)
        out[key] = float(v) if array.ndim == 0 else np.asarray(array, dtype=np.float64).tolist()
    return out


@dataclass(kw_only=True)
class DynamicsShiftPerturbation(Perturbation):
    """Changes the env's physical parameters, at reset or mid-episode (a dynamics shift).

    ``values`` sets parameters, ``scales`` multiplies them (after ``values``). Classic-control parameters are
    the env's constants (:data:`rlwrappers.simstate.CLASSIC_PARAMETERS`); MuJoCo parameters are the numeric
    arrays of the model (``body_mass``, ``geom_friction``, ``actuator_gear``, ``opt.gravity``, ...), set as a
    whole by a number or element-wise by a nested list. The original values come back, bit for bit, when the
    schedule switches off and at every reset.

    Args:
        values: parameter name to new value, e.g. {"gravity": 12.0} or {"opt.gravity": [0, 0, -12]}.
        scales: parameter name to factor, e.g. {"length": 1.5} or {"body_mass": 1.2}.
    """

    name = "dynamics_shift"
    channel = "dynamics"

    values: dict[str, Any] = field(default_factory=dict)
    scales: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.values = _parameter_map("values", self.values)
        self.scales = _parameter_map("scales", self.scales)
        for key, factor in self.scales.items():
            if np.any(np.asarray(factor) < 0):
                raise InvalidArgument(f"`scales[{key!r}]` must be >= 0, received {factor!r}")
        self._saved: dict[str, np.ndarray] = {}

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self._sim = simstate.simulator(env, purpose="dynamics_shift")
        current = self._sim.parameters()
        for arg in ("values", "scales"):
            given = getattr(self, arg)
            _check.keys(arg, given, list(current))
            for key, value in given.items():
                try:
                    np.broadcast_to(np.asarray(value), current[key].shape)
                except ValueError:
                    raise InvalidArgument(
                        f"`{arg}[{key!r}]` has shape {np.shape(value)}, but the parameter has shape "
                        f"{current[key].shape}"
                    ) from None

    @override
    def activate(self, env: gym.Env[Any, Any], rng: np.random.Generator) -> Record:
        current = self._sim.parameters()
        self._saved = {key: current[key].copy() for key in {*self.values, *self.scales}}
        for key, original in self._saved.items():
            value = np.broadcast_to(np.asarray(self.values.get(key, original), dtype=np.float64), original.shape)
            value = value * np.asarray(self.scales.get(key, 1.0), dtype=np.float64)
            self._sim.set_parameter(key, value)
        return {}

    @override
    def deactivate(self, env: gym.Env[Any, Any]) -> None:
        for key, original in self._saved.items():
            self._sim.set_parameter(key, original)
        self._saved = {}


@register_wrapper("dynamics_shift")
class DynamicsShift(SingleLayer):
    """Changes physical parameters while its schedule is active; see :class:`DynamicsShiftPerturbation`.

    No vector version: wrap each sub-env.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.DynamicsShift(gym.make("CartPole-v1"), scales={"length": 2.0}, when="starting(step=10)")
        >>> _ = env.reset(seed=0)
        >>> env.unwrapped.length
        0.5
        >>> for _ in range(10): _ = env.step(0)
        >>> env.unwrapped.length, env.unwrapped.polemass_length
        (1.0, 0.1)
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        values: Mapping[str, Any] | None = None,
        scales: Mapping[str, Any] | None = None,
        *,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns."""
        values, scales = ({} if values is None else values), ({} if scales is None else scales)
        perturbation = DynamicsShiftPerturbation(
            values=dict(values) if isinstance(values, Mapping) else values,  # anything else is rejected by name
            scales=dict(scales) if isinstance(scales, Mapping) else scales,
        )
        self._setup(env, perturbation, when, label)
