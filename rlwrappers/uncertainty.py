"""Uncertainty sets: named, versioned boxes of physical parameters to train and evaluate over.

An uncertainty set is a box, one range per parameter, for one env. :func:`uncertainty_set` gives one by name and
number of dimensions. It gives the spec that draws from the box (domain randomization), the spec of one point
of it, grids that include both bounds, and its bounds. It also reads the env's nominal values, says whether the
box holds them, and finds the dead zones where a parameter changes nothing.

- MuJoCo locomotion (Hopper, HalfCheetah, Walker2d, Ant, HumanoidStandup: 1 to 3 dimensions;
  InvertedPendulum: 1 and 2) has the boxes of M2TD3 (Tanabe et al., "Max-Min Off-Policy Actor-Critic Method
  Focusing on Worst-Case Robustness to Model Misspecification", NeurIPS 2022), as RRLS ships them: absolute
  values, in kg for masses.
- The other MuJoCo tasks (Humanoid: 1 and 2; InvertedDoublePendulum, Pusher: 1 to 3; Reacher, Swimmer: 1 and
  2) and classic control (CartPole, Pendulum, Acrobot, MountainCar, MountainCarContinuous) have boxes from half
  to twice each nominal value, of the knobs each task turns on (Swimmer's fluid, Reacher's and Pusher's joint
  damping); :doc:`uncertainty-sets` says why.
- Box2D's LunarLander and LunarLanderContinuous (1 to 3) have their constructor's physical arguments, over
  Gymnasium's documented ranges: gravity, wind and turbulence.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers.error import InvalidArgument, UnknownName, did_you_mean
from rlwrappers.spec import format_value
from rlwrappers.state.simulators import simulator

__all__ = ["SETS", "Dimension", "UncertaintySet", "uncertainty_set"]

M2TD3: Final = "M2TD3 (Tanabe et al., NeurIPS 2022), the boxes RRLS ships; absolute values"
HALF_TO_TWICE: Final = "rlwrappers: half to twice each nominal value (see docs/uncertainty-sets.md)"
LUNAR_LANDER: Final = (
    "Gymnasium's ranges for LunarLander's arguments: gravity from half its nominal -10 to its bound -12, and the"
    " recommended wind_power 0 to 20 and turbulence_power 0 to 2 (no wind by default)"
)


@dataclass(frozen=True)
class Dimension:
    """One parameter of a set: its name, the ``dynamics_shift`` key it sets, and its range."""

    name: str
    key: str
    low: float
    high: float


@dataclass(frozen=True)
class UncertaintySet:
    """A box of physical parameters for one env: see :func:`uncertainty_set`.

    Args:
        family: the env's name without version, e.g. "Hopper".
        env_id: the Gymnasium ID the box is for, e.g. "Hopper-v5".
        dims: the box, one :class:`Dimension` per parameter.
        source: where the box comes from.
        version: changes whenever a range changes, so results over one version compare.
    """

    family: str
    env_id: str
    dims: tuple[Dimension, ...]
    source: str
    version: int = 1

    @property
    def name(self) -> str:
        """``family:dimensions``, e.g. "Hopper:3"."""
        return f"{self.family}:{len(self.dims)}"

    @property
    def bounds(self) -> dict[str, tuple[float, float]]:
        """Each parameter's (low, high)."""
        return {d.name: (d.low, d.high) for d in self.dims}

    def spec(self, resample: str = "activation", label: str | None = None) -> str:
        """The spec that draws every parameter uniformly from its range (domain randomization)."""
        values = ", ".join(f"{d.key!r}: uniform({d.low!r}, {d.high!r})" for d in self.dims)
        extra = "" if resample == "activation" else f", resample={resample!r}"
        extra += "" if label is None else f", label={label!r}"
        return f"dynamics_shift(values={{{values}}}{extra})"

    def spec_at(self, point: Mapping[str, float], label: str | None = None) -> str:
        """The spec that sets the parameters to ``point`` (name to value), which must lie in the box."""
        self._check_point(point)
        values = ", ".join(f"{d.key!r}: {format_value(float(point[d.name]))}" for d in self.dims)
        return f"dynamics_shift(values={{{values}}}" + ("" if label is None else f", label={label!r}") + ")"

    def grid(self, points: int | Sequence[int] = 10) -> list[dict[str, float]]:
        """A grid over the box: ``points`` values per parameter (one count for all, or one each), bounds included.

        Points come in row-major order: the last parameter varies fastest.
        """
        counts = [points] * len(self.dims) if isinstance(points, int) else list(points)
        if len(counts) != len(self.dims) or any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in counts):
            raise InvalidArgument(
                f"`points` must be an int >= 2 or one per parameter of {self.name}, received {points!r}"
            )
        axes = [np.linspace(d.low, d.high, n).tolist() for d, n in zip(self.dims, counts, strict=True)]
        return [dict(zip((d.name for d in self.dims), values, strict=True)) for values in itertools.product(*axes)]

    def read(self, env: gym.Env[Any, Any]) -> dict[str, float]:
        """Each parameter's value in ``env`` now (the largest, for a key that spans several elements)."""
        parameters = simulator(env, purpose="reading an uncertainty set").parameters()
        return {d.name: _value(parameters, d.key) for d in self.dims}

    def nominal(self) -> dict[str, float]:
        """The env's own value of each parameter, read from a fresh env."""
        env = gym.make(self.env_id)
        try:
            return self.read(env)
        finally:
            env.close()

    def holds_nominal(self) -> dict[str, bool]:
        """Whether each parameter's nominal value lies in its range.

        Hopper's torso and thigh masses do not lie in M2TD3's 3-D box.
        """
        nominal = self.nominal()
        return {d.name: d.low <= nominal[d.name] <= d.high for d in self.dims}

    def dead_zones(self) -> dict[str, tuple[float, float]]:
        """The ranges in which a parameter changes nothing, by parameter.

        MuJoCo takes the larger friction of two geoms in contact, so a floor friction below the friction of
        what touches the floor is never used: a floor-only friction (``geom_friction[0, 0]``) is dead from its
        low bound up to the largest friction of the other geoms (Hopper's foot: 2.0, Walker2d's feet: 1.9),
        as long as nothing else touches the floor; their episodes end when the torso falls.
        """
        zones = {}
        for d in self.dims:
            if d.key == "geom_friction[0, 0]":
                env = gym.make(self.env_id)
                others = float(np.max(env.unwrapped.model.geom_friction[1:, 0]))  # type: ignore[attr-defined]
                env.close()
                if others > d.low:
                    zones[d.name] = (d.low, min(others, d.high))
        return zones

    def _check_point(self, point: Mapping[str, float]) -> None:
        names = [d.name for d in self.dims]
        if not isinstance(point, Mapping) or sorted(point) != sorted(names):
            raise InvalidArgument(f"a point of {self.name} names each of {names}, received {point!r}")
        for d in self.dims:
            if not d.low <= float(point[d.name]) <= d.high:
                raise InvalidArgument(f"`{d.name}` = {point[d.name]!r} lies outside {self.name}'s [{d.low}, {d.high}]")


def _value(parameters: Mapping[str, Any], key: str) -> float:
    """The value of one ``dynamics_shift`` key (a parameter, or an indexed one) among a simulator's parameters."""
    name, _, index = key.partition("[")
    value = parameters[name]
    if index:
        value = value[tuple(slice(None) if i.strip() == ":" else int(i) for i in index[:-1].split(","))]
    return float(np.max(value))


def _mujoco(family: str, env_id: str, *dims: Dimension) -> list[UncertaintySet]:
    return [UncertaintySet(family, env_id, dims[:n], M2TD3) for n in range(1, len(dims) + 1)]


def _halves(family: str, env_id: str, *dims: tuple[str, str, float]) -> list[UncertaintySet]:
    """Boxes from half to twice each (name, key, nominal value): the first parameter alone, the first two, ..."""
    box = tuple(Dimension(name, key, nominal / 2, nominal * 2) for name, key, nominal in dims)
    return [UncertaintySet(family, env_id, box[:n], HALF_TO_TWICE) for n in range(1, len(box) + 1)]


def _classic(family: str, env_id: str, *dims: tuple[str, float]) -> list[UncertaintySet]:
    """:func:`_halves` of an env's constants, each named by its attribute in lower case."""
    return _halves(family, env_id, *((key.lower(), key, nominal) for key, nominal in dims))


def _lunar_lander(family: str, env_id: str) -> list[UncertaintySet]:
    """LunarLander's boxes (:data:`LUNAR_LANDER`): gravity alone, with the wind, with the turbulence too."""
    box = (
        Dimension("gravity", "gravity", -12.0, -5.0),
        Dimension("wind_power", "wind_power", 0.0, 20.0),
        Dimension("turbulence_power", "turbulence_power", 0.0, 2.0),
    )
    return [UncertaintySet(family, env_id, box[:n], LUNAR_LANDER) for n in range(1, len(box) + 1)]


_FLOOR, _EVERY_GEOM = "geom_friction[0, 0]", "geom_friction[:, 0]"

_ALL: Final = [
    *_mujoco(
        "Hopper",
        "Hopper-v5",
        Dimension("world_friction", _FLOOR, 0.1, 3.0),
        Dimension("torso_mass", "body_mass[1]", 0.1, 3.0),
        Dimension("thigh_mass", "body_mass[2]", 0.1, 4.0),
    ),
    UncertaintySet("HalfCheetah", "HalfCheetah-v5", (Dimension("world_friction", _EVERY_GEOM, 0.1, 3.0),), M2TD3),
    *_mujoco(
        "HalfCheetah",
        "HalfCheetah-v5",
        Dimension("world_friction", _EVERY_GEOM, 0.1, 4.0),
        Dimension("torso_mass", "body_mass[1]", 0.1, 7.0),
        Dimension("back_thigh_mass", "body_mass[2]", 0.1, 3.0),
    )[1:],
    *_mujoco(
        "Walker2d",
        "Walker2d-v5",
        Dimension("world_friction", _FLOOR, 0.1, 4.0),
        Dimension("torso_mass", "body_mass[1]", 0.1, 5.0),
        Dimension("thigh_mass", "body_mass[2]", 0.1, 6.0),
    ),
    *_mujoco(
        "Ant",
        "Ant-v5",
        Dimension("torso_mass", "body_mass[1]", 0.1, 3.0),
        Dimension("front_left_leg_mass", "body_mass[2]", 0.01, 3.0),
        Dimension("front_right_leg_mass", "body_mass[5]", 0.01, 3.0),
    ),
    *_mujoco(
        "HumanoidStandup",
        "HumanoidStandup-v5",
        Dimension("torso_mass", "body_mass[1]", 0.1, 16.0),
        Dimension("right_foot_mass", "body_mass[6]", 0.1, 8.0),
    ),
    UncertaintySet(
        "HumanoidStandup",
        "HumanoidStandup-v5",
        (
            Dimension("torso_mass", "body_mass[1]", 0.1, 16.0),
            Dimension("left_thigh_mass", "body_mass[7]", 0.1, 5.0),
            Dimension("right_foot_mass", "body_mass[6]", 0.1, 8.0),
        ),
        M2TD3,
    ),
    *_mujoco(
        "InvertedPendulum",
        "InvertedPendulum-v5",
        Dimension("pole_mass", "body_mass[2]", 1.0, 31.0),
        Dimension("cart_mass", "body_mass[1]", 1.0, 11.0),
    ),
    # The MuJoCo tasks M2TD3 leaves out, half to twice the nominal value of the knobs each task turns on.
    *_halves("Humanoid", "Humanoid-v5", ("torso_mass", "body_mass[1]", 8.9), ("world_friction", _EVERY_GEOM, 1.0)),
    *_halves(
        "InvertedDoublePendulum",
        "InvertedDoublePendulum-v5",
        ("pole2_mass", "body_mass[3]", 4.2),
        ("pole_mass", "body_mass[2]", 4.2),
        ("cart_mass", "body_mass[1]", 10.5),
    ),
    *_halves(
        "Pusher",
        "Pusher-v5",
        ("object_slide_x_damping", "dof_damping[8]", 0.5),
        ("object_slide_y_damping", "dof_damping[7]", 0.5),
        ("shoulder_pan_damping", "dof_damping[0]", 1.0),
    ),
    *_halves(
        "Reacher", "Reacher-v5", ("joint0_damping", "dof_damping[0]", 1.0), ("joint1_damping", "dof_damping[1]", 1.0)
    ),
    *_halves("Swimmer", "Swimmer-v5", ("viscosity", "opt.viscosity", 0.1), ("density", "opt.density", 4000.0)),
    *_classic("CartPole", "CartPole-v1", ("length", 0.5), ("masspole", 0.1), ("masscart", 1.0)),
    *_classic("Pendulum", "Pendulum-v1", ("m", 1.0), ("l", 1.0)),
    *_classic("Acrobot", "Acrobot-v1", ("LINK_MASS_2", 1.0), ("LINK_LENGTH_1", 1.0)),
    *_classic("MountainCar", "MountainCar-v0", ("force", 0.001), ("gravity", 0.0025)),
    *_classic("MountainCarContinuous", "MountainCarContinuous-v0", ("power", 0.0015)),
    *_lunar_lander("LunarLander", "LunarLander-v3"),
    *_lunar_lander("LunarLanderContinuous", "LunarLanderContinuous-v3"),
]

#: Every set by name ("Hopper:3").
SETS: Final[Mapping[str, UncertaintySet]] = {s.name: s for s in _ALL}


def uncertainty_set(env: str, dims: int | None = None) -> UncertaintySet:
    """The uncertainty set of ``env`` with ``dims`` parameters (default: all it has).

    ``env`` is a family such as "Hopper", an ID such as "Hopper-v5", or a set's name such as "Hopper:3".

    Example:
        >>> box = uncertainty_set("Hopper", dims=2)
        >>> box.bounds
        {'world_friction': (0.1, 3.0), 'torso_mass': (0.1, 3.0)}
        >>> box.spec()
        "dynamics_shift(values={'geom_friction[0, 0]': uniform(0.1, 3.0), 'body_mass[1]': uniform(0.1, 3.0)})"

    Raises:
        UnknownName: no set of that env or size.
    """
    family, _, given = str(env).partition(":")
    family = family.split("-v")[0]
    if given:
        dims = int(given) if given.isdigit() else -1
    sizes = sorted(len(s.dims) for s in SETS.values() if s.family == family)
    if not sizes:
        families = sorted({s.family for s in SETS.values()})
        raise UnknownName(f"no uncertainty set for {env!r}; sets exist for {families}.{did_you_mean(family, families)}")
    size = sizes[-1] if dims is None else dims
    if size not in sizes:
        raise UnknownName(f"{family} has uncertainty sets of {sizes} dimensions, received dims={dims!r}")
    return SETS[f"{family}:{size}"]
