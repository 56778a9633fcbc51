"""A learned adversary (RARL, Pinto et al. 2017): a second player that pushes the env, trained to hurt the agent.

An adversary acts through a channel (:class:`Channel`): an additive, bounded disturbance of the agent's Box
actions on any env (:class:`ActionDisturbance`), or forces on chosen bodies of a MuJoCo model through
``data.xfrc_applied`` (:class:`BodyForces`). The game of the two players is exposed three ways:

- :class:`WithAdversary`: a Gymnasium env for the agent (the protagonist), the adversary's policy fixed;
- :class:`AgainstProtagonist`: a Gymnasium env for the adversary, the protagonist's policy fixed;
- :func:`two_player_env`: a PettingZoo parallel env of both.

The adversary's reward is the protagonist's, negated (a zero-sum game, as in RARL). Both fixed policies act on
the env's observation, greedily unless given a generator: alternating the two Gymnasium envs with any trainer
(``examples/rarl_ppo.py`` uses SB3's PPO) is RARL's training loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.agents import adapt
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType

__all__ = [
    "ActionDisturbance",
    "AgainstProtagonist",
    "BodyForces",
    "Channel",
    "WithAdversary",
    "two_player_env",
]


class Channel:
    """How an adversary acts on an env: its action space, and what each of its actions does to one step."""

    def bind(self, env: gym.Env[Any, Any]) -> gym.spaces.Box:
        """Checks that the channel fits ``env``; returns the adversary's action space."""
        raise NotImplementedError

    def step(self, env: gym.Env[Any, Any], action: Any, push: NDArray[np.float64]) -> Any:
        """Steps ``env`` with the protagonist's ``action`` under the adversary's ``push``."""
        raise NotImplementedError


@dataclass(frozen=True)
class ActionDisturbance(Channel):
    """Adds the adversary's push to the agent's Box action: at most ``scale`` of half the action range per element.

    The sum is clipped to the action bounds, so the env only ever sees actions it allows.
    """

    scale: float = 0.2

    def __post_init__(self) -> None:
        if not 0.0 < _check.number("scale", self.scale) <= 1.0:
            raise InvalidArgument(
                f"`scale` must lie in (0, 1], a share of half the action range, received {self.scale!r}"
            )

    @override
    def bind(self, env: gym.Env[Any, Any]) -> gym.spaces.Box:
        space = env.action_space
        if not isinstance(space, gym.spaces.Box) or not (
            np.isfinite(space.low).all() and np.isfinite(space.high).all()
        ):
            raise IncompatibleSpace(f"an action disturbance needs a bounded Box action space, received {space}")
        return gym.spaces.Box(-1.0, 1.0, space.shape, np.float32)

    @override
    def step(self, env: gym.Env[Any, Any], action: Any, push: NDArray[np.float64]) -> Any:
        space = env.action_space
        assert isinstance(space, gym.spaces.Box)
        half = (space.high.astype(np.float64) - space.low) / 2
        moved = np.asarray(action, dtype=np.float64) + self.scale * half * np.clip(push, -1.0, 1.0)
        return env.step(np.clip(moved, space.low, space.high).astype(space.dtype))


@dataclass(frozen=True)
class BodyForces(Channel):
    """Forces on MuJoCo bodies, at most ``magnitude`` newtons per component, held for one step.

    ``bodies`` names the bodies (as in the model); ``axes`` picks the force components, ``"xy"`` by default
    (RARL's). The adversary's action is one number in [-1, 1] per body and axis.
    """

    bodies: tuple[str, ...]
    magnitude: float = 3.0
    axes: str = "xy"

    def __post_init__(self) -> None:
        if isinstance(self.bodies, str) or not self.bodies or not all(isinstance(b, str) for b in self.bodies):
            raise InvalidType(f"`bodies` must be a non-empty list of body names, received {self.bodies!r}")
        object.__setattr__(self, "bodies", tuple(self.bodies))
        if _check.number("magnitude", self.magnitude) <= 0:
            raise InvalidArgument(f"`magnitude` must be > 0 newtons, received {self.magnitude!r}")
        if not self.axes or set(self.axes) - set("xyz") or len(set(self.axes)) != len(self.axes):
            raise InvalidArgument(f"`axes` must be distinct letters of 'xyz', received {self.axes!r}")

    @override
    def bind(self, env: gym.Env[Any, Any]) -> gym.spaces.Box:
        model = getattr(env.unwrapped, "model", None)
        if model is None or not hasattr(env.unwrapped, "data"):
            raise IncompatibleSpace(f"body forces need a MuJoCo env, received {type(env.unwrapped).__name__}")
        names = [model.body(i).name for i in range(model.nbody)]
        unknown = [b for b in self.bodies if b not in names]
        if unknown:
            raise InvalidArgument(f"`bodies` {unknown} are not bodies of the model; its bodies: {names}")
        return gym.spaces.Box(-1.0, 1.0, (len(self.bodies) * len(self.axes),), np.float32)

    @override
    def step(self, env: gym.Env[Any, Any], action: Any, push: NDArray[np.float64]) -> Any:
        base = env.unwrapped
        forces = np.clip(push, -1.0, 1.0).reshape(len(self.bodies), len(self.axes)) * self.magnitude
        columns = ["xyz".index(a) for a in self.axes]
        for body, force in zip(self.bodies, forces, strict=True):
            base.data.xfrc_applied[base.model.body(body).id, columns] = force  # type: ignore[attr-defined]
        try:
            return env.step(action)
        finally:
            base.data.xfrc_applied[:] = 0.0  # type: ignore[attr-defined]


def _policy(name: str, policy: Any, env: gym.Env[Any, Any], action_space: gym.Space[Any]) -> Any:
    if policy is None:
        raise InvalidArgument(f"`{name}` is required: the policy of the player that is not being trained")
    return adapt(policy, observation_space=env.observation_space, action_space=action_space)


class _OnePlayer(gym.Wrapper[Any, Any, Any, Any]):
    """The game seen by one player while the other's policy is fixed: it keeps the observation both act on."""

    def __init__(self, env: gym.Env[Any, Any], channel: Channel, rng: np.random.Generator | None):
        super().__init__(env)
        self.channel = channel
        self.adversary_space = channel.bind(env)
        self.rng = rng
        self._obs: Any = None

    @override
    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._obs, info = self.env.reset(**kwargs)
        return self._obs, info


class WithAdversary(_OnePlayer):
    """The protagonist's env: each step, the fixed ``adversary`` pushes through ``channel``.

    ``info["adversary"]`` holds the push of each step. ``rng`` makes a stochastic adversary sample its actions.
    """

    def __init__(
        self, env: gym.Env[Any, Any], channel: Channel, adversary: Any, rng: np.random.Generator | None = None
    ):
        super().__init__(env, channel, rng)
        self.adversary = _policy("adversary", adversary, env, self.adversary_space)

    def set_adversary(self, adversary: Any) -> None:
        """Replaces the fixed adversary (RARL's loop swaps in the one it just trained)."""
        self.adversary = _policy("adversary", adversary, self.env, self.adversary_space)

    @override
    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        push = np.asarray(self.adversary.act_one(self._obs, self.rng), dtype=np.float64)
        self._obs, reward, terminated, truncated, info = self.channel.step(self.env, action, push)
        return self._obs, reward, terminated, truncated, {**info, "adversary": push}


class AgainstProtagonist(_OnePlayer):
    """The adversary's env: it acts through ``channel`` while the fixed ``protagonist`` plays.

    Its reward is the protagonist's, negated; ``info["protagonist_reward"]`` keeps the protagonist's.
    """

    def __init__(
        self, env: gym.Env[Any, Any], channel: Channel, protagonist: Any, rng: np.random.Generator | None = None
    ):
        super().__init__(env, channel, rng)
        self.action_space = self.adversary_space
        self.protagonist = _policy("protagonist", protagonist, env, env.action_space)

    def set_protagonist(self, protagonist: Any) -> None:
        """Replaces the fixed protagonist."""
        self.protagonist = _policy("protagonist", protagonist, self.env, self.env.action_space)

    @override
    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        played = self.protagonist.act_one(self._obs, self.rng)
        self._obs, reward, terminated, truncated, info = self.channel.step(self.env, played, np.asarray(action))
        return self._obs, -float(reward), terminated, truncated, {**info, "protagonist_reward": float(reward)}


def two_player_env(env: gym.Env[Any, Any], channel: Channel) -> Any:
    """A PettingZoo parallel env of the game (the ``multiagent`` extra).

    Its agents ``protagonist`` and ``adversary`` both see the env's observation; the adversary's reward is the
    protagonist's, negated.
    """
    from rlwrappers._optional import require

    pettingzoo = require("pettingzoo", purpose="the two-player adversary env")

    parallel_env: Any = pettingzoo.ParallelEnv

    class TwoPlayer(parallel_env):
        metadata = {"name": "rlwrappers_two_player"}

        def __init__(self) -> None:
            self.env, self.channel = env, channel
            self.possible_agents = ["protagonist", "adversary"]
            self.agents: list[str] = []
            self._spaces = {"protagonist": env.action_space, "adversary": channel.bind(env)}

        def observation_space(self, agent: str) -> gym.Space[Any]:
            return self.env.observation_space

        def action_space(self, agent: str) -> gym.Space[Any]:
            return self._spaces[agent]

        def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            obs, info = self.env.reset(seed=seed, options=options)
            self.agents = list(self.possible_agents)
            return {a: obs for a in self.agents}, {a: dict(info) for a in self.agents}

        def step(self, actions: dict[str, Any]) -> Any:
            push = np.asarray(actions["adversary"], dtype=np.float64)
            obs, reward, terminated, truncated, info = self.channel.step(self.env, actions["protagonist"], push)
            rewards = {"protagonist": float(reward), "adversary": -float(reward)}
            if terminated or truncated:
                self.agents = []
            ids = self.possible_agents
            return (
                {a: obs for a in ids},
                rewards,
                {a: bool(terminated) for a in ids},
                {a: bool(truncated) for a in ids},
                {a: dict(info) for a in ids},
            )

        def close(self) -> None:
            self.env.close()

    return TwoPlayer()
