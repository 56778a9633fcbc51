"""Coordinated buildings: cooperative cooling control of buildings that share one feeder bus (PettingZoo parallel).

After the ``CoordinatedMultiBuildingControlEnv`` example of NREL's PowerGridworld (Biagioni et al. 2021,
*PowerGridworld: A Framework for Multi-Agent Reinforcement Learning in Power Systems*). Each agent runs the
cooling of one building with ``zones`` thermal zones; every building draws power from one bus, whose voltage
falls with the total load. Agents are rewarded for comfort and penalized for energy, and when the bus voltage
leaves the ANSI C84.1 range A (0.95 to 1.05 p.u.) they share a penalty evenly. ``docs/powergrid.md`` gives the
equations and every constant with its unit.

**Model, in short.** Outdoor temperature: a daily sinusoid with a seeded offset and noise. Zone ``z`` of building
``i``: a first-order RC circuit, ``T' = T_eq + (T - T_eq) exp(-dt / RC)`` with
``T_eq = T_out + R (gain - a * Q_MAX)``. Power: ``P_i = P_BASE + Q_MAX / COP * sum_z a_z``. Voltage:
``V = V0 - KAPPA * (system_load * L_bg(h) + mean_i P_i)``. Reward of agent ``i``:
``-W_COMFORT * sum_z c_z**2 - W_ENERGY * P_i - voltage_penalty / n * max(0, 0.95 - V, V - 1.05)``, where ``c_z`` is
how far zone ``z`` lies outside the comfort band after the step.

**Spaces.** Actions: ``Box(0, 1, (zones,), float32)``, the fraction of each zone's cooling capacity (clipped to
[0, 1]). Observations: ``Box(float32)`` of size ``zones + 5``: the building's zone temperatures (°C), the outdoor
temperature (°C), sin and cos of the hour, the building's power in the last step (kW) and the bus voltage of the
last step (p.u.). Episodes last ``steps`` steps of 15 minutes from midnight (96 = one day) and end in truncation.

Randomness comes only from the generator seeded by ``reset(seed=...)``: equal seeds give equal episodes, bit
for bit. A step is vectorized over buildings and zones.

Example:
    >>> import numpy as np
    >>> from rlwrappers.envs.powergrid import parallel_env
    >>> env = parallel_env(n_buildings=2, zones=3, steps=4)
    >>> observations, infos = env.reset(seed=0)
    >>> env.agents, observations["building_0"].shape
    (['building_0', 'building_1'], (8,))
    >>> observations, rewards, terminations, truncations, infos = env.step(
    ...     {agent: np.ones(3, np.float32) for agent in env.agents}
    ... )
    >>> infos["building_0"]["power"], infos["building_0"]["voltage_reward"] == infos["building_1"]["voltage_reward"]
    (14.0, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Final

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from numpy.typing import NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType, UnknownName, did_you_mean

require("pettingzoo", purpose="the coordinated buildings env")
from pettingzoo import ParallelEnv  # noqa: E402 (after the check that names the extra)

__all__ = ["NAME", "CoordinatedBuildings", "parallel_env"]

#: PettingZoo's name of the env.
NAME: Final = "coordinated_buildings_v0"

# -- constants (docs/powergrid.md, "Constants") ------------------------------------------------------------------
#: Step length, h.
DT: Final = 0.25
#: Outdoor temperature: mean, daily amplitude (°C), hottest hour (h), bounds of the day's offset and of the
#: per-step noise (°C).
T_MEAN: Final = 27.0
T_AMPLITUDE: Final = 7.0
HOTTEST_HOUR: Final = 15.0
OFFSET_MAX: Final = 2.0
NOISE_MAX: Final = 0.5
#: Zone thermal resistance to the outdoors (K/kW) and capacitance (kWh/K).
R_ZONE: Final = 2.5
C_ZONE: Final = 2.0
#: Heat gain per zone: constant part and daytime part at noon (kW); range of the per-zone factor.
GAIN_BASE: Final = 0.8
GAIN_DAY: Final = 1.6
GAIN_FACTOR: Final = (0.8, 1.2)
#: Range of the initial zone temperatures, °C.
T_INIT: Final = (26.0, 28.0)
#: Cooling capacity per zone (kW thermal), chiller COP, base load per building (kW).
Q_MAX: Final = 8.0
COP: Final = 3.0
P_BASE: Final = 6.0
#: Feeder: head voltage (p.u.), voltage drop per kW of one building's share (p.u./kW), background load per
#: building at its 17:00 peak (kW).
V0: Final = 1.04
KAPPA: Final = 0.0035
LOAD_PEAK: Final = 8.0
#: ANSI C84.1 range A, p.u.
VOLTAGE_LIMITS: Final = (0.95, 1.05)
#: Reward weights: comfort (1/°C²) and energy (1/kW), as in PowerGridworld's building reward.
W_COMFORT: Final = 0.8
W_ENERGY: Final = 0.2 * 0.5 / 12.0


class CoordinatedBuildings(ParallelEnv[str, NDArray[np.float32], NDArray[np.float32]]):
    """Buildings that cool their zones and share one feeder bus; see :mod:`rlwrappers.envs.powergrid`.

    Args:
        n_buildings: the number of agents, ``building_0`` to ``building_{n-1}``; >= 1.
        zones: thermal zones per building, the size of an action; >= 1.
        steps: steps of 15 minutes in an episode (96 = one day); >= 1.
        system_load: scale on the feeder's background load, >= 0 (1: the documented load; 0: none).
        voltage_penalty: the team's penalty per p.u. of voltage violation, split evenly among the agents; >= 0.
        comfort_band: ``(low, high)`` zone temperatures, °C, with ``low < high``.
        render_mode: None (the env does not render).

    Raises:
        InvalidType: an argument has the wrong type.
        InvalidArgument: an argument is out of range.
    """

    metadata: ClassVar[dict[str, Any]] = {"name": NAME, "render_modes": [], "is_parallelizable": True}

    def __init__(
        self,
        n_buildings: int = 5,
        zones: int = 5,
        steps: int = 96,
        *,
        system_load: float = 1.0,
        voltage_penalty: float = 1e4,
        comfort_band: tuple[float, float] = (22.0, 28.0),
        render_mode: str | None = None,
    ):
        n_buildings = _check.integer("n_buildings", n_buildings, minimum=1)
        zones = _check.integer("zones", zones, minimum=1)
        steps = _check.integer("steps", steps, minimum=1)
        system_load = _check.nonnegative("system_load", system_load)
        voltage_penalty = _check.nonnegative("voltage_penalty", voltage_penalty)
        if not isinstance(comfort_band, (tuple, list)) or len(comfort_band) != 2:
            raise InvalidType(f"`comfort_band` must be a pair (low, high) in °C, received {comfort_band!r}")
        band_low = _check.number("comfort_band[0]", comfort_band[0])
        band_high = _check.number("comfort_band[1]", comfort_band[1])
        if not band_low < band_high:
            raise InvalidArgument(f"`comfort_band` must have low < high, received {comfort_band!r}")
        if render_mode is not None:
            raise InvalidArgument(f"`render_mode` must be None (the env does not render), received {render_mode!r}")
        self.n_buildings = n_buildings
        self.zones = zones
        self.steps = steps
        self.system_load = system_load
        self.voltage_penalty = voltage_penalty
        self.comfort_band = (band_low, band_high)
        self.render_mode = render_mode
        self.possible_agents = [f"building_{i}" for i in range(n_buildings)]
        self.agents: list[str] = []

        # Everything that depends on the clock alone, for t = 0 .. steps (the last row serves the last observation).
        hours = (np.arange(steps + 1) * DT) % 24.0
        self._hours = hours
        self._clock = np.stack([np.sin(2 * np.pi * hours / 24), np.cos(2 * np.pi * hours / 24)], axis=1)
        self._gain = GAIN_BASE + GAIN_DAY * np.maximum(0.0, np.sin(np.pi * (hours - 6.0) / 12.0))
        self._background = LOAD_PEAK * (0.7 + 0.3 * np.maximum(0.0, np.cos(2 * np.pi * (hours - 17.0) / 24.0)))
        self._background *= system_load
        self._climate = T_MEAN + T_AMPLITUDE * np.cos(2 * np.pi * (hours - HOTTEST_HOUR) / 24.0)
        self._decay = math.exp(-DT / (R_ZONE * C_ZONE))
        low, high = self._observation_bounds()
        # One space object per agent, kept for life: PettingZoo asks for the same object on every call.
        self._observation_spaces = {
            agent: gym.spaces.Box(low, high, dtype=np.float32) for agent in self.possible_agents
        }
        self._action_spaces = {agent: gym.spaces.Box(0.0, 1.0, (zones,), np.float32) for agent in self.possible_agents}

        self._np_random: np.random.Generator | None = None
        self._t = 0
        self._outdoor = self._climate.copy()
        self._temps = np.zeros((n_buildings, zones))
        self._factors = np.ones((n_buildings, zones))
        self._power = np.full(n_buildings, P_BASE)
        self._voltage = V0

    @property
    def kwargs(self) -> dict[str, Any]:
        """The constructor's arguments, to rebuild this env with :func:`parallel_env`."""
        return {
            "n_buildings": self.n_buildings,
            "zones": self.zones,
            "steps": self.steps,
            "system_load": self.system_load,
            "voltage_penalty": self.voltage_penalty,
            "comfort_band": list(self.comfort_band),
        }

    @property
    def hour(self) -> float:
        """The hour of day at which the next step starts."""
        return float(self._hours[self._t])

    @property
    def temperatures(self) -> NDArray[np.float64]:
        """A copy of the zone temperatures, °C, shape ``(n_buildings, zones)``."""
        return self._temps.copy()

    @property
    def voltage(self) -> float:
        """The bus voltage of the last step (HVAC off after reset), p.u."""
        return float(self._voltage)

    def observation_space(self, agent: str) -> gym.spaces.Box:
        """The observation space of ``agent`` (the same object on every call)."""
        if agent not in self._observation_spaces:
            raise self._unknown(agent)
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Box:
        """The action space of ``agent``, ``Box(0, 1, (zones,), float32)`` (the same object on every call)."""
        if agent not in self._action_spaces:
            raise self._unknown(agent)
        return self._action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, NDArray[np.float32]], dict[str, dict[str, float]]]:
        """Starts a day at midnight: draws the weather, the initial temperatures and the heat-gain factors."""
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        rng = self._np_random
        shape = (self.n_buildings, self.zones)
        offset = rng.uniform(-OFFSET_MAX, OFFSET_MAX)
        noise = rng.uniform(-NOISE_MAX, NOISE_MAX, self.steps + 1)
        self._outdoor = self._climate + offset + noise
        self._temps = rng.uniform(*T_INIT, shape)
        self._factors = rng.uniform(*GAIN_FACTOR, shape)
        self._t = 0
        self._power = np.full(self.n_buildings, P_BASE)
        self._voltage = self._bus_voltage(0, self._power)
        self.agents = self.possible_agents[:]
        zero = np.zeros(self.n_buildings)
        return self._observations(), self._infos(0, zero, zero, zero, zero, 0.0)

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[
        dict[str, NDArray[np.float32]],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, float]],
    ]:
        """Applies every building's cooling for 15 minutes, solves the bus voltage and scores the step."""
        if not self.agents:
            raise InvalidArgument("the episode is over (every agent was truncated); call reset() first")
        a = self._actions(actions)
        t = self._t
        cooling = self._factors * self._gain[t] - a * Q_MAX
        equilibrium = self._outdoor[t] + R_ZONE * cooling
        self._temps = equilibrium + (self._temps - equilibrium) * self._decay
        self._power = P_BASE + (Q_MAX / COP) * a.sum(axis=1)
        self._voltage = self._bus_voltage(t, self._power)
        low, high = self.comfort_band
        outside = np.maximum(0.0, np.maximum(self._temps - high, low - self._temps))
        comfort = (outside * outside).sum(axis=1)
        violation = max(0.0, VOLTAGE_LIMITS[0] - self._voltage, self._voltage - VOLTAGE_LIMITS[1])
        comfort_reward = -W_COMFORT * comfort
        energy_reward = -W_ENERGY * self._power
        voltage_reward = -self.voltage_penalty / self.n_buildings * violation
        rewards = comfort_reward + energy_reward + voltage_reward
        self._t = t + 1
        infos = self._infos(
            t, comfort, comfort_reward, energy_reward, np.full(self.n_buildings, voltage_reward), violation
        )
        observations = self._observations()
        agents = self.agents
        truncated = self._t >= self.steps
        if truncated:
            self.agents = []
        return (
            observations,
            dict(zip(agents, rewards.tolist(), strict=True)),
            dict.fromkeys(agents, False),
            dict.fromkeys(agents, truncated),
            infos,
        )

    def render(self) -> None:
        """The env does not render."""
        return None

    def close(self) -> None:
        """Nothing to release."""

    # -- internals --------------------------------------------------------------------------------------------
    def _unknown(self, agent: Any) -> UnknownName:
        return UnknownName(
            f"`agent` must be one of {self.possible_agents[0]!r} .. {self.possible_agents[-1]!r}, received {agent!r}."
            + did_you_mean(str(agent), self.possible_agents)
        )

    def _actions(self, actions: Mapping[str, Any]) -> NDArray[np.float64]:
        """The (n_buildings, zones) array of actions, clipped to [0, 1]; raises on a missing or malformed one."""
        if not isinstance(actions, Mapping):
            raise InvalidType(f"`actions` must be a dict from agent name to action, received {type(actions).__name__}")
        if len(actions) != len(self.agents) or any(agent not in actions for agent in self.agents):
            missing = [agent for agent in self.agents if agent not in actions]
            extra = [agent for agent in actions if agent not in self.agents]
            raise InvalidArgument(f"`actions` must hold one action per live agent; missing {missing}, unknown {extra}")
        try:
            a = np.array([actions[agent] for agent in self.agents], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(f"every action must be {self.zones} numbers in [0, 1]: {exc}") from None
        if a.shape != (self.n_buildings, self.zones):
            raise InvalidArgument(
                f"every action must have shape ({self.zones},), received shapes "
                f"{ {agent: np.shape(actions[agent]) for agent in self.agents} }"
            )
        if not np.isfinite(a).all():
            raise InvalidArgument(f"actions must be finite, received {dict(actions)!r}")
        return np.clip(a, 0.0, 1.0)

    def _bus_voltage(self, t: int, power: NDArray[np.float64]) -> float:
        return float(V0 - KAPPA * (self._background[t] + power.mean()))

    def _observations(self) -> dict[str, NDArray[np.float32]]:
        t = self._t
        obs = np.empty((self.n_buildings, self.zones + 5), np.float32)
        obs[:, : self.zones] = self._temps
        obs[:, self.zones] = self._outdoor[t]
        obs[:, self.zones + 1 : self.zones + 3] = self._clock[t]
        obs[:, self.zones + 3] = self._power
        obs[:, self.zones + 4] = self._voltage
        return dict(zip(self.possible_agents, obs, strict=True))

    def _infos(
        self,
        t: int,
        comfort: NDArray[np.float64],
        comfort_reward: NDArray[np.float64],
        energy_reward: NDArray[np.float64],
        voltage_reward: NDArray[np.float64],
        violation: float,
    ) -> dict[str, dict[str, float]]:
        hour, voltage = float(self._hours[t]), float(self._voltage)
        columns = zip(
            self.possible_agents,
            comfort.tolist(),
            self._power.tolist(),
            comfort_reward.tolist(),
            energy_reward.tolist(),
            voltage_reward.tolist(),
            strict=True,
        )
        return {
            agent: {
                "hour": hour,
                "voltage": voltage,
                "voltage_violation": violation,
                "comfort_violation": c,
                "power": p,
                "comfort_reward": cr,
                "energy_reward": er,
                "voltage_reward": vr,
            }
            for agent, c, p, cr, er, vr in columns
        }

    def _observation_bounds(self) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Bounds that hold every reachable observation, derived from the constants with a margin."""
        outdoor = (T_MEAN - T_AMPLITUDE - OFFSET_MAX - NOISE_MAX, T_MEAN + T_AMPLITUDE + OFFSET_MAX + NOISE_MAX)
        # A zone moves toward its equilibrium temperature, so it stays between the extremes of T_INIT and T_eq.
        coldest = outdoor[0] + R_ZONE * (GAIN_FACTOR[0] * GAIN_BASE - Q_MAX)
        hottest = outdoor[1] + R_ZONE * GAIN_FACTOR[1] * (GAIN_BASE + GAIN_DAY)
        zone = (math.floor(min(coldest, T_INIT[0])) - 1.0, math.ceil(max(hottest, T_INIT[1])) + 1.0)
        power = (P_BASE, P_BASE + Q_MAX / COP * self.zones)
        background = (0.7 * LOAD_PEAK * self.system_load, LOAD_PEAK * self.system_load)
        voltage = (V0 - KAPPA * (background[1] + power[1]), V0 - KAPPA * (background[0] + power[0]))
        low = [zone[0]] * self.zones + [math.floor(outdoor[0]) - 1.0, -1.0, -1.0, power[0] - 1.0, voltage[0] - 0.01]
        high = [zone[1]] * self.zones + [math.ceil(outdoor[1]) + 1.0, 1.0, 1.0, power[1] + 1.0, voltage[1] + 0.01]
        return np.array(low, np.float32), np.array(high, np.float32)


def parallel_env(**kwargs: Any) -> CoordinatedBuildings:
    """A :class:`CoordinatedBuildings` env built from keyword arguments (PettingZoo's factory convention)."""
    return CoordinatedBuildings(**kwargs)
