"""Reading and setting simulator state and physical parameters, for the state perturbations.

Two families are supported, each through an explicit, documented table rather than guesses:

- Gymnasium's classic-control envs (CartPole, Pendulum, MountainCar, MountainCarContinuous, Acrobot): the
  state is ``env.unwrapped.state``; the parameters are the env's own constants (see :data:`CLASSIC_PARAMETERS`).
- MuJoCo envs (``gymnasium.envs.mujoco.MujocoEnv``): the state is ``qpos`` followed by ``qvel``, set through
  ``set_state``; the parameters are the numeric arrays of the MuJoCo model, named as in ``mujoco.MjModel``
  (``body_mass``, ``geom_friction``, ``actuator_gear``, ``dof_damping``, ...) or ``opt.<field>``
  (``opt.gravity``, ``opt.timestep``, ...).
- Gymnasium's LunarLander (Box2D), for dynamics shifts only: the physical arguments of its constructor
  (``gravity``, ``wind_power``, ``turbulence_power``; see :class:`_LunarLander`).

Anything else raises :class:`~rlwrappers.error.StateNotSettable` when a state perturbation is built.
"""

from __future__ import annotations

import abc
import hashlib
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers.error import StateNotSettable

__all__ = [
    "CLASSIC_PARAMETERS",
    "NONNEGATIVE_PARAMETERS",
    "POSITIVE_PARAMETERS",
    "Change",
    "ParameterLedger",
    "Simulator",
    "ledger",
    "simulator",
]

#: The constants a dynamics shift may change in each classic-control env, by class name. Derived constants
#: (CartPole's ``total_mass`` and ``polemass_length``) are recomputed whenever one of their inputs changes.
CLASSIC_PARAMETERS: Final[Mapping[str, tuple[str, ...]]] = {
    "CartPoleEnv": ("gravity", "masscart", "masspole", "length", "force_mag", "tau"),
    "PendulumEnv": ("g", "m", "l", "max_speed", "max_torque", "dt"),
    "MountainCarEnv": ("force", "gravity"),
    "Continuous_MountainCarEnv": ("power",),
    "AcrobotEnv": (
        "LINK_LENGTH_1",
        "LINK_LENGTH_2",
        "LINK_MASS_1",
        "LINK_MASS_2",
        "LINK_COM_POS_1",
        "LINK_COM_POS_2",
        "LINK_MOI",
        "dt",
    ),
}


#: The parameters that must stay > 0, by class name (``MujocoEnv`` for every MuJoCo env): the masses, lengths
#: and moments of inertia of bodies, and time steps. A body has positive mass and size and time moves forward;
#: at zero the equations of several envs divide by zero (CartPole's ``length``, Pendulum's ``m`` and ``l``,
#: Acrobot's ``LINK_MOI`` with a massless link). Positions (Acrobot's ``LINK_COM_POS_*``), forces, torques,
#: gravity and speed limits may be zero. A MuJoCo model's arrays mix bodies of zero mass (the world body) with
#: others, so only its time step is listed; MuJoCo guards its own mass matrix.
POSITIVE_PARAMETERS: Final[Mapping[str, tuple[str, ...]]] = {
    "CartPoleEnv": ("masscart", "masspole", "length", "tau"),
    "PendulumEnv": ("m", "l", "dt"),
    "MountainCarEnv": (),
    "Continuous_MountainCarEnv": (),
    "AcrobotEnv": ("LINK_LENGTH_1", "LINK_LENGTH_2", "LINK_MASS_1", "LINK_MASS_2", "LINK_MOI", "dt"),
    "MujocoEnv": ("opt.timestep",),
    "LunarLander": (),
}


#: Parameters that must stay >= 0: a MuJoCo model's masses, inertias, frictions, damping and armature (its
#: world body has zero mass, so 0 is allowed).
NONNEGATIVE_PARAMETERS: Final[Mapping[str, tuple[str, ...]]] = {
    "MujocoEnv": ("body_mass", "body_inertia", "geom_friction", "dof_damping", "dof_armature", "dof_frictionloss"),
    "LunarLander": ("wind_power", "turbulence_power"),
}


def _cartpole_derived(env: Any) -> None:
    env.total_mass = env.masspole + env.masscart
    env.polemass_length = env.masspole * env.length


_DERIVED: Final[Mapping[str, Callable[[Any], None]]] = {"CartPoleEnv": _cartpole_derived}


class Simulator(abc.ABC):
    """Access to one env's state vector and physical parameters."""

    #: The key of the simulator's family in :data:`POSITIVE_PARAMETERS`.
    kind: str

    def __init__(self, env: Any) -> None:
        self.env = env

    def positive(self) -> tuple[str, ...]:
        """The parameters that must stay > 0 (:data:`POSITIVE_PARAMETERS`)."""
        return POSITIVE_PARAMETERS[self.kind]

    def nonnegative(self) -> tuple[str, ...]:
        """The parameters that must stay >= 0 (:data:`NONNEGATIVE_PARAMETERS`)."""
        return NONNEGATIVE_PARAMETERS.get(self.kind, ())

    @abc.abstractmethod
    def state_size(self) -> int:
        """The length of the state vector (known before the first reset)."""

    @abc.abstractmethod
    def get_state(self) -> NDArray[np.float64]:
        """The state as a flat float64 vector."""

    @abc.abstractmethod
    def set_state(self, state: NDArray[np.float64]) -> None:
        """Sets the state (kept inside the env's own limits)."""

    @abc.abstractmethod
    def observe(self) -> Any:
        """The observation of the current state."""

    @abc.abstractmethod
    def parameters(self) -> dict[str, NDArray[np.float64]]:
        """The parameters a dynamics shift may change, with their current values."""

    @abc.abstractmethod
    def set_parameter(self, name: str, value: NDArray[np.float64]) -> None:
        """Sets one parameter (same shape as returned by :meth:`parameters`)."""


_CLASSIC_STATE_SIZES: Final[Mapping[str, int]] = {
    "CartPoleEnv": 4,
    "PendulumEnv": 2,
    "MountainCarEnv": 2,
    "Continuous_MountainCarEnv": 2,
    "AcrobotEnv": 4,
}


class _Classic(Simulator):
    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.kind = type(env).__name__

    def state_size(self) -> int:
        return _CLASSIC_STATE_SIZES[self.kind]

    def get_state(self) -> NDArray[np.float64]:
        if self.env.state is None:
            raise StateNotSettable(f"{self.kind} has no state before its first reset")
        return np.array(self.env.state, dtype=np.float64)

    def set_state(self, state: NDArray[np.float64]) -> None:
        env, state = self.env, np.array(state, dtype=np.float64)
        if self.kind in ("MountainCarEnv", "Continuous_MountainCarEnv"):
            state[0] = np.clip(state[0], env.min_position, env.max_position)
            state[1] = np.clip(state[1], -env.max_speed, env.max_speed)
        elif self.kind == "PendulumEnv":
            state[1] = np.clip(state[1], -env.max_speed, env.max_speed)
        elif self.kind == "CartPoleEnv":  # where its episodes end, half its observation space's bounds
            state[0] = np.clip(state[0], -env.x_threshold, env.x_threshold)
            state[2] = np.clip(state[2], -env.theta_threshold_radians, env.theta_threshold_radians)
        elif self.kind == "AcrobotEnv":
            state[2] = np.clip(state[2], -env.MAX_VEL_1, env.MAX_VEL_1)
            state[3] = np.clip(state[3], -env.MAX_VEL_2, env.MAX_VEL_2)
        env.state = state.astype(np.asarray(env.state).dtype)

    def observe(self) -> Any:
        # Pendulum and Acrobot compute their observation from `state` only in their private `_get_obs` and
        # `_get_ob`: calling them keeps the observation exactly Gymnasium's, where a copy could drift from it.
        if self.kind == "PendulumEnv":
            return self.env._get_obs()  # private in Gymnasium: see above
        if self.kind == "AcrobotEnv":
            return self.env._get_ob()  # private in Gymnasium: see above
        return np.array(self.env.state, dtype=np.float32)

    def parameters(self) -> dict[str, NDArray[np.float64]]:
        return {name: np.array(getattr(self.env, name), dtype=np.float64) for name in CLASSIC_PARAMETERS[self.kind]}

    def set_parameter(self, name: str, value: NDArray[np.float64]) -> None:
        setattr(self.env, name, float(value))
        derived = _DERIVED.get(self.kind)
        if derived is not None:
            derived(self.env)


class _Mujoco(Simulator):
    kind = "MujocoEnv"

    def state_size(self) -> int:
        return int(self.env.model.nq + self.env.model.nv)

    def get_state(self) -> NDArray[np.float64]:
        return np.concatenate([self.env.data.qpos, self.env.data.qvel]).astype(np.float64)

    def set_state(self, state: NDArray[np.float64]) -> None:
        nq = self.env.model.nq
        self.env.set_state(state[:nq], state[nq:])

    def observe(self) -> Any:
        return self.env._get_obs()  # private in Gymnasium: a MuJoCo env's only call that observes its current state

    def _field(self, name: str) -> NDArray[Any]:
        owner = self.env.model
        if name.startswith("opt."):
            owner, name = owner.opt, name[4:]
        return getattr(owner, name)

    def parameters(self) -> dict[str, NDArray[np.float64]]:
        model = self.env.model
        out: dict[str, NDArray[np.float64]] = {}
        for owner, prefix in ((model, ""), (model.opt, "opt.")):
            for name in dir(owner):
                if name.startswith("_"):
                    continue
                value = getattr(owner, name, None)
                if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size > 0:
                    out[prefix + name] = value.astype(np.float64)
                elif prefix and isinstance(value, float):
                    out[prefix + name] = np.array(value)
        return out

    def set_parameter(self, name: str, value: NDArray[np.float64]) -> None:
        if name.startswith("opt.") and np.ndim(getattr(self.env.model.opt, name[4:])) == 0:
            setattr(self.env.model.opt, name[4:], float(value))
            return
        field = self._field(name)
        field[...] = value


def _is_mujoco(env: Any) -> bool:
    return any(cls.__name__ == "MujocoEnv" for cls in type(env).__mro__)


#: A change of parameters: for each name, the value that replaces it (None: keep) and the factor that scales it.
Change = Mapping[str, tuple[Any, Any]]


class ParameterLedger:
    """The physical parameters of one simulated env: their base values and the changes active on top of them.

    The base values are read once, when the first dynamics shift binds to the env, so shifts that follow one
    another, or a shift dropped without being closed, never compound. A parameter's value is its base with
    the active changes applied in the order they were activated: each change's value (if it gives one)
    replaces the value so far, then its factor multiplies it. Changes whose owners a reset no longer reaches (a
    wrapper dropped without closing) are forgotten by :meth:`retain`.
    """

    def __init__(self, base: Mapping[str, NDArray[np.float64]]):
        self.base = {name: value.copy() for name, value in base.items()}
        self._active: list[tuple[weakref.ref[Any], Change]] = []

    def activate(self, owner: Any, change: Change, sim: Simulator) -> None:
        """Adds ``owner``'s change on top of those active, and sets the parameters it touches."""
        self._active.append((weakref.ref(owner), change))
        self.refresh(change, sim)

    def deactivate(self, owner: Any, sim: Simulator) -> None:
        """Removes ``owner``'s changes, and sets the parameters they touched from the base and the others."""
        touched = {name for ref, change in self._active if ref() is owner for name in change}
        self._active = [(ref, change) for ref, change in self._active if ref() is not owner]
        self.refresh(touched, sim)

    def retain(self, owners: Any, sim: Simulator) -> None:
        """Forgets the changes of every owner not in ``owners``, and sets the parameters they touched."""
        kept = {id(owner) for owner in owners}
        dropped = {name for ref, change in self._active if id(ref()) not in kept for name in change}
        self._active = [(ref, change) for ref, change in self._active if id(ref()) in kept]
        self.refresh(dropped, sim)

    def refresh(self, names: Any, sim: Simulator) -> None:
        """Sets the parameters ``names`` to their base with the live active changes applied, in order."""
        self._active = [(ref, change) for ref, change in self._active if ref() is not None]
        for name in names:
            value = self.base[name]
            for _, change in self._active:
                if name in change:
                    given, factor = change[name]
                    if given is not None:  # nan elements keep the value so far (a change of some elements)
                        given = np.broadcast_to(np.asarray(given, dtype=np.float64), value.shape)
                        value = np.where(np.isnan(given), value, given)
                    value = value * np.asarray(factor, dtype=np.float64)
            sim.set_parameter(name, value)


_LEDGERS: weakref.WeakKeyDictionary[Any, ParameterLedger] = weakref.WeakKeyDictionary()


def ledger(sim: Simulator) -> ParameterLedger:
    """The one :class:`ParameterLedger` of ``sim``'s env, made from its current parameters on first use."""
    found = _LEDGERS.get(sim.env)
    if found is None:
        found = _LEDGERS[sim.env] = ParameterLedger(sim.parameters())
    return found


def simulator(env: gym.Env[Any, Any], *, purpose: str) -> Simulator:
    """The :class:`Simulator` of ``env.unwrapped``.

    Raises:
        StateNotSettable: the env is neither a classic-control env listed in :data:`CLASSIC_PARAMETERS` nor a
            MuJoCo env; ``purpose`` names the perturbation that asked.
    """
    base = env.unwrapped
    kind = type(base).__name__
    if kind in CLASSIC_PARAMETERS:
        return _Classic(base)
    if _is_mujoco(base):
        return _Mujoco(base)
    if kind in _OWN:
        return _OWN[kind](base)
    if getattr(base, "dynamics_parameters", None) is not None:
        return _Declared(base)
    raise StateNotSettable(
        f"{purpose} needs an env whose state can be read and set; {kind} is not supported "
        f"(supported: {', '.join(sorted(CLASSIC_PARAMETERS))} and MuJoCo envs, and for dynamics shifts"
        f" {', '.join(sorted(_OWN))} and any env that names its float constants in a `dynamics_parameters`"
        " attribute)"
    )


class _ParametersOnly(Simulator):
    """An env whose physical parameters can be set, but not its state: state perturbations refuse it."""

    def _refuse(self) -> StateNotSettable:
        return StateNotSettable(f"{type(self.env).__name__}'s parameters can be set, not its state")

    def state_size(self) -> int:
        raise self._refuse()

    def get_state(self) -> NDArray[np.float64]:
        raise self._refuse()

    def set_state(self, state: NDArray[np.float64]) -> None:
        raise self._refuse()

    def observe(self) -> Any:
        raise self._refuse()


class _Declared(_ParametersOnly):
    """An env that names its physical constants in ``dynamics_parameters``.

    Dynamics shifts change them like a classic-control env's constants; ``positive_parameters`` names those that
    must stay > 0.
    """

    kind = "declared"

    def positive(self) -> tuple[str, ...]:
        return tuple(getattr(self.env, "positive_parameters", ()))

    def parameters(self) -> dict[str, NDArray[np.float64]]:
        return {name: np.array(getattr(self.env, name), dtype=np.float64) for name in self.env.dynamics_parameters}

    def set_parameter(self, name: str, value: NDArray[np.float64]) -> None:
        setattr(self.env, name, float(value) if np.ndim(value) == 0 else np.array(value))


class _LunarLander(_ParametersOnly):
    """Gymnasium's LunarLander (discrete and continuous): the physical arguments of its constructor.

    ``gravity`` is the world's (``b2World.gravity``, -10 by default), set in the world that plays now as well
    as for the worlds later resets build. ``wind_power`` and ``turbulence_power`` are the wind and turbulence
    in effect: 0 where the env's wind is off (``enable_wind=False``, its default), whatever powers it holds.
    Setting either above 0 turns the wind on, its pattern starting at a phase read from the state of the env's
    generator (:func:`_wind_phases`; the env's reset draws one when its wind is on); setting both to 0 turns it off.
    """

    kind = "LunarLander"

    def parameters(self) -> dict[str, NDArray[np.float64]]:
        env = self.env
        wind = env.enable_wind
        return {
            "gravity": np.array(env.gravity, dtype=np.float64),
            "wind_power": np.array(env.wind_power if wind else 0.0, dtype=np.float64),
            "turbulence_power": np.array(env.turbulence_power if wind else 0.0, dtype=np.float64),
        }

    def set_parameter(self, name: str, value: NDArray[np.float64]) -> None:
        env = self.env
        if name == "gravity":
            env.gravity = float(value)
            if env.world is not None:
                env.world.gravity = (0.0, env.gravity)
            return
        if not env.enable_wind:  # the powers it holds while off come back when the wind goes off again
            _HELD_POWERS.setdefault(env, (env.wind_power, env.turbulence_power))
        powers = self.parameters()
        powers[name] = np.asarray(value, dtype=np.float64)
        wind, turbulence = float(powers["wind_power"]), float(powers["turbulence_power"])
        if wind == 0 and turbulence == 0:
            env.enable_wind = False
            env.wind_power, env.turbulence_power = _HELD_POWERS.pop(env, (wind, turbulence))
            return
        if not env.enable_wind and env.lander is not None:  # mid-episode: start a pattern, as reset does
            env.wind_idx, env.torque_idx = _wind_phases(env.np_random)
        env.enable_wind, env.wind_power, env.turbulence_power = True, wind, turbulence


def _wind_phases(generator: np.random.Generator) -> tuple[int, int]:
    """Where a LunarLander's wind and turbulence patterns start, in its reset's range [-9999, 9999).

    Read from the env generator's state, not drawn from it: a wrapper leaves the env's generator where it is, so
    the env's own draws (its engines' particles) stay those of the bare env, and the same seed gives the same
    phases.
    """
    digest = hashlib.sha256(repr(generator.bit_generator.state).encode()).digest()
    wind, torque = (int.from_bytes(digest[i : i + 8], "little") % 19998 - 9999 for i in (0, 8))
    return wind, torque


#: The wind and turbulence powers a LunarLander held, unused, while its wind was off.
_HELD_POWERS: weakref.WeakKeyDictionary[Any, tuple[float, float]] = weakref.WeakKeyDictionary()


#: The envs served by an adapter of their own, by class name.
_OWN: Final[Mapping[str, Callable[[Any], Simulator]]] = {"LunarLander": _LunarLander}
