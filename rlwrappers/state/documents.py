"""A running env's state as a JSON document: read it, write it back, render the observation of what was written.

:class:`~rlwrappers.wrappers.state.Intervene` makes interventions on any env one of these adapters serves; each
gives it three calls, named as the Toybox envs name them (``state_json``, ``write_state_json``, ``observe``):

- Toybox (``rlwrappers/ToyboxBreakout-v0`` and its siblings): the game's own JSON state, read and written by
  Toybox.
- Classic control (CartPole, Pendulum, MountainCar, MountainCarContinuous, Acrobot): the state vector under
  names (:data:`CLASSIC_STATE_NAMES`), then the constants of :data:`rlwrappers.state.simulators.CLASSIC_PARAMETERS`.
- MuJoCo (``gymnasium.envs.mujoco``): ``{"qpos": [...], "qvel": [...]}``, written with ``set_state``.
- ALE (``ale_py.env.AtariEnv``): ``{"ram": [128 bytes]}``, written with ``setRAM`` for the bytes that changed.

The observation after a write is what the env's ``step`` would return for the written state: the float32
state vector (CartPole, MountainCar), the env's own function of it (Pendulum's cosine, sine and velocity,
Acrobot's six numbers), the MuJoCo env's ``_get_obs()``, and for ALE envs the RAM itself (``obs_type="ram"``)
or the frame the game draws from the written RAM (RGB or grayscale, as the env's ``obs_type`` says): the
adapter emulates that one frame on a copy of the emulator's state (``cloneState(include_rng=True)``), takes
its screen and restores the copy, so the game goes on from the written state as if the frame had not been
drawn. A RAM byte takes effect when the game reads it; a game may also overwrite it from elsewhere (a paddle
controller, a copy kept for drawing): docs/interventions.md lists the addresses checked.

Anything else raises :class:`~rlwrappers.error.StateNotSettable` naming the env.

Example:
    >>> import gymnasium as gym
    >>> from rlwrappers.state import documents
    >>> env = gym.make("CartPole-v1")
    >>> _ = env.reset(seed=0)
    >>> state = documents.adapter(env).state_json()
    >>> list(state)[:5], state["length"]
    (['x', 'x_dot', 'theta', 'theta_dot', 'gravity'], 0.5)
"""

from __future__ import annotations

import abc
import math
import sys
from collections.abc import Mapping
from typing import Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers.error import InvalidArgument, InvalidType, StateNotSettable, did_you_mean
from rlwrappers.state import simulators

__all__ = ["ATARI_RAM_SIZE", "CLASSIC_STATE_NAMES", "StateAdapter", "adapter"]

#: The names of each classic-control env's state vector, in its order (the names its ``step`` code uses).
CLASSIC_STATE_NAMES: Final[Mapping[str, tuple[str, ...]]] = {
    "CartPoleEnv": ("x", "x_dot", "theta", "theta_dot"),
    "PendulumEnv": ("theta", "theta_dot"),
    "MountainCarEnv": ("position", "velocity"),
    "Continuous_MountainCarEnv": ("position", "velocity"),
    "AcrobotEnv": ("theta1", "theta2", "theta1_dot", "theta2_dot"),
}
#: The bytes of an Atari 2600's RAM.
ATARI_RAM_SIZE: Final = 128

_TOYBOX_CALLS: Final = ("state_json", "write_state_json", "observe")


class StateAdapter(abc.ABC):
    """One env's state as a JSON-like dict: read it, write it back, and render the observation of the state.

    Attributes:
        env: the base env (``env.unwrapped``).
        name: what messages call the env's states (``"CartPoleEnv"``, ``"AtariEnv (breakout)"``).
        native: whether the env makes the three calls itself (the Toybox envs).
    """

    native: bool = False

    def __init__(self, env: Any, name: str) -> None:
        self.env = env
        self.name = name

    @abc.abstractmethod
    def state_json(self) -> dict[str, Any]:
        """The current state, as a new dict of Python values."""

    @abc.abstractmethod
    def write_state_json(self, state: Mapping[str, Any]) -> None:
        """Makes ``state`` (a dict as :meth:`state_json` returns) the env's state.

        Raises:
            InvalidArgument: a field is missing or unknown, a list has the wrong length, a value is out of range.
            InvalidType: a value has the wrong kind (a string for a number, a float for a byte).
        """

    @abc.abstractmethod
    def observe(self) -> Any:
        """The observation an agent sees of the current state, as the env's ``step`` would return it."""

    def schema(self) -> dict[str, Any] | None:
        """A JSON schema every state of the env fits (None: the checks are made elsewhere, as for Toybox)."""
        return None

    def positive_fields(self) -> dict[str, float]:
        """The fields that must stay > 0 (masses, lengths, time steps), with their values now; none by default."""
        return {}


class _Native(StateAdapter):
    """An env with the three calls of its own (the Toybox envs)."""

    native = True

    def state_json(self) -> dict[str, Any]:
        state: dict[str, Any] = self.env.state_json()
        return state

    def write_state_json(self, state: Mapping[str, Any]) -> None:
        self.env.write_state_json(state)

    def observe(self) -> Any:
        return self.env.observe()


# -- checks shared by the adapters ------------------------------------------------------------------------------
def _fields(state: Any, expected: tuple[str, ...], name: str) -> None:
    """Raises unless ``state`` is a dict with exactly the fields ``expected``."""
    if not isinstance(state, Mapping):
        raise InvalidType(f"a {name} state must be a dict as state_json() returns, received {type(state).__name__}")
    for key in state:
        if key not in expected:
            raise InvalidArgument(
                f"a {name} state has no field `{key}`; its fields: {list(expected)}.{did_you_mean(str(key), expected)}"
            )
    missing = [key for key in expected if key not in state]
    if missing:
        raise InvalidArgument(f"a {name} state needs every field; received none for {missing}")


def _number(where: str, value: Any) -> float:
    """``value`` as a finite float, or raises naming ``where``."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidType(f"`{where}` must be a number, received {value!r}")
    if not math.isfinite(value):
        raise InvalidArgument(f"`{where}` must be finite, received {value!r}")
    return float(value)


def _numbers(where: str, values: Any, size: int) -> list[float]:
    """``values`` as ``size`` finite floats, or raises naming ``where``."""
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        raise InvalidType(f"`{where}` must be a list of {size} numbers, received {values!r}")
    if len(values) != size:
        raise InvalidArgument(f"`{where}` must have {size} items, received {len(values)}")
    return [_number(f"{where}[{i}]", v) for i, v in enumerate(values)]


def _number_schema() -> dict[str, Any]:
    return {"type": "number"}


def _list_schema(items: dict[str, Any], size: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "minItems": size, "maxItems": size}


# -- classic control ------------------------------------------------------------------------------------------
class _ClassicState(StateAdapter):
    """The state vector under :data:`CLASSIC_STATE_NAMES`, then the env's constants."""

    def __init__(self, env: Any) -> None:
        kind = type(env).__name__
        super().__init__(env, kind)
        self._sim = simulators.simulator(env, purpose="intervene")
        self.names = CLASSIC_STATE_NAMES[kind]
        self.parameters = simulators.CLASSIC_PARAMETERS[kind]
        self.fields = self.names + self.parameters

    def _vector(self) -> np.ndarray[Any, Any]:
        state = getattr(self.env, "state", None)
        if state is None:
            raise StateNotSettable(f"{self.name} has no state before its first reset: reset it first")
        return np.asarray(state)

    def state_json(self) -> dict[str, Any]:
        vector = self._vector().astype(np.float64)
        out: dict[str, Any] = {name: float(v) for name, v in zip(self.names, vector, strict=True)}
        out.update({name: float(getattr(self.env, name)) for name in self.parameters})
        return out

    def write_state_json(self, state: Mapping[str, Any]) -> None:
        _fields(state, self.fields, self.name)
        values = {name: _number(name, state[name]) for name in self.fields}
        current = self._vector()
        dtype = current.dtype if current.dtype.kind == "f" else np.dtype(np.float64)
        self.env.state = np.array([values[name] for name in self.names], dtype=dtype)
        for name in self.parameters:
            if values[name] != float(getattr(self.env, name)):
                self._sim.set_parameter(name, np.array(values[name]))  # recomputes derived constants

    def observe(self) -> Any:
        return self._sim.observe()

    def positive_fields(self) -> dict[str, float]:
        return {name: float(getattr(self.env, name)) for name in self._sim.positive()}

    def schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "required": list(self.fields),
            "properties": {name: _number_schema() for name in self.fields},
        }


# -- MuJoCo -----------------------------------------------------------------------------------------------------
class _MujocoState(StateAdapter):
    """``{"qpos": [...], "qvel": [...]}``, written with the env's ``set_state``."""

    def __init__(self, env: Any) -> None:
        super().__init__(env, type(env).__name__)
        self.nq, self.nv = int(env.model.nq), int(env.model.nv)

    def state_json(self) -> dict[str, Any]:
        data = self.env.data
        return {"qpos": [float(x) for x in data.qpos], "qvel": [float(x) for x in data.qvel]}

    def write_state_json(self, state: Mapping[str, Any]) -> None:
        _fields(state, ("qpos", "qvel"), self.name)
        qpos = _numbers("qpos", state["qpos"], self.nq)
        qvel = _numbers("qvel", state["qvel"], self.nv)
        self.env.set_state(np.array(qpos, dtype=np.float64), np.array(qvel, dtype=np.float64))

    def observe(self) -> Any:
        return self.env._get_obs()  # private in Gymnasium: a MuJoCo env's only call that observes its current state

    def schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["qpos", "qvel"],
            "properties": {
                "qpos": _list_schema(_number_schema(), self.nq),
                "qvel": _list_schema(_number_schema(), self.nv),
            },
        }


# -- ALE --------------------------------------------------------------------------------------------------------
class _AtariState(StateAdapter):
    """``{"ram": [128 ints]}``, written with ``setRAM`` for the bytes that changed."""

    def __init__(self, env: Any) -> None:
        # ale_py keeps the game's name only in the private `_game`; it only names the env in messages.
        super().__init__(env, f"AtariEnv ({getattr(env, '_game', '?')})")
        self.ale = env.ale

    def state_json(self) -> dict[str, Any]:
        return {"ram": [int(b) for b in self.ale.getRAM()]}

    def write_state_json(self, state: Mapping[str, Any]) -> None:
        _fields(state, ("ram",), self.name)
        ram = state["ram"]
        if isinstance(ram, np.ndarray):
            ram = ram.tolist()
        if not isinstance(ram, (list, tuple)):
            raise InvalidType(f"`ram` must be a list of {ATARI_RAM_SIZE} bytes, received {ram!r}")
        if len(ram) != ATARI_RAM_SIZE:
            raise InvalidArgument(f"`ram` must have {ATARI_RAM_SIZE} items, received {len(ram)}")
        values = []
        for i, value in enumerate(ram):
            value = value.item() if isinstance(value, np.generic) else value
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidType(f"`ram[{i}]` must be an integer in [0, 255], received {value!r}")
            if not 0 <= value <= 255:
                raise InvalidArgument(f"`ram[{i}]` must be in [0, 255] (one byte), received {value}")
            values.append(value)
        current = self.ale.getRAM()
        for i, value in enumerate(values):
            if value != int(current[i]):
                self.ale.setRAM(i, value)

    def observe(self) -> Any:
        # ale_py's AtariEnv keeps its observation type in the private `_obs_type` and builds observations in
        # the private `_get_obs`: using them keeps the observation exactly the env's, in every obs_type.
        if getattr(self.env, "_obs_type", "rgb") == "ram" or self.ale.game_over():
            return self.env._get_obs()  # private in ale_py: see above
        # The screen is drawn while a frame is emulated: draw one from the written RAM, then restore the state
        # (and the random generator of sticky actions), so the game goes on as if it had not been drawn.
        ale_py = sys.modules["ale_py"]
        saved = self.ale.cloneState(include_rng=True)
        self.ale.act(ale_py.Action.NOOP)
        obs = self.env._get_obs()  # private in ale_py: see above
        self.ale.restoreState(saved)
        return obs

    def schema(self) -> dict[str, Any]:
        byte = {"type": "integer", "format": "uint8", "minimum": 0}
        return {"type": "object", "required": ["ram"], "properties": {"ram": _list_schema(byte, ATARI_RAM_SIZE)}}


def _is_atari(env: Any) -> bool:
    module = sys.modules.get("ale_py.env")  # an AtariEnv exists only once ale_py is imported
    return module is not None and isinstance(env, module.AtariEnv)


def adapter(env: gym.Env[Any, Any], *, purpose: str = "intervene") -> StateAdapter:
    """The :class:`StateAdapter` of ``env.unwrapped``.

    Args:
        env: a Toybox, classic-control, MuJoCo or ALE env, wrapped or not.
        purpose: what asks, for the error message.

    Raises:
        StateNotSettable: no adapter serves the env; the message names it.
    """
    base = env.unwrapped
    kind = type(base).__name__
    if all(callable(getattr(base, call, None)) for call in _TOYBOX_CALLS):
        return _Native(base, getattr(base, "game", kind))
    if kind in CLASSIC_STATE_NAMES:
        return _ClassicState(base)
    if any(cls.__name__ == "MujocoEnv" for cls in type(base).__mro__):
        return _MujocoState(base)
    if _is_atari(base):
        return _AtariState(base)
    missing = [call for call in _TOYBOX_CALLS if not callable(getattr(base, call, None))]
    raise StateNotSettable(
        f"{purpose} needs an env whose state can be read and written: a Toybox env (state_json, "
        f"write_state_json, observe), a classic-control env ({', '.join(sorted(CLASSIC_STATE_NAMES))}), a MuJoCo "
        f"env or an ALE env (ale_py's AtariEnv); {kind} is none of these (it lacks {missing})"
    )
